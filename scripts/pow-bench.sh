#!/usr/bin/env bash
# The join challenge's difficulty table: the waiting page's proof-of-work
# solver timed in headless Chromium (tests/origin/pow-bench.mjs), N random
# seeds per difficulty, median and p95 solve time and hashes per second.
# Installs chromium and the pinned JavaScript tools when missing.
#
# Usage: scripts/pow-bench.sh [--n 20] [--bits 12,16,18,20,22] [--mode subtle] [--inline]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_browser
[[ -d node_modules/playwright-core ]] || scripts/edge-tools.sh
exec timeout --signal=TERM 1800 node tests/origin/pow-bench.mjs "$@"
