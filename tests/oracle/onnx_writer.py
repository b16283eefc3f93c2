"""ONNX fixtures for tests/onnx_reader.rs, written with onnx's own helpers, and numpy's f64
all-pairs cosine statistics of each embedding (as ONNX's reference dequantises it).

    python onnx_writer.py OUT_DIR

writes the cases into OUT_DIR and prints one JSON object: case → {files, mu, sigma, eps, ...}.
"""

import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def stats(m):
    m = np.asarray(m, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1)
    keep = (norms > 0) & np.all(np.isfinite(m), axis=1)
    u = m[keep] / norms[keep][:, None]
    g = u @ u.T
    iu = np.triu_indices(len(u), 1)
    c = g[iu]
    mu = c.mean()
    sigma = c.std()
    eps = mu + 2 * sigma  # docs/method.md §1
    return {"mu": float(mu), "sigma": float(sigma), "eps": float(eps), "rows": int(len(u))}


def graph_with_gather(data_name, initializers, extra_nodes=(), name="g"):
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])
    out = helper.make_tensor_value_info("hidden", TensorProto.FLOAT, None)
    nodes = list(extra_nodes) + [helper.make_node("Gather", [data_name, "input_ids"], ["hidden"], name="/embed/Gather")]
    return helper.make_graph(nodes, name, [ids], [out], initializer=initializers)


def model(graph):
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], producer_name="orthoscope-oracle")


def rng_matrix(seed, rows, dim, offset=0.03):
    r = np.random.default_rng(seed)
    return (r.standard_normal((rows, dim)) * 0.05 + offset * r.standard_normal(dim)).astype(np.float32)


