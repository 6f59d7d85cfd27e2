#!/usr/bin/env bash
# Runs the origin on http://127.0.0.1:8080 with the example rooms and a demo
# sale. With no WR_REDIS_URL and no WR_DATABASE_URL it needs nothing
# installed (the embedded queue store, booking in target/demo.sqlite); with
# WR_REDIS_URL=redis://127.0.0.1:6379 the line lives in Redis, with
# WR_DATABASE_URL=mysql://root@127.0.0.1:3306/test booking in MySQL. Extra
# arguments go to the origin, e.g. ./scripts/run.sh --listen 127.0.0.1:9000
#
# The operator's console (/admin/) is usable at once: the admin key is
# WR_ADMIN_KEY when set (or --admin-key when given), otherwise a random key
# made for this run and printed with the console's URL.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_rust
cargo build --release -p origin
export WR_SQLITE_PATH="${WR_SQLITE_PATH:-target/demo.sqlite}"

# Where it listens and whether a key was given, as the origin will read them.
listen="${WR_LISTEN:-127.0.0.1:8080}"
key_given=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --listen) listen="${args[i + 1]:-$listen}" ;;
    --listen=*) listen="${args[i]#--listen=}" ;;
    --admin-key | --admin-key=*) key_given=yes ;;
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
exec target/release/origin --lobby --rooms "${WR_ROOMS:-rooms.example.toml}" "$@"
