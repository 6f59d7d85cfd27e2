#!/usr/bin/env bash
# An on-sale rehearsal (the `rehearsal` tool, rehearsal/) against an origin
# this script starts on a free loopback port, on a redis-server of its own
# (another free loopback port, no persistence, stopped after: other
# people's Redis traffic stays out of the figures) and MariaDB
# (127.0.0.1:3306, a fresh wr_rehearsal_* database, dropped after). The
# report and chart land in --out (default target/rehearsal/).
#
#   scripts/rehearsal.sh --smoke          # CI: 300 visitors, 200 seats, then 300 browsers of 100 accounts; debug build
#   scripts/rehearsal.sh --edge           # CI: 1,000 visitors through the worker in workerd
#   scripts/rehearsal.sh --full           # BENCHMARKS.md: 20,000 visitors in 10 s, 2,000 seats, release
#   scripts/rehearsal.sh --slow-payment   # BENCHMARKS.md: payment slowed mid-sale, adaptive admission, release
#   scripts/rehearsal.sh --accounts       # 20,000 browsers of 5,000 accounts, identity required, 2 seats each, release
#   scripts/rehearsal.sh --bots           # a pow room: 2,000 people and 20,000 bots that never solve, 200 that do, 500 sharing one solution, release
#   scripts/rehearsal.sh --release -- --visitors 5000 --seats 600   # anything else
#
# Everything after `--` goes to the rehearsal tool (see `rehearsal --help`).
# Extra origin flags: WR_REHEARSAL_ORIGIN_ARGS="--payment-latency-ms 200".
#
# --edge puts the real edge worker in front of the origin, in workerd
# (`wrangler dev`, local and offline, started by tests/edge/serve.mjs the
# way the edge's end-to-end tests start it), gating the room's booking API:
# visitors go through the edge, the tool's admin calls straight to the
# origin. It runs scripts/edge-build.sh, a no-op when the worker is up to
# date (as it is right after scripts/edge-test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

mode=custom
profile=debug
while (($#)); do
  case "$1" in
    --smoke) mode=smoke ;;
    --edge) mode=edge ;;
    --full) mode=full; profile=release ;;
    --slow-payment) mode=slow_payment; profile=release ;;
    --accounts) mode=accounts; profile=release ;;
    --bots) mode=bots; profile=release ;;
    --release) profile=release ;;
    --) shift; break ;;
    *) echo "unknown option $1 (tool flags go after --)" >&2; exit 2 ;;
  esac
  shift
done

ensure_rust
ensure_redis_tools
ensure_mariadb

cargo_flags=(-q)
if [[ $profile == release ]]; then
  # LTO makes the release build minutes longer and the figures no better.
  export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
  cargo_flags+=(--release)
fi
# The worker as edge-test.sh builds it: a no-op when it is up to date.
[[ $mode != edge ]] || scripts/edge-build.sh
cargo build "${cargo_flags[@]}" -p origin -p rehearsal
origin_bin="target/$profile/origin"
rehearsal_bin="target/$profile/rehearsal"
if [[ $mode == edge ]]; then
  # The origin the edge end to end runs (a no-op after it): a debug origin
  # on a busy machine answers 503 when Redis calls pass their 1 s, which
  # is the machine's speed, not what the rehearsal checks.
  cargo build -q --release -p origin
  origin_bin="target/release/origin"
fi

port=$(free_port)
redis_port=$(free_port)
[[ $redis_port != "$port" ]] || redis_port=$(free_port)
edge_port=""
if [[ $mode == edge ]]; then
  edge_port=$(free_port)
  while [[ $edge_port == "$port" || $edge_port == "$redis_port" ]]; do edge_port=$(free_port); done
fi

run_id="$$-$RANDOM"
db="wr_rehearsal_${run_id//-/_}"
prefix="rehearsal-$run_id:"
admin_key="rehearsal-admin-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
signing_keys="r1:$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
# The operator's site's key for identity tokens: the origin checks them
# with it, the tool mints them with it (runs of accounts).
identity_keys="site1:$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
origin_pid=""
redis_pid=""
edge_pid=""
edge_dir=""
cleanup() {
  local pid
  # The edge first (its node process stops wrangler and workerd with it).
  for pid in $edge_pid $origin_pid $redis_pid; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  mariadb -h 127.0.0.1 -u root -e "DROP DATABASE IF EXISTS $db" 2>/dev/null || true
  if [[ -n $edge_dir ]]; then
    # wrangler's and workerd's log beside the report, then their folder.
    mkdir -p target/rehearsal/edge
    cat "$edge_dir/serve.out" "$edge_dir/edge.log" >target/rehearsal/edge/edge.log 2>/dev/null || true
    rm -rf "$edge_dir"
  fi
}
trap cleanup EXIT INT TERM

redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no \
  --dir "${TMPDIR:-/tmp}" >/dev/null 2>&1 &
redis_pid=$!
wait_port "$redis_port" redis-server

mariadb -h 127.0.0.1 -u root -e "CREATE DATABASE $db"
# Held status polls (Prefer: wait) keep a connection open each while the
# sale's last seats are held: every waiter at once, in the tool and in the
# origin. Both may open as many files as the system lets them, and the
# origin's connection and hold caps sit just under that.
files=$(ulimit -Hn)
[[ $files =~ ^[0-9]+$ ]] || files=1048576
ulimit -n "$files" 2>/dev/null || true
max_connections=$((files > 40500 ? 40000 : files - 500))
mkdir -p target/rehearsal
edge_args=()
# The operator's knob on the simulated payment, which the tool turns mid-sale.
knob_args=()
[[ $mode != slow_payment ]] || knob_args=(--payment-knob)
if [[ $mode == edge ]]; then
  edge_secret="rehearsal-edge-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  edge_args=(--edge-secret "$edge_secret")
fi
# shellcheck disable=SC2086 # the extra origin flags are words on purpose
WR_ADMIN_KEY="$admin_key" WR_SIGNING_KEYS="$signing_keys" WR_IDENTITY_KEYS="$identity_keys" \
  RUST_LOG="${RUST_LOG:-warn}" WR_MAX_CONNECTIONS="$max_connections" WR_MAX_HELD_POLLS="$((max_connections - 1000))" \
  "$origin_bin" "${edge_args[@]}" "${knob_args[@]}" --listen "127.0.0.1:$port" --redis-url "redis://127.0.0.1:$redis_port" \
  --redis-prefix "$prefix" --database-url "mysql://root@127.0.0.1:3306/$db" \
  ${WR_REHEARSAL_ORIGIN_ARGS:-} >target/rehearsal/origin.log 2>&1 &
origin_pid=$!
wait_port "$port" origin

target=(--url "http://127.0.0.1:$port")
if [[ $mode == edge ]]; then
  # The edge's ROOMS name the room, so the tool is told which one to create.
  edge_room="rehearsal-edge-$run_id"
  edge_dir=$(mktemp -d "${TMPDIR:-/tmp}/wr-rehearsal-edge-XXXXXX")
  WR_EDGE_ORIGIN_URL="http://127.0.0.1:$port" WR_EDGE_ROOM="$edge_room" WR_EDGE_PORT="$edge_port" \
    WR_EDGE_DIR="$edge_dir" WR_SIGNING_KEYS="$signing_keys" WR_EDGE_SECRET="$edge_secret" \
    node tests/edge/serve.mjs >"$edge_dir/serve.out" 2>&1 &
  edge_pid=$!
  # wrangler's first answer takes a few seconds; serve.mjs gives up after 60.
  for _ in $(seq 1 900); do
    grep -q '^edge ready: ' "$edge_dir/serve.out" && break
    kill -0 "$edge_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q '^edge ready: ' "$edge_dir/serve.out"; then
    echo "the edge did not start:" >&2
    cat "$edge_dir/serve.out" "$edge_dir"/edge.log >&2 2>/dev/null || true
    exit 1
  fi
  target=(--url "http://127.0.0.1:$edge_port" --admin-url "http://127.0.0.1:$port" --room "$edge_room")
fi

