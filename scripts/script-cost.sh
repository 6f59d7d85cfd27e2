#!/usr/bin/env bash
# Counts the instructions Redis spends on one call of join.lua (a batch of
# new visitors joining a paused room, as the bench's join phase sends them),
# under valgrind's callgrind: counts repeat where timings on a shared
# machine do not (they move by 10 to 20 % between runs here). Each revision
# is measured with its own prelude.lua and join.lua, on a private
# redis-server (a free port, stopped at the end). Loopback only.
#
#   ./scripts/script-cost.sh                  # the working tree
#   ./scripts/script-cost.sh HEAD~1 .         # a revision against the working tree
#   BATCHES="1 20 100" CALLS=200 ./scripts/script-cost.sh
#   KIND=a ./scripts/script-cost.sh           # joins with an account each
#   KIND=s ./scripts/script-cost.sh           # joins with a solved challenge each
#
# KIND is the batch's kind of join, as join.lua's ARGV[3] names them: p
# (plain, the default), a (each with a new account: an identity room), s
# (each with a new solution: a pow room; sent as the origin sends a batch
# whose seeds expire in one minute, a 'w' join then 's' joins; a 'w' takes
# its minute then its solution in revisions whose join.lua reads runs of
# solutions, the other way round before). For a and s every call carries
# fresh accounts or solutions (python3 writes the calls, redis-cli --pipe
# sends them), so each join takes the short way a new one takes.
#
# Prints, per revision and batch size, instructions per call and per join
# (the call's own cost, the protocol included, divided by its joins). The
# line grows by every call, so each count is after a warm-up of 200 calls.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_redis_tools
command -v valgrind >/dev/null || apt_install valgrind

BATCHES=${BATCHES:-"1 32 100"}
CALLS=${CALLS:-200}
KIND=${KIND:-p}
case $KIND in p | a | s) ;; *) echo "KIND is p, a or s" >&2; exit 2 ;; esac
[ "$KIND" = p ] || command -v python3 >/dev/null || apt_install python3
[ $# -gt 0 ] || set -- .

work=$(mktemp -d)
port=$(free_port)
cleanup() {
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/cg.%p" \
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no >"$work/valgrind.log" 2>&1 &
vg=$!
# Under valgrind redis-server takes seconds to start: up to 30 s.
wait_port "$port" "redis-server under callgrind" 300 || { cat "$work/valgrind.log" >&2; exit 1; }
cli=(redis-cli -p "$port")

# The script text of revision $1 ('.' is the working tree): prelude, then join.
script_of() {
  # Where the scripts live in that revision (the queue left origin/ once).
  local lua=queue/src/redis/lua
  if [ "$1" != . ] && ! git cat-file -e "$1:$lua/join.lua" 2>/dev/null; then
    lua=origin/src/queue/redis/lua
  fi
  if [ "$1" = . ]; then
    cat "$lua/prelude.lua"; echo; cat "$lua/join.lua"
  else
    git show "$1:$lua/prelude.lua"; echo; git show "$1:$lua/join.lua"
  fi
}

keys=()
for k in room waiting seen active holding marks held-by present stale \
  polled:0 polled:1 polled:2 polled:3 polled:4 polled:5 polled:6 polled:7 departed; do
  keys+=("cost:wr:{r}:$k")
done

# $CALLS calls of join.lua (sha $1) with batches of $2 joins of kind $KIND,
# each with accounts or solutions of its own, as RESP for redis-cli --pipe.
calls_of() {
  python3 - "$1" "$2" "$3" "$KIND" "$minutes" "$minute_first" "${keys[@]}" <<'PY'
import os, sys, time
sha, batch, calls, kind = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
minutes, keys = sys.argv[5] == 'yes', sys.argv[7:]
minute_first = sys.argv[6] == 'yes'
window = str(int(time.time()) // 60 + 5)
def resp(args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else a.encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)
w = sys.stdout.buffer
# Solutions as the origin sends a batch whose seeds expire in one minute:
# the first 'w' (its minute and its solution, in the order the revision
# reads them), the rest 's' (the solution);
# before 'w', every 's' carried its minute.
kinds = kind * batch if kind == 'a' or not minutes else 'w' + 's' * (batch - 1)
for _ in range(calls):
    args = ['EVALSHA', sha, str(len(keys)), *keys, '', '1099511627776', kinds, 'ab' * 16]
    for i in range(batch):
        if kind == 'a' or (minutes and i > 0):
            args += [os.urandom(8)]
        elif minutes and minute_first:
            args += [window, os.urandom(8)]
        else:
            args += [os.urandom(8), window]
    w.write(resp(args))
PY
}

# $1 calls of the batch being measured: plain joins repeat one call (a
# plain join carries nothing of its own); the other kinds get fresh ones.
send_calls() {
  if [ "$KIND" = p ]; then
    "${cli[@]}" -r "$1" evalsha "$sha" 18 "${keys[@]}" "${args[@]}" >/dev/null
  else
    calls_of "$sha" "$batch" "$1" | "${cli[@]}" --pipe >/dev/null
  fi
}

echo "| revision | kind | joins a call | instructions a call | a join |"
echo "|---|---|---:|---:|---:|"
for rev in "$@"; do
  script=$(script_of "$rev")
  sha=$("${cli[@]}" script load "$script")
  # Since the batch's kinds (ARGV[3]), a plain join sends nothing of its
  # own (between 8a432d7 and f7b819d it sent its draw, which this leaves
  # out: those revisions count a little low); before, every join sent four
  # arguments.
  kinds=no
  case $script in *"kinds = ARGV[3]"*) kinds=yes ;; esac
  # Since 'w' joins, an 's' join's minute is the last 'w' join's; since
  # runs of solutions, a 'w' join sends its minute first.
  minutes=no
  case $script in *"kind == 119"*) minutes=yes ;; esac
  minute_first=no
  case $script in *"read_run"*) minute_first=yes ;; esac
  for batch in $BATCHES; do
    "${cli[@]}" flushall >/dev/null
    # A paused room, as the bench's join phase: every join takes a place.
    "${cli[@]}" hset 'cost:wr:{r}:room' state paused capacity 1000 rate 100 \
      session_ms 600000 abandon_ms 60000 base 1000000 seats available method fifo >/dev/null
    if [ "$KIND" = p ]; then
      # '' clock (Redis TIME), the pre-queue span; before the kinds, per
      # join: no ticket, a draw, no client, no cap (as the origin sent a
      # join without a cap).
      args=('' 1099511627776)
      if [ $kinds = yes ]; then
        # The kinds, then the batch's draw seed; a plain join sends nothing.
        args+=("$(printf 'p%.0s' $(seq "$batch"))" "$(printf 'ab%.0s' $(seq 16))")
      else
        for i in $(seq "$batch"); do args+=('' $((RANDOM * 32768 + RANDOM)) '' 0); done
      fi
    else
      [ $kinds = yes ] || { echo "$rev: no batch kinds in its join.lua" >&2; exit 1; }
    fi
    send_calls 200
    callgrind_control -i on "$vg" >/dev/null 2>&1
    callgrind_control -z "$vg" >/dev/null 2>&1
    send_calls "$CALLS"
    callgrind_control -d "$vg" >/dev/null 2>&1
    callgrind_control -i off "$vg" >/dev/null 2>&1
    dump=$(ls -t "$work"/cg.* | head -1)
    total=$(awk '/^(summary|totals):/ {t=$2} END {print t}' "$dump")
    per_call=$((total / CALLS))
    echo "| $rev | $KIND | $batch | $per_call | $((per_call / batch)) |"
  done
done
