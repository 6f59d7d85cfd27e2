#!/usr/bin/env bash
# Runs the origin on http://127.0.0.1:8080 with the example rooms and a demo
# sale. With no WR_REDIS_URL and no WR_DATABASE_URL it needs nothing
# installed (the embedded queue store, booking in target/demo.sqlite); with
# WR_REDIS_URL=redis://127.0.0.1:6379 the line lives in Redis, with
# WR_DATABASE_URL=mysql://root@127.0.0.1:3306/shop booking in MySQL (the
# database is created when missing). It starts neither Redis nor MySQL: they
# must be running. Either way the room `concert` gets the demo performance
# on a first start. Extra arguments go to the origin, e.g.
# ./scripts/run.sh --listen 127.0.0.1:9000
#
# --crowd (not passed to the origin) also plays a crowd of 400 visitors
# into a room `crowd` over two minutes (the rehearsal tool, log in
# target/crowd.log), so a visitor opening /waiting-room/crowd stands in a
# real line and sees it move.
#
# The operator's console (/admin/) is usable at once: the admin key is
# WR_ADMIN_KEY when set (or --admin-key when given), otherwise a random key
# made for this run and printed with the console's URL.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

crowd=""
args=()
for arg in "$@"; do
  if [[ $arg == --crowd ]]; then crowd=yes; else args+=("$arg"); fi
done
set -- "${args[@]+"${args[@]}"}"

ensure_rust
cargo build --release -p origin ${crowd:+-p rehearsal}
export WR_SQLITE_PATH="${WR_SQLITE_PATH:-target/demo.sqlite}"

# Where it listens and whether a key was given, as the origin will read them.
listen="${WR_LISTEN:-127.0.0.1:8080}"
key_given=""
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --listen) listen="${args[i + 1]:-$listen}" ;;
    --listen=*) listen="${args[i]#--listen=}" ;;
    --admin-key) key_given="${args[i + 1]:-}" ;;
    --admin-key=*) key_given="${args[i]#--admin-key=}" ;;
  esac
done

base="http://$listen"
echo "origin: open $base/ (the rooms, their waiting pages, the seat page)"
if [[ -n "$key_given" ]]; then
  echo "console: $base/admin/ (admin key: the --admin-key given)"
elif [[ -n "${WR_ADMIN_KEY:-}" ]]; then
  echo "console: $base/admin/ (admin key: \$WR_ADMIN_KEY)"
else
  WR_ADMIN_KEY="$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
  export WR_ADMIN_KEY
  echo "console: $base/admin/ with the admin key made for this run: $WR_ADMIN_KEY"
fi
if [[ -n "${WR_REDIS_URL:-}${WR_DATABASE_URL:-}" ]]; then
  echo "using ${WR_REDIS_URL:+Redis at $WR_REDIS_URL}${WR_REDIS_URL:+${WR_DATABASE_URL:+ and }}${WR_DATABASE_URL:+the database at ${WR_DATABASE_URL%%\?*}}: this script starts neither; they must be running"
fi
origin=(target/release/origin --lobby --demo --rooms "${WR_ROOMS:-rooms.example.toml}" "$@")
[[ -n "$crowd" ]] || exec "${origin[@]}"

"${origin[@]}" &
origin_pid=$!
trap 'kill "$origin_pid" 2>/dev/null' EXIT INT TERM
for _ in $(seq 100); do
  curl -fs "$base/healthz" >/dev/null 2>&1 && break
  kill -0 "$origin_pid" 2>/dev/null || exit 1
  sleep 0.2
done
echo "crowd: 400 visitors join the room 'crowd' over two minutes (30 inside at once, 2 let in a second);"
echo "crowd: open $base/waiting-room/crowd to stand in line with them (log: target/crowd.log)"
target/release/rehearsal --url "$base" --admin-key "${key_given:-$WR_ADMIN_KEY}" --room crowd \
  --visitors 400 --arrive-within 120 --capacity 30 --admit-per-second 2 --session-seconds 60 \
  --abandon-seconds 30 --seats 1000 --max-seconds 600 --out target/crowd >target/crowd.log 2>&1 &
crowd_pid=$!
trap 'kill "$crowd_pid" "$origin_pid" 2>/dev/null' EXIT INT TERM
wait "$origin_pid"
