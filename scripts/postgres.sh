#!/usr/bin/env bash
#! The PostgreSQL server the test suite's second pass (and the replica tests) run against: a
#! private cluster in a temporary directory, reachable only through a unix socket in that
#! directory (no TCP port), started by hand because these machines have no systemd.
#! Idempotent; every step is skipped when already done.
#! Usage:
#!   scripts/postgres.sh up       install PostgreSQL 15 if missing, create and start the cluster
#!   scripts/postgres.sh down     stop the cluster `up` started and delete it
#!   scripts/postgres.sh url      print the URL of the cluster's `postgres` database
#!   scripts/postgres.sh running  exit 0 when the cluster answers
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1mpostgres:\033[0m %s\n' "$*"; }
state=${SANDBOX_CONSOLE_POSTGRES_STATE:-/tmp/sandbox-console-postgres}
bin=/usr/lib/postgresql/15/bin
# The server runs as this (unprivileged) user: PostgreSQL refuses to run as root.
owner=postgres

install_packages() {
  if [ ! -x "$bin/postgres" ]; then
    log "installing Debian postgresql-15"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null
  fi
  id "$owner" >/dev/null 2>&1 || { echo "postgres: no user '$owner' (postgresql-15 creates it)" >&2; exit 1; }
}

as_owner() { runuser -u "$owner" -- "$@"; }

running() { [ -S "$state/.s.PGSQL.5432" ] && as_owner "$bin/pg_isready" -q -h "$state" -p 5432; }

url() { printf 'postgres://%s@localhost/postgres?host=%s\n' "$owner" "$state"; }

up() {
  install_packages
  if running; then return; fi
  mkdir -p "$state"
  chown "$owner:" "$state"
  chmod 700 "$state"
  if [ ! -f "$state/data/PG_VERSION" ]; then
    log "creating a cluster in $state/data"
    # C collation and UTF-8: the schema says collate "C" itself, this only spares the
    # cluster the machine's locale. Trust on the unix socket only, which lives in a 0700
    # directory; there is no TCP listener.
    as_owner "$bin/initdb" -D "$state/data" -U "$owner" --auth=trust --encoding=UTF8 \
      --locale=C.UTF-8 >"$state/initdb.log" 2>&1 || { cat "$state/initdb.log"; exit 1; }
  fi
  log "starting the cluster (log: $state/server.log)"
  # Sized for a test suite on two cores: short checkpoints are not wanted, and nothing here
  # must survive a crash, so fsync is off (this cluster is deleted by `down`).
  as_owner "$bin/pg_ctl" -D "$state/data" -l "$state/server.log" -w -t 30 start \
    -o "-c listen_addresses='' -k $state -p 5432 -c max_connections=300 -c fsync=off \
        -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=128MB" >/dev/null \
    || { tail -20 "$state/server.log"; echo "postgres: the cluster did not start" >&2; exit 1; }
  running || { tail -20 "$state/server.log"; echo "postgres: the cluster does not answer" >&2; exit 1; }
}

down() {
  if [ -f "$state/data/postmaster.pid" ]; then
    log "stopping the cluster"
    as_owner "$bin/pg_ctl" -D "$state/data" -m fast -w -t 30 stop >/dev/null || true
  fi
  rm -rf "$state"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  url) url ;;
  running) running ;;
  *) sed -n 's/^#! \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
