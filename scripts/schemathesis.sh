#!/usr/bin/env bash
# Property-based tests of the whole HTTP API from its own OpenAPI document:
# starts the origin on a free loopback port (its own Redis key prefix, an
# admin key, the example rooms), runs schemathesis against /openapi.json
# with every check (no 5xx, every response matches the document, bad input
# refused, good input accepted, auth enforced), bounded in examples and
# time, then stops the origin and deletes its keys.
#
# Extra arguments go to `schemathesis run`, e.g. --max-examples 500.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

SCHEMATHESIS_VERSION=4.32.5
# Bounds: test cases per operation and seconds for the whole run (the
# fuzzing and stateful phases repeat until the time is spent).
MAX_EXAMPLES=${WR_ST_MAX_EXAMPLES:-50}
MAX_TIME=${WR_ST_MAX_TIME:-60}
venv=.tools/schemathesis-$SCHEMATHESIS_VERSION
# Hypothesis keeps its example database with the build output, not in the tree.
export HYPOTHESIS_STORAGE_DIRECTORY=target/schemathesis/hypothesis

ensure_redis
command -v python3 >/dev/null || apt_install python3
if [ ! -x "$venv/bin/schemathesis" ]; then
  python3 -c 'import venv, ensurepip' 2>/dev/null || apt_install python3-venv
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

cargo build --quiet -p origin --bin origin

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
prefix="schemathesis:$$:$(date +%s):"
export WR_ST_ADMIN_KEY="st-admin-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
log=target/schemathesis-origin.log
# Booking runs on a SQLite file of this run's own (never the origin's
# default in the working directory), deleted at the end.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/wr-schemathesis-XXXXXX")

# Identity and Turnstile keys, so every setting the schema allows (identity
# or a Turnstile challenge on, too) is one this origin can take. Turnstile's
# verify URL is a closed loopback port: nothing leaves the machine, and a
# Turnstile room answers its joins 428, 403 or 503 as documented.
identity_key="st:$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
env -u WR_DATABASE_URL \
  WR_REDIS_URL=redis://127.0.0.1:6379 WR_REDIS_PREFIX="$prefix" WR_ADMIN_KEY="$WR_ST_ADMIN_KEY" \
  WR_IDENTITY_KEYS="$identity_key" \
  WR_TURNSTILE_SECRET=st-secret WR_TURNSTILE_SITE_KEY=st-site-key \
  WR_TURNSTILE_VERIFY_URL=http://127.0.0.1:9/siteverify \
  WR_ROOMS=scripts/schemathesis-rooms.toml WR_LISTEN="127.0.0.1:$port" RUST_LOG=warn \
  WR_SQLITE_PATH="$scratch/booking.sqlite" \
  target/debug/origin >"$log" 2>&1 &
origin_pid=$!

cleanup() {
  kill "$origin_pid" 2>/dev/null && wait "$origin_pid" 2>/dev/null || true
  rm -rf "$scratch"
  if command -v redis-cli >/dev/null; then
    redis-cli --scan --pattern "${prefix}*" | xargs -r redis-cli del >/dev/null || true
  fi
}
trap cleanup EXIT

export WR_ST_BASE_URL="http://127.0.0.1:$port"
wait_port "$port" origin || { cat "$log" >&2; exit 1; }

"$venv/bin/schemathesis" --config-file scripts/schemathesis.toml run \
  "http://127.0.0.1:$port/openapi.json" \
  --checks all \
  --max-examples "$MAX_EXAMPLES" \
  --max-time "$MAX_TIME" \
  --seed "${WR_ST_SEED:-$RANDOM}" \
  --report-dir target/schemathesis \
  "$@"

# The origin must still be alive and must not have panicked.
kill -0 "$origin_pid"
if grep -E "panicked|handler panicked" "$log" >&2; then
  echo "the origin panicked during the run (see $log)" >&2
  exit 1
fi
