#!/usr/bin/env bash
#! Runs the Playwright suite (JS on and JS off) against a freshly started server with its own
#! temporary data directory. Expects scripts/build.sh to have run.
#! Usage: scripts/e2e.sh [path/to/sandbox-console]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --e2e

bin=${1:-target/debug/sandbox-console}
[ -x "$bin" ] || { echo "e2e: $bin not found; run scripts/build.sh first" >&2; exit 1; }
data=$(mktemp -d)
log="$data/server.log"
fakes_log="$data/fakes.log"

pid=
fakes_pid=
cleanup() {
  kill $pid $fakes_pid 2>/dev/null || true
  wait $pid $fakes_pid 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT

# The remote providers' contract fakes (test code: E2B, AgentRun, RAGFlow's executor manager).
cargo build --features ssr --example fake_services -q
target/debug/examples/fake_services >"$fakes_log" 2>&1 &
fakes_pid=$!
password="e2e-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"

# Environment builds go to a store outside the clone, shared by every run on this machine: the
# default environment (numpy, pandas, matplotlib, requests; axios) is downloaded and built once,
# before the server starts, so no test waits for it.
export SANDBOX_CONSOLE_ENVIRONMENT_STORE=${SANDBOX_CONSOLE_ENVIRONMENT_STORE:-$HOME/.cache/sandbox-console/environments}
RUST_LOG=warn,libcgroups=error "$bin" --data-dir "$data" env build default --if-needed >"$data/default-env.log" 2>&1 \
  || { echo "e2e: the default environment did not build:"; cat "$data/default-env.log"; exit 1; }

ADMIN_USERNAME=admin ADMIN_PASSWORD="$password" RUST_LOG=${RUST_LOG:-warn,libcgroups=error} \
  "$bin" --listen 127.0.0.1:0 --data-dir "$data" >"$log" 2>&1 &
pid=$!

address=
for _ in $(seq 1 200); do
  address=$(sed -n 's/^sandbox-console listening on //p' "$log")
  [ -n "$address" ] && break
  kill -0 "$pid" 2>/dev/null || { echo "e2e: the server exited:"; cat "$log"; exit 1; }
  sleep 0.1
done
[ -n "$address" ] || { echo "e2e: the server did not start:"; cat "$log"; exit 1; }
echo "e2e: server at $address"

fakes=
for _ in $(seq 1 100); do
  fakes=$(head -n1 "$fakes_log" 2>/dev/null | grep '^{' || true)
  [ -n "$fakes" ] && break
  kill -0 "$fakes_pid" 2>/dev/null || { echo "e2e: the fakes exited:"; cat "$fakes_log"; exit 1; }
  sleep 0.1
done
[ -n "$fakes" ] || { echo "e2e: the fakes did not start:"; cat "$fakes_log"; exit 1; }
export E2E_FAKES="$fakes"

cd end2end
rm -rf test-results
if ! BASE_URL="$address" E2E_ADMIN_USERNAME=admin E2E_ADMIN_PASSWORD="$password" npx playwright test ${E2E_ONLY:-}; then
  echo "e2e: server log:"; cat "$log"; exit 1
fi
echo "e2e: screenshots in end2end/test-results/"
