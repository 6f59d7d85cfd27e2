#!/usr/bin/env bash
# Builds the edge worker to edge/build/ (index.js + index_bg.wasm) offline:
# worker-build with the project's own wasm-bindgen, esbuild and wasm-opt
# (scripts/edge-tools.sh installs them) instead of its GitHub downloads.
#
# Usage: scripts/edge-build.sh [--dev]   (--dev: unoptimized, faster)
# wrangler.toml's [build] runs this, so `wrangler dev` and `wrangler deploy`
# build the same way.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/edge-tools.sh"

export WASM_BINDGEN_BIN="$ROOT/.tools/bin/wasm-bindgen"
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
if [[ "${1:-}" == "--dev" ]]; then
  mode=(--dev)
fi

cd "$ROOT/edge"
"$ROOT/.tools/bin/worker-build" "${mode[@]}"
ls -l "$ROOT/edge/build/index.js" "$ROOT/edge/build/index_bg.wasm" >&2
