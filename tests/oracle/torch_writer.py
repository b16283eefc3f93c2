"""Writes PyTorch checkpoints exactly as torch.save does (zip layout, protocol-2 pickle, the
globals torch pickles, storages as persistent ids, members stored at 64-byte-aligned offsets)
without torch: fake `torch`, `torch._utils` and `torch.storage` modules stand in, so pickle writes
`torch._utils._rebuild_tensor_v2`, `torch.BFloat16Storage`, … by name. Nothing is ever loaded.

Usage: python torch_writer.py OUT_DIR  — writes one checkpoint per case and OUT_DIR/manifest.json
with what reading each must give (tensor names; μ, σ, ε of the embedding from numpy's f64
all-pairs cosines, or words the error must contain).
"""
import argparse
import collections
import io
import json
import os
import pickle
import struct
import sys
import types
import zipfile

import numpy as np

# --- fake torch ---------------------------------------------------------------------------------
torch = types.ModuleType("torch")
torch_utils = types.ModuleType("torch._utils")
torch_storage = types.ModuleType("torch.storage")
torch._utils = torch_utils
torch.storage = torch_storage
sys.modules.update({"torch": torch, "torch._utils": torch_utils, "torch.storage": torch_storage})


def _fn(module, name):
    def f(*args):
        raise RuntimeError("never called")

    f.__module__, f.__name__, f.__qualname__ = module.__name__, name, name
    setattr(module, name, f)
    return f


_rebuild_tensor_v2 = _fn(torch_utils, "_rebuild_tensor_v2")
_rebuild_parameter = _fn(torch_utils, "_rebuild_parameter")

STORAGE_TYPES = {}
for dt, name in [("f4", "FloatStorage"), ("bf16", "BFloat16Storage"), ("f2", "HalfStorage"), ("i8", "LongStorage")]:
    cls = type(name, (), {"__module__": "torch"})
    setattr(torch, name, cls)
    STORAGE_TYPES[dt] = cls


class Storage:
    """One storage: raw little-endian bytes, its torch type and element size."""

    def __init__(self, key, kind, raw, elem):
        self.key, self.kind, self.raw, self.elem = key, kind, raw, elem


class Tensor:
    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)

    def __reduce_ex__(self, protocol):
        return (_rebuild_tensor_v2, (self.storage, self.offset, self.size, self.stride, False, collections.OrderedDict()))


class Parameter:
    def __init__(self, tensor):
        self.tensor = tensor

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.tensor, True, collections.OrderedDict()))


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/orthoscope-pwned",))


class EvilEval:
    def __reduce__(self):
        return (eval, ("1+1",))


# --- values ---------------------------------------------------------------------------------------
def bf16_bits(x):
    """float32 → bfloat16 bits, round to nearest even (torch's conversion)."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype(np.uint16)


def stored(values, dt):
    """(raw bytes, float64 values as read back) of a float32 array stored as dtype `dt`."""
    if dt == "f4":
        a = values.astype("<f4")
        return a.tobytes(), a.astype(np.float64)
    if dt == "f2":
        a = values.astype("<f2")
        return a.tobytes(), a.astype(np.float64)
    bits = bf16_bits(values)
    back = (bits.astype(np.uint32) << 16).view(np.float32)
    return bits.astype("<u2").tobytes(), back.astype(np.float64)


ELEM = {"f4": 4, "f2": 2, "bf16": 2, "i8": 8}


class Checkpoint:
    def __init__(self):
        self.storages = []

    def storage(self, raw, dt):
        s = Storage(str(len(self.storages)), dt, raw, ELEM[dt])
        self.storages.append(s)
        return s

    def tensor(self, values, dt):
        """A contiguous tensor with its own storage; returns (tensor, f64 values as stored)."""
        raw, back = stored(values, dt)
        shape = values.shape
        stride = tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
        return Tensor(self.storage(raw, dt), 0, shape, stride), back.reshape(shape)

    def save(self, obj, path, zip64=False):
        buf = io.BytesIO()
        p = pickle.Pickler(buf, protocol=2)

        def persistent_id(o):
            if isinstance(o, Storage):
                return ("storage", STORAGE_TYPES[o.kind], o.key, "cpu", len(o.raw) // o.elem)
            return None

        p.persistent_id = persistent_id
        p.dump(obj)
        members = [("archive/data.pkl", buf.getvalue()), ("archive/byteorder", b"little")]
        members += [(f"archive/data/{s.key}", s.raw) for s in self.storages]
        members.append(("archive/version", b"3\n"))
        with open(path, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
            for name, data in members:
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_STORED
                # torch's writer pads each member's local header so its data starts at 64k.
                start = f.tell() + 30 + len(name.encode()) + 4 + (20 if zip64 else 0)
                pad = (-start) % 64
                info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
                with z.open(info, "w", force_zip64=zip64) as w:
                    w.write(data)


def stats(rows):
    """μ, σ (population, over distinct pairs), ε = μ + 2σ of the rows' cosines, in f64."""
    norms = np.linalg.norm(rows, axis=1)
    keep = np.isfinite(rows).all(axis=1) & (norms > 0)
    u = rows[keep] / norms[keep][:, None]
    g = u @ u.T
    c = g[np.triu_indices(len(u), k=1)]
    mu, sigma = float(c.mean()), float(c.std())
    return {"mu": mu, "sigma": sigma, "epsilon": mu + 2 * sigma}


