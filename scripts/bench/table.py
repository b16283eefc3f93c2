"""Prints the benchmark table of scripts/bench.sh from its results.jsonl, with ratios to NumPy, and
checks that every path's ε agrees with NumPy's identity to 1e-6 (exit 1 if not)."""
import json
import platform
import subprocess
import sys

path, rows, dim = sys.argv[1], sys.argv[2], sys.argv[3]
results = [json.loads(line) for line in open(path) if line.strip()]
by = {r["path"]: r for r in results}
ident = by.get("numpy-identity")
paper = by.get("numpy-paper")
cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
chromium = subprocess.run(["chromium", "--version"], capture_output=True, text=True).stdout.strip()
print(f"\n{rows}×{dim} bf16, {platform.machine()} · {cpu} · {subprocess.getoutput('nproc')} cores · {chromium}\n")
print("| path | time (s) | ÷ NumPy paper method | ÷ NumPy identity | ε | notes |")
print("|---|---:|---:|---:|---|---|")
bad = []
for r in results:
    s = r["seconds"]
    rp = f"{s / paper['seconds']:.2f}" if paper else "–"
    ri = f"{s / ident['seconds']:.2f}" if ident else "–"
    notes = []
    if r.get("workers_used") is not None:
        notes.append(f"{r['workers_used']} worker(s) used")
    if r.get("kernel"):
        notes.append(r["kernel"])
    if r.get("first_estimate_s") is not None:
        notes.append(f"first estimate on screen after {r['first_estimate_s']:.2f} s")
    if r.get("gram_gflops"):
        notes.append(f"Gram kernel {r['gram_gflops']:.1f} GFLOP/s")
    peak = r.get("peak")
    if isinstance(peak, dict) and peak.get("gflops"):
        notes.append(f"peak f32x4 {peak['gflops']:.1f} GFLOP/s per worker")
        if r.get("gram_gflops") and r.get("workers_used"):
            share = r["gram_gflops"] / r["workers_used"] / peak["gflops"] * 100
            notes.append(f"{share:.0f} % of peak per worker")
    print(f"| {r['path']} | {s:.2f} | {rp} | {ri} | {r['epsilon']:.9f} | {'; '.join(notes)} |")
    if ident and abs(r["epsilon"] - ident["epsilon"]) > 1e-6:
        bad.append(r["path"])
b1, bn = by.get("browser-1-worker"), next((r for k, r in by.items() if k.startswith("browser-") and k != "browser-1-worker"), None)
if b1 and bn:
    print(f"\nbrowser speed-up with {bn['workers']} workers: {b1['seconds'] / bn['seconds']:.2f}×")
if bad:
    print(f"\nε disagrees with NumPy's identity by more than 1e-6: {', '.join(bad)}")
    sys.exit(1)
print("\nε agrees across all paths to 1e-6.")
