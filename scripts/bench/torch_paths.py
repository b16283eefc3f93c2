"""PyTorch-on-GPU reference timings for scripts/bench.sh (a benchmark, not a test): the peer of the
GPU pass. Runs only where `torch` imports with CUDA; otherwise prints nothing and exits 0.

- "torch-paper-f32" / "torch-paper-bf16": the paper's all-pairs method, row blocks of U·Uᵀ on the GPU,
  upper-triangle cosines summed in f64 (docs/method.md §1);
- "torch-identity-f64": the O(V·d²) identity, G = UᵀU in f64 on the GPU.

The file is read and the rows normalised by scripts/bench/numpy_paths.py's loader; the copy to the
GPU is timed apart (`copy_seconds`). Prints one JSON line per method, as numpy_paths.py does.
"""
import json
import sys
import time

try:
    import torch
except ImportError:
    sys.exit(0)
if not torch.cuda.is_available():
    sys.exit(0)

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from numpy_paths import load, unit_rows  # noqa: E402


def sync():
    torch.cuda.synchronize()


def report(method, seconds, copy_seconds, n, s1, s2, dim):
    pairs = n * (n - 1) / 2
    mu = s1 / pairs
    sigma = max(s2 / pairs - mu * mu, 0.0) ** 0.5
    print(json.dumps({"path": method, "seconds": seconds, "copy_seconds": copy_seconds, "mu": mu,
                      "sigma": sigma, "epsilon": mu + 2 * sigma, "rows": n, "dim": dim,
                      "kernel": torch.cuda.get_device_name(0)}), flush=True)


def paper(u, block=8192):
    n = u.shape[0]
    s1 = torch.zeros((), dtype=torch.float64, device=u.device)
    s2 = torch.zeros((), dtype=torch.float64, device=u.device)
    for i in range(0, n, block):
        c = (u[i:i + block] @ u[i:].T).double()
        k = c.shape[0]
        c[:, :k] = torch.triu(c[:, :k], 1)
        s1 += c.sum()
        s2 += (c * c).sum()
    sync()
    return n, float(s1), float(s2)


def identity(u):
    w = u.double()
    g = w.T @ w
    s = w.sum(0)
    sq = (w * w).sum(1)
    s1 = (float(s @ s) - float(sq.sum())) / 2
    s2 = (float((g * g).sum()) - float((sq * sq).sum())) / 2
    sync()
    return u.shape[0], s1, s2


def main():
    u = unit_rows(load(sys.argv[1]))
    t = time.perf_counter()
    gpu = torch.from_numpy(u).cuda()
    sync()
    copy = time.perf_counter() - t
    dim = u.shape[1]
    for name, fn, x in [("torch-paper-f32", paper, gpu), ("torch-paper-bf16", paper, gpu.bfloat16()),
                        ("torch-identity-f64", identity, gpu)]:
        fn(x[:64])  # warm-up: CUDA context, kernels
        t = time.perf_counter()
        n, s1, s2 = fn(x)
        report(name, time.perf_counter() - t, copy, n, s1, s2, dim)


main()
