#!/usr/bin/env bash
# Benchmark (not a test; not in CI): exact ε of a generated bf16 embedding by every path, in one run
# on this machine, as a table with ratios against NumPy.
#   bash scripts/bench.sh                  # 32000×4096 (Llama-2-7B shape)
#   bash scripts/bench.sh --rows 128256    # Llama-3 shape
#   options: --rows N --dim D --skip-browser --skip-paper (NumPy's all-pairs method is the slowest row)
#            --skip-gpu (no GPU rows: the Gram kernel's GFLOP/s, the CLI's --gpu, the page's ?gpu=1,
#            PyTorch with CUDA)
#            --skip-scaling (no thread sweep: the CLI on 1, 2, 4, … all threads at d = 4096 and 8192)
#            --scaling-only (only that sweep)
#            --formats-only (only the readers: one matrix as BF16 safetensors, a torch zip, a compressed
#            .npz, an MLX 4-bit folder, a BF16 and an IQ4_XS GGUF, each through the CLI; --formats-rows/-dim)
# Makes target/bench/ (the file, a venv with NumPy from PyPI, results.jsonl). Times are single runs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=32000 DIM=4096 BROWSER=1 PAPER=1 GPU=1 SCALING=1 MAIN=1 FORMATS=1 FROWS=16000 FDIM=2048
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS="$2"; shift 2 ;;
    --dim) DIM="$2"; shift 2 ;;
    --skip-browser) BROWSER=0; shift ;;
    --skip-paper) PAPER=0; shift ;;
    --skip-gpu) GPU=0; shift ;;
    --skip-scaling) SCALING=0; shift ;;
    --scaling-only) MAIN=0; BROWSER=0; FORMATS=0; shift ;;
    --formats-only) MAIN=0; BROWSER=0; SCALING=0; shift ;;
    --formats-rows) FROWS="$2"; shift 2 ;;
    --formats-dim) FDIM="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
export PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"
OUT=target/bench
mkdir -p "$OUT"
CORES=$(nproc)
FILE="$OUT/embed-${ROWS}x${DIM}-bf16.safetensors"
RESULTS="$OUT/results.jsonl"
: > "$RESULTS"
say() { printf '\033[1m== %s\033[0m\n' "$*" >&2; }

say "building the CLI and the page"
cargo build --release --bin orthoscope >&2
[ "$BROWSER" = 0 ] || trunk build --release >&2
CLI=target/release/orthoscope

if [ "$FORMATS" = 1 ]; then
  # Each reader against the same matrix stored as BF16 safetensors (the GGUFs against a BF16 GGUF:
  # both also hold an output.weight, whose sampled pass the job runs too). Wall time of analyze.
  say "formats: one ${FROWS}×${FDIM} matrix in each format the readers take"
  cargo build --release --features fixtures --bin orthoscope-fixtures >&2
  FX=target/release/orthoscope-fixtures
  FD="$OUT/formats-${FROWS}x${FDIM}"; mkdir -p "$FD"
  common=(--rows "$FROWS" --dim "$FDIM" --seed 1)
  [ -f "$FD/model.safetensors" ] || "$CLI" generate "$FD/model.safetensors" "${common[@]}" --dtype BF16 --kind trained-like >&2
  [ -f "$FD/checkpoint.pt" ] || "$FX" generate-torch --out "$FD/checkpoint.pt" "${common[@]}" --dtype bf16 >&2
  [ -f "$FD/params.npz" ] || "$FX" generate-npz --out "$FD/params.npz" "${common[@]}" --compressed >&2
  [ -d "$FD/mlx-q4" ] || "$FX" generate-mlx "$FD/mlx-q4" "${common[@]}" --bits 4 --group 64 >&2
  [ -f "$FD/model-BF16.gguf" ] || "$FX" generate-gguf "$FD/model-BF16.gguf" "${common[@]}" --type BF16 >&2
  [ -f "$FD/model-IQ4_XS.gguf" ] || "$FX" generate-gguf "$FD/model-IQ4_XS.gguf" "${common[@]}" --type IQ4_XS >&2
  FRES="$OUT/formats.jsonl"; : > "$FRES"
  for threads in 1 "$CORES"; do
    for entry in "bf16 safetensors:model.safetensors" "torch zip (bf16):checkpoint.pt" "npz (f32, deflated):params.npz" \
                 "mlx 4-bit folder:mlx-q4" "gguf BF16:model-BF16.gguf" "gguf IQ4_XS:model-IQ4_XS.gguf"; do
      label=${entry%%:*}; path="$FD/${entry#*:}"
      start=$(date +%s.%N)
      "$CLI" analyze "$path" --json --threads "$threads" > "$OUT/formats-run.json"
      end=$(date +%s.%N)
      python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(json.dumps({"format": sys.argv[2], "threads": int(sys.argv[3]), "seconds": float(sys.argv[5]) - float(sys.argv[4]),
                  "dtype": r["dtype"], "epsilon": r["epsilon"]}))' "$OUT/formats-run.json" "$label" "$threads" "$start" "$end" >> "$FRES"
    done
  done
  python3 - "$FRES" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("\n| format | dtype | threads | wall (s) | ÷ its BF16 baseline | ε |")
