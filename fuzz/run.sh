#!/usr/bin/env bash
# Builds and runs the fuzz targets with cargo-fuzz (libFuzzer) on the stable toolchain:
# cargo-fuzz needs nightly-only rustc flags (-Z sanitizer, sancov passes), which stable
# accepts with RUSTC_BOOTSTRAP=1. cargo-fuzz itself comes from crates.io.
#
#   fuzz/run.sh smoke [SECONDS]     every target for SECONDS (default 5) each, without ASan
#                                   (make test-fuzz, in make test: 3 s each)
#   fuzz/run.sh runs N [TARGET…]    N executions per target (default all targets), ASan
#   fuzz/run.sh time SECONDS [TARGET…]                                             ASan
#
# The builds use their own target dirs: their flags differ from the shared target/,
# which they would otherwise rebuild. `runs` and `time` build with ASan
# (sanitizer=address) in fuzz/target; `smoke` builds without a sanitizer in
# target/fuzz-smoke (a cold build takes about half as long; the targets' code is safe
# Rust, where ASan finds little that the panic and timeout checks do not, and it is
# still libFuzzer with coverage guidance). The corpus grows in fuzz/corpus/<target>
# (git-ignored), seeded from fuzz/seeds/<target>.
# Any crash, panic, timeout (>10 s for one input) or OOM (>2 GB) fails the run and
# leaves the input in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1
TARGETS=(proto_forward_backward proto_sample_response retry_headers tinker_path jwt json_types hostile_server tokenizer_json tokenizer_prepared chat_template zstd_round_trip)

if ! command -v cargo-fuzz >/dev/null; then
  cargo install cargo-fuzz --locked --version 0.13.2
fi

mode=${1:-smoke}
shift || true
build=(--release --debug-assertions)
# FUZZ_SANITIZER=none runs `runs`/`time` on the smoke build (faster, no ASan).
[ "${FUZZ_SANITIZER:-address}" = none ] && build+=(-s none --target-dir ../target/fuzz-smoke)
case $mode in
  smoke) arg=(-max_total_time="${1:-5}"); shift || true
    [ "${FUZZ_SANITIZER:-address}" = none ] || build+=(-s none --target-dir ../target/fuzz-smoke)
    # A smoke run is seconds long: a lighter optimisation builds in a fraction of the time
    # (fewer executions per second, the same checks; long runs keep opt-level 3).
    export CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_DEBUG=0 ;;
  runs) arg=(-runs="${1:?N}"); shift ;;
  time) arg=(-max_total_time="${1:?SECONDS}"); shift ;;
  *) echo "usage: $0 smoke [S] | runs N [TARGET…] | time S [TARGET…]" >&2; exit 2 ;;
esac
[ $# -gt 0 ] && TARGETS=("$@")

buildlog=$(mktemp)
if ! cargo fuzz build "${build[@]}" >"$buildlog" 2>&1; then
  cat "$buildlog"
  echo "fuzz build failed" >&2
  exit 1
fi
rm -f "$buildlog"

failed=()
for t in "${TARGETS[@]}"; do
  mkdir -p "corpus/$t"
  log=$(mktemp)
  start=$(date +%s)
  if ! cargo fuzz run "${build[@]}" "$t" "corpus/$t" "seeds/$t" -- \
      "${arg[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "FUZZ FAIL: $t (input in fuzz/artifacts/$t/)" >&2
    rm -f "$log"
    failed+=("$t")
    continue
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  echo "fuzz $t: $execs executions in $(( $(date +%s) - start )) s, no crash"
  rm -f "$log"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
