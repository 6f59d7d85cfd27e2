#!/usr/bin/env bash
# Runs every check and test of the project: formatting, lints, the crates'
# layer rules, the docs, the token crate and the edge for wasm32, the whole
# test suite against a real Redis and the embedded store (plus Redis servers
# and a Redis Cluster the tests start themselves), schemathesis against a
# running origin, a tiny run of each benchmark, the rehearsal, the flow in a
# browser against the origin alone, and the edge end to end. Installs and
# starts what it needs; skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_rust
ensure_redis
ensure_mariadb

# A clean build each run: incremental caches only grow the target folder.
export CARGO_INCREMENTAL=0

step() { printf '\n== %s (%s UTC)\n' "$*" "$(date -u +%H:%M:%S)"; }

step "format"
cargo fmt --all -- --check
step "lint"
cargo clippy --workspace --all-targets -- -D warnings
step "layers"
scripts/check-layers.sh
step "docs (rustdoc, warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
step "the token crate and the edge build for wasm32"
cargo build -p token --target wasm32-unknown-unknown
cargo clippy -p token -p edge -p pages --target wasm32-unknown-unknown -- -D warnings
step "tests (real Redis on 127.0.0.1:6379 and the embedded store; the cluster, fault and persistence tests start their own)"
cargo test --workspace
step "schemathesis: the API against its own OpenAPI document (a running origin)"
./scripts/schemathesis.sh
step "benchmark smoke run (tiny counts, debug build: it runs, it measures nothing)"
cargo run -q -p bench --bin bench -- --smoke
cargo run -q -p bench --bin booking_bench -- --holds 100 --concurrency 8
cargo run -q -p bench --bin seatmap_bench -- --seats 2000 --viewers 2 --seconds 0.3 --sessions 200
cargo run -q -p bench --bin eta_bench
# The on-sale rehearsal: 300 visitors, 200 seats, origin on its own Redis and
# MariaDB; --check fails the step unless FIFO, capacity, seats and errors hold.
scripts/rehearsal.sh --smoke
step "the whole flow without the edge: chromium against the origin alone"
scripts/flow-test.sh
step "the edge end to end: the worker in workerd before a real origin, and chromium"
scripts/edge-test.sh
step "the on-sale rehearsal through the edge: 1,000 visitors, the worker in workerd, --check"
scripts/rehearsal.sh --edge
step "every check passed"
