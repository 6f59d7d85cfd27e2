#!/usr/bin/env bash
# The edge's benchmarks: the gate decision natively (criterion), then the
# worker in workerd in front of the real origin, in one interleaved run
# (tests/edge/bench.mjs): protected with a valid token vs unprotected
# passthrough through the same worker (the gate's own cost) beside a direct
# request to the origin, plus the wasm bundle size. Bounded: BENCH_ROUNDS
# (default 1000) rounds, 127.0.0.1 only. Figures: BENCHMARKS.md, "The edge".
#
# Usage: scripts/edge-bench.sh [--no-criterion]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ "${1:-}" != "--no-criterion" ]]; then
  cargo bench -p edge --bench gate
  cargo bench -p token --bench verify -- "verify entry token"
fi

scripts/edge-build.sh
cargo build -p origin --release --quiet
mkdir -p target
timeout --signal=TERM 900 node tests/edge/bench.mjs
