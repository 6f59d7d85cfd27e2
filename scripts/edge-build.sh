#!/usr/bin/env bash
# Builds the edge worker to edge/build/ (index.js + index_bg.wasm) offline:
# worker-build with the project's own wasm-bindgen, esbuild and wasm-opt
# (scripts/edge-tools.sh installs them) instead of its GitHub downloads.
#
# Usage: scripts/edge-build.sh [--dev] [--force]
#   --dev: unoptimized, faster; --force: rebuild even if the inputs are unchanged
# wrangler.toml's [build] runs this, so `wrangler dev` and `wrangler deploy`
# build the same way.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/edge-tools.sh"

TOOLS="${WR_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/waiting-room/tools}"
export WASM_BINDGEN_BIN="$TOOLS/bin/wasm-bindgen"
# The native esbuild inside its npm package; the .bin shim is a node script
# that does the same more slowly.
ESBUILD_BIN="$ROOT/node_modules/@esbuild/linux-x64/bin/esbuild"
[[ -x "$ESBUILD_BIN" ]] || ESBUILD_BIN="$ROOT/node_modules/.bin/esbuild"
export ESBUILD_BIN
# binaryen from npm (v132); Debian's older wasm-opt rejects current wasm.
export WASM_OPT_BIN="$ROOT/node_modules/.bin/wasm-opt"
# Size over speed for the wasm only: the wasm32 artifacts live apart from
# the origin's native ones in target/, so this changes nothing for it.
export CARGO_PROFILE_RELEASE_OPT_LEVEL="${CARGO_PROFILE_RELEASE_OPT_LEVEL:-s}"

mode=(--release)
force=""
for arg in "$@"; do
  case "$arg" in
    --dev) mode=(--dev) ;;
    --force) force=1 ;;
    *) echo "usage: $0 [--dev] [--force]" >&2; exit 2 ;;
  esac
done

# worker-build reruns wasm-bindgen and wasm-opt (about 20 s) even when
# nothing changed, so skip it when the inputs hash the same as last time.
BUILD="$ROOT/edge/build"
inputs_hash() {
  {
    echo "${mode[*]} $CARGO_PROFILE_RELEASE_OPT_LEVEL"
    cd "$ROOT"
    # Every crate the worker is built from: the edge, the token format and
    # the pages it serves.
    find edge/src token/src pages/src -type f -print0 | sort -z | xargs -0 sha256sum
    sha256sum Cargo.toml Cargo.lock edge/Cargo.toml token/Cargo.toml pages/Cargo.toml \
      package-lock.json
  } | sha256sum | cut -d' ' -f1
}
want="$(inputs_hash)"
if [[ -z "$force" && -f "$BUILD/index.js" && -f "$BUILD/index_bg.wasm" \
      && "$(cat "$BUILD/.inputs-hash" 2>/dev/null)" == "$want" ]]; then
  echo "edge-build: up to date (edge/build/); --force rebuilds" >&2
  exit 0
fi

cd "$ROOT/edge"
"$TOOLS/bin/worker-build" "${mode[@]}"
echo "$want" >"$BUILD/.inputs-hash"
ls -l "$BUILD/index.js" "$BUILD/index_bg.wasm" >&2
