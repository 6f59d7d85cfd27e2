#!/usr/bin/env bash
# Runs every check and test of the project: formatting, lints, the token
# crate for wasm32, the whole test suite against a real Redis (plus Redis
# servers and a Redis Cluster the tests start themselves), and a tiny run of
# the benchmark. Installs and starts what it needs; skips what is already
# there.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_rust
ensure_redis
ensure_mariadb

step() { printf '\n== %s\n' "$*"; }

step "format"
cargo fmt --all -- --check
step "lint"
cargo clippy --workspace --all-targets -- -D warnings
step "the token crate builds for the edge (wasm32)"
cargo build -p token --target wasm32-unknown-unknown
cargo clippy -p token --target wasm32-unknown-unknown -- -D warnings
step "tests (real Redis on 127.0.0.1:6379; the cluster, fault and persistence tests start their own)"
cargo test --workspace
step "benchmark smoke run (tiny counts, debug build: it runs, it measures nothing)"
cargo run -q -p origin --example bench -- --smoke
