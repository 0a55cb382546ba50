#!/usr/bin/env bash
# `make lint`: rustfmt, then Clippy's lints for every target the builds compile, without a
# second compile pass. The Makefile runs every cargo build with clippy-driver as
# RUSTC_WORKSPACE_WRAPPER: the workspace's crates are linted while they are compiled
# (dependencies are not: the wrapper applies to workspace members only), and cargo keeps
# each unit's diagnostics and replays them when the unit is fresh. So this runs the same
# commands as `make native`, `cargo test --workspace` and scripts/build-wasm.sh (fresh by
# then, or compiled here once for all of them) and fails on any warning, as
# `cargo clippy --workspace --all-targets -- -D warnings` and its wasm32 runs did; a
# fresh machine is spared clippy's own check pass of the workspace and its dependencies
# (measured: about 9 minutes of one core's 38-minute lane).
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
# scripts/build-wasm.sh's builds (wasm32: full, lite, cookbook, the general engine), as it
# logged them: its three variants share the root crate's fingerprint, so a replay here
# would compile two of them again.
for v in full lite cookbook general; do
  f=target/wasm-diagnostics/$v.log
  [ -f "$f" ] || { echo "lint: $f is missing: run scripts/build-wasm.sh (make wasm) first" >&2; exit 2; }
  head -1 "$f" | grep -q '^# wrapper: .*clippy-driver$' || { echo "lint: $f: that build did not run Clippy (run make wasm)" >&2; exit 2; }
  cat "$f" >>"$log"
done
if grep -E '^(warning|error)|: (warning|error)(\[[^]]*\])?: ' "$log"; then
  echo "lint: the warnings above (the builds' diagnostics)" >&2
  exit 1
fi
if [ $status != 0 ]; then
  cat "$log"
  echo "lint: a build failed" >&2
  exit 1
fi
echo "lint: rustfmt and clippy clean (workspace, all targets; wasm32 full, lite, cookbook, general)"
