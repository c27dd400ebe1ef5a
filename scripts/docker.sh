#!/usr/bin/env bash
#! The Docker engine the docker provider's tests (and users without one) need, set up by hand
#! because these machines have no systemd. Idempotent; every step is skipped when already done.
#! Usage:
#!   scripts/docker.sh up      install docker.io and runsc, register gVisor, start dockerd, build the image
#!   scripts/docker.sh down    stop the dockerd that `up` started (and nothing else)
#!   scripts/docker.sh image   (re)build the sandbox-runtime image from the host's interpreters
#!   scripts/docker.sh restart stop and start dockerd (the provider's fault tests use it)
#!   scripts/docker.sh check   fail if sandbox containers of consoles that are gone, or stray shims, are left
#!   scripts/docker.sh running exit 0 when dockerd answers
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1mdocker:\033[0m %s\n' "$*"; }

# Whether the console an owner label names (`host/pid:start-time`) still runs: one on another
# host is taken to (its daemon is shared over TCP; our process table cannot judge it).
owner_alive() {
  local process=$1
  if [[ $1 == */* ]]; then
    [ "${1%%/*}" = "$(cat /proc/sys/kernel/hostname)" ] || return 0
    process=${1#*/}
  fi
  local pid=${process%%:*} start=${process#*:}
  [ -r "/proc/$pid/stat" ] || return 1
  [ "$(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $20}')" = "$start" ]
}
# (Not SANDBOX_DOCKER_*: `configure --provider docker --from-env` reads that prefix.)
state=${SANDBOX_CONSOLE_DOCKERD_STATE:-/tmp/sandbox-console-dockerd}
image=${SANDBOX_RUNTIME_IMAGE:-sandbox-runtime:local}
# Bumped when build_image changes, so `up` rebuilds an image an older checkout made.
image_version=2
daemon_json=/etc/docker/daemon.json

install_packages() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  [ -x /usr/bin/runsc ] || missing+=(runsc)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# gVisor as the runtime "runsc". Plain runsc cannot start here ("cannot run with network
# enabled in root network namespace"); with --network=none it can, and a sandbox wants no
# network anyway. Merged into an existing daemon.json, other keys kept.
register_runsc() {
  mkdir -p /etc/docker
  /usr/bin/python3.11 - "$daemon_json" <<'PY'
import json, os, sys
path = sys.argv[1]
config = {}
if os.path.exists(path) and os.path.getsize(path) > 0:
    with open(path) as f:
        config = json.load(f)
want = {
    "runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]},
    "runsc-egress": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=host"]},
}
runtimes = config.setdefault("runtimes", {})
if all(runtimes.get(name) == args for name, args in want.items()):
    sys.exit(0)
runtimes.update(want)
with open(path + ".tmp", "w") as f:
    json.dump(config, f, indent=2)
os.replace(path + ".tmp", path)
print("registered")
PY
}

running() { docker version >/dev/null 2>&1; }

start_dockerd() {
  if running; then
    if ! docker info --format '{{json .Runtimes}}' | grep -q '"runsc-egress"'; then
      log "reloading dockerd to pick up the runsc runtimes"
      pkill -HUP -x dockerd || true
      for _ in $(seq 1 50); do docker info --format '{{json .Runtimes}}' | grep -q '"runsc-egress"' && break; sleep 0.1; done
    fi
    return
  fi
  log "starting dockerd (log: $state.log)"
  setsid nohup /usr/sbin/dockerd >>"$state.log" 2>&1 &
  echo $! >"$state.pid"
  for _ in $(seq 1 150); do running && break; sleep 0.2; done
  running || { tail -20 "$state.log"; echo "docker: dockerd did not start" >&2; exit 1; }
}

# The host-copy image: the host's Debian python3.11 and node with their libraries, no
# registry needed (about 3 s). Also has sh and sleep (the container's idle command).
build_image() {
  local dir; dir=$(mktemp -d)
  mkdir -p "$dir"/usr/{bin,lib,lib64,sbin} "$dir"/{tmp,etc,workspace}
  for d in bin lib lib64 sbin; do ln -s usr/$d "$dir/$d"; done
  # ipcrm lets the reuse-mode wipe remove System V IPC objects (without it such a container
  # is replaced instead).
  local bins="/usr/bin/python3 /usr/bin/python3.11 /usr/bin/node /usr/bin/sh /usr/bin/dash /usr/bin/sleep /usr/bin/rm /usr/bin/ipcrm"
  libs() { ldd "$@" 2>/dev/null | awk '/=> \//{print $3} /^\t\/lib/{print $1}' | sort -u; }
  # shellcheck disable=SC2046,SC2086
  local list; list=$(for f in $bins $(libs $bins /usr/lib/python3.11/lib-dynload/*.so); do
    echo "$(readlink -f "$(dirname "$f")")/$(basename "$f")"; readlink -f "$f"; done | sort -u | sed 's|^/||')
  # shellcheck disable=SC2086
  tar -C / -cf - $list | tar -C "$dir" -xf -
  # Keep __pycache__: without compiled modules every import is compiled again in each run
  # (the root is read-only), which costs more than the whole run otherwise.
  tar -C / --exclude=python3.11/test --exclude=python3.11/idlelib \
      --exclude=python3.11/tkinter --exclude=python3.11/ensurepip -cf - usr/lib/python3.11 | tar -C "$dir" -xf -
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
  chmod 1777 "$dir/tmp" "$dir/workspace"
  tar -C "$dir" -c . | docker import -c 'WORKDIR /workspace' -c 'USER 65534:65534' \
    -c "LABEL sandbox-console.image-version=$image_version" - "$image" >/dev/null
  rm -rf "$dir"
  log "built $image"
}

case "${1:-}" in
  up)
    install_packages
    register_runsc >/dev/null
    start_dockerd
    have=$(docker image inspect -f '{{index .Config.Labels "sandbox-console.image-version"}}' "$image" 2>/dev/null || true)
    [ "$have" = "$image_version" ] || build_image
    docker run --rm --network none --init "$image" python3 -c 'print("py ok")' >/dev/null
    docker run --rm --network none --init --runtime runsc "$image" node -e 'console.log("node ok")' >/dev/null
    log "ready: dockerd $(docker version --format '{{.Server.Version}}'), runtimes runc and runsc, image $image"
    ;;
  down)
    if [ -f "$state.pid" ]; then
      pid=$(cat "$state.pid")
      if kill -0 "$pid" 2>/dev/null; then
        log "stopping the dockerd we started (pid $pid)"
        kill "$pid"
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      fi
      rm -f "$state.pid"
    fi
    ;;
  restart)
    pid=$(pgrep -x dockerd | head -n1 || true)
    if [ -n "$pid" ]; then
      kill "$pid"
      for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    start_dockerd
    ;;
  running)
    running
    ;;
  check)
    # A leftover is a sandbox container whose console is gone (its owner label names a process
    # of this host that no longer runs), or a shim or runsc process of no container at all.
    # What live consoles hold (a bystander, a `make run` open meanwhile) is theirs, not ours.
    left=()
    for id in $(docker ps -aq --filter label=sandbox-console.managed=1); do
      owner=$(docker inspect -f '{{ index .Config.Labels "sandbox-console.owner" }}' "$id" 2>/dev/null) || continue
      owner_alive "$owner" || left+=("$id")
    done
    # A shim of a container removed a moment ago (a live console's churn) is on its way out:
    # one still there, of no container, three seconds later is stray.
    stray_shims() {
      local containers pid cmdline owned id
      containers=$(docker ps -aq --no-trunc)
      for pid in "$@"; do
        [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && continue
        cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
        owned=no
        for id in $containers; do
          case "$cmdline" in *"$id"*) owned=yes; break ;; esac
        done
        [ $owned = yes ] || echo "$pid"
      done
    }
    shims=($(stray_shims $(pgrep -f 'containerd-shim|runsc-sandbox|runsc-gofer' || true)))
    if [ ${#shims[@]} -gt 0 ]; then
      sleep 3
      shims=($(stray_shims "${shims[@]}"))
    fi
    if [ ${#left[@]} -gt 0 ] || [ ${#shims[@]} -gt 0 ]; then
      echo "docker: left behind: containers [${left[*]}], shim/runsc processes [${shims[*]}]" >&2
      docker ps -a --filter label=sandbox-console.managed=1 >&2 || true
      exit 1
    fi
    log "clean: no sandbox container of a console that is gone, no stray shim or runsc process"
    ;;
  image)
    running || { echo "docker: dockerd is not running; run scripts/docker.sh up" >&2; exit 1; }
    build_image
    ;;
  *) sed -n 's/^#! \{0,1\}//p' "$0" >&2; exit 64 ;;
esac
