#!/usr/bin/env bash
# The booking store's benchmark (bench/src/bin/booking_bench.rs), release
# build, one run per database: MariaDB on 127.0.0.1:3306 (a fresh wr_bench_*
# database, dropped after), then SQLite (a temporary file). Prints holds and
# confirms per second (seats spread out, one hot section), their p99, a
# hot-seat loser's 409 p99, each beside `SELECT 1` through the same pool.
#   ./scripts/booking-bench.sh                  # the full run (BENCHMARKS.md)
#   ./scripts/booking-bench.sh --holds 200      # a quick one
#   ./scripts/booking-bench.sh --no-mysql       # SQLite only
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_rust
ensure_mariadb
# LTO makes the release build several minutes longer and the figures no better.
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
cargo run --release -q -p bench --bin booking_bench -- "$@"