def matrix(rng, rows, dim):
    """Trained-like: a shared direction plus noise, so μ is well above 0."""
    common = rng.standard_normal(dim).astype(np.float32)
    return (0.6 * common + rng.standard_normal((rows, dim)).astype(np.float32)).astype(np.float32)


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    manifest = []
    V, D = 300, 16

    def case(name, obj, ck, expect, tensors=None, zip64=False):
        path = os.path.join(out, name)
        ck.save(obj, path, zip64=zip64)
        manifest.append({"case": name, "file": name, "expect": expect, "tensors": tensors})

    # F32, a plain state dict, with other tensors beside the embedding.
    ck = Checkpoint()
    emb, back = ck.tensor(matrix(rng, V, D), "f4")
    norm, _ = ck.tensor(rng.standard_normal(D).astype(np.float32), "f4")
    head, _ = ck.tensor(matrix(rng, V, D), "f4")
    sd = collections.OrderedDict([("model.embed_tokens.weight", emb), ("model.norm.weight", norm), ("lm_head.weight", head)])
    case("f32.bin", sd, ck, {"tensor": "model.embed_tokens.weight", **stats(back)},
         ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"])

    # BF16 under {"model": …} with an optimizer's state and a step.
    ck = Checkpoint()
    emb, back = ck.tensor(matrix(rng, V, D), "bf16")
    avg, _ = ck.tensor(rng.standard_normal((V, D)).astype(np.float32), "f4")
    obj = {"model": collections.OrderedDict([("embed_tokens.weight", emb)]),
           "optimizer": {"state": {0: {"exp_avg": avg, "step": 5}}, "param_groups": [{"lr": 0.001, "params": [0]}]},
           "step": 5}
    case("bf16_model.pt", obj, ck, {"tensor": "model.embed_tokens.weight", **stats(back)},
         ["model.embed_tokens.weight", "optimizer.state.0.exp_avg"])

    # F16 in a Lightning checkpoint: state_dict. and DDP's module. dropped, a hyperparameter object beside.
    ck = Checkpoint()
    emb, back = ck.tensor(matrix(rng, V, D), "f2")
    obj = {"epoch": 3, "global_step": 900,
           "state_dict": collections.OrderedDict([("module.model.embed_tokens.weight", emb)]),
           "hyper_parameters": argparse.Namespace(lr=0.1)}
    case("f16_lightning.ckpt", obj, ck, {"tensor": "model.embed_tokens.weight", **stats(back),
                                         "skipped": "argparse.Namespace"},
         ["model.embed_tokens.weight"])

    # Views into one storage at offsets: lm_head at 0, the embedding after it, a tied copy of lm_head.
    ck = Checkpoint()
    a, b = matrix(rng, V, D), matrix(rng, V, D)
    raw, back = stored(np.concatenate([a, b]), "f4")
    s = ck.storage(raw, "f4")
    sd = collections.OrderedDict([
        ("lm_head.weight", Tensor(s, 0, (V, D), (D, 1))),
        ("model.embed_tokens.weight", Tensor(s, V * D, (V, D), (D, 1))),
        ("model.tied.weight", Tensor(s, 0, (V, D), (D, 1))),
    ])
    case("shared.pth", sd, ck, {"tensor": "model.embed_tokens.weight", **stats(back[V:])},
         ["lm_head.weight", "model.embed_tokens.weight", "model.tied.weight"])

    # A transposed (non-contiguous) embedding: left out, and named with the fix when it is wanted.
    ck = Checkpoint()
    raw, _ = stored(matrix(rng, D, V), "f4")
    s = ck.storage(raw, "f4")
    norm, _ = ck.tensor(rng.standard_normal(D).astype(np.float32), "f4")
    sd = collections.OrderedDict([("model.embed_tokens.weight", Tensor(s, 0, (V, D), (1, V))), ("model.norm.weight", norm)])
    case("transposed.bin", sd, ck, {"error": ["model.embed_tokens.weight", "non-contiguous", "contiguous()"]},
         ["model.norm.weight"])

    # ZIP64 local headers on every member, and nn.Parameter wrapping.
    ck = Checkpoint()
    emb, back = ck.tensor(matrix(rng, V, D), "f4")
    sd = collections.OrderedDict([("model.embed_tokens.weight", Parameter(emb))])
    case("zip64.pt", sd, ck, {"tensor": "model.embed_tokens.weight", **stats(back)}, ["model.embed_tokens.weight"],
         zip64=True)

    # A hostile global beside good tensors: listed as skipped, never run.
    ck = Checkpoint()
    emb, back = ck.tensor(matrix(rng, V, D), "f4")
    sd = {"model.embed_tokens.weight": emb, "payload": Evil(), "other": EvilEval()}
    case("evil_beside.bin", sd, ck, {"tensor": "model.embed_tokens.weight", **stats(back), "skipped": "system"},
         ["model.embed_tokens.weight"])

    # A hostile global as the whole checkpoint.
    case("evil_alone.bin", Evil(), Checkpoint(), {"error": ["system", "does not rebuild"]}, [])

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
