# tinker-wasm — the two commands a new user needs:
#   make demo   set up everything, build, start a local Tinker simulator, fine-tune, sample
#   make test   set up everything, build, run every test suite
# Everything is installed by scripts/setup.sh from the package registries, idempotently.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
export CARGO_TERM_COLOR ?= never

.PHONY: all setup build wasm demo test lint test-rust test-js test-node test-browser test-workerd typecheck clean

all: build

setup:
	@scripts/setup.sh

wasm: setup
	@scripts/build-wasm.sh

build: wasm

demo: build
	node examples/demo.mjs

lint: setup
	cargo fmt --all --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --target wasm32-unknown-unknown --lib -- -D warnings
	cargo clippy --target wasm32-unknown-unknown --lib --no-default-features -- -D warnings

typecheck: wasm
	node_modules/.bin/tsc -p tests/types/tsconfig.json

test-rust: setup
	cargo test --workspace

test-node: wasm
	node --test tests/js/node.test.mjs

test-browser: wasm
	node tests/js/run-browser.mjs

test-workerd: wasm
	node tests/js/run-workerd.mjs

test-js: test-node test-browser test-workerd

test: lint test-rust typecheck test-js
	@echo "make test: all suites passed"

clean:
	cargo clean
	rm -rf pkg/gen tests/js/.out
