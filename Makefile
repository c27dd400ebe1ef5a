# The two commands the README promises: `make run` and `make test`.
.PHONY: run test check busy-check setup build release lint unit bench bench-smoke e2e clean docker docker-check deploy-check postgres sshd runtime-image fmt lint-ssr lint-hydrate lanes front-lane server-lane unit-sqlite unit-postgres suite-lane browser-lane unit-load

# Compiled dependencies are cached across clones and runs by sccache (scripts/setup.sh installs
# it): a fresh clone compiles only this crate. Without it (the first run on a machine), cargo
# compiles everything, as it would anyway.
export RUSTC_WRAPPER ?= $(shell command -v sccache 2>/dev/null)

# The default environment (numpy, pandas, matplotlib, requests; axios) is built first, with its
# log on the terminal, so the first trial can import pandas; if it cannot be built (no network),
# the console still starts and runs use the bare interpreter.
run: build
	./target/debug/sandbox-console env build default --if-needed || echo "make run: the default environment is not built; runs use the bare interpreter"
	./target/debug/sandbox-console

# dockerd (the docker provider's tests need a real one), a private PostgreSQL cluster (the
# suite's second pass) and an sshd on a loopback port (the ssh provider's) are started for the
# run and stopped again afterwards if this run started them. A bystander console (scripts/bystander.sh: local and docker runs in a loop)
# runs beside the whole suite, as another console on the same machine would: the tests must
# mind only what they made, and every one of its runs must succeed. Leftover sandbox
# containers or shims of consoles that are gone fail the run. Once compiled, two lanes run side
# by side (each leaves most of a core idle while it waits on sandboxes and browsers): the unit
# tests and the integration suite on SQLite then PostgreSQL; the browser tests, the deployment
# checks and the benchmark smoke run. The load tests come last, with the machine to themselves:
# the bystander is stopped (and its runs checked) before them. Beside it, a docker save every
# second starved gVisor runs (16 answered in 270 s, CI34 and by hand), where alone they pass.
# Every cargo command of the run compiles this crate through scripts/clippy-rustc (see `lanes`),
# so none compiles it a second time without.
test: export RUSTC_WORKSPACE_WRAPPER := $(CURDIR)/scripts/clippy-rustc
test: setup fmt lanes
	@if scripts/docker.sh running; then docker=keep; else docker=stop; fi; \
	if scripts/postgres.sh running; then postgres=keep; else postgres=stop; fi; \
	if scripts/sshd.sh running; then sshd=keep; else sshd=stop; fi; \
	trap 'scripts/bystander.sh stop >/dev/null 2>&1 || true; if [ -n "$$RUSTC_WRAPPER" ]; then $$RUSTC_WRAPPER --stop-server >/dev/null 2>&1 || true; fi; if [ $$docker = stop ]; then scripts/docker.sh down; fi; if [ $$postgres = stop ]; then scripts/postgres.sh down; fi; if [ $$sshd = stop ]; then scripts/sshd.sh down; fi' EXIT; \
	scripts/docker.sh up || exit 1; \
	scripts/postgres.sh up || exit 1; \
	scripts/sshd.sh up || exit 1; \
	scripts/bystander.sh start --minutes 60 || exit 1; \
	$(MAKE) --no-print-directory -j2 suite-lane browser-lane && scripts/bystander.sh stop && \
	$(MAKE) --no-print-directory unit-load && scripts/docker.sh check

# `make test`'s first lane after the compile: the unit tests, then the integration suite on
# SQLite (all but the load tests), then on PostgreSQL.
suite-lane: docker postgres sshd
	cargo nextest run --features ssr --lib --bins
	cargo nextest run --features ssr --test api --profile shared
	$(MAKE) --no-print-directory unit-postgres

# The second: the browser tests, the deployment checks, the benchmark smoke run, one after
# another (`-j1`: without it the sub-make shares the -j2 of `make test` and, once the suite lane
# has ended, runs the benchmark beside the browser tests).
browser-lane: docker postgres sshd
	$(MAKE) --no-print-directory -j1 e2e deploy-check bench-smoke

# The load tests (nextest's `load` profile), one at a time with nothing else of the suite.
unit-load: docker
	cargo nextest run --features ssr --test api --profile load

