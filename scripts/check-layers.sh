#!/usr/bin/env bash
# Checks the layer rules in the dependency trees (`cargo tree -e normal`):
# the queue names no HTTP crate and no sqlx; booking names no Redis and no
# HTTP server crate; room names neither store, no HTTP server, and neither
# layer above it. Fails naming the crate, the dependency and the path to it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_rust

# Names a crate must not depend on, directly or through another; a trailing
# `*` matches any name with that start.
declare -A forbidden=(
  [queue]="axum axum-core hyper tower tower-http http http-body sqlx*"
  [booking]="redis axum axum-core hyper hyper-util tower-http"
  [room]="redis sqlx* axum hyper queue booking"
)

failed=0
for crate in room queue booking; do
  # Every package in the crate's normal dependency tree, one name a line.
  names=$(cargo tree -e normal -p "$crate" --prefix none --format '{p}' | awk '{print $1}' | sort -u)
  for rule in ${forbidden[$crate]}; do
    for name in $names; do
      # shellcheck disable=SC2254 # the rule is a glob on purpose
      case "$name" in
        $rule)
          echo "layers: crate \`$crate\` depends on \`$name\`, which it must not; the path:" >&2
          cargo tree -e normal -p "$crate" -i "$name" >&2
          failed=1
          ;;
      esac
    done
  done
done
if [ "$failed" -ne 0 ]; then
  exit 1
fi
echo "layers: room, queue and booking depend on nothing they must not"
