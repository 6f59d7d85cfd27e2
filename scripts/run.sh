#!/usr/bin/env bash
# Runs the origin on http://127.0.0.1:8080 with the example rooms. With no
# WR_REDIS_URL it needs nothing installed (the embedded store); with
# WR_REDIS_URL=redis://127.0.0.1:6379 it uses Redis. Extra arguments go to
# the origin, e.g. ./scripts/run.sh --listen 127.0.0.1:9000
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_rust
cargo build --release -p origin
exec target/release/origin --rooms "${WR_ROOMS:-rooms.example.toml}" "$@"
