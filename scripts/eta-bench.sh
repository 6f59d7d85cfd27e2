#!/usr/bin/env bash
# Scores the ETA (bench/src/bin/eta_bench.rs) in a release build: four
# rooms (rate-bound, capacity-bound, early leavers, quick bookers), each
# opened new and then reopened after a pause, every waiter hearing of the
# opening within its first second and polling as told after; prints the
# error of the first ETA shown from the opening on and of the one seen 20 s
# after it, for waits over 10 s.
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
