#!/usr/bin/env bash
# Fuzzes the readers' parsers for SECONDS each (default 600):
#   scripts/fuzz.sh [seconds] [target ...]
# FUZZ_BUILD_FLAGS (e.g. -O: release without debug assertions, reusing a `cargo fuzz build -O`)
# is passed to cargo fuzz; the default keeps debug assertions and overflow checks on.
# Installs what it needs when missing (idempotent): a nightly toolchain through rustup and
# cargo-fuzz through cargo install. Seeds each target from the malformed-file corpus
# (`orthoscope-fixtures corpus`). Crashes land in fuzz/artifacts/TARGET/; make each a regression
# test named after what it pins (tests/corpus.rs or tests/parser_props.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
seconds="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors_header gguf_header npy_header shard_index onnx torch npz config_json sae_config)

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

# Seeds: every corpus file, with the magic the target adds stripped.
seeds=fuzz/corpus
if [ ! -d "$seeds/safetensors_header" ]; then
  cargo build --release --features fixtures --bin orthoscope-fixtures
  generated=$(mktemp -d)
  "${CARGO_TARGET_DIR:-target}/release/orthoscope-fixtures" corpus --out "$generated" >/dev/null
  mkdir -p "$seeds"/{safetensors_header,gguf_header,npy_header,shard_index}
  for f in "$generated"/*/*; do
    case_name=$(basename "$(dirname "$f")")
    case "$f" in
      *.gguf) tail -c +5 "$f" > "$seeds/gguf_header/$case_name" ;;
      *.npy) tail -c +7 "$f" > "$seeds/npy_header/$case_name" ;;
      *.index.json) cp "$f" "$seeds/shard_index/$case_name" ;;
      *) cp "$f" "$seeds/safetensors_header/$case_name" ;;
    esac
  done
  rm -rf "$generated"
fi
# The ONNX target starts from the protobuf prefix sniff knows (ir_version 8, a producer, a graph).
mkdir -p "$seeds/onnx"
[ -f "$seeds/onnx/minimal" ] || printf '\x08\x08\x12\x07pytorch:\x02\x0a\x00' > "$seeds/onnx/minimal"
# The torch target starts from the corpus's checkpoints (a valid one, one cut short, one os.system call).
mkdir -p "$seeds/torch"
if [ -z "$(ls -A "$seeds/torch")" ]; then
  cargo build --release --features fixtures --bin orthoscope-fixtures
  generated=$(mktemp -d)
  "${CARGO_TARGET_DIR:-target}/release/orthoscope-fixtures" corpus --out "$generated" >/dev/null
  for f in "$generated"/torch-*/*.pt; do cp "$f" "$seeds/torch/$(basename "$(dirname "$f")")"; done
  rm -rf "$generated"
fi
# The config.json target starts from a real-looking config (a Hub name, a vocabulary, MLX's quantisation).
mkdir -p "$seeds/config_json"
[ -f "$seeds/config_json/minimal" ] || printf '%s' '{"_name_or_path":"org/model","vocab_size":2,"hidden_size":4,"tie_word_embeddings":true,"quantization":{"bits":4,"group_size":64},"text_config":{"vocab_size":2}}' > "$seeds/config_json/minimal"
# The SAE config target: a layout byte (0: SAELens, 1: sparsify, 2: Llama Scope, 3: a SAELens
# decoder by columns), then a real-looking config of that layout.
mkdir -p "$seeds/sae_config"
[ -f "$seeds/sae_config/saelens" ] || printf '\x00%s' '{"d_in":4,"d_sae":8,"architecture":"jumprelu","metadata":{"hook_name":"blocks.3.hook_resid_post"}}' > "$seeds/sae_config/saelens"
[ -f "$seeds/sae_config/sparsify" ] || printf '\x01%s' '{"d_in":4,"num_latents":8,"k":2,"expansion_factor":2}' > "$seeds/sae_config/sparsify"
[ -f "$seeds/sae_config/llama_scope" ] || printf '\x02%s' '{"d_model":4,"d_sae":8,"hook_point_in":"blocks.3.hook_resid_post"}' > "$seeds/sae_config/llama_scope"

# The npz target starts from a small valid .npy (its second half fuzzes a deflated member of it).
mkdir -p "$seeds/npz"
[ -f "$seeds/npz/minimal" ] || python3 -c '
import struct, sys
h = "{\x27descr\x27: \x27<f4\x27, \x27fortran_order\x27: False, \x27shape\x27: (2, 4), }"
h += " " * (63 - (10 + len(h)) % 64) + "\n"
sys.stdout.buffer.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + bytes(32))' > "$seeds/npz/minimal"

cd fuzz
mkdir -p logs
failed=0
for t in "${targets[@]}"; do
  echo "== $t: ${seconds}s (log: fuzz/logs/$t.log)"
  # -rss_limit_mb catches allocations that follow a header's claims instead of the file.
  status=0
  # shellcheck disable=SC2086
  cargo +nightly fuzz run ${FUZZ_BUILD_FLAGS:-} "$t" "corpus/$t" -- -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 \
    >"logs/$t.log" 2>&1 || status=$?
  grep -E 'stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY|panicked at' "logs/$t.log" || true
  if [ "$status" -ne 0 ]; then
    echo "   $t FAILED (exit $status): see fuzz/logs/$t.log and fuzz/artifacts/$t/"; tail -n 20 "logs/$t.log"; failed=1
  fi
done
exit "$failed"
