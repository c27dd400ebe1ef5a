#!/usr/bin/env bash
#! Builds the site (wasm + js + css + public files into target/site) and then the server,
#! without cargo-leptos: the same output layout, no 13-minute tool install. `front` or `server`
#! builds only that part (`make test` builds them side by side; a debug server reads the site
#! from disk, a release server embeds it, so a release build needs both, in this order).
#! Usage: scripts/build.sh [--release] [front|server]
set -euo pipefail
cd "$(dirname "$0")/.."

profile=debug; server_flags=(); wasm_flags=(--profile front); wasm_profile=front
if [ "${1:-}" = "--release" ]; then
  profile=release; server_flags=(--release); wasm_flags=(--profile wasm-release); wasm_profile=wasm-release
  shift
fi
part=${1:-all}
case "$part" in
  all | front | server) ;;
  *) echo "usage: scripts/build.sh [--release] [front|server]" >&2; exit 2 ;;
esac
site=target/site; pkg=$site/pkg
name=sandbox-console

# 1. The browser bundle (its own target dir, so ssr and hydrate builds never evict each other),
#    then styles and public files.
build_front() {
  cargo build --lib --target wasm32-unknown-unknown --no-default-features --features hydrate \
    --target-dir target/front "${wasm_flags[@]}"
  mkdir -p "$pkg"
  wasm-bindgen --target web --no-typescript --out-dir "$pkg" --out-name "$name" \
    "target/front/wasm32-unknown-unknown/$wasm_profile/sandbox_console.wasm"
  # leptos' HydrationScripts asks for <name>.wasm when LEPTOS_OUTPUT_NAME is set at compile time.
  mv -f "$pkg/${name}_bg.wasm" "$pkg/$name.wasm"
  sed -i "s/${name}_bg\.wasm/${name}.wasm/g" "$pkg/$name.js"

  # Optional size step for release builds: only a wasm-opt >= 123 (Debian's 108 breaks hydration).
  if [ "$profile" = release ] && command -v wasm-opt >/dev/null; then
    v=$(wasm-opt --version | grep -o '[0-9]\+' | head -n1)
    if [ "${v:-0}" -ge 123 ]; then wasm-opt -Oz "$pkg/$name.wasm" -o "$pkg/$name.wasm"; else echo "build: skipping wasm-opt $v (< 123)"; fi
  fi

  cp style/main.css "$pkg/$name.css"
  cp -r public/. "$site/"
  echo "build: site at $site"
}

# 2. The server. Release builds embed target/site, so it must come last.
build_server() {
  cargo build --bin "$name" --features ssr "${server_flags[@]}"
  echo "build: $profile server at target/$profile/$name"
}

if [ "$part" != server ]; then build_front; fi
if [ "$part" != front ]; then build_server; fi
