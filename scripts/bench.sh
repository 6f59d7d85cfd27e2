#!/usr/bin/env bash
# Runs the queue's benchmark (bench/src/bin/bench.rs) in a release build:
# HTTP throughput and p99 of join and status against the origin's own
# /healthz at 64 connections, status at the front and the back of a line of
# 1,000,000, store memory per waiting visitor, and the promoter tick that
# admits 1,000. Loopback only; every phase is bounded in requests and time.
# On Redis (the default) it starts its own redis-server on a free port (and
# stops it); on the embedded store it needs none.
#
#   ./scripts/bench.sh                    # the full run BENCHMARKS.md records
#   ./scripts/bench.sh --smoke            # tiny counts, a few seconds
#   ./scripts/bench.sh --store memory     # the embedded store (no Redis)
#   ./scripts/bench.sh --help             # every option
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_rust
ensure_redis_tools
cargo build --release -p bench --bin bench
exec target/release/bench "$@"
