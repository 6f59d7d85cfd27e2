#!/usr/bin/env bash
# The edge's whole test: native unit tests of the gate, the worker built to
# wasm, then end to end in workerd (`wrangler dev`) in front of the real
# origin on a private Redis (tests/edge/gate.test.mjs; the site ending a
# visit with Waiting-Room-Command: revoke, tests/edge/revoke.test.mjs), and
# in a real browser, Debian's chromium (tests/edge/browser.test.mjs): through the
# waiting page to the seat page the edge gates (/book/concert/, with the
# booking API under /api/concert/), two seats held, paid and booked, in
# English and Korean; a room's display name, colour and logo, set through
# the origin's admin API, on the edge's waiting page. Each origin books on a
# SQLite file in its test's temp folder. Screenshots land in
# target/e2e-artifacts/.
#
# Installs what it needs and is missing: the edge's pinned tools
# (scripts/edge-tools.sh) and, with apt-get, chromium, chromium-driver and
# fonts-noto-cjk (Korean glyphs). Everything listens on 127.0.0.1 only.
#
# Usage: scripts/edge-test.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
. scripts/lib.sh
log() { printf '\nedge-test: %s\n' "$*" >&2; }
started=$SECONDS

ensure_browser chromedriver=chromium-driver redis-server=redis-server

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
run_guarded timeout --signal=TERM 600 node --test --test-concurrency=1 --test-reporter=spec \
  tests/edge/gate.test.mjs tests/edge/revoke.test.mjs tests/edge/browser.test.mjs

log "passed in $((SECONDS - started)) s; screenshots in target/e2e-artifacts/"