case $mode in
  smoke) preset=(--visitors 300 --arrive-within 2 --seats 200 --capacity 60 --admit-per-second 60
    --session-seconds 30 --hold-seconds 10 --abandon-seconds 4 --max-seconds 60 --no-progress --check) ;;
  # Polls every <= 5 s (a third of --abandon-seconds): workerd in wrangler dev
  # and a debug origin share two cores with the tool.
  edge) preset=(--visitors 1000 --arrive-within 10 --seats 400 --capacity 100 --admit-per-second 50
    --session-seconds 60 --hold-seconds 15 --abandon-seconds 15 --max-seconds 150 --no-progress --check
    --out target/rehearsal/edge) ;;
  full) preset=(--visitors 20000 --arrive-within 10 --seats 2000 --abandon-seconds 15 --out docs/rehearsal/full) ;;
  # The full run's sale, its visitors now 1 to 8 browsers each of 5,000
  # accounts, in a room that requires identity; 2 seats per account.
  accounts) preset=(--visitors 20000 --accounts 5000 --max-seats-per-account 2 --arrive-within 10
    --seats 2000 --abandon-seconds 15 --out docs/rehearsal/accounts) ;;
  # A proof-of-work room: 2,000 people, who solve as the page does, and
  # 20,000 bots on the same curve that never solve (each tries 5 times).
  # At 16 bits, not the default 20: the people's 2,000 solves (0.2 s of
  # CPU each at 20 bits) would share this machine's two cores with the
  # origin and the bots for minutes; what bots get does not depend on it.
  bots) preset=(--visitors 2000 --bots 20000 --bot-kind never --challenge pow
    --challenge-bits "${WR_REHEARSAL_BOTS_BITS:-16}" --arrive-within 20 --seats 400 --capacity 100
    --admit-per-second 20 --abandon-seconds 15 --max-seconds 300 --check --out docs/rehearsal/bots) ;;
  # Payment takes 1.5 s from 25 s to 40 s (the arrivals long over): adaptive admission (target p99
  # 400 ms) slows the rate, then brings it back. Seats enough (2,400, about
  # 960 buyers at 20 a second) that the climb back shows at the full rate.
  slow_payment) preset=(--visitors 2000 --arrive-within 10 --seats 2400 --capacity 100 --admit-per-second 20
    --target-booking-p99-ms 400 --slow-payment-ms 1500 --slow-payment-at 25 --slow-payment-for 15
    --hold-seconds 20 --abandon-seconds 15 --max-seconds 180 --out docs/rehearsal/slow-payment) ;;
  *) preset=() ;;
esac
tool_env=(WR_ADMIN_KEY="$admin_key" WR_SIGNING_KEYS="$signing_keys")
[[ $mode != accounts ]] || tool_env+=(WR_REHEARSAL_IDENTITY_KEY="$identity_keys")
env "${tool_env[@]}" "$rehearsal_bin" "${target[@]}" "${preset[@]}" "$@"
if [[ $mode == bots ]]; then
  # Bots that pay: 200, each solving its own seed on 2 threads at the
  # room's default difficulty, one after another (one machine), beside
  # 200 people; the report gives places per CPU second.
  env "${tool_env[@]}" "$rehearsal_bin" "${target[@]}" --room "rehearsal-bots-solve-$run_id" \
    --visitors 200 --bots 200 --bot-kind solve --bot-threads 2 --challenge pow --arrive-within 10 \
    --seats 200 --capacity 100 --admit-per-second 20 --abandon-seconds 15 --max-seconds 600 --check \
    --out docs/rehearsal/bots/solve
  # Bots sharing one solution, each leaving once admitted: one place at
  # most over the whole run (a spent solution gets no second).
  env "${tool_env[@]}" "$rehearsal_bin" "${target[@]}" --room "rehearsal-bots-reuse-$run_id" \
    --visitors 200 --bots 500 --bot-kind reuse --challenge pow --challenge-bits 16 --arrive-within 10 \
    --seats 200 --capacity 100 --admit-per-second 20 --abandon-seconds 15 --max-seconds 300 --check \
    --out docs/rehearsal/bots/reuse
fi
if [[ $mode == smoke ]]; then
  # Accounts, cheaply: 300 browsers of 100 accounts on the same origin, in
  # a room of their own that requires identity, 2 seats per account.
  WR_ADMIN_KEY="$admin_key" WR_SIGNING_KEYS="$signing_keys" WR_REHEARSAL_IDENTITY_KEY="$identity_keys" \
    "$rehearsal_bin" "${target[@]}" --room "rehearsal-accounts-$run_id" --visitors 300 --accounts 100 \
    --max-seats-per-account 2 --arrive-within 2 --seats 100 --capacity 60 --admit-per-second 60 \
    --session-seconds 30 --hold-seconds 10 --abandon-seconds 4 --max-seconds 60 --no-progress --check \
    --out target/rehearsal/accounts
fi
