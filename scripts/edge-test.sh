#!/usr/bin/env bash
# The edge's whole test: native unit tests of the gate, the worker built to
# wasm, then end to end in workerd (`wrangler dev`) in front of the real
# origin on a private Redis (tests/edge/gate.test.mjs), and in a real
# browser, Debian's chromium (tests/edge/browser.test.mjs): through the
# waiting page to the seat page the edge gates (/book/concert/, with the
# booking API under /api/concert/), two seats held, paid and booked, in
# English and Korean. Each origin books on a SQLite file in its test's temp
# folder. Screenshots land in target/e2e-artifacts/.
#
# Installs what it needs and is missing: the edge's pinned tools
# (scripts/edge-tools.sh) and, with apt-get, chromium, chromium-driver and
# fonts-noto-cjk (Korean glyphs). Everything listens on 127.0.0.1 only.
#
# Usage: scripts/edge-test.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '\nedge-test: %s\n' "$*" >&2; }
started=$SECONDS

apt_install() {
  local missing=()
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
  dpkg -s fonts-noto-cjk >/dev/null 2>&1 || missing+=(fonts-noto-cjk)
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  ((${#missing[@]})) || return 0
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # The package lists may be stale on a fresh machine: update only if needed.
  apt-get install -y --no-install-recommends "${missing[@]}" \
    || { apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"; }
}

# The node test process kills what it started (its own process groups) on
# exit and on signals; this makes sure it is gone if this script is stopped.
test_pid=""
cleanup() {
  if [[ -n "$test_pid" ]] && kill -0 "$test_pid" 2>/dev/null; then
    kill -TERM "$test_pid" 2>/dev/null || true
    wait "$test_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT INT TERM

apt_install

log "native unit tests (cargo test -p edge)"
cargo test -p edge --quiet

log "building the worker (scripts/edge-build.sh)"
scripts/edge-build.sh

log "building the origin (cargo build -p origin --release)"
cargo build -p origin --release --quiet

log "end to end in workerd and chromium (node --test tests/edge/)"
mkdir -p target/e2e-artifacts
# One file at a time: each starts its own Redis, origin and workerd, and the
# machine has two cores. timeout bounds the whole run.
timeout --signal=TERM 600 node --test --test-concurrency=1 --test-reporter=spec \
  tests/edge/gate.test.mjs tests/edge/browser.test.mjs &
test_pid=$!
wait "$test_pid"
test_pid=""

log "passed in $((SECONDS - started)) s; screenshots in target/e2e-artifacts/"
