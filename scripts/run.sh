#!/usr/bin/env bash
# Runs the origin on http://127.0.0.1:8080 with the example rooms, on the
# local Redis (started, or installed from Debian, when missing). Extra
# arguments go to the origin, e.g. ./scripts/run.sh --listen 127.0.0.1:9000
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_rust
ensure_redis
cargo build --release -p origin
exec target/release/origin \
  --redis-url "${WR_REDIS_URL:-redis://127.0.0.1:6379}" \
  --rooms "${WR_ROOMS:-rooms.example.toml}" \
  "$@"
