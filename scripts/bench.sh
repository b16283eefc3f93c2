#!/usr/bin/env bash
# Benchmark (not a test; not in CI): exact ε of a generated bf16 embedding by every path, in one run
# on this machine, as a table with ratios against NumPy.
#   bash scripts/bench.sh                  # 32000×4096 (Llama-2-7B shape)
#   bash scripts/bench.sh --rows 128256    # Llama-3 shape
#   options: --rows N --dim D --skip-browser --skip-paper (NumPy's all-pairs method is the slowest row)
# Makes target/bench/ (the file, a venv with NumPy from PyPI, results.jsonl). Times are single runs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=32000 DIM=4096 BROWSER=1 PAPER=1
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS="$2"; shift 2 ;;
    --dim) DIM="$2"; shift 2 ;;
    --skip-browser) BROWSER=0; shift ;;
    --skip-paper) PAPER=0; shift ;;
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

if [ "$BROWSER" = 1 ]; then
  say "headless Chromium: ?workers=1 and ?workers=$CORES"
  node scripts/bench/browser.mjs dist "$FILE" 1 "$CORES" \
    | python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    r["path"] = "browser-%s-worker%s" % (r["workers"], "" if r["workers"] == "1" else "s")
    r["seconds"] = r["timing_ms"] / 1000
    print(json.dumps(r))' >> "$RESULTS"
fi

say "results"
python3 scripts/bench/table.py "$RESULTS" "$ROWS" "$DIM"
