#!/usr/bin/env bash
# Installs what Orthoscope needs to build, serve and test, skipping whatever is already present.
# Everything comes from the registries (crates.io, npm, Debian apt); nothing from GitHub or a CDN.
set -euo pipefail
cd "$(dirname "$0")/.."

TRUNK_VERSION=0.21.14
# wasm-bindgen-cli must equal the wasm-bindgen in Cargo.lock exactly, or Trunk tries to download one.
WASM_BINDGEN_VERSION=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/version = |"/,""); print; exit}' Cargo.lock 2>/dev/null || true)
WASM_BINDGEN_VERSION=${WASM_BINDGEN_VERSION:-0.2.130}
BINARYEN_VERSION=132.0.0

say() { printf '\033[1m[install]\033[0m %s\n' "$*"; }
export PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

need_apt=()
command -v chromium >/dev/null || need_apt+=(chromium)
command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
command -v wasm2wat >/dev/null || need_apt+=(wabt)
command -v python3 >/dev/null || need_apt+=(python3)
# Mesa's lavapipe: a software Vulkan adapter, so the GPU Gram pass's tests run on any machine.
compgen -G "/usr/share/vulkan/icd.d/lvp_icd*.json" >/dev/null || need_apt+=(mesa-vulkan-drivers)
# The end-to-end smoke in the other two engines (tests/e2e/engines.test.mjs): Firefox ESR, and WebKit
# as WebKitGTK's MiniBrowser (webkit2gtk-driver brings it and WebKitWebDriver) on an Xvfb display.
command -v firefox-esr >/dev/null || need_apt+=(firefox-esr)
command -v WebKitWebDriver >/dev/null || need_apt+=(webkit2gtk-driver)
command -v Xvfb >/dev/null || need_apt+=(xvfb)
if [ ${#need_apt[@]} -gt 0 ]; then
  say "apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! trunk --version 2>/dev/null | grep -q "$TRUNK_VERSION"; then
  say "cargo install trunk $TRUNK_VERSION (slow on a cold machine)"
  cargo install trunk --version "$TRUNK_VERSION" --locked
fi

if ! wasm-bindgen --version 2>/dev/null | grep -q "$WASM_BINDGEN_VERSION"; then
  say "cargo install wasm-bindgen-cli $WASM_BINDGEN_VERSION"
  # Not --locked: its lock file pins a webpki-roots the registry no longer serves.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
fi

# npm pieces live in the repo's node_modules: binaryen's wasm-opt (never Debian's binaryen 108, which
# silently breaks the output), playwright-core for the end-to-end tests (it never downloads a browser)
# and axe-core, the accessibility checker those tests run in the page.
if [ ! -x node_modules/.bin/wasm-opt ] || [ ! -d node_modules/playwright-core ] || [ ! -f node_modules/axe-core/axe.min.js ]; then
  say "npm install (binaryen $BINARYEN_VERSION, playwright-core, axe-core)"
  npm install --no-audit --no-fund --silent
fi
# puppeteer-core drives Firefox for tests/e2e/engines.test.mjs; it never downloads a browser (nor may
# anything else here: PUPPETEER_SKIP_DOWNLOAD guards against a full puppeteer sneaking in).
if [ ! -f node_modules/puppeteer-core/package.json ]; then
  say "npm install (puppeteer-core)"
  PUPPETEER_SKIP_DOWNLOAD=1 npm install --no-audit --no-fund --silent
fi
say "toolchain ready"