print("|---|---|---:|---:|---:|---|")
for r in rows:
    base = "gguf BF16" if r["format"].startswith("gguf") else "bf16 safetensors"
    b = next(o for o in rows if o["format"] == base and o["threads"] == r["threads"])
    print(f"| {r['format']} | {r['dtype']} | {r['threads']} | {r['seconds']:.2f} | {r['seconds'] / b['seconds']:.2f}× | {r['epsilon']:.6f} |")
PY
fi

if [ "$SCALING" = 1 ]; then
  # The thread sweep: how the CPU pass scales with the cores at the widths where the memory budget
  # used to stop it. Wall time of the whole analyze (reading, the pass, the eigen step).
  say "scaling: the CLI on 1, 2, 4, … $CORES threads (32000×4096 and 12000×8192 bf16)"
  counts=(); t=1; while [ "$t" -lt "$CORES" ]; do counts+=("$t"); t=$((t * 2)); done; counts+=("$CORES")
  SCALE="$OUT/scaling.jsonl"; : > "$SCALE"
  for shape in 32000x4096 12000x8192; do
    F="$OUT/embed-${shape}-bf16.safetensors"
    [ -f "$F" ] || "$CLI" generate "$F" --rows "${shape%x*}" --dim "${shape#*x}" --dtype BF16 --kind trained-like >&2
    for n in "${counts[@]}"; do
      start=$(date +%s.%N)
      "$CLI" analyze "$F" --json --threads "$n" > "$OUT/scaling-run.json"
      end=$(date +%s.%N)
      python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(json.dumps({"shape": sys.argv[2], "threads": int(sys.argv[3]), "seconds": float(sys.argv[5]) - float(sys.argv[4]),
                  "pass_seconds": r["timing_ms"] / 1000, "eigen_seconds": (r.get("geometry") or {}).get("eigen_ms", 0) / 1000,
                  "workers": r.get("workers", 1), "gram_gflops": r.get("gram_gflops"), "epsilon": r["epsilon"]}))' \
        "$OUT/scaling-run.json" "$shape" "$n" "$start" "$end" >> "$SCALE"
    done
  done
  python3 - "$SCALE" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
