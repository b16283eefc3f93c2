#!/usr/bin/env bash
# README command 1: install what is missing, build the app, serve it on http://127.0.0.1:8080/
# (override with PORT=...). The page opens on a built-in demo, so it is useful without a file.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"
trunk build --release
PORT=${PORT:-8080}
echo "Orthoscope at http://127.0.0.1:$PORT/  (Ctrl-C to stop)"
# A plain static server: after the page loads nothing else is ever requested.
exec python3 -m http.server "$PORT" --bind 127.0.0.1 --directory dist
