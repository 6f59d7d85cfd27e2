#!/usr/bin/env bash
# Scores the ETA (bench/src/bin/eta_bench.rs) in a release build: three
# rooms (rate-bound, capacity-bound, early leavers) filled while paused,
# then resumed, every visitor polling as told; prints the error of the first
# ETA shown and of the one seen 20 s after the opening, for waits over 10 s.
# The store runs on a pinned clock the program steps, so a run takes about a
# second (embedded store) or a few (Redis).
#
#   ./scripts/eta-bench.sh                  # the embedded store
#   ./scripts/eta-bench.sh --store redis    # a Redis at 127.0.0.1:6379 (--redis-url)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_rust
cargo build --release -p bench --bin eta_bench
exec target/release/eta_bench "$@"