def main(out):
    os.makedirs(out, exist_ok=True)
    cases = {}

    def save(case, m, files, values, **extra):
        path = os.path.join(out, files[0])
        onnx.save_model(m, path)
        cases[case] = {"files": files, **stats(values), **extra}

    # 1. float32 raw_data under an opaque name, with a block weight beside it.
    e = rng_matrix(1, 300, 24)
    other = rng_matrix(2, 24, 24)
    g = graph_with_gather(
        "onnx::Gather_123",
        [numpy_helper.from_array(e, "onnx::Gather_123"), numpy_helper.from_array(other, "onnx::MatMul_77")],
    )
    save("f32_raw", model(g), ["f32_raw.onnx"], e, tensor="onnx::Gather_123", raw_bytes=e.nbytes)

    # 2. float16 and bfloat16 (raw_data).
    e16 = rng_matrix(3, 200, 16).astype(np.float16)
    g = graph_with_gather("/model/embed_tokens/weight", [numpy_helper.from_array(e16, "/model/embed_tokens/weight")])
    save("f16_raw", model(g), ["f16_raw.onnx"], e16.astype(np.float64), tensor="/model/embed_tokens/weight")

    ebf = rng_matrix(4, 200, 16)
    bits = (ebf.view(np.uint32) >> 16).astype(np.uint16)  # truncation: the exact bf16 the file holds
    bf_values = (bits.astype(np.uint32) << 16).view(np.float32)
    t = helper.make_tensor("emb_bf16", TensorProto.BFLOAT16, list(ebf.shape), bits.tobytes(), raw=True)
    g = graph_with_gather("emb_bf16", [t])
    save("bf16_raw", model(g), ["bf16_raw.onnx"], bf_values, tensor="emb_bf16")

    # 3. typed fields: float_data (packed floats), and a float16 in int32_data (listed, refused).
    ef = rng_matrix(5, 150, 12)
    t = helper.make_tensor("embeddings.word_embeddings.weight", TensorProto.FLOAT, list(ef.shape), ef.flatten().tolist())
    assert len(t.float_data) == ef.size and not t.raw_data
    g = graph_with_gather("embeddings.word_embeddings.weight", [t])
    save("float_data", model(g), ["float_data.onnx"], ef, tensor="embeddings.word_embeddings.weight")

    eh = rng_matrix(6, 40, 8).astype(np.float16)
    t = helper.make_tensor("emb_int32", TensorProto.FLOAT16, list(eh.shape), eh.flatten().tolist())
    assert len(t.int32_data) == eh.size
    g = graph_with_gather("emb_int32", [t])
    save("f16_int32_data", model(g), ["f16_int32_data.onnx"], eh.astype(np.float64), tensor="emb_int32")

    # 4. external data: one file, several tensors at offsets; the embedding is not the first.
    ex = rng_matrix(7, 256, 20)
    first = rng_matrix(8, 20, 20)
    g = graph_with_gather(
        "model.embed_tokens.weight",
        [numpy_helper.from_array(first, "a_first.weight"), numpy_helper.from_array(ex, "model.embed_tokens.weight"),
         numpy_helper.from_array(rng_matrix(9, 20, 5), "z_last.weight")],
    )
    m = model(g)
    onnx.save_model(m, os.path.join(out, "external.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="external.onnx_data", size_threshold=0)
    offsets = {}
    for init in onnx.load(os.path.join(out, "external.onnx"), load_external_data=False).graph.initializer:
        entries = {e.key: e.value for e in init.external_data}
        offsets[init.name] = int(entries.get("offset", "0"))
    cases["external"] = {"files": ["external.onnx", "external.onnx_data"], **stats(ex),
                         "tensor": "model.embed_tokens.weight", "offsets": offsets}

    # 5. int8 with DequantizeLinear: per-tensor scale, nonzero zero point, Gather of its output.
    real = rng_matrix(10, 320, 32, offset=0.5)
    scale = np.float32(np.abs(real).max() / 100.0)
    zp = np.int8(7)
    q = np.clip(np.round(real / scale) + zp, -128, 127).astype(np.int8)
    deq = (q.astype(np.float32) - np.float32(zp)) * scale  # ONNX's reference DequantizeLinear
    nodes = [helper.make_node("DequantizeLinear", ["emb_q", "emb_scale", "emb_zp"], ["emb_deq"])]
    g = graph_with_gather(
        "emb_deq",
        [numpy_helper.from_array(q, "emb_q"), helper.make_tensor("emb_scale", TensorProto.FLOAT, [], [float(scale)]),
         helper.make_tensor("emb_zp", TensorProto.INT8, [], [int(zp)])],
        extra_nodes=nodes,
    )
    from onnx.reference import ReferenceEvaluator
    ref = ReferenceEvaluator(model(g)).run(None, {"input_ids": np.arange(320, dtype=np.int64).reshape(1, -1)})[0][0]
    assert np.array_equal(ref, deq)
    save("int8_dq", model(g), ["int8_dq.onnx"], deq, tensor="emb_q", scale_bits=int(scale.view(np.uint32)),
         zero_point=int(zp))

    # uint8 per-axis (one scale per row): refused with the axis named.
    qu = np.random.default_rng(11).integers(0, 255, (64, 8)).astype(np.uint8)
    nodes = [helper.make_node("DequantizeLinear", ["emb_u8", "emb_scales"], ["emb_deq"], axis=0)]
    g = graph_with_gather(
        "emb_deq",
        [numpy_helper.from_array(qu, "emb_u8"), numpy_helper.from_array(np.full(64, 0.01, np.float32), "emb_scales")],
        extra_nodes=nodes,
    )
    save("uint8_per_axis", model(g), ["uint8_per_axis.onnx"], qu.astype(np.float64), tensor="emb_u8")

    # External data named outside the model's folder: refused, never opened.
    t = numpy_helper.from_array(rng_matrix(13, 8, 4), "emb_escape")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../secret.bin"), ("offset", "0"), ("length", "128")):
        entry = t.external_data.add()
        entry.key, entry.value = k, v
    g = graph_with_gather("emb_escape", [t])
    with open(os.path.join(out, "escape.onnx"), "wb") as f:
        f.write(model(g).SerializeToString())
    cases["escape"] = {"files": ["escape.onnx"], "tensor": "emb_escape"}

    # A larger embedding for the test that opening reads only the header (no statistics).
    big = rng_matrix(12, 16384, 64)
    g = graph_with_gather("onnx::Gather_9", [numpy_helper.from_array(big, "onnx::Gather_9")])
    onnx.save_model(model(g), os.path.join(out, "big.onnx"))
    cases["big"] = {"files": ["big.onnx"], "tensor": "onnx::Gather_9", "raw_bytes": big.nbytes}

    json.dump(cases, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
