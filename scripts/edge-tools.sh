#!/usr/bin/env bash
# Installs every tool the edge worker needs to build and run offline, pinned,
# skipping what is already there: the cargo-built tools into a per-user cache
# ($WR_TOOLS_DIR, default ~/.cache/waiting-room/tools; each is checked by its
# version, so clones and CI runs on one machine share them and skip the
# ~10 min compile), the npm ones into node_modules/:
#   - worker-build 0.8.7 (cargo install)
#   - wasm-bindgen-cli, EXACTLY the wasm-bindgen version in Cargo.lock
#     (worker-build drives the lockfile's version, not its own)
#   - wrangler (workerd, esbuild), binaryen (wasm-opt) and playwright-core,
#     from package-lock.json with npm ci
# worker-build's defaults download wasm-bindgen, esbuild and wasm-opt from
# outside the registries, which fails here; scripts/edge-build.sh points it at
# these instead. See docs/edge.md.
#
# Usage: scripts/edge-tools.sh   (idempotent; a warm run takes well under 1 s)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${WR_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/waiting-room/tools}"
WORKER_BUILD_VERSION="0.8.7"

log() { printf 'edge-tools: %s\n' "$*" >&2; }

# The wasm-bindgen version pinned by Cargo.lock (the registry package, not a
# path or git one).
lock_version() {
  awk -v want="$1" '
    $0 == "[[package]]" { name = ""; next }
    $1 == "name" { gsub(/"/, "", $3); name = $3; next }
    $1 == "version" && name == want { gsub(/"/, "", $3); print $3; exit }
  ' "$ROOT/Cargo.lock"
}

# cargo install of crate $1 at version $2 providing binary $3, unless
# "$3 --version" already reports $2.
cargo_tool() {
  local crate="$1" version="$2" bin="$3"
  if [[ -x "$TOOLS/bin/$bin" ]] && "$TOOLS/bin/$bin" --version 2>/dev/null | grep -qF "$version"; then
    return 0
  fi
  log "installing $crate $version into $TOOLS (a few minutes on a fresh machine)"
  # --locked: the crate's own lockfile, so the tool builds the same way every time.
  # A private target dir beside the tools keeps this out of the workspace's target/.
  local args=(--quiet --root "$TOOLS" --target-dir "$TOOLS/cargo-target" "$crate" --version "=$version")
  if ! cargo install --locked "${args[@]}"; then
    # A crate whose own lockfile pins a version the registry no longer
    # offers (wasm-bindgen-cli 0.2.130 pins a pulled webpki-roots) cannot
    # install --locked; resolve afresh within its semver ranges instead.
    log "$crate $version does not install --locked here; retrying with a fresh resolve"
    cargo install "${args[@]}"
  fi
}

main() {
  mkdir -p "$TOOLS"

  if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    log "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi

  local bindgen_version
  bindgen_version="$(lock_version wasm-bindgen)"
  if [[ -z "$bindgen_version" ]]; then
    log "no wasm-bindgen in Cargo.lock; run 'cargo generate-lockfile' or build the edge once"
    exit 1
  fi

  cargo_tool worker-build "$WORKER_BUILD_VERSION" worker-build
  cargo_tool wasm-bindgen-cli "$bindgen_version" wasm-bindgen

  # npm ci always wipes node_modules, so run it only when the lockfile changed
  # since the last install (its hash is kept beside the modules).
  local want have=""
  want="$(sha256sum "$ROOT/package-lock.json" | cut -d' ' -f1)"
  [[ -f "$ROOT/node_modules/.edge-tools-lock" ]] && have="$(cat "$ROOT/node_modules/.edge-tools-lock")"
  if [[ "$want" != "$have" || ! -x "$ROOT/node_modules/.bin/wrangler" ]]; then
    log "npm ci (wrangler, binaryen, playwright-core)"
    (cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" >"$ROOT/node_modules/.edge-tools-lock"
  fi

  # The target dir only speeds up a reinstall of another version; it is big.
  rm -rf "$TOOLS/cargo-target"
  log "ready: worker-build $WORKER_BUILD_VERSION, wasm-bindgen $bindgen_version, wrangler $(node -p "require('$ROOT/node_modules/wrangler/package.json').version")"
}

main "$@"
