#!/usr/bin/env bash
#! Runs the Playwright suite (JS on and JS off) in E2E_WORKERS parallel workers (default 2), each
#! against a freshly started server of its own with its own temporary data directory (so no
#! worker sees another's settings, keys or accounts). Expects scripts/build.sh to have run.
#! Usage: scripts/e2e.sh [path/to/sandbox-console]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --e2e

bin=${1:-target/debug/sandbox-console}
[ -x "$bin" ] || { echo "e2e: $bin not found; run scripts/build.sh first" >&2; exit 1; }
data=$(mktemp -d)
fakes_log="$data/fakes.log"

workers=${E2E_WORKERS:-2}
pids=()
fakes_pid=
cleanup() {
  kill "${pids[@]}" $fakes_pid 2>/dev/null || true
  wait "${pids[@]}" $fakes_pid 2>/dev/null || true
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
# Each server's database learns of it on its own; the store builds it once.
for worker in $(seq 1 "$workers"); do
  mkdir -p "$data/$worker"
  RUST_LOG=warn,libcgroups=error "$bin" --data-dir "$data/$worker" env build default --if-needed >"$data/$worker/default-env.log" 2>&1 \
    || { echo "e2e: the default environment did not build:"; cat "$data/$worker/default-env.log"; exit 1; }
done

# One server per worker, each on its own data directory; their addresses in BASE_URLS.
addresses=()
for worker in $(seq 1 "$workers"); do
  ADMIN_USERNAME=admin ADMIN_PASSWORD="$password" RUST_LOG=${RUST_LOG:-warn,libcgroups=error} \
    "$bin" --listen 127.0.0.1:0 --data-dir "$data/$worker" >"$data/$worker/server.log" 2>&1 &
  pids+=($!)
done
for worker in $(seq 1 "$workers"); do
  log="$data/$worker/server.log"
  address=
  for _ in $(seq 1 300); do
    address=$(sed -n 's/^sandbox-console listening on //p' "$log")
    [ -n "$address" ] && break
    kill -0 "${pids[$((worker - 1))]}" 2>/dev/null || { echo "e2e: server $worker exited:"; cat "$log"; exit 1; }
    sleep 0.1
  done
  [ -n "$address" ] || { echo "e2e: server $worker did not start:"; cat "$log"; exit 1; }
  addresses+=("$address")
done
echo "e2e: servers at ${addresses[*]}"

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
if ! BASE_URLS="${addresses[*]}" E2E_WORKERS="$workers" E2E_ADMIN_USERNAME=admin E2E_ADMIN_PASSWORD="$password" \
  npx playwright test ${E2E_ONLY:-}; then
  for worker in $(seq 1 "$workers"); do echo "e2e: server $worker log:"; cat "$data/$worker/server.log"; done
  exit 1
fi
echo "e2e: screenshots in end2end/test-results/"