# The pass (reading, the sample, the Gram kernel, the merge) is what the threads share; the eigen
# step of the geometry runs after it, on the same threads (faer's pool; Lanczos by bands of G).
print("\n| shape (bf16) | threads asked | shares ran | pass (s) | pass ÷ 1 thread | eigen step (s) | wall (s) | wall ÷ 1 thread | Gram GFLOP/s per thread | ε |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for r in rows:
    one = next(o for o in rows if o["shape"] == r["shape"] and o["threads"] == 1)
    g = r["gram_gflops"]
    print(f"| {r['shape']} | {r['threads']} | {r['workers']} | {r['pass_seconds']:.2f} | {one['pass_seconds'] / r['pass_seconds']:.2f}× | "
          f"{r['eigen_seconds']:.2f} | {r['seconds']:.2f} | {one['seconds'] / r['seconds']:.2f}× | "
          f"{'–' if g is None else f'{g:.1f}'} | {r['epsilon']:.9f} |")
PY
fi
[ "$MAIN" = 1 ] || exit 0
[ -f "$FILE" ] || "$CLI" generate "$FILE" --rows "$ROWS" --dim "$DIM" --dtype BF16 --kind trained-like >&2

say "NumPy from PyPI (venv in $OUT/venv)"
[ -x "$OUT/venv/bin/python" ] || python3 -m venv "$OUT/venv"
"$OUT/venv/bin/python" -c 'import numpy' 2>/dev/null || "$OUT/venv/bin/pip" install -q numpy >&2
methods=(identity); [ "$PAPER" = 0 ] || methods+=(paper)
"$OUT/venv/bin/python" scripts/bench/numpy_paths.py "$FILE" "${methods[@]}" \
  | sed 's/^{"method": "\([a-z]*\)"/{"path": "numpy-\1"/' >> "$RESULTS"

say "CLI exact"
cli_run() { # label, extra args...
  local label=$1; shift
  "$CLI" analyze "$FILE" --json "$@" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(json.dumps({"path": sys.argv[1], "seconds": r["timing_ms"] / 1000, "epsilon": r["epsilon"],
                  "workers": r.get("workers", 1), "kernel": r["kernel"]}))' "$label" >> "$RESULTS"
}
if "$CLI" analyze --help | grep -q -- '--threads'; then
  cli_run "cli-1-thread" --threads 1
  cli_run "cli-$CORES-threads" --threads "$CORES"
else
  cli_run "cli-1-thread"
fi
if [ "$GPU" = 1 ]; then
  # The WGSL Gram kernel alone at d = 4096, on whatever adapter wgpu finds (a software one included:
  # one 256-row block per shape, best of three), for each kernel shape tests/gpu_gram.rs lists
  # (threads × block × stage; 16x1x64 is the kernel before register blocking; all eight take about
  # 15 minutes on a 2-core machine's lavapipe, ORTHOSCOPE_GRAM_SHAPES=16x4x64,16x8x16 fewer). A sanity
  # check of arithmetic intensity, not the pass's speed (the test profile: the time is the adapter's).
  say "the Gram kernel's GFLOP/s at d = 4096 (tests/gpu_gram.rs gram_kernel_gflops_at_4096)"
  cargo test --features "gpu fixtures" --test gpu_gram gram_kernel_gflops -- --ignored --nocapture 2>&1 \
    | grep '^GRAM' || echo "(no GPU adapter answered: the kernel timing printed nothing)"
fi
if [ "$GPU" = 1 ]; then
  # A software adapter (lavapipe) runs the pass at a hundredth of the CPU's speed (708 s here at
  # 32000×4096): ask the CLI which adapter it gets, on a small file, and time only a real GPU.
  PROBE="$OUT/gpu-probe-512x64-bf16.safetensors"
  [ -f "$PROBE" ] || "$CLI" generate "$PROBE" --rows 512 --dim 64 --dtype BF16 --kind trained-like >&2
  ADAPTER=$("$CLI" analyze "$PROBE" --json --gpu | python3 -c '
import json, sys
g = json.load(sys.stdin).get("gpu")
print("none" if g is None else ("software" if g["fallback_adapter"] else "hardware"))')
  [ "$ADAPTER" = hardware ] || { say "no GPU rows: the CLI found $ADAPTER GPU adapter"; GPU=0; }
fi
if [ "$GPU" = 1 ]; then
  say "CLI exact on the GPU (--gpu: the first adapter)"
  cli_run "cli-gpu" --gpu
  say "PyTorch on the GPU, where torch imports with CUDA (the venv's, else the system's)"
  for py in "$OUT/venv/bin/python" python3; do
    if "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
      "$py" scripts/bench/torch_paths.py "$FILE" >> "$RESULTS"
      break
    fi
  done
fi

if [ "$BROWSER" = 1 ]; then
  say "headless Chromium: ?workers=1 and ?workers=$CORES"
  counts=(1 "$CORES"); [ "$GPU" = 0 ] || counts+=(gpu)
  node scripts/bench/browser.mjs dist "$FILE" "${counts[@]}" \
    | python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    if r["workers"] == "gpu":
        r["path"] = "browser-gpu"
    else:
        r["path"] = "browser-%s-worker%s" % (r["workers"], "" if r["workers"] == "1" else "s")
    if "timing_ms" in r:
        r["seconds"] = r["timing_ms"] / 1000
    print(json.dumps(r))' >> "$RESULTS"
fi

say "results"
python3 scripts/bench/table.py "$RESULTS" "$ROWS" "$DIM"

if [ "$BROWSER" = 1 ]; then
  # The wasm kernels alone, per worker, against the f32x4 peak: tests/wasm_browser.rs's benchmarks,
  # which the test command leaves out (#[ignore]).
  say "the wasm kernels in headless Chromium (plain, then relaxed-SIMD build)"
  for features in "" relaxed-simd; do
    WASM_BINDGEN_TEST_TIMEOUT=600 CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
    CHROMEDRIVER=/usr/bin/chromedriver \
      cargo test --release --target wasm32-unknown-unknown ${features:+--features "$features"} --test wasm_browser \
      -- --include-ignored bench_ --nocapture 2>&1 | grep '^BENCH' || echo "(the kernel benchmark printed nothing)"
  done
fi

if [ "$BROWSER" = 1 ]; then
  # Reading, not arithmetic: a narrow matrix (32 KiB per 64-row block) and a 10 GiB tensor of zero
  # rows (every row dropped, so the page refuses it once it has read it all).
  say "the page's read rate: 2,000,000×256 bf16 (1 and $CORES workers); a 10 GiB all-zero tensor refused ($CORES workers), between two cats of it"
  NARROW="$OUT/narrow-2000000x256-bf16.safetensors" ZERO="$OUT/zero-10gib.safetensors"
  [ -f "$NARROW" ] || "$CLI" generate "$NARROW" --rows 2000000 --dim 256 --dtype BF16 --kind trained-like >&2
  cargo build --release --features fixtures --bin orthoscope-fixtures >&2
  [ -f "$ZERO" ] || target/release/orthoscope-fixtures generate-sparse "$ZERO" --size-gib 10 --rows 64 --dim 64 >&2
  rate() { python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
print("%-34s %-7s %7.1f s  %7.0f MB/s  (%s×%s %s, %s worker(s))" % (sys.argv[1], r["status"], r["seconds"],
      r["mb_per_s"], r["rows"], r["dim"], r["dtype"], r["workers"]))' "$1"; }
  node scripts/bench/read_rate.mjs dist "$NARROW" --workers 1 | rate "page read, narrow matrix"
  node scripts/bench/read_rate.mjs dist "$NARROW" --workers "$CORES" | rate "page read, narrow matrix"
  # The machine's own rate for the same bytes, before the page and after it: `cat` on the file
  # first (on a virtual machine a first read of 10 GiB also pays for memory the host hands the page
  # cache anew, 31 s on 2026-12-04's, against 3 s once cached), then the page, then `cat` again.
  os_read() {
    local t0 t1
    t0=$(date +%s.%N); cat "$ZERO" > /dev/null; t1=$(date +%s.%N)
    python3 -c 'import sys; s = float(sys.argv[2]) - float(sys.argv[1])
print("%-34s %-7s %7.1f s  %7.0f MB/s  (the whole file)" % (sys.argv[4], "read", s, float(sys.argv[3]) / s / 1e6))' \
      "$t0" "$t1" "$(stat -c %s "$ZERO")" "$1"
  }
  os_read "cat of the 10 GiB file, first"
  node scripts/bench/read_rate.mjs dist "$ZERO" --workers "$CORES" --tensor model.layers.0.mlp.up_proj.weight \
    | rate "page refusal, 10 GiB of zero rows"
  os_read "cat of the 10 GiB file, again"
fi
