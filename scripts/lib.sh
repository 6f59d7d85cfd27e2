#!/usr/bin/env bash
# Shared by the project's scripts: install and start what the project needs,
# skipping whatever is already there. Sourced, not run.

# Runs a command as root (directly, or through sudo when there is one).
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root to run: $*" >&2; return 1
  fi
}

# Installs Debian packages, refreshing the package lists only when needed.
apt_install() {
  echo "installing from Debian: $*" >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" ||
    { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"; }
}

# True when something accepts TCP connections on 127.0.0.1:$1.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# A loopback port nothing listens on now.
free_port() {
  local p
  for p in $(shuf -i 23000-23999 -n 100); do
    port_open "$p" || { echo "$p"; return 0; }
  done
  echo "no free port" >&2
  return 1
}

# Waits for $2 to listen on port $1, up to $3 tenths of a second (100).
wait_port() {
  local port=$1 what=$2 tries=${3:-100}
  for _ in $(seq 1 "$tries"); do
    port_open "$port" && return 0
    sleep 0.1
  done
  echo "$what did not start on port $port" >&2
  return 1
}

# redis-server and redis-cli on PATH: the cluster, fault and persistence
# tests and the benchmark start their own servers with them.
ensure_redis_tools() {
  command -v redis-server >/dev/null || apt_install redis-server
  command -v redis-cli >/dev/null || apt_install redis-tools
}

# Redis on 127.0.0.1:6379, without persistence (the project's tests own no data).
ensure_redis() {
  ensure_redis_tools
  port_open 6379 && return 0
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
  wait_port 6379 Redis
}

# mariadbd and mariadb-install-db: the booking database's fault test starts
# its own server with them, also where 3306 is someone else's MariaDB.
ensure_mariadb_tools() {
  [ -x /usr/sbin/mariadbd ] && command -v mariadb-install-db >/dev/null || apt_install mariadb-server
}

# MariaDB on 127.0.0.1:3306 (booking uses it).
ensure_mariadb() {
  ensure_mariadb_tools
  port_open 3306 && return 0
  as_root mkdir -p /run/mysqld && as_root chown mysql:mysql /run/mysqld 2>/dev/null || true
  as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
  wait_port 3306 MariaDB
}

# The Rust toolchain pinned in rust-toolchain.toml (rustup installs it and
# its wasm32 target on first use).
ensure_rust() {
  if ! command -v cargo >/dev/null; then
    echo "cargo not found: install rustup (https://rustup.rs), then run this again" >&2
    return 1
  fi
  rustup show active-toolchain >/dev/null 2>&1 || rustup toolchain install
  rustup target list --installed 2>/dev/null | grep -q wasm32-unknown-unknown ||
    rustup target add wasm32-unknown-unknown
}

# What the browser tests need from Debian and is missing, in one install:
# chromium and fonts-noto-cjk (Korean glyphs), and for each `command=package`
# given, the package when the command is not on PATH.
ensure_browser() {
  local missing=() pair
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  dpkg -s fonts-noto-cjk >/dev/null 2>&1 || missing+=(fonts-noto-cjk)
  for pair in "$@"; do
    command -v "${pair%%=*}" >/dev/null 2>&1 || missing+=("${pair#*=}")
  done
  ((${#missing[@]} == 0)) || apt_install "${missing[@]}"
}

# Runs a command in the background and waits for it, failing as it fails.
# If this script exits or is stopped first, the command is sent TERM and
# waited for: a node test process stops what it started (its own process
# groups) on signals, so nothing it started outlives the script.
guarded_pid=""
stop_guarded() {
  if [[ -n "$guarded_pid" ]] && kill -0 "$guarded_pid" 2>/dev/null; then
    kill -TERM "$guarded_pid" 2>/dev/null || true
    wait "$guarded_pid" 2>/dev/null || true
  fi
}
run_guarded() {
  trap stop_guarded EXIT INT TERM
  "$@" &
  guarded_pid=$!
  wait "$guarded_pid"
  guarded_pid=""
}