# The compiling of `make test` in two lanes side by side, one per core, each in a target
# directory of its own: the browser bundle; the server with every test and example binary.
# This crate's targets are compiled by clippy-driver (scripts/clippy-rustc), which compiles as
# rustc does and lints on the way, every warning an error: the one compile is also the lint of
# `make lint` (clippy on the ssr build with every target, and on the hydrate build), without a
# second pass over the crate.
lanes front-lane server-lane: export RUSTC_WORKSPACE_WRAPPER := $(CURDIR)/scripts/clippy-rustc
lanes:
	$(MAKE) --no-print-directory -j2 front-lane server-lane

front-lane:
	scripts/build.sh front

server-lane:
	cargo build --features ssr --all-targets

# The edit loop: formatting, both lints, the unit tests and the integration tests that need
# neither dockerd nor PostgreSQL (nextest's `check` profile). A few minutes when warm. As in
# `make test`, the ssr build with every target is compiled by clippy-driver (its lint on the
# way, and the same artifacts `make test` uses); the hydrate lint is clippy's check beside it.
check: export RUSTC_WORKSPACE_WRAPPER := $(CURDIR)/scripts/clippy-rustc
check: fmt sshd
	$(MAKE) --no-print-directory -j2 server-lane lint-hydrate
	cargo nextest run --features ssr --lib --bins
	cargo nextest run --features ssr --test api --profile check

# The integration suite on SQLite with both cores pinned by two busy loops: a test that holds
# only on an idle machine fails here. Run it before resolving an issue that touched tests.
busy-check: export RUSTC_WORKSPACE_WRAPPER := $(CURDIR)/scripts/clippy-rustc
busy-check: docker postgres sshd
	@loops=; for core in 1 2; do sh -c 'while :; do :; done' & loops="$$loops $$!"; done; \
	trap 'kill $$loops 2>/dev/null || true' EXIT; \
	cargo nextest run --features ssr --test api

setup:
	scripts/setup.sh

build: setup
	scripts/build.sh

release: setup
	scripts/build.sh --release

lint: fmt lint-ssr lint-hydrate

fmt:
	cargo fmt --check

lint-ssr:
	cargo clippy --features ssr --all-targets -- -D warnings

lint-hydrate:
	cargo clippy --lib --target wasm32-unknown-unknown --no-default-features --features hydrate --target-dir target/front -- -D warnings

# Unit tests, then the integration suite under cargo-nextest (.config/nextest.toml): each
# test a process of its own, four at a time, each ended and named after four minutes. It
# runs on SQLite files, then on PostgreSQL (a schema per test) for the tests that touch a
# database.
unit: unit-sqlite unit-postgres

unit-sqlite: docker postgres sshd
	cargo nextest run --features ssr --lib --bins
	cargo nextest run --features ssr --test api

unit-postgres: docker postgres sshd
	SANDBOX_CONSOLE_TEST_POSTGRES="$$(scripts/postgres.sh url)" cargo nextest run --features ssr --test api --profile postgres

# The benchmark harness; writes BENCHMARKS.md (commit it with the machine's numbers). The
# replica load runs on the private PostgreSQL cluster (left running, like dockerd).
bench: setup docker postgres
	RUST_LOG=error cargo run --release --features ssr --example bench -- --out BENCHMARKS.md --postgres "$$(scripts/postgres.sh url)"

# The same harness with a few iterations: it must run, its numbers mean nothing.
bench-smoke: docker postgres
	RUST_LOG=error cargo run --features ssr --example bench -- --smoke --out target/bench-smoke.md --postgres "$$(scripts/postgres.sh url)"

e2e: docker sshd
	scripts/e2e.sh

# Installs docker.io and runsc if missing, registers gVisor, starts dockerd, builds the image.
docker:
	scripts/docker.sh up

docker-check:
	scripts/docker.sh check

# The deployment files checked offline (schemas, linters, cross-checks), the console's image
# built on the local dockerd, and run as two replicas on PostgreSQL behind Caddy.
deploy-check: docker postgres
	scripts/deploy.sh all

# Installs PostgreSQL 15 if missing and starts a private cluster on a unix socket.
postgres:
	scripts/postgres.sh up

# Installs openssh-server if missing and starts sshd on 127.0.0.1:22022 with a test account
# (the ssh provider's tests and its browser test run against it).
sshd:
	scripts/sshd.sh up

# Rebuilds sandbox-runtime:local from this host's python3.11 and node (no registry needed).
runtime-image: docker
	scripts/docker.sh image

clean:
	cargo clean
	rm -rf end2end/node_modules end2end/test-results
