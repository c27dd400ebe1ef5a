#!/usr/bin/env bash
#! Installs every tool the build and the tests need, idempotently. Safe to run again.
#! Usage: scripts/setup.sh [--e2e]   (--e2e also installs Chromium and the Playwright driver)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1msetup:\033[0m %s\n' "$*"; }

# The wasm-bindgen CLI must be exactly the version the lockfile (or the Cargo.toml pin) uses.
wasm_bindgen_version() {
  if [ -f Cargo.lock ]; then
    awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock
  else
    sed -n 's/^wasm-bindgen = { version = "=\([0-9.]*\)".*/\1/p; s/^wasm-bindgen = "=\([0-9.]*\)"/\1/p' Cargo.toml | head -n1
  fi
}

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# Debian packages the build links against (hakoniwa's seccomp support needs libseccomp).
missing=()
for package in libseccomp-dev pkg-config python3.11-venv; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

for component in rustfmt clippy; do
  if ! rustup component list --installed | grep -q "^$component"; then
    log "adding the $component component"
    rustup component add "$component"
  fi
done

want=$(wasm_bindgen_version)
[ -n "$want" ] || { echo "setup: cannot find the wasm-bindgen version in Cargo.lock/Cargo.toml" >&2; exit 1; }
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  # Not --locked: the CLI's own lockfile pins a webpki-roots that the registry here does not serve.
  log "installing wasm-bindgen-cli $want (had: ${have:-none}); takes 2-4 minutes"
  cargo install wasm-bindgen-cli --version "$want" --force
fi

# The compiler cache the Makefile puts in front of rustc (RUSTC_WRAPPER): dependencies compiled
# once per machine, not once per clone. Only its local disk cache is built in.
if ! command -v sccache >/dev/null; then
  log "installing sccache (a compiler cache; takes about 4 minutes, once)"
  cargo install sccache --locked --no-default-features
fi

# The Python clients the tests drive the console with (E2B's SDK, an OpenAPI validator), from
# PyPI, in a virtualenv kept per machine and per requirements file; target/pyclients points at it.
requirements=tests/clients/requirements.txt
venv="${XDG_CACHE_HOME:-$HOME/.cache}/sandbox-console/pyclients-$(sha256sum "$requirements" | cut -c1-16)"
if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.complete" ]; then
  log "installing the Python test clients into $venv (pip, from PyPI)"
  rm -rf "$venv"
  /usr/bin/python3.11 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  touch "$venv/.complete"
fi
mkdir -p target
ln -sfn "$venv" target/pyclients

if [ "${1:-}" = "--e2e" ]; then
  if [ ! -x /usr/bin/chromium ]; then
    log "installing Debian chromium"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null
  fi
  # A font with Chinese glyphs, so the zh-CN screenshots are readable (not boxes).
  if ! dpkg -s fonts-wqy-microhei >/dev/null 2>&1; then
    log "installing Debian fonts-wqy-microhei (Chinese glyphs for the screenshots)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq fonts-wqy-microhei >/dev/null
  fi
  if [ ! -d end2end/node_modules/playwright-core ] || [ end2end/package-lock.json -nt end2end/node_modules/.package-lock.json ]; then
    log "installing the Playwright test runner (npm ci; no browser download)"
    (cd end2end && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
  fi
fi
log "ok"
