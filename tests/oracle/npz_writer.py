"""The .npz oracle for tests/npz_reader.rs: numpy's own np.savez / np.savez_compressed write the
archive, numpy computes each matrix's all-pairs cosine statistics in f64.

    python npz_writer.py OUT stored|compressed SEED

Writes OUT with the arrays below and prints JSON {name: {"rows", "dim", "dtype", "kept", "mu",
"sigma"}} for each matrix: μ and σ over the pairs i < j of the finite non-zero rows, normalised
in f64. The f64 matrix holds f32 values (Orthoscope decodes rows to f32 before its f64 pass), so
the oracle and the pass agree to rounding.
"""
import json
import sys

import numpy as np


def trained_like(rng, rows, dim):
    # A shared mean direction plus noise of varying scale, so μ is clearly non-zero.
    mean = rng.standard_normal(dim)
    x = rng.standard_normal((rows, dim)) * rng.uniform(0.5, 2.0, (rows, 1)) + 0.3 * mean
    x[3] = 0.0  # a zero row: dropped by both sides
    return x


def stats(a):
    x = a.astype(np.float64)
    x = x[np.isfinite(x).all(axis=1)]
    norms = np.linalg.norm(x, axis=1)
    u = x[norms > 0] / norms[norms > 0, None]
    g = u @ u.T
    c = g[np.triu_indices(len(u), k=1)]
    mu = c.mean()
    sigma = np.sqrt(((c - mu) ** 2).mean())
    return len(u), float(mu), float(sigma)


def main():
    out, mode, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = np.random.default_rng(seed)
    arrays = {
        "W_dec": trained_like(rng, 300, 48).astype("<f4"),
        "model.embed_tokens.weight": trained_like(rng, 200, 32).astype("<f2"),
        "emb64": trained_like(rng, 150, 40).astype("<f4").astype("<f8"),
        "token_ids": np.arange(10, dtype="<i8"),
    }
    if mode == "stored":
        np.savez(out, **arrays)
    elif mode == "compressed":
        np.savez_compressed(out, **arrays)
    else:
        raise SystemExit(f"mode {mode!r}: stored or compressed")
    result = {}
    for name, a in arrays.items():
        if a.ndim != 2:
            continue
        kept, mu, sigma = stats(a)
        result[name] = {"rows": a.shape[0], "dim": a.shape[1], "dtype": a.dtype.str, "kept": kept, "mu": mu, "sigma": sigma}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
