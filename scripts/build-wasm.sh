#!/usr/bin/env bash
# Builds the three wasm variants of the SDK into pkg/gen/{full,lite,cookbook} with wasm-pack
# (--target web glue, used by every entry point in pkg/), then shrinks each module with
# wasm-opt from the npm package `binaryen`. wasm-opt is slow, so its output is cached
# by the hash of its input, and each module's wasm-opt runs in the background while the
# next module builds (rustc's fat-LTO link of one codegen unit keeps one core busy; this
# uses the other: about a minute less on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
# Never through clippy-driver (make exports it as the workspace wrapper for the native
# builds, scripts/lint.sh): it turns rustc's MIR optimisations off, and the modules grow
# (measured: lite +1,047 bytes gzip, full +817). Clippy checks wasm32 in scripts/lint.sh.
unset RUSTC_WORKSPACE_WRAPPER
WASM_OPT=node_modules/binaryen/bin/wasm-opt
log() { printf '\033[1;34m[build]\033[0m %s\n' "$*"; }

build_variant() {
  local variant=$1; shift
  local out=pkg/gen/$variant
  log "wasm-pack build ($variant)"
  # wasm-bindgen never removes snippets of JS that moved or went away: start clean, so the
  # package (tests/package/check.mjs) holds only what this build's glue imports.
  rm -rf "$out/snippets"
  wasm-pack --quiet build --target web --release --no-pack --weak-refs --out-dir "$out" --out-name tinker_wasm . "$@"
  rm -f "$out/.gitignore"
  optimize "$variant" "$out/tinker_wasm_bg.wasm" &
  pids+=($!)
}
pids=()

# wasm-opt -Oz in place, cached by the hash of the input.
# --low-memory-unused lets it fold address additions into load/store offsets (about
# 0.7 % of the module): safe because rustc's wasm32 layout puts the 1 MiB stack first,
# growing down towards 0, so no valid address is below 1 KiB unless the stack has
# overflowed anyway.
# --one-caller-inline-max-function-size=30 (binaryen's default inlines every function
# that has one caller, whatever its size): the module grows about 2 % but gzips 3.8 %
# smaller, since wasm-bindgen's export shims no longer each absorb a method body
# (measured on the lite module; issue 8's size budget is on gzip). With -Os instead of
# -Oz and 15 instead of 30, lite gzips 0.3 % smaller again (217,189 -> 216,457 bytes,
# stop 29; -Os with 30: 216,511; -Oz --converge or --gufa: no gain).
optimize() {
  local variant=$1 wasm=$2
  local key cache
  local flags=(-Os --low-memory-unused --one-caller-inline-max-function-size=15
    --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
    --enable-mutable-globals --strip-debug --strip-producers)
  # The cache key covers the flags too: changing them must not reuse an old output.
  key=$( { cat "$wasm"; echo "${flags[*]}"; } | sha256sum | cut -c1-16)
  cache=target/wasm-opt-cache/$variant-$key.wasm
  if [ ! -f "$cache" ]; then
    log "wasm-opt -Oz ($variant)"
    mkdir -p target/wasm-opt-cache
    "$WASM_OPT" "${flags[@]}" "$wasm" -o "$cache.tmp"
    mv "$cache.tmp" "$cache"
  fi
  cp "$cache" "$wasm"
  log "$variant: $(stat -c %s "$wasm") bytes, $(gzip -9c "$wasm" | wc -c) gzip"
}

# The general tokenizer engine (crates/tokenizer-general): its own module, which the full
# package loads on demand (pkg/general-engine.js). Plain cargo + wasm-bindgen: it exports
# a C ABI, and wasm-bindgen only supplies the glue for getrandom's import.
build_general() {
  local out=pkg/gen/general
  log "cargo build (general tokenizer engine)"
  # As a cdylib alone: the crate is an rlib too (the tokenizer crate links it natively),
  # and an rlib exports its generic instantiations, which the optimiser then cannot fold
  # before the link (9 % of this module's bytes; tests/NOTES-issue32-split.md).
  cargo rustc --quiet --release --target wasm32-unknown-unknown -p tinker-tokenizer-general --lib --crate-type cdylib
  wasm-bindgen --target web --out-dir "$out" --out-name tokenizer_general \
    target/wasm32-unknown-unknown/release/tinker_tokenizer_general.wasm
  optimize general "$out/tokenizer_general_bg.wasm" &
  pids+=($!)
}

build_variant full
build_variant lite -- --no-default-features
# tinker-wasm/cookbook: the full module with tinker-cookbook's methods.
build_variant cookbook -- --features cookbook
build_general
# Every background wasm-opt must succeed (set -e does not cover background jobs).
for pid in "${pids[@]}"; do
  wait "$pid"
done
# The TypeScript of the package's own JS parameter objects, from their declarations.
log "pkg/gen/params.d.ts"
node scripts/params-ts.mjs
