#!/usr/bin/env bash
# Runs every check and test of the project: formatting, lints, the token
# crate for wasm32, the whole test suite against a real Redis, and
# schemathesis against a running origin. Installs and starts what it needs;
# skips what is already there.
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
step "the token crate and the edge build for wasm32"
cargo build -p token --target wasm32-unknown-unknown
cargo clippy -p token -p edge --target wasm32-unknown-unknown -- -D warnings
step "tests (real Redis on 127.0.0.1:6379)"
cargo test --workspace
step "the same origin suite on the embedded store"
WR_TEST_STORE=memory cargo test -p origin --tests
step "the edge end to end: the worker in workerd before a real origin, and chromium"
scripts/edge-test.sh
step "schemathesis: the API against its own OpenAPI document (a running origin)"
./scripts/schemathesis.sh
