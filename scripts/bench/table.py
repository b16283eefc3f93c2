"""Prints the benchmark table of scripts/bench.sh from its results.jsonl, with ratios to NumPy, and
checks that every path's ε agrees with NumPy's identity to 1e-6 (exit 1 if not)."""
import json
import platform
import subprocess
import sys

path, rows, dim = sys.argv[1], sys.argv[2], sys.argv[3]
results = [json.loads(line) for line in open(path) if line.strip()]
for r in results:
    if r.get("skipped"):
        print(f"{r.get('path', r.get('workers'))}: {r['skipped']}")
results = [r for r in results if not r.get("skipped")]
by = {r["path"]: r for r in results}
ident = by.get("numpy-identity")
paper = by.get("numpy-paper")
cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
chromium = subprocess.run(["chromium", "--version"], capture_output=True, text=True).stdout.strip()
print(f"\n{rows}×{dim} bf16, {platform.machine()} · {cpu} · {subprocess.getoutput('nproc')} cores · {chromium}\n")
print("| path | time (s) | ÷ NumPy paper method | ÷ NumPy identity | ε | notes |")
print("|---|---:|---:|---:|---|---|")
bad = []
peak = None
for r in results:
    s = r["seconds"]
    rp = f"{s / paper['seconds']:.2f}" if paper else "–"
    ri = f"{s / ident['seconds']:.2f}" if ident else "–"
    notes = []
    if r.get("workers_used") is not None:
        notes.append(f"{r['workers_used']} worker(s) used")
    if r.get("kernel"):
        notes.append(r["kernel"])
    if r.get("copy_seconds") is not None:
        notes.append(f"after a {r['copy_seconds']:.2f} s copy to the GPU")
    if isinstance(r.get("gpu"), dict):
        notes.append(f"GPU: {r['gpu'].get('adapter')} ({r['gpu'].get('backend')})")
    if r.get("first_estimate_s") is not None:
        notes.append(f"first estimate on screen after {r['first_estimate_s']:.2f} s")
    if r.get("gram_gflops"):
        notes.append(f"Gram kernel {r['gram_gflops']:.1f} GFLOP/s")
    if isinstance(r.get("peak"), dict):
        peak = r["peak"]
    if r.get("gram_gflops") and r.get("kernel") and peak:
        # Report.gram_gflops is flops over the kernel calls' summed time: a per-worker rate.
        build = peak.get("relaxed" if r["kernel"].startswith("relaxed") else "plain") or {}
        best = build.get("peak_relaxed_gflops") or build.get("peak_gflops")
        if best:
            notes.append(f"{r['gram_gflops'] / best * 100:.0f} % of this build's peak ({best:.1f} GFLOP/s) per worker")
    print(f"| {r['path']} | {s:.2f} | {rp} | {ri} | {r['epsilon']:.9f} | {'; '.join(notes)} |")
    if ident and abs(r["epsilon"] - ident["epsilon"]) > 1e-6:
        bad.append(r["path"])
b1, bn = by.get("browser-1-worker"), next((r for k, r in by.items() if k.startswith("browser-") and k != "browser-1-worker"), None)
if b1 and bn:
    print(f"\nbrowser speed-up with {bn['workers']} workers: {b1['seconds'] / bn['seconds']:.2f}×")
if peak:
    for name, b in peak.items():
        print(f"\nworker build {name}: peak f32x4 mul+add {b.get('peak_gflops') or 0:.1f} GFLOP/s, relaxed madd "
              f"{b.get('peak_relaxed_gflops') or 0:.1f}, Gram f32 {b.get('kernel_gflops') or 0:.1f}, "
              f"Gram f64 {b.get('kernel_f64_gflops') or 0:.1f} (d = 4096, 512 rows, one worker)")
if bad:
    print(f"\nε disagrees with NumPy's identity by more than 1e-6: {', '.join(bad)}")
    sys.exit(1)
print("\nε agrees across all paths to 1e-6.")
