#!/usr/bin/env bash
#! Another console on the same machine, as a developer with `make run` open would have: two
#! consoles of their own (one on the local provider, one on docker) and a loop sending each a
#! run every three seconds (another console's sandboxes, containers and run folders are there
#! all along, without taking a core from the suite), so that the test suite proves it minds
#! only what it made itself. The loop ends by itself after --minutes (default 60); `stop` ends
#! it at once, stops both consoles (they remove their own containers) and fails when a run of
#! theirs failed for a reason of the suite's making (anything but a 200 answer with status
#! success).
#! Usage:
#!   scripts/bystander.sh start [--minutes N] [path/to/sandbox-console]
#!   scripts/bystander.sh stop
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1mbystander:\033[0m %s\n' "$*"; }
state=${SANDBOX_CONSOLE_BYSTANDER_STATE:-/tmp/sandbox-console-bystander}

# Starts one console on its own data folder (the docker one keeps one warm container, wiped
# and reused between runs: the cheaper of the provider's two ways, so the bystander takes
# little from the suite) with `provider` active; prints its address.
start_console() {
  local name=$1 provider=$2 bin=$3 dir="$state/$1"
  mkdir -p "$dir/data"
  shift 3
  "$bin" --data-dir "$dir/data" configure --provider "$provider" --activate "$@" >"$dir/configure.log" 2>&1 \
    || { cat "$dir/configure.log" >&2; return 1; }
  "$bin" --data-dir "$dir/data" api-key create --name bystander --scope execute >"$dir/key" 2>"$dir/key.log" \
    || { cat "$dir/key.log" >&2; return 1; }
  ADMIN_USERNAME=admin ADMIN_PASSWORD="bystander-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
    RUST_LOG=warn,libcgroups=error "$bin" --listen 127.0.0.1:0 --data-dir "$dir/data" >"$dir/server.log" 2>&1 &
  echo $! >"$dir/pid"
  local address=
  for _ in $(seq 1 300); do
    address=$(sed -n 's/^sandbox-console listening on //p' "$dir/server.log" 2>/dev/null || true)
    [ -n "$address" ] && break
    kill -0 "$(cat "$dir/pid")" 2>/dev/null || { cat "$dir/server.log" >&2; return 1; }
    sleep 0.1
  done
  [ -n "$address" ] || { echo "bystander: the $name console did not start" >&2; return 1; }
  echo "$address" >"$dir/address"
}

# One run every three seconds on each console until `deadline` (epoch seconds) or until
# stopped; every answer is one line of "$state/answers": console, HTTP status, run status.
loop() {
  local deadline=$1
  local python='def main():\n    return sum(range(1000))\n'
  while [ "$(date +%s)" -lt "$deadline" ]; do
    for name in local docker; do
      local dir="$state/$name" answer status code
      answer=$(curl -sS --max-time 60 -w '\n%{http_code}' \
        -H "Authorization: Bearer $(cat "$dir/key")" -H 'Content-Type: application/json' \
        --data "{\"language\":\"python\",\"code\":\"$python\"}" \
        "$(cat "$dir/address")/api/v1/execute" 2>/dev/null || echo $'\n000')
      code=$(tail -n1 <<<"$answer")
      status=$(head -n -1 <<<"$answer" | sed -n 's/.*"status":"\([a-z_]*\)".*/\1/p')
      echo "$name $code ${status:-none}" >>"$state/answers"
    done
    sleep 3
  done
}

case "${1:-}" in
  start)
    shift
    minutes=60
    if [ "${1:-}" = "--minutes" ]; then minutes=$2; shift 2; fi
    bin=${1:-target/debug/sandbox-console}
    [ -x "$bin" ] || { echo "bystander: $bin not found; run scripts/build.sh first" >&2; exit 1; }
    [ ! -f "$state/loop.pid" ] || "$0" stop || true
    rm -rf "$state"
    mkdir -p "$state"
    start_console local local "$bin"
    start_console docker docker "$bin" --set pool_size=1 --set fresh_container_per_run=false
    loop $(( $(date +%s) + minutes * 60 )) </dev/null >/dev/null 2>"$state/loop.log" &
    echo $! >"$state/loop.pid"
    log "two consoles running sandboxes: local at $(cat "$state/local/address"), docker at $(cat "$state/docker/address") (for $minutes minutes at most)"
    ;;
  stop)
    [ -d "$state" ] || { log "not running"; exit 0; }
    if [ -f "$state/loop.pid" ]; then
      kill "$(cat "$state/loop.pid")" 2>/dev/null || true
      rm -f "$state/loop.pid"
    fi
    for name in local docker; do
      pidfile="$state/$name/pid"
      [ -f "$pidfile" ] || continue
      pid=$(cat "$pidfile")
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      rm -f "$pidfile"
    done
    answers=$(wc -l <"$state/answers" 2>/dev/null || echo 0)
    bad=$(grep -cv ' 200 success$' "$state/answers" 2>/dev/null || true)
    if [ "$answers" -eq 0 ]; then
      echo "bystander: no run was answered; see $state/*/server.log" >&2
      exit 1
    fi
    if [ "${bad:-0}" -gt 0 ]; then
      echo "bystander: $bad of $answers runs did not succeed:" >&2
      grep -v ' 200 success$' "$state/answers" | sort | uniq -c >&2
      exit 1
    fi
    log "stopped; all $answers runs succeeded"
    ;;
  *) sed -n 's/^#! \{0,1\}//p' "$0" >&2; exit 64 ;;
esac
