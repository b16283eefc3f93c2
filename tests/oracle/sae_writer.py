"""The sparse-autoencoder oracle for tests/sae_dictionaries.rs: writes one dictionary in each
published layout, as its library saves it, and numpy computes the all-pairs cosine statistics of
its feature directions in f64.

    python sae_writer.py OUT_DIR

Layouts (shapes as their loaders define them):
  saelens/          sae_weights.safetensors (W_enc [d_in, d_sae], W_dec [d_sae, d_in], b_enc, b_dec),
                    cfg.json, sparsity.safetensors (sparsity: log10 feature density)
  saelens_old/      an older cfg.json: flat hook_point, no hook_layer; F16 weights
  transcoder/       SAELens transcoder: W_dec [d_sae, d_out]
  sparsify/layers.N sae.safetensors (encoder.weight [num_latents, d_in], W_dec, b_dec) + cfg.json, N = 0, 1, 2
  gemma/layer_20/width_16k/average_l0_71/params.npz   np.savez: W_enc, W_dec, b_enc, b_dec, threshold
  gemma2/layer_7/width_16k/l0_small/params.safetensors the same names in lower case, BF16
  llama/            hyperparams.json + checkpoints/final.safetensors (decoder.weight [d_model, d_sae], BF16)
  openai/autoencoders/6.pt  a torch.save state dict (decoder.weight [n_inputs, n_latents]), written by
                    torch_writer.py's fake-torch writer

Every decoder's feature rows have norms far from 1 (a trained-like shared direction plus noise,
scaled per row by 0.05..20). Prints the manifest as JSON: for each case its path (the folder or
file `analyze` is given), what Report.dictionary must say, and μ, σ, ε over the feature rows as
stored (BF16/F16 rounded first), plus, for the SAELens case, the same over the latents kept when
the dead ones are set aside at the default floor and at −9.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_writer  # noqa: E402  (its fake torch modules, its Checkpoint writer)


def features(rng, rows, dim):
    common = rng.standard_normal(dim)
    x = 0.5 * common + rng.standard_normal((rows, dim))
    return (x * rng.uniform(0.05, 20.0, (rows, 1))).astype(np.float32)


def stats(rows, keep=None):
    x = rows.astype(np.float64)
    if keep is not None:
        x = x[keep]
    norms = np.linalg.norm(x, axis=1)
    u = x[norms > 0] / norms[norms > 0, None]
    c = (u @ u.T)[np.triu_indices(len(u), k=1)]
    mu, sigma = float(c.mean()), float(c.std())
    return {"rows_used": len(u), "mu": mu, "sigma": sigma, "epsilon": mu + 2 * sigma}


def as_stored(values, dt):
    """(raw little-endian bytes, values as read back) of float32 values stored as dt."""
    if dt == "F32":
        a = values.astype("<f4")
        return a.tobytes(), a
    if dt == "F16":
        a = values.astype("<f2")
        return a.tobytes(), a.astype(np.float32)
    bits = torch_writer.bf16_bits(values)
    return bits.astype("<u2").tobytes(), (bits.astype(np.uint32) << 16).view(np.float32)


def safetensors(path, tensors):
    """tensors: [(name, dtype, float32 array)]; returns {name: values as stored}."""
    header, data, back = {}, b"", {}
    for name, dt, values in tensors:
        raw, stored = as_stored(values, dt)
        header[name] = {"dtype": dt, "shape": list(values.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
        back[name] = stored
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + data)
    return back


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(value, f)


def main(out):
    rng = np.random.default_rng(40)
    cases = []

    def case(name, path, expect, feature_rows, **extra):
        cases.append({"case": name, "path": os.path.join(out, path), "dictionary": expect, **stats(feature_rows), **extra})

    # SAELens, with its sparsity file: 12 latents never fired (−10), 5 fired rarely (−9.3).
    d_in, d_sae = 24, 160
    w = safetensors(os.path.join(out, "saelens/sae_weights.safetensors"), [
        ("W_enc", "F32", features(rng, d_in, d_sae)),
        ("W_dec", "F32", features(rng, d_sae, d_in)),
        ("b_enc", "F32", rng.standard_normal(d_sae).astype(np.float32)),
        ("b_dec", "F32", rng.standard_normal(d_in).astype(np.float32)),
    ])
    write_json(os.path.join(out, "saelens/cfg.json"), {
        "architecture": "standard", "d_in": d_in, "d_sae": d_sae, "hook_name": "blocks.6.hook_resid_pre",
        "hook_layer": 6, "model_name": "gpt2-small", "dtype": "float32"})
    sparsity = rng.uniform(-4.0, -1.0, d_sae).astype(np.float32)
    dead = rng.choice(d_sae, 17, replace=False)
    sparsity[dead[:12]] = -10.0
    sparsity[dead[12:]] = -9.3
    safetensors(os.path.join(out, "saelens/sparsity.safetensors"), [("sparsity", "F32", sparsity)])
    case("saelens", "saelens", {"d_sae": d_sae, "d_in": d_in, "layer": 6, "hook": "blocks.6.hook_resid_pre",
                                "architecture": "standard", "source_layout": "saelens", "decoder": "W_dec",
                                "columns_are_features": False, "transcoder": False}, w["W_dec"],
         dead_default={"rows_excluded": 12, **stats(w["W_dec"], sparsity >= -9.5)},
         dead_below_9={"rows_excluded": 17, **stats(w["W_dec"], sparsity >= -9.0)})

    # An older SAELens config: the hook in hook_point, the layer only in its name; F16.
    d_in, d_sae = 16, 96
    w = safetensors(os.path.join(out, "saelens_old/sae_weights.safetensors"), [
        ("W_dec", "F16", features(rng, d_sae, d_in)),
        ("W_enc", "F16", features(rng, d_in, d_sae)),
    ])
    write_json(os.path.join(out, "saelens_old/cfg.json"), {"d_in": d_in, "d_sae": d_sae, "hook_point": "blocks.3.hook_resid_post"})
    case("saelens_old", "saelens_old", {"d_sae": d_sae, "d_in": d_in, "layer": 3, "hook": "blocks.3.hook_resid_post",
                                        "architecture": None, "source_layout": "saelens", "decoder": "W_dec",
                                        "columns_are_features": False, "transcoder": False}, w["W_dec"])

    # A SAELens transcoder: reads 24-wide, writes 20-wide.
    d_in, d_out, d_sae = 24, 20, 100
    w = safetensors(os.path.join(out, "transcoder/sae_weights.safetensors"), [
        ("W_enc", "F32", features(rng, d_in, d_sae)),
        ("W_dec", "F32", features(rng, d_sae, d_out)),
    ])
    write_json(os.path.join(out, "transcoder/cfg.json"), {
        "architecture": "transcoder", "d_in": d_in, "d_out": d_out, "d_sae": d_sae,
        "metadata": {"hook_name": "blocks.2.ln2.hook_normalized", "hook_layer": 2}})
    case("transcoder", "transcoder", {"d_sae": d_sae, "d_in": d_in, "layer": 2, "hook": "blocks.2.ln2.hook_normalized",
                                      "architecture": "transcoder", "source_layout": "saelens", "decoder": "W_dec",
                                      "columns_are_features": False, "transcoder": True, "d_out": d_out}, w["W_dec"])

    # EleutherAI sparsify: one folder per hookpoint.
    d_in, d_sae = 20, 128
    for layer in range(3):
        folder = f"sparsify/layers.{layer}"
        w = safetensors(os.path.join(out, folder, "sae.safetensors"), [
            ("encoder.weight", "F32", features(rng, d_sae, d_in)),
            ("encoder.bias", "F32", rng.standard_normal(d_sae).astype(np.float32)),
            ("W_dec", "F32", features(rng, d_sae, d_in)),
            ("b_dec", "F32", rng.standard_normal(d_in).astype(np.float32)),
        ])
        write_json(os.path.join(out, folder, "cfg.json"), {
            "expansion_factor": 32, "normalize_decoder": True, "num_latents": d_sae, "k": 8,
            "multi_topk": False, "skip_connection": False, "d_in": d_in})
        case(f"sparsify_{layer}", folder, {"d_sae": d_sae, "d_in": d_in, "layer": layer, "hook": f"layers.{layer}",
                                          "architecture": "topk", "source_layout": "sparsify", "decoder": "W_dec",
                                          "columns_are_features": False, "transcoder": False}, w["W_dec"])

    # Gemma Scope: numpy's own savez.
    d_in, d_sae = 32, 144
    w_dec = features(rng, d_sae, d_in)
    path = os.path.join(out, "gemma/layer_20/width_16k/average_l0_71/params.npz")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.savez(path, W_enc=features(rng, d_in, d_sae), W_dec=w_dec, b_enc=np.zeros(d_sae, np.float32),
             b_dec=np.zeros(d_in, np.float32), threshold=rng.uniform(0, 1, d_sae).astype(np.float32))
    case("gemma_scope", "gemma/layer_20/width_16k/average_l0_71/params.npz",
         {"d_sae": d_sae, "d_in": d_in, "layer": 20, "hook": None, "architecture": "jumprelu",
          "source_layout": "gemma_scope", "decoder": "W_dec", "columns_are_features": False, "transcoder": False}, w_dec)

    # Gemma Scope 2: safetensors, lower-case names, BF16.
    d_in, d_sae = 32, 112
    w = safetensors(os.path.join(out, "gemma2/layer_7/width_16k/l0_small/params.safetensors"), [
        ("w_enc", "BF16", features(rng, d_in, d_sae)),
        ("w_dec", "BF16", features(rng, d_sae, d_in)),
        ("b_enc", "BF16", np.zeros(d_sae, np.float32)),
        ("b_dec", "BF16", np.zeros(d_in, np.float32)),
        ("threshold", "BF16", rng.uniform(0, 1, d_sae).astype(np.float32)),
    ])
    case("gemma_scope_2", "gemma2/layer_7/width_16k/l0_small/params.safetensors",
         {"d_sae": d_sae, "d_in": d_in, "layer": 7, "hook": None, "architecture": "jumprelu",
          "source_layout": "gemma_scope_2", "decoder": "w_dec", "columns_are_features": False, "transcoder": False},
         w["w_dec"])

    # Llama Scope: features in the decoder's columns, BF16.
    d_model, d_sae = 24, 136
    w = safetensors(os.path.join(out, "llama/checkpoints/final.safetensors"), [
        ("decoder.bias", "BF16", np.zeros(d_model, np.float32)),
        ("decoder.weight", "BF16", features(rng, d_sae, d_model).T.copy()),
        ("encoder.bias", "BF16", np.zeros(d_sae, np.float32)),
        ("encoder.weight", "BF16", features(rng, d_sae, d_model)),
    ])
    write_json(os.path.join(out, "llama/hyperparams.json"), {
        "d_model": d_model, "d_sae": d_sae, "hook_point_in": "blocks.5.hook_resid_post",
        "hook_point_out": "blocks.5.hook_resid_post", "act_fn": "jumprelu", "top_k": 50})
    case("llama_scope", "llama", {"d_sae": d_sae, "d_in": d_model, "layer": 5, "hook": "blocks.5.hook_resid_post",
                                  "architecture": "jumprelu", "source_layout": "llama_scope", "decoder": "decoder.weight",
                                  "columns_are_features": True, "transcoder": False}, w["decoder.weight"].T)

    # OpenAI's GPT-2 autoencoders: nn.Linear weights in a torch.save zip.
    n_inputs, n_latents = 16, 120
    ck = torch_writer.Checkpoint()
    dec, dec_back = ck.tensor(features(rng, n_latents, n_inputs).T.copy(), "f4")
    enc, _ = ck.tensor(features(rng, n_latents, n_inputs), "f4")
    pre, _ = ck.tensor(np.zeros(n_inputs, np.float32), "f4")
    lat, _ = ck.tensor(np.zeros(n_latents, np.float32), "f4")
    sd = {"pre_bias": pre, "latent_bias": lat, "encoder.weight": enc, "decoder.weight": dec}
    path = os.path.join(out, "openai/autoencoders/6.pt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    ck.save(sd, path)
    case("openai", "openai/autoencoders/6.pt",
         {"d_sae": n_latents, "d_in": n_inputs, "layer": 6, "hook": None, "architecture": None,
          "source_layout": "openai", "decoder": "decoder.weight", "columns_are_features": True, "transcoder": False},
         dec_back.T)

    print(json.dumps(cases))


if __name__ == "__main__":
    main(sys.argv[1])
