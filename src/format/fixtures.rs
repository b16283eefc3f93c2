//! Writers for GGUF and .npy files and reference quantisers for every ggml block type: the test
//! fixtures of the GGUF/npy readers, and files the CLI can generate. Nothing here reads untrusted
//! data.
//!
//! The quantisers are plain round-to-nearest, not ggml's error-minimising searches: they only need
//! to produce valid blocks whose dequantisation is provably close to the input. Each keeps every
//! value in range by rounding scales *up* (so the largest value never clips), which gives the bound
//! |x − dequant(x)| ≤ step / 2 for the step of x's (sub-)block.

use half::{bf16, f16};

use super::gguf::{ggml_type_of, GgufType, GgufValue, DEFAULT_ALIGNMENT};
use super::DType;

/// A tensor to write into a GGUF file.
#[derive(Clone, Debug)]
pub struct GgufTensor {
    pub name: String,
    /// ggml type id (`enum ggml_type`).
    pub ggml_type: u32,
    /// Row-major shape, outermost first (written reversed, as ggml's `ne`).
    pub shape: Vec<u64>,
    /// Raw tensor bytes, already encoded or quantised.
    pub data: Vec<u8>,
}

impl GgufTensor {
    /// A tensor of a [`DType`] GGUF can hold (an unknown one is written as type id `u32::MAX`).
    pub fn new(name: &str, dtype: DType, shape: &[u64], data: Vec<u8>) -> Self {
        Self::with_type_id(name, ggml_type_of(&dtype).unwrap_or(u32::MAX), shape, data)
    }

    /// A tensor with an arbitrary ggml type id (for unknown-type fixtures).
    pub fn with_type_id(name: &str, ggml_type: u32, shape: &[u64], data: Vec<u8>) -> Self {
        Self { name: name.to_string(), ggml_type, shape: shape.to_vec(), data }
    }
}

/// Little-endian GGUF primitives, for well-formed files and hand-made hostile ones.
#[derive(Clone, Debug, Default)]
pub struct GgufWriter {
    pub bytes: Vec<u8>,
}

impl GgufWriter {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(b);
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.raw(&v.to_le_bytes())
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.raw(&v.to_le_bytes())
    }
    pub fn string(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64).raw(s.as_bytes())
    }
    /// The fixed header: magic, version, tensor count, key/value count.
    pub fn header(&mut self, version: u32, tensor_count: u64, kv_count: u64) -> &mut Self {
        self.raw(b"GGUF").u32(version).u64(tensor_count).u64(kv_count)
    }
    /// A metadata entry: key, value type, value.
    pub fn kv(&mut self, key: &str, value: &GgufValue) -> &mut Self {
        self.string(key).u32(value.value_type().id());
        self.value(value)
    }
    /// A value's payload (no type tag). A [`GgufValue::SkippedArray`] is written as `len`
    /// smallest values of its element type (zeros, empty strings, empty arrays).
    pub fn value(&mut self, value: &GgufValue) -> &mut Self {
        match value {
            GgufValue::U8(v) => self.raw(&v.to_le_bytes()),
            GgufValue::I8(v) => self.raw(&v.to_le_bytes()),
            GgufValue::U16(v) => self.raw(&v.to_le_bytes()),
            GgufValue::I16(v) => self.raw(&v.to_le_bytes()),
            GgufValue::U32(v) => self.raw(&v.to_le_bytes()),
            GgufValue::I32(v) => self.raw(&v.to_le_bytes()),
            GgufValue::F32(v) => self.raw(&v.to_le_bytes()),
            GgufValue::Bool(v) => self.raw(&[*v as u8]),
            GgufValue::Str(s) => self.string(s),
            GgufValue::U64(v) => self.raw(&v.to_le_bytes()),
            GgufValue::I64(v) => self.raw(&v.to_le_bytes()),
            GgufValue::F64(v) => self.raw(&v.to_le_bytes()),
            GgufValue::Array { elem, items } => {
                self.u32(elem.id()).u64(items.len() as u64);
                for item in items {
                    self.value(item);
                }
                self
            }
            GgufValue::SkippedArray { elem, len } => {
                self.u32(elem.id()).u64(*len);
                let each: &[u8] = match elem {
                    GgufType::U8 | GgufType::I8 | GgufType::Bool => &[0],
                    GgufType::U16 | GgufType::I16 => &[0; 2],
                    GgufType::U32 | GgufType::I32 | GgufType::F32 => &[0; 4],
                    GgufType::U64 | GgufType::I64 | GgufType::F64 | GgufType::Str => &[0; 8],
                    // An empty array of uint8: type 0, count 0.
                    GgufType::Array => &[0; 12],
                };
                for _ in 0..*len {
                    self.raw(each);
                }
                self
            }
        }
    }
    /// A tensor info; `shape` is row-major and written reversed as ggml's `ne`.
    pub fn tensor_info(&mut self, name: &str, shape: &[u64], ggml_type: u32, offset: u64) -> &mut Self {
        self.string(name).u32(shape.len() as u32);
        for &d in shape.iter().rev() {
            self.u64(d);
        }
        self.u32(ggml_type).u64(offset)
    }
    /// Zero padding up to a multiple of `alignment`.
    pub fn pad_to(&mut self, alignment: u64) -> &mut Self {
        while !(self.bytes.len() as u64).is_multiple_of(alignment.max(1)) {
            self.bytes.push(0);
        }
        self
    }
}

