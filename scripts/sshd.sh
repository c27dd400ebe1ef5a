#!/usr/bin/env bash
#! The OpenSSH server the ssh provider's tests run against: Debian's sshd on a loopback port,
#! with a host key, a test account, its password and two client keys (one of them behind a
#! passphrase) made fresh in a temporary directory, started by hand because these machines
#! have no systemd. Idempotent; every step is skipped when already done.
#! Usage:
#!   scripts/sshd.sh up       install openssh-server if missing, create the account (without network) and keys, start sshd
#!   scripts/sshd.sh down     stop the sshd that `up` started, delete its directory and account
#!   scripts/sshd.sh state    print the directory the tests read (port, account, keys, known_hosts)
#!   scripts/sshd.sh running  exit 0 when that sshd answers
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1msshd:\033[0m %s\n' "$*"; }
state=${SANDBOX_CONSOLE_SSHD_STATE:-/tmp/sandbox-console-sshd}
port=${SANDBOX_CONSOLE_SSHD_PORT:-22022}
# The account programs run as: unprivileged, its home in the state directory.
account=sandbox-console-ssh

install_packages() {
  if [ ! -x /usr/sbin/sshd ]; then
    log "installing Debian openssh-server"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends openssh-server >/dev/null
  fi
}

running() {
  [ -f "$state/sshd.pid" ] && kill -0 "$(cat "$state/sshd.pid")" 2>/dev/null \
    && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

make_account() {
  if ! id "$account" >/dev/null 2>&1; then
    log "creating the account $account"
    useradd --home-dir "$state/home" --no-create-home --shell /bin/sh --user-group "$account"
  fi
  mkdir -p "$state/home"
  chown "$account:" "$state/home"
  chmod 700 "$state/home"
  if [ ! -s "$state/password" ]; then
    # Random per `up`; read by the tests from this file (root only).
    head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$state/password"
    chmod 600 "$state/password"
  fi
  printf '%s:%s\n' "$account" "$(cat "$state/password")" | chpasswd
}

make_keys() {
  [ -f "$state/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C host -f "$state/host_ed25519"
  [ -f "$state/client_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C plain -f "$state/client_ed25519"
  if [ ! -f "$state/client_rsa" ]; then
    head -c 12 /dev/urandom | base64 | tr -d '/+=' >"$state/passphrase"
    # A PEM (PKCS#1) RSA key behind a passphrase, as many admins still have.
    chmod 600 "$state/passphrase"
    ssh-keygen -q -t rsa -b 3072 -m PEM -N "$(cat "$state/passphrase")" -C locked -f "$state/client_rsa"
  fi
  cat "$state/client_ed25519.pub" "$state/client_rsa.pub" >"$state/authorized_keys"
  chmod 644 "$state/authorized_keys"
  printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$state/host_ed25519.pub")" >"$state/known_hosts"
  echo "$port" >"$state/port"
  echo "$account" >"$state/account"
}

# The account gets no network, as the provider's README advises for a real host: every
# packet it sends is refused (an owner match on its uid, both address families).
firewall() {
  local action=$1 uid
  uid=$(id -u "$account" 2>/dev/null) || return 0
  for tool in iptables ip6tables; do
    command -v "$tool" >/dev/null || continue
    if [ "$action" = add ]; then
      "$tool" -C OUTPUT -m owner --uid-owner "$uid" -j REJECT 2>/dev/null \
        || "$tool" -I OUTPUT -m owner --uid-owner "$uid" -j REJECT
    else
      while "$tool" -D OUTPUT -m owner --uid-owner "$uid" -j REJECT 2>/dev/null; do :; done
    fi
  done
}

up() {
  install_packages
  if running; then return; fi
  mkdir -p "$state" /run/sshd
  chmod 755 "$state"
  make_account
  firewall add
  make_keys
  cat >"$state/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $port
HostKey $state/host_ed25519
PidFile $state/sshd.pid
AuthorizedKeysFile $state/authorized_keys
AllowUsers $account
PermitRootLogin no
UsePAM no
PasswordAuthentication yes
KbdInteractiveAuthentication no
PubkeyAuthentication yes
# The tests' runs are many and parallel; the defaults (10 pending, 10 channels) are for people.
MaxStartups 200
MaxSessions 100
MaxAuthTries 6
StrictModes no
Subsystem sftp internal-sftp
LogLevel VERBOSE
EOF
  log "starting sshd on 127.0.0.1:$port (log: $state/sshd.log)"
  /usr/sbin/sshd -f "$state/sshd_config" -E "$state/sshd.log"
  for _ in $(seq 50); do running && return; sleep 0.1; done
  tail -20 "$state/sshd.log" >&2
  echo "sshd: the server does not answer" >&2
  exit 1
}

down() {
  if [ -f "$state/sshd.pid" ]; then
    log "stopping sshd"
    kill "$(cat "$state/sshd.pid")" 2>/dev/null || true
  fi
  # What the account still runs (a test's escaped program) goes with it.
  if id "$account" >/dev/null 2>&1; then
    pkill -KILL -u "$account" 2>/dev/null || true
    firewall remove
    userdel "$account" 2>/dev/null || true
  fi
  rm -rf "$state"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  state) echo "$state" ;;
  running) running ;;
  *) sed -n 's/^#! \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
