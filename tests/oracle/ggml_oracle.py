#!/usr/bin/env python3
"""The independent side of tests/ggml_oracle.rs: gguf-py (llama.cpp's own package) makes and
dequantises ggml blocks, numpy computes the statistics in f64.

    ggml_oracle.py blocks OUT      random blocks of every type: OUT/<TYPE>.bin and gguf-py's OUT/<TYPE>.f32
    ggml_oracle.py embedding OUT   a 300x512 embedding per type: OUT/<TYPE>.q (quantised by gguf-py
                                   where it can, else random valid blocks), OUT/<TYPE>.json (how, and
                                   mu, sigma, epsilon over gguf-py's dequantised rows)
"""

import json
import os
import sys

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as T
from gguf import quants

# Q8_K is left out: gguf-py has no dequantiser for it (it is ggml's dot-product intermediate).
TYPES = [
    "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
    "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "IQ1_M",
    "TQ1_0", "TQ2_0", "MXFP4",
]

# Byte offsets of each type's f16 scale fields (ggml-common.h): set to finite, moderate values so
# rows are finite; every other byte keeps its random bit pattern.
F16_FIELDS = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
    "IQ2_XXS": [0], "IQ2_XS": [0], "IQ3_XXS": [0], "IQ1_S": [0], "IQ4_NL": [0], "IQ3_S": [0],
    "IQ2_S": [0], "IQ4_XS": [0], "TQ1_0": [52], "TQ2_0": [64],
}


def moderate_f16(rng, n, binades=(-12.0, 4.0)):
    mag = np.exp2(rng.uniform(binades[0], binades[1], n))
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return (sign * mag).astype(np.float16)


def random_blocks(name, n_blocks, rng, binades=(-12.0, 4.0)):
    _, type_size = GGML_QUANT_SIZES[T[name]]
    b = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    for at in F16_FIELDS.get(name, []):
        b[:, at : at + 2] = moderate_f16(rng, n_blocks, binades).view(np.uint8).reshape(n_blocks, 2)
    if name == "IQ1_M":
        # The block's f16 scale is the top nibbles of the four u16 scale words at bytes 48..56.
        d = moderate_f16(rng, n_blocks, binades).view(np.uint16)
        words = b[:, 48:56].copy().view(np.uint16).reshape(n_blocks, 4)
        for k in range(4):
            words[:, k] = (words[:, k] & 0x0FFF) | (((d >> (4 * k)) & 0xF) << 12)
        b[:, 48:56] = words.view(np.uint8).reshape(n_blocks, 8)
    if name == "MXFP4":
        # E8M0 exponents, subnormal ones included, short of those that overflow 12 * 2^(e-128).
        b[:, 0] = rng.integers(0, 200, size=n_blocks, dtype=np.uint8)
    return b


def dequantize(name, blocks):
    return quants.dequantize(blocks.reshape(-1), T[name]).astype(np.float32).reshape(-1)


def cmd_blocks(out):
    rng = np.random.default_rng(20240611)
    for name in TYPES:
        block_size, _ = GGML_QUANT_SIZES[T[name]]
        n_blocks = 4096 if block_size == 32 else 512
        b = random_blocks(name, n_blocks, rng)
        y = dequantize(name, b)
        assert y.shape == (n_blocks * block_size,) and np.all(np.isfinite(y)), name
        b.tofile(os.path.join(out, name + ".bin"))
        y.astype("<f4").tofile(os.path.join(out, name + ".f32"))


def stats(matrix):
    m = matrix.astype(np.float64)
    norms = np.linalg.norm(m, axis=1)
    keep = np.all(np.isfinite(m), axis=1) & (norms > 0)
    u = m[keep] / norms[keep][:, None]
    g = u @ u.T
    cos = g[np.triu_indices(len(u), k=1)]
    mu = float(cos.mean())
    sigma = float(cos.std())
    return {"rows_used": int(keep.sum()), "pairs": int(cos.size), "mu": mu, "sigma": sigma, "epsilon": mu + 2 * sigma}


# Scales of an embedding's blocks lie within a binade or two of each other.
EMBEDDING_BINADES = (-8.0, -7.0)


def cmd_embedding(out):
    rows, dim = 300, 512
    rng = np.random.default_rng(7)
    common = rng.normal(size=dim)
    common /= np.linalg.norm(common)
    weights = (0.6 * common[None, :] + rng.normal(size=(rows, dim)) / np.sqrt(dim)) * 0.05
    weights = weights.astype(np.float32)
    for name in TYPES:
        qtype = T[name]
        block_size, type_size = GGML_QUANT_SIZES[qtype]
        try:
            q = quants.quantize(weights, qtype).reshape(rows, -1)
            how = "quantised by gguf-py"
        except NotImplementedError:
            # Random valid blocks, each row sharing about half its blocks with one template row,
            # so that rows have a common direction as trained embeddings do.
            per_row = dim // block_size
            q = random_blocks(name, rows * per_row, rng, EMBEDDING_BINADES).reshape(rows, per_row, type_size)
            template = random_blocks(name, per_row, rng, EMBEDDING_BINADES)
            shared = rng.random((rows, per_row)) < 0.5
            q[shared] = np.broadcast_to(template, q.shape)[shared]
            q = q.reshape(rows, -1)
            how = "random valid blocks"
        q = np.ascontiguousarray(q, dtype=np.uint8)
        q[7] = 0  # an all-zero row: dropped by both sides
        y = dequantize(name, q).reshape(rows, dim)
        s = stats(y)
        s["how"] = how
        q.tofile(os.path.join(out, name + ".q"))
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(s, f)


def main():
    cmd, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    {"blocks": cmd_blocks, "embedding": cmd_embedding}[cmd](out)
    with open(os.path.join(out, "types.txt"), "w") as f:
        f.write("\n".join(TYPES) + "\n")


if __name__ == "__main__":
    main()