/// A well-formed GGUF file: header, metadata in the order given, tensor infos, then each tensor's
/// data aligned to `general.alignment` (if given in `metadata` as an integer) or 32.
pub fn gguf_bytes(version: u32, tensors: &[GgufTensor], metadata: &[(&str, GgufValue)]) -> Vec<u8> {
    let alignment = metadata
        .iter()
        .find(|(k, _)| *k == "general.alignment")
        .and_then(|(_, v)| v.as_u64())
        .filter(|a| *a > 0)
        .unwrap_or(DEFAULT_ALIGNMENT);
    let mut w = GgufWriter::new();
    w.header(version, tensors.len() as u64, metadata.len() as u64);
    for (k, v) in metadata {
        w.kv(k, v);
    }
    let mut offset = 0u64;
    let mut offsets = Vec::with_capacity(tensors.len());
    for t in tensors {
        offsets.push(offset);
        w.tensor_info(&t.name, &t.shape, t.ggml_type, offset);
        offset = (offset + t.data.len() as u64).next_multiple_of(alignment);
    }
    w.pad_to(alignment);
    let data_start = w.bytes.len() as u64;
    for (t, off) in tensors.iter().zip(offsets) {
        while (w.bytes.len() as u64) < data_start + off {
            w.bytes.push(0);
        }
        w.raw(&t.data);
    }
    w.bytes
}

