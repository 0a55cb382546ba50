#!/usr/bin/env bash
# `make lint`: rustfmt, then Clippy's lints, failing on any warning, as
# `cargo clippy --workspace --all-targets -- -D warnings` and its wasm32 runs. The native
# part needs no second compile pass: the Makefile runs every native cargo build with
# clippy-driver as RUSTC_WORKSPACE_WRAPPER, so the workspace's crates are linted while
# they are compiled (dependencies are not: the wrapper applies to workspace members
# only), and cargo keeps each unit's diagnostics and replays them when the unit is fresh.
# So this runs the same commands as `make native` and `cargo test --workspace` (fresh by
# then, or compiled here once for both) and reads what they report: a fresh machine is
# spared Clippy's check pass of the workspace and its native dependencies (measured: 6 of
# the 9 minutes `make lint` took on a fresh clone).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${RUSTC_WORKSPACE_WRAPPER:-}" in
  *clippy-driver) ;;
  *) echo "lint: RUSTC_WORKSPACE_WRAPPER is '${RUSTC_WORKSPACE_WRAPPER:-}', not clippy-driver: run it through make" >&2; exit 2 ;;
esac
cargo fmt --all --check
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
run() {
  printf 'cargo %s\n' "$*"
  cargo "$@" --message-format short >>"$log" 2>&1 || status=1
}
run test --workspace --no-run
run build --workspace --bins --examples
# wasm32 as scripts/build-wasm.sh builds it (full and the cookbook's in one pass: the
# cookbook feature only adds to the full module, no code is compiled without it; lite; the
# general engine), in Clippy's own check pass: those builds cannot run through
# clippy-driver (it changes their code; see there).
run clippy --target wasm32-unknown-unknown -p tinker-wasm -p tinker-support -p tinker-core -p tinker-tokenizer -p tinker-renderers -p tinker-cookbook -p tinker-openai -p tinker-tokenizer-general --lib --features tinker-wasm/cookbook
run clippy --target wasm32-unknown-unknown --lib --no-default-features
if grep -rqE 'not\(feature *= *"cookbook"\)' src crates; then
  echo "lint: code compiled only without the cookbook feature: lint the full module alone again" >&2
  status=1
fi
if grep -E '^(warning|error)|: (warning|error)(\[[^]]*\])?: ' "$log"; then
  echo "lint: the warnings above (the builds' diagnostics)" >&2
  exit 1
fi
if [ $status != 0 ]; then
  cat "$log"
  echo "lint: a build failed" >&2
  exit 1
fi
echo "lint: rustfmt and Clippy clean (the workspace, all targets; wasm32: full, lite, cookbook, general)"
