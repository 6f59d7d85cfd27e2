#!/usr/bin/env bash
# The whole flow on one machine, without the edge: Debian's chromium (driven
# by playwright-core) against the origin binary alone on its embedded store
# (tests/origin/flow.test.mjs): the room list, the waiting page, admission,
# the seat page, a hold, a declined card, a booking (English and Korean) on
# the real booking API, each origin on a SQLite file in its own temp folder;
# and the seat page's script against a stand-in booking API
# (tests/origin/seats.test.mjs); the waiting page's join challenge against a
# stand-in join (tests/origin/challenge.test.mjs: proof of work in a worker,
# a stale seed, Turnstile); and the operator's console at /admin/
# (tests/origin/console.test.mjs): the key, a filling line, pause, a refused
# and an accepted rate, resume, close. Screenshots land in
# target/e2e-artifacts/.
#
# Installs what it needs and is missing: chromium and fonts-noto-cjk (Korean
# glyphs) with apt-get, and the pinned JavaScript tools (npm ci, through
# scripts/edge-tools.sh) when playwright-core is absent. Everything listens on
# 127.0.0.1 only. ORIGIN_BIN picks another origin binary (default: a debug
# build, which is quick to make and fast enough for one browser).
#
# Usage: scripts/flow-test.sh
#        scripts/flow-test.sh --pow-bench [args]   (the solver's difficulty
#        table instead: scripts/pow-bench.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--pow-bench" ]]; then
  shift
  exec scripts/pow-bench.sh "$@"
fi
. scripts/lib.sh
log() { printf '\nflow-test: %s\n' "$*" >&2; }
started=$SECONDS

ensure_browser
[[ -d node_modules/playwright-core ]] || scripts/edge-tools.sh

if [[ -z "${ORIGIN_BIN:-}" ]]; then
  log "building the origin (cargo build -p origin)"
  cargo build -p origin --quiet
  export ORIGIN_BIN="$PWD/target/debug/origin"
fi

log "chromium against the origin alone (node --test tests/origin/)"
mkdir -p target/e2e-artifacts
run_guarded timeout --signal=TERM 300 node --test --test-concurrency=1 --test-reporter=spec \
  tests/origin/flow.test.mjs tests/origin/seats.test.mjs tests/origin/challenge.test.mjs \
  tests/origin/console.test.mjs

log "passed in $((SECONDS - started)) s; screenshots in target/e2e-artifacts/"
