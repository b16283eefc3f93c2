"""NumPy reference timings for scripts/bench.sh (a benchmark, not a test).

Reads the first 2-D tensor named like an embedding from a safetensors file (BF16/F16/F32) and computes
the mean and spread of all pairwise cosines two ways (docs/method.md §1):

- "paper": the all-pairs method, row blocks of U·Uᵀ (f32 BLAS), upper-triangle cosines summed in f64;
- "identity": the O(V·d²) identity used by Orthoscope, G = UᵀU (f32 BLAS), s = Σuᵢ:
  Σ_{i<j} cos = (‖s‖² − Σ‖uᵢ‖²)/2 and Σ_{i<j} cos² = (‖G‖_F² − Σ‖uᵢ‖⁴)/2.

Prints one JSON line per method: {"method", "seconds", "mu", "sigma", "epsilon", "rows", "dim"}.
Zero and non-finite rows are left out, as the app does.
"""
import json
import struct
import sys
import time

import numpy as np


def load(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        names = [k for k, v in header.items() if k != "__metadata__" and len(v["shape"]) == 2]
        name = next((k for k in names if "embed" in k), names[0])
        t = header[name]
        a, b = t["data_offsets"]
        f.seek(base + a)
        raw = f.read(b - a)
    rows, dim = t["shape"]
    if t["dtype"] == "BF16":
        x = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    elif t["dtype"] == "F16":
        x = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif t["dtype"] == "F32":
        x = np.frombuffer(raw, dtype="<f4").copy()
    else:
        raise SystemExit(f"{name}: dtype {t['dtype']} not handled by the benchmark")
    return x.reshape(rows, dim)


def unit_rows(x):
    norms = np.linalg.norm(x.astype(np.float64), axis=1)
    keep = np.isfinite(norms) & (norms > 0)
    return (x[keep].astype(np.float64) / norms[keep, None]).astype(np.float32)


def finish(method, seconds, n, s1, s2, dim):
    pairs = n * (n - 1) / 2
    mu = s1 / pairs
    sigma = max(s2 / pairs - mu * mu, 0.0) ** 0.5
    print(json.dumps({"method": method, "seconds": seconds, "mu": mu, "sigma": sigma,
                      "epsilon": mu + 2 * sigma, "rows": n, "dim": dim}), flush=True)


def paper(u, block=1024):
    n = u.shape[0]
    s1 = s2 = 0.0
    for i in range(0, n, block):
        c = u[i:i + block] @ u[i:].T
        # Pairs (i+a, i+b) with b > a: the strict upper triangle of the leading square, and the rest.
        k = c.shape[0]
        tri = np.triu(c[:, :k], 1)
        rest = c[:, k:]
        s1 += float(tri.sum(dtype=np.float64)) + float(rest.sum(dtype=np.float64))
        s2 += float(np.square(tri, dtype=np.float64).sum()) + float(np.square(rest, dtype=np.float64).sum())
    return n, s1, s2


def identity(u):
    g = (u.T @ u).astype(np.float64)
    s = u.sum(axis=0, dtype=np.float64)
    sq = np.einsum("ij,ij->i", u, u, dtype=np.float64)
    s1 = (float(s @ s) - float(sq.sum())) / 2
    s2 = (float(np.square(g).sum()) - float(np.square(sq).sum())) / 2
    return u.shape[0], s1, s2


def main():
    path = sys.argv[1]
    methods = sys.argv[2:] or ["identity", "paper"]
    x = load(path)
    for method in methods:
        t0 = time.perf_counter()
        u = unit_rows(x)  # counted in both: the app normalises too
        n, s1, s2 = {"paper": paper, "identity": identity}[method](u)
        finish(method, time.perf_counter() - t0, n, s1, s2, x.shape[1])


if __name__ == "__main__":
    main()
