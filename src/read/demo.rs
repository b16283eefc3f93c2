//! The built-in demos: generated matrices shaped like the paper's classes, and an optimal line
//! packing to see them beside (`read::constructions`), written as in-memory safetensors files (the
//! page's `?demo=NAME`, generated in the worker) and by the CLI's `generate`.
//! This is the part of the generators a user needs; the test fixtures and hostile inputs built on
//! it live in `synth` (cargo feature `fixtures`, never in the app, the worker or the release CLI).

use half::{bf16, f16};

use crate::read::constructions;
use crate::read::format::DType;
use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Standard normal samples (Box–Muller), deterministic for a seed.
pub struct Normal {
    rng: Xoshiro256PlusPlus,
    spare: Option<f64>,
}

impl Normal {
    pub fn new(seed: u64) -> Self {
        // Stream 3 of the seed, as the visiting plan derives its own streams: a demo's values
        // never shift when the pass's order changes.
        Self { rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 3u64.wrapping_mul(0x9E37_79B9_7F4A_7C15)), spare: None }
    }

    pub fn uniform(&mut self) -> f64 {
        // 53 random bits in (0, 1].
        ((self.rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    pub fn sample(&mut self) -> f64 {
        if let Some(x) = self.spare.take() {
            return x;
        }
        let (u, v) = (self.uniform(), self.uniform());
        let r = (-2.0 * u.ln()).sqrt();
        let t = std::f64::consts::TAU * v;
        self.spare = Some(r * t.sin());
        r * t.cos()
    }
}

/// V×d matrix of independent N(0, 1) entries: the paper's random-init reference (`docs/method.md` §5).
pub fn random_init(rows: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut n = Normal::new(seed);
    (0..rows * dim).map(|_| n.sample() as f32).collect()
}

/// A matrix shaped like a trained Class 2 embedding: mostly independent directions, with families
/// of 2–5 related tokens sharing a component (the right tail of lexical variants, `docs/method.md`
/// §6 Fig. 3) and a weak common direction that shifts μ slightly above 0.
pub fn trained_like(rows: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut n = Normal::new(seed ^ 0x7261_696e);
    let common: Vec<f64> = (0..dim).map(|_| n.sample()).collect();
    let mut out = Vec::with_capacity(rows * dim);
    let mut family: Vec<f64> = vec![0.0; dim];
    let mut left_in_family = 0usize;
    for _ in 0..rows {
        if left_in_family == 0 {
            left_in_family = 2 + (n.uniform() * 4.0) as usize;
            for f in family.iter_mut() {
                *f = n.sample();
            }
        }
        left_in_family -= 1;
        // Family weight varies so related pairs spread over roughly 0.2–0.6.
        let w_family = 0.3 + 0.6 * n.uniform();
        let scale = 0.5 + n.uniform();
        for j in 0..dim {
            let x = n.sample() + w_family * family[j] + 0.1 * common[j];
            out.push((x * scale) as f32);
        }
    }
    out
}

/// A Class 1-like matrix (tied embeddings of small models): a strong shared direction puts μ near 0.3.
pub fn class1_like(rows: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut n = Normal::new(seed ^ 0x636c_6173);
    let common: Vec<f64> = (0..dim).map(|_| n.sample()).collect();
    let mut out = Vec::with_capacity(rows * dim);
    for _ in 0..rows {
        let w = 0.4 + 0.6 * n.uniform();
        for c in &common {
            out.push((n.sample() + w * c) as f32);
        }
    }
    out
}

/// Encodes f32 values as `dtype` (F32, F64, F16, BF16), little-endian.
pub fn encode(values: &[f32], dtype: &DType) -> Vec<u8> {
    match dtype {
        DType::F64 => values.iter().flat_map(|&x| (x as f64).to_le_bytes()).collect(),
        DType::F16 => values.iter().flat_map(|&x| f16::from_f32(x).to_le_bytes()).collect(),
        DType::BF16 => values.iter().flat_map(|&x| bf16::from_f32(x).to_le_bytes()).collect(),
        _ => values.iter().flat_map(|&x| x.to_le_bytes()).collect(),
    }
}

/// A tensor to write into a generated safetensors file.
pub struct TensorSpec {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

impl TensorSpec {
    pub fn matrix(name: &str, dtype: DType, rows: usize, dim: usize, values: &[f32]) -> Self {
        Self { name: name.into(), data: encode(values, &dtype), dtype, shape: vec![rows as u64, dim as u64] }
    }
}

/// Writes a safetensors file: 8-byte header length, JSON header (padded with spaces to 8 bytes as
/// the reference writer does), tensors back to back.
pub fn safetensors_bytes(tensors: &[TensorSpec]) -> Vec<u8> {
    let entries: Vec<(&str, &DType, &[u64], u64)> =
        tensors.iter().map(|t| (t.name.as_str(), &t.dtype, t.shape.as_slice(), t.data.len() as u64)).collect();
    let header = header_for(&entries, 0);
    let mut out = Vec::with_capacity(header.len() + tensors.iter().map(|t| t.data.len()).sum::<usize>());
    out.extend_from_slice(&header);
    for t in tensors {
        out.extend_from_slice(&t.data);
    }
    out
}

/// Header bytes (length prefix included) for `(name, dtype, shape, byte length)` entries laid out
/// back to back from 0, the JSON padded with spaces to a multiple of 8 bytes and to at least
/// `min_json_len` bytes.
pub(crate) fn header_for(entries: &[(&str, &DType, &[u64], u64)], min_json_len: usize) -> Vec<u8> {
    let mut map = serde_json::Map::new();
    map.insert("__metadata__".into(), serde_json::json!({"format": "pt", "generator": "orthoscope"}));
    let mut offset = 0;
    for &(name, dtype, shape, len) in entries {
        let end = offset + len;
        map.insert(
            name.to_string(),
            serde_json::json!({"dtype": dtype.name(), "shape": shape, "data_offsets": [offset, end]}),
        );
        offset = end;
    }
    let mut json = serde_json::Value::Object(map).to_string().into_bytes();
    while !json.len().is_multiple_of(8) || json.len() < min_json_len {
        json.push(b' ');
    }
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&json);
    out
}

/// The built-in demos: (name, description).
pub const DEMOS: &[(&str, &str)] = &[
    ("trained-like", "16384 × 1024 bf16, families of related tokens (Class 2-like)"),
    ("random-init", "16384 × 1024 bf16, N(0,1) entries: the paper's random-init reference"),
    ("class1-like", "8192 × 512 bf16, a strong shared direction (Class 1-like)"),
    ("kerdock-64", "2112 × 64 f32, real mutually unbiased bases: the optimal packing, |cos| ≤ 1/8"),
];

/// The demo shown when the page opens.
pub const DEFAULT_DEMO: &str = "trained-like";

/// A demo as an in-memory safetensors file (file name, bytes), or `None` for an unknown name.
pub fn demo(name: &str) -> Option<(String, Vec<u8>)> {
    const TENSOR: &str = "model.embed_tokens.weight";
    let t = if name == "kerdock-64" {
        // F32, as the CLI writes a construction (these values are exact in bf16 too).
        let c = constructions::construct("kerdock", Some(64)).ok()?;
        TensorSpec::matrix(TENSOR, DType::F32, c.rows, c.dim, &c.values)
    } else {
        let (rows, dim) = if name == "class1-like" { (8192, 512) } else { (16384, 1024) };
        let values = generate(name, rows, dim, 1).ok()?;
        TensorSpec::matrix(TENSOR, DType::BF16, rows, dim, &values)
    };
    Some((format!("demo-{name}.safetensors"), safetensors_bytes(&[t])))
}

/// A generated matrix by its demo name (`trained-like`, `random-init`, `class1-like`) at any
/// shape: the CLI's `generate` and the fixture writers.
pub fn generate(kind: &str, rows: usize, dim: usize, seed: u64) -> Result<Vec<f32>, String> {
    match kind {
        "trained-like" => Ok(trained_like(rows, dim, seed)),
        "random-init" => Ok(random_init(rows, dim, seed)),
        "class1-like" => Ok(class1_like(rows, dim, seed)),
        _ => Err(format!("--kind {kind}: write trained-like, random-init or class1-like")),
    }
}

/// A float dtype [`safetensors_bytes`] writes, by its safetensors name.
pub fn float_dtype(name: &str) -> Result<DType, String> {
    match DType::from_safetensors(&name.to_uppercase()) {
        d @ (DType::F32 | DType::F64 | DType::F16 | DType::BF16) => Ok(d),
        _ => Err(format!("--dtype {name}: write F32, F64, F16 or BF16")),
    }
}