/// A .npy file: magic, version `major`.0, header dict, data. `descr` is written as given (e.g.
/// `"<f4"`); the header is padded with spaces so the data starts at a multiple of 64, as numpy does.
pub fn npy_bytes(major: u8, descr: &str, fortran_order: bool, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let fortran = if fortran_order { "True" } else { "False" };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape_text}, }}");
    let preamble = if major == 1 { 10 } else { 12 };
    while (preamble + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.extend_from_slice(&[major, 0]);
    if major == 1 {
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// Every ggml block type [`quantize`] writes.
pub const QUANT_TYPES: [DType; 11] = [
    DType::Q4_0,
    DType::Q4_1,
    DType::Q5_0,
    DType::Q5_1,
    DType::Q8_0,
    DType::Q2K,
    DType::Q3K,
    DType::Q4K,
    DType::Q5K,
    DType::Q6K,
    DType::Q8K,
];

/// Encodes `values` as `dtype`: float types directly (little-endian), ggml block types by
/// round-to-nearest quantisation. `None` for other types, or when `values` is not a whole number
/// of blocks.
pub fn quantize(dtype: &DType, values: &[f32]) -> Option<Vec<u8>> {
    let (per_block, block_bytes) = dtype.block()?;
    if !(values.len() as u64).is_multiple_of(per_block) {
        return None;
    }
    let mut out = Vec::with_capacity(values.len() / per_block as usize * block_bytes as usize);
    match dtype {
        DType::F32 => values.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        DType::F64 => values.iter().for_each(|&x| out.extend_from_slice(&(x as f64).to_le_bytes())),
        DType::F16 => values.iter().for_each(|&x| out.extend_from_slice(&f16::from_f32(x).to_le_bytes())),
        DType::BF16 => values.iter().for_each(|&x| out.extend_from_slice(&bf16::from_f32(x).to_le_bytes())),
        DType::Q4_0 => blocks(values, &mut out, |x, o| symmetric_small(x, o, 4)),
        DType::Q5_0 => blocks(values, &mut out, |x, o| symmetric_small(x, o, 5)),
        DType::Q4_1 => blocks(values, &mut out, |x, o| asymmetric_small(x, o, 4)),
        DType::Q5_1 => blocks(values, &mut out, |x, o| asymmetric_small(x, o, 5)),
        DType::Q8_0 => blocks(values, &mut out, q8_0),
        DType::Q2K => blocks(values, &mut out, q2_k),
        DType::Q3K => blocks(values, &mut out, q3_k),
        DType::Q4K => blocks(values, &mut out, |x, o| q45_k(x, o, 4)),
        DType::Q5K => blocks(values, &mut out, |x, o| q45_k(x, o, 5)),
        DType::Q6K => blocks(values, &mut out, q6_k),
        DType::Q8K => blocks(values, &mut out, q8_k),
        _ => return None,
    }
    Some(out)
}

fn blocks<const N: usize>(values: &[f32], out: &mut Vec<u8>, f: impl Fn(&[f32; N], &mut Vec<u8>)) {
    let (chunks, _) = values.as_chunks::<N>();
    for c in chunks {
        f(c, out);
    }
}

/// Smallest f16 ≥ x, for x ≥ 0 (a scale rounded up never makes the largest value clip).
fn f16_up(x: f32) -> f16 {
    let h = f16::from_f32(x);
    if h.to_f32() < x {
        f16::from_bits(h.to_bits() + 1)
    } else {
        h
    }
}

/// Largest f16 ≤ x (a minimum rounded down keeps every value above it).
fn f16_down(x: f32) -> f16 {
    let h = f16::from_f32(x);
    if h.to_f32() <= x {
        h
    } else if h.is_sign_negative() || h.to_f32() == 0.0 {
        f16::from_bits(0x8000 | ((h.to_bits() & 0x7fff) + 1))
    } else {
        f16::from_bits(h.to_bits() - 1)
    }
}

fn amax(x: &[f32]) -> f32 {
    x.iter().fold(0.0f32, |m, v| m.max(v.abs()))
}

/// Rounds x / step to the nearest integer in [lo, hi] (0 when the step is 0).
fn level(x: f32, step: f32, lo: i32, hi: i32) -> i32 {
    if step > 0.0 {
        ((x / step).round() as i32).clamp(lo, hi)
    } else {
        0
    }
}

/// Smallest integer scale s ≤ max with s · unit ≥ need.
fn scale_up(need: f32, unit: f32, max: u8) -> u8 {
    if unit > 0.0 {
        (need / unit).ceil().clamp(0.0, max as f32) as u8
    } else {
        0
    }
}

/// Q4_0 / Q5_0: one f16 scale d, q ∈ [−2^(bits−1), 2^(bits−1) − 1] stored with an offset.
/// d = amax / (qmax + ½) so every |x| / d ≤ qmax + ½ and rounding never leaves the range.
fn symmetric_small(x: &[f32; 32], out: &mut Vec<u8>, bits: u32) {
    let qmax = (1i32 << (bits - 1)) - 1;
    let dh = f16_up(amax(x) / (qmax as f32 + 0.5));
    let d = dh.to_f32();
    let q: Vec<u8> = x.iter().map(|&v| (level(v, d, -qmax - 1, qmax) + qmax + 1) as u8).collect();
    out.extend_from_slice(&dh.to_le_bytes());
    if bits == 5 {
        let qh = q.iter().enumerate().fold(0u32, |acc, (j, &v)| acc | (((v >> 4) as u32 & 1) << j));
        out.extend_from_slice(&qh.to_le_bytes());
    }
    for j in 0..16 {
        out.push((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
    }
}

/// Q4_1 / Q5_1: f16 scale d and minimum m, q ∈ [0, 2^bits − 1], value = q · d + m.
fn asymmetric_small(x: &[f32; 32], out: &mut Vec<u8>, bits: u32) {
    let levels = (1i32 << bits) - 1;
    let lo = x.iter().fold(f32::INFINITY, |m, &v| m.min(v));
    let hi = x.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let mh = f16_down(lo);
    let m = mh.to_f32();
    let dh = f16_up((hi - m) / levels as f32);
    let d = dh.to_f32();
    let q: Vec<u8> = x.iter().map(|&v| level(v - m, d, 0, levels) as u8).collect();
    out.extend_from_slice(&dh.to_le_bytes());
    out.extend_from_slice(&mh.to_le_bytes());
    if bits == 5 {
        let qh = q.iter().enumerate().fold(0u32, |acc, (j, &v)| acc | (((v >> 4) as u32 & 1) << j));
        out.extend_from_slice(&qh.to_le_bytes());
    }
    for j in 0..16 {
        out.push((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
    }
}

/// Q8_0: f16 scale, i8 quants.
fn q8_0(x: &[f32; 32], out: &mut Vec<u8>) {
    let dh = f16_up(amax(x) / 127.5);
    let d = dh.to_f32();
    out.extend_from_slice(&dh.to_le_bytes());
    out.extend(x.iter().map(|&v| level(v, d, -128, 127) as i8 as u8));
}

/// Q8_K: f32 scale, i8 quants, and the per-16 sums of the quants.
fn q8_k(x: &[f32; 256], out: &mut Vec<u8>) {
    let d = amax(x) / 127.5;
    let q: Vec<i32> = x.iter().map(|&v| level(v, d, -128, 127)).collect();
    out.extend_from_slice(&d.to_le_bytes());
    out.extend(q.iter().map(|&v| v as i8 as u8));
    for g in q.chunks(16) {
        out.extend_from_slice(&(g.iter().sum::<i32>() as i16).to_le_bytes());
    }
}

/// Sub-block scales and mins for the "x ≈ (d·sc)·q − dmin·m" K types: returns (d, dmin, sc[], m[]).
/// Mins are chosen first and rounded up so that −dmin·m ≤ every value; then each scale is rounded
/// up so that the top level reaches the sub-block maximum. `levels` = highest q, `smax` = highest
/// stored scale/min.
fn scales_with_mins(x: &[f32], sub: usize, levels: i32, smax: u8) -> (f16, f16, Vec<u8>, Vec<u8>) {
    let subs: Vec<&[f32]> = x.chunks(sub).collect();
    let need_min: Vec<f32> = subs.iter().map(|s| -s.iter().fold(0.0f32, |m, &v| m.min(v))).collect();
    let dminh = f16_up(need_min.iter().fold(0.0f32, |a, &b| a.max(b)) / smax as f32);
    let dmin = dminh.to_f32();
    let mins: Vec<u8> = need_min.iter().map(|&n| scale_up(n, dmin, smax)).collect();
    let need_scale: Vec<f32> = subs
        .iter()
        .zip(&mins)
        .map(|(s, &m)| {
            let hi = s.iter().fold(f32::NEG_INFINITY, |a, &v| a.max(v));
            ((hi + dmin * m as f32) / levels as f32).max(0.0)
        })
        .collect();
    let dh = f16_up(need_scale.iter().fold(0.0f32, |a, &b| a.max(b)) / smax as f32);
    let d = dh.to_f32();
    let scales: Vec<u8> = need_scale.iter().map(|&n| scale_up(n, d, smax)).collect();
    (dh, dminh, scales, mins)
}

/// Quants of each sub-block for [`scales_with_mins`] parameters, computed exactly as they will be
/// dequantised: dl = d · sc, ml = dmin · m, q = round((x + ml) / dl).
fn quants_with_mins(x: &[f32], sub: usize, levels: i32, d: f32, dmin: f32, sc: &[u8], m: &[u8]) -> Vec<u8> {
    x.iter()
        .enumerate()
        .map(|(e, &v)| {
            let dl = d * sc[e / sub] as f32;
            let ml = dmin * m[e / sub] as f32;
            level(v + ml, dl, 0, levels) as u8
        })
        .collect()
}

/// Q2_K: 16 sub-blocks of 16, 4-bit scales and mins, 2-bit quants (layout in `ggml::q2_k`).
fn q2_k(x: &[f32; 256], out: &mut Vec<u8>) {
    let (dh, dminh, sc, m) = scales_with_mins(x, 16, 3, 15);
    let q = quants_with_mins(x, 16, 3, dh.to_f32(), dminh.to_f32(), &sc, &m);
    let mut b = [0u8; 84];
    for i in 0..16 {
        b[i] = sc[i] | (m[i] << 4);
    }
    for (e, &v) in q.iter().enumerate() {
        let (n, r) = (e / 128, e % 128);
        b[16 + n * 32 + r % 32] |= v << (2 * (r / 32));
    }
    b[80..82].copy_from_slice(&dh.to_le_bytes());
    b[82..84].copy_from_slice(&dminh.to_le_bytes());
    out.extend_from_slice(&b);
}

/// Packs eight 6-bit scales and mins as ggml's `get_scale_min_k4` reads them.
fn pack_k4(sc: &[u8], m: &[u8]) -> [u8; 12] {
    let mut q = [0u8; 12];
    for j in 0..8 {
        if j < 4 {
            q[j] |= sc[j] & 63;
            q[j + 4] |= m[j] & 63;
        } else {
            q[j + 4] = (sc[j] & 0x0f) | ((m[j] & 0x0f) << 4);
            q[j - 4] |= (sc[j] >> 4) << 6;
            q[j] |= (m[j] >> 4) << 6;
        }
    }
    q
}

/// Q4_K / Q5_K: 8 sub-blocks of 32, 6-bit scales and mins, 4- or 5-bit quants.
fn q45_k(x: &[f32; 256], out: &mut Vec<u8>, bits: u32) {
    let levels = (1i32 << bits) - 1;
    let (dh, dminh, sc, m) = scales_with_mins(x, 32, levels, 63);
    let q = quants_with_mins(x, 32, levels, dh.to_f32(), dminh.to_f32(), &sc, &m);
    let mut qh = [0u8; 32];
    let mut qs = [0u8; 128];
    for (e, &v) in q.iter().enumerate() {
        let (c, r) = (e / 64, e % 64);
        qs[c * 32 + r % 32] |= (v & 0x0f) << (4 * (r / 32));
        if v & 0x10 != 0 {
            qh[e % 32] |= 1 << (e / 32);
        }
    }
    out.extend_from_slice(&dh.to_le_bytes());
    out.extend_from_slice(&dminh.to_le_bytes());
    out.extend_from_slice(&pack_k4(&sc, &m));
    if bits == 5 {
        out.extend_from_slice(&qh);
    }
    out.extend_from_slice(&qs);
}

/// Signed sub-block scales for the "x ≈ (d·sc)·q" K types: sub-block i needs step
/// amax_i / (qmax + ½), rounded up to a multiple of d. Returns (d, sc[]).
fn signed_scales(x: &[f32], sub: usize, qmax: i32, smax: u8) -> (f16, Vec<u8>) {
    let need: Vec<f32> = x.chunks(sub).map(|s| amax(s) / (qmax as f32 + 0.5)).collect();
    let dh = f16_up(need.iter().fold(0.0f32, |a, &b| a.max(b)) / smax as f32);
    let d = dh.to_f32();
    (dh, need.iter().map(|&n| scale_up(n, d, smax)).collect())
}

/// Q3_K: 16 sub-blocks of 16, 6-bit signed scales (stored + 32), q ∈ [−4, 3].
fn q3_k(x: &[f32; 256], out: &mut Vec<u8>) {
    let (dh, sc) = signed_scales(x, 16, 3, 31);
    let d = dh.to_f32();
    let mut b = [0u8; 110];
    for (e, &v) in x.iter().enumerate() {
        let dl = d * sc[e / 16] as f32;
        let q = (level(v, dl, -4, 3) + 4) as u8;
        let (n, r) = (e / 128, e % 128);
        b[32 + n * 32 + r % 32] |= (q & 3) << (2 * (r / 32));
        if q & 4 != 0 {
            b[e % 32] |= 1 << (e / 32);
        }
    }
    for (j, &s) in sc.iter().enumerate() {
        let stored = s + 32;
        b[96 + j % 8] |= if j < 8 { stored & 0x0f } else { (stored & 0x0f) << 4 };
        b[96 + 8 + j % 4] |= (stored >> 4) << (2 * (j / 4));
    }
    b[108..110].copy_from_slice(&dh.to_le_bytes());
    out.extend_from_slice(&b);
}

/// Q6_K: 16 sub-blocks of 16, i8 scales, q ∈ [−32, 31].
fn q6_k(x: &[f32; 256], out: &mut Vec<u8>) {
    let (dh, sc) = signed_scales(x, 16, 31, 127);
    let d = dh.to_f32();
    let mut b = [0u8; 210];
    for (e, &v) in x.iter().enumerate() {
        let dl = d * sc[e / 16] as f32;
        let q = (level(v, dl, -32, 31) + 32) as u8;
        let (n, r) = (e / 128, e % 128);
        let (k, l) = (r / 32, r % 32);
        // Elements l and l + 64 share ql byte l; l + 32 and l + 96 share byte l + 32.
        let ql = n * 64 + l + if k % 2 == 1 { 32 } else { 0 };
        b[ql] |= (q & 0x0f) << if k >= 2 { 4 } else { 0 };
        b[128 + n * 32 + l] |= (q >> 4) << (2 * k);
    }
    for (i, &s) in sc.iter().enumerate() {
        b[192 + i] = s;
    }
    b[208..210].copy_from_slice(&dh.to_le_bytes());
    out.extend_from_slice(&b);
}

/// A llama.cpp-style GGUF model, split into `split` files (one file when `split` ≤ 1), each as
/// bytes in part order: `token_embd.weight` (`rows` × `dim`, ggml `ne` = [dim, rows]) in the first
/// part, `output.weight` (an untied unembedding from `output`) and `output_norm.weight` in the last,
/// one `blk.{i}.attn_norm.weight` per part; the vocabulary (`tokenizer.ggml.tokens`) and
/// architecture in the first part, and `split.no` / `split.count` / `split.tensors.count` in every
/// part of a split model, as `llama-gguf-split` writes them. `None` when `dtype` cannot encode a
/// row of `dim` values (not a whole number of blocks, or a type [`quantize`] does not write).
pub fn gguf_model(
    embedding: &[f32],
    output: &[f32],
    rows: usize,
    dim: usize,
    dtype: &DType,
    split: usize,
) -> Option<Vec<Vec<u8>>> {
    let split = split.max(1);
    let mut parts: Vec<Vec<GgufTensor>> = (0..split).map(|_| Vec::new()).collect();
    let shape = [rows as u64, dim as u64];
    parts.first_mut()?.push(GgufTensor::new("token_embd.weight", dtype.clone(), &shape, quantize(dtype, embedding)?));
    for i in 0..split {
        let ones: Vec<u8> = std::iter::repeat_n(1.0f32.to_le_bytes(), dim).flatten().collect();
        parts.get_mut(i)?.push(GgufTensor::new(&format!("blk.{i}.attn_norm.weight"), DType::F32, &[dim as u64], ones));
    }
    let last = parts.last_mut()?;
    last.push(GgufTensor::new("output.weight", dtype.clone(), &shape, quantize(dtype, output)?));
    let ones: Vec<u8> = std::iter::repeat_n(1.0f32.to_le_bytes(), dim).flatten().collect();
    last.push(GgufTensor::new("output_norm.weight", DType::F32, &[dim as u64], ones));

    let total: usize = parts.iter().map(Vec::len).sum();
    let tokens =
        GgufValue::Array { elem: GgufType::Str, items: (0..rows).map(|i| GgufValue::Str(format!("tok{i}"))).collect() };
    let mut files = Vec::with_capacity(split);
    for (k, tensors) in parts.iter().enumerate() {
        let mut metadata: Vec<(&str, GgufValue)> = Vec::new();
        if k == 0 {
            metadata.push(("general.architecture", GgufValue::Str("llama".to_string())));
            metadata.push(("llama.embedding_length", GgufValue::U32(dim as u32)));
            metadata.push(("tokenizer.ggml.model", GgufValue::Str("gpt2".to_string())));
            metadata.push(("tokenizer.ggml.tokens", tokens.clone()));
        }
        if split > 1 {
            metadata.push(("split.no", GgufValue::U16(k as u16)));
            metadata.push(("split.count", GgufValue::U16(split as u16)));
            metadata.push(("split.tensors.count", GgufValue::I32(total as i32)));
        }
        files.push(gguf_bytes(3, tensors, &metadata));
    }
    Some(files)
}
