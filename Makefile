# The two commands the README promises: `make run` and `make test`.
.PHONY: run test setup build release lint unit bench bench-smoke e2e clean

run: build
	./target/debug/sandbox-console

test: build lint unit bench-smoke e2e

setup:
	scripts/setup.sh

build: setup
	scripts/build.sh

release: setup
	scripts/build.sh --release

lint:
	cargo fmt --check
	cargo clippy --features ssr --all-targets -- -D warnings
	cargo clippy --lib --target wasm32-unknown-unknown --no-default-features --features hydrate --target-dir target/front -- -D warnings

# The integration tests run one at a time: run concurrently in one process, one of them was
# seen once to wait forever on a request (see the issue notes); alone, none ever has.
unit:
	cargo test --features ssr --lib --bins
	cargo test --features ssr --test api -- --test-threads=1

# The benchmark harness; writes BENCHMARKS.md (commit it with the machine's numbers).
bench: setup
	RUST_LOG=error cargo run --release --features ssr --example bench -- --out BENCHMARKS.md

# The same harness with a few iterations: it must run, its numbers mean nothing.
bench-smoke:
	RUST_LOG=error cargo run --features ssr --example bench -- --smoke --out target/bench-smoke.md

e2e:
	scripts/e2e.sh

clean:
	cargo clean
	rm -rf end2end/node_modules end2end/test-results
