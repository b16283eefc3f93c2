#!/usr/bin/env bash
# The independent oracles the format tests check Orthoscope against, in a venv of their own:
# llama.cpp's own `gguf` package (its dequantisers and quantisers), `numpy` (np.savez), `onnx` (its
# helpers write the ONNX fixtures). All from PyPI, pinned; idempotent, and safe to call from tests
# running at once (the first makes the venv under a lock, the others wait). Prints the venv's python.
#   PY=$(bash scripts/oracle_venv.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=target/oracle-venv
PINS=(numpy==2.4.6 gguf==0.19.0 onnx==1.23.2)
stamp="$VENV/.pins-$(printf '%s\n' "${PINS[@]}" | md5sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  mkdir -p target
  exec 9> target/oracle-venv.lock
  flock 9
  if [ ! -f "$stamp" ]; then
    rm -rf "$VENV"
    python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "${PINS[@]}" >&2
    touch "$stamp"
  fi
fi
echo "$PWD/$VENV/bin/python"
