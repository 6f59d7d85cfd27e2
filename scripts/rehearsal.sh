#!/usr/bin/env bash
# An on-sale rehearsal (the `rehearsal` tool, rehearsal/) against an origin
# this script starts on a free loopback port, on the machine's Redis
# (127.0.0.1:6379, a key prefix of its own, deleted after) and MariaDB
# (127.0.0.1:3306, a fresh wr_rehearsal_* database, dropped after). The
# report and chart land in --out (default target/rehearsal/).
#
#   scripts/rehearsal.sh --smoke          # CI: 300 visitors, 200 seats, debug build, a few seconds
#   scripts/rehearsal.sh --full           # BENCHMARKS.md: 20,000 visitors in 10 s, 2,000 seats, release
#   scripts/rehearsal.sh --release -- --visitors 5000 --seats 600   # anything else
#
# Everything after `--` goes to the rehearsal tool (see `rehearsal --help`).
# Extra origin flags: WR_REHEARSAL_ORIGIN_ARGS="--payment-latency-ms 200".
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

mode=custom
profile=debug
while (($#)); do
  case "$1" in
    --smoke) mode=smoke ;;
    --full) mode=full; profile=release ;;
    --release) profile=release ;;
    --) shift; break ;;
    *) echo "unknown option $1 (tool flags go after --)" >&2; exit 2 ;;
  esac
  shift
done

ensure_rust
ensure_redis
ensure_mariadb

cargo_flags=(-q)
if [[ $profile == release ]]; then
  # LTO makes the release build minutes longer and the figures no better.
  export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
  cargo_flags+=(--release)
fi
cargo build "${cargo_flags[@]}" -p origin -p rehearsal
bin="target/$profile"

port=""
for p in $(shuf -i 23000-23999 -n 100); do
  port_open "$p" || { port=$p; break; }
done
[[ -n $port ]] || { echo "no free port" >&2; exit 1; }

run_id="$$-$RANDOM"
db="wr_rehearsal_${run_id//-/_}"
prefix="rehearsal-$run_id:"
admin_key="rehearsal-admin-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
signing_keys="r1:$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
origin_pid=""
cleanup() {
  if [[ -n $origin_pid ]]; then
    kill -TERM "$origin_pid" 2>/dev/null || true
    wait "$origin_pid" 2>/dev/null || true
  fi
  mariadb -h 127.0.0.1 -u root -e "DROP DATABASE IF EXISTS $db" 2>/dev/null || true
  redis-cli -h 127.0.0.1 -p 6379 --scan --pattern "${prefix}*" 2>/dev/null |
    xargs -r -n 500 redis-cli -h 127.0.0.1 -p 6379 del >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

mariadb -h 127.0.0.1 -u root -e "CREATE DATABASE $db"
mkdir -p target/rehearsal
# shellcheck disable=SC2086 # the extra origin flags are words on purpose
WR_ADMIN_KEY="$admin_key" WR_SIGNING_KEYS="$signing_keys" RUST_LOG="${RUST_LOG:-warn}" \
  "$bin/origin" --listen "127.0.0.1:$port" --redis-url redis://127.0.0.1:6379 \
  --redis-prefix "$prefix" --database-url "mysql://root@127.0.0.1:3306/$db" \
  ${WR_REHEARSAL_ORIGIN_ARGS:-} >target/rehearsal/origin.log 2>&1 &
origin_pid=$!
wait_port "$port" origin

case $mode in
  smoke) preset=(--visitors 300 --arrive-within 2 --seats 200 --capacity 60 --admit-per-second 60
    --session-seconds 30 --hold-seconds 10 --abandon-seconds 4 --max-seconds 60 --no-progress --check) ;;
  full) preset=(--visitors 20000 --arrive-within 10 --seats 2000 --abandon-seconds 4 --out docs/rehearsal/full) ;;
  *) preset=() ;;
esac
WR_ADMIN_KEY="$admin_key" WR_SIGNING_KEYS="$signing_keys" \
  "$bin/rehearsal" --url "http://127.0.0.1:$port" "${preset[@]}" "$@"
