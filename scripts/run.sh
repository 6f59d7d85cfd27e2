#!/usr/bin/env bash
# Runs the origin on http://127.0.0.1:8080 with the example rooms and a demo
# sale. With no WR_REDIS_URL and no WR_DATABASE_URL it needs nothing
# installed (the embedded queue store, booking in target/demo.sqlite); with
# WR_REDIS_URL=redis://127.0.0.1:6379 the line lives in Redis, with
# WR_DATABASE_URL=mysql://root@127.0.0.1:3306/test booking in MySQL. Extra
# arguments go to the origin, e.g. ./scripts/run.sh --listen 127.0.0.1:9000
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_rust
cargo build --release -p origin
export WR_SQLITE_PATH="${WR_SQLITE_PATH:-target/demo.sqlite}"
echo "origin: open http://127.0.0.1:8080/ (the rooms, their waiting pages, the seat page)"
exec target/release/origin --rooms "${WR_ROOMS:-rooms.example.toml}" "$@"
