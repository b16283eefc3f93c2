//! GGUF, .npy and ggml dequantisation, tested natively.
//!
//! The reference decoders at the top are written element by element straight from the block
//! layouts in ggml's `ggml-common.h` (one formula per element, no shared code with
//! `src/read/format/ggml.rs`), and the decoders must agree with them bit for bit.

use half::f16;
use orthoscope::fixtures::recording::{bytes_read, Recording};
use orthoscope::fixtures::synth;
use orthoscope::fixtures::writers::{gguf_bytes, npy_bytes, quantize, GgufTensor, GgufWriter, QUANT_TYPES};
use orthoscope::read::format::decode::{decode_rows, DecodeError};
use orthoscope::read::format::gguf::{self, read_gguf, GgufType, GgufValue, MAX_KEPT_ARRAY};
use orthoscope::read::format::set::read_model_set;
use orthoscope::read::format::{npy, read_model, safetensors, DType, FormatError};
use orthoscope::read::source::{ByteSource, SliceSource};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Reference decoders: value of element `e` (0-based within the block) of block `b`.

fn h(b: &[u8], at: usize) -> f32 {
    f16::from_bits(u16::from(b[at]) | (u16::from(b[at + 1]) << 8)).to_f32()
}

/// 4-bit field of element e in a 32-element block whose 16 nibble bytes start at `qs`:
/// elements 0..16 are the low nibbles, 16..32 the high nibbles.
fn nibble32(b: &[u8], qs: usize, e: usize) -> u8 {
    if e < 16 {
        b[qs + e] & 15
    } else {
        b[qs + e - 16] >> 4
    }
}

fn ref_element(dtype: &DType, b: &[u8], e: usize) -> f32 {
    match dtype {
        DType::Q4_0 => {
            let d = h(b, 0);
            (nibble32(b, 2, e) as i32 - 8) as f32 * d
        }
        DType::Q4_1 => {
            let (d, m) = (h(b, 0), h(b, 2));
            nibble32(b, 4, e) as f32 * d + m
        }
        DType::Q5_0 => {
            let d = h(b, 0);
            let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
            let q = nibble32(b, 6, e) as u32 + 16 * ((qh >> e) & 1);
            (q as i32 - 16) as f32 * d
        }
        DType::Q5_1 => {
            let (d, m) = (h(b, 0), h(b, 2));
            let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
            let q = nibble32(b, 8, e) as u32 + 16 * ((qh >> e) & 1);
            q as f32 * d + m
        }
        DType::Q8_0 => (b[2 + e] as i8) as f32 * h(b, 0),
        DType::Q2K => {
            // scales[16] at 0, qs[64] at 16, d at 80, dmin at 82. 2-bit field: byte 32·(e/128) + e%32,
            // bit pair (e%128)/32. Sub-block e/16: scale = low nibble, min = high nibble.
            let (d, dmin) = (h(b, 80), h(b, 82));
            let sm = b[e / 16];
            let q = (b[16 + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            (d * (sm & 15) as f32) * q as f32 - dmin * (sm >> 4) as f32
        }
        DType::Q3K => {
            // hmask[32] at 0, qs[64] at 32, scales[12] at 96, d at 108.
            let d = h(b, 108);
            let j = e / 16;
            let low4 = if j < 8 { b[96 + j] & 15 } else { b[96 + j - 8] >> 4 };
            let top2 = (b[96 + 8 + j % 4] >> (2 * (j / 4))) & 3;
            let scale = (low4 | (top2 << 4)) as i32 - 32;
            let low2 = (b[32 + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            let high_set = (b[e % 32] >> (e / 32)) & 1 == 1;
            let q = low2 as i32 - if high_set { 0 } else { 4 };
            (d * scale as f32) * q as f32
        }
        DType::Q4K | DType::Q5K => {
            // d at 0, dmin at 2, 12 scale bytes at 4; Q5_K: qh[32] at 16, qs at 48; Q4_K: qs at 16.
            // The 12 bytes: [0..4] scales 0-3 (low 6 bits), [4..8] mins 0-3 (low 6 bits),
            // [8..12] scale 4-7 low nibble | min 4-7 low nibble << 4; the top 2 bits of scale/min
            // 4+i are bits 6-7 of byte i / 4+i.
            let (d, dmin) = (h(b, 0), h(b, 2));
            let s = &b[4..16];
            let j = e / 32;
            let (sc, mn) = if j < 4 {
                (s[j] & 63, s[4 + j] & 63)
            } else {
                let i = j - 4;
                ((s[8 + i] & 15) | ((s[i] >> 6) << 4), (s[8 + i] >> 4) | ((s[4 + i] >> 6) << 4))
            };
            let qs = if *dtype == DType::Q5K { 48 } else { 16 };
            let mut q = (b[qs + 32 * (e / 64) + e % 32] >> (4 * ((e % 64) / 32))) & 15;
            if *dtype == DType::Q5K {
                q += 16 * ((b[16 + e % 32] >> (e / 32)) & 1);
            }
            (d * sc as f32) * q as f32 - dmin * mn as f32
        }
        DType::Q6K => {
            // ql[128] at 0, qh[64] at 128, i8 scales[16] at 192, d at 208. In each 128-element
            // half n, element 32k + l: low nibble in ql byte 64n + l + 32·(k odd), nibble k/2;
            // top 2 bits in qh byte 32n + l, bit pair k.
            let d = h(b, 208);
            let (n, r) = (e / 128, e % 128);
            let (k, l) = (r / 32, r % 32);
            let low4 = (b[64 * n + l + 32 * (k % 2)] >> (4 * (k / 2))) & 15;
            let top2 = (b[128 + 32 * n + l] >> (2 * k)) & 3;
            let q = (low4 | (top2 << 4)) as i32 - 32;
            (d * (b[192 + e / 16] as i8) as f32) * q as f32
        }
        DType::Q8K => {
            let d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            d * (b[4 + e] as i8) as f32
        }
        other => panic!("no reference for {other}"),
    }
}

/// Byte offsets of the f16 scale fields (which must be finite in a valid block).
fn f16_fields(dtype: &DType) -> &'static [usize] {
    match dtype {
        DType::Q4_0 | DType::Q5_0 | DType::Q8_0 => &[0],
        DType::Q4_1 | DType::Q5_1 | DType::Q4K | DType::Q5K => &[0, 2],
        DType::Q2K => &[80, 82],
        DType::Q3K => &[108],
        DType::Q6K => &[208],
        _ => &[],
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    fn finite_f16(&mut self) -> f16 {
        loop {
            let v = f16::from_bits(self.next() as u16);
            if v.is_finite() {
                return v;
            }
        }
    }
}

/// Random blocks with arbitrary quant bytes and arbitrary finite scales.
fn random_blocks(dtype: &DType, blocks: usize, rng: &mut Rng) -> Vec<u8> {
    let (_, size) = dtype.block().unwrap();
    let size = size as usize;
    let mut raw = rng.bytes(blocks * size);
    for blk in raw.chunks_mut(size) {
        for &at in f16_fields(dtype) {
            blk[at..at + 2].copy_from_slice(&rng.finite_f16().to_le_bytes());
        }
        if *dtype == DType::Q8K {
            let d = f32::from_bits(rng.next() as u32);
            let d = if d.is_finite() { d.clamp(-1e30, 1e30) } else { 0.75 };
            blk[..4].copy_from_slice(&d.to_le_bytes());
        }
    }
    raw
}

#[test]
fn quantised_decoders_match_the_reference_bit_for_bit() {
    let mut rng = Rng(7);
    for dtype in &QUANT_TYPES {
        let (per_block, size) = dtype.block().unwrap();
        let (per_block, size) = (per_block as usize, size as usize);
        // Three rows of four blocks each.
        let (rows, dim) = (3, 4 * per_block);
        for _round in 0..20 {
            let raw = random_blocks(dtype, rows * 4, &mut rng);
            let mut got = vec![0f32; rows * dim];
            decode_rows(&raw, dtype, dim, &mut got).unwrap();
            for (bi, blk) in raw.chunks(size).enumerate() {
                for e in 0..per_block {
                    let want = ref_element(dtype, blk, e);
                    let g = got[bi * per_block + e];
                    assert_eq!(g.to_bits(), want.to_bits(), "{dtype} block {bi} element {e}: {g} vs {want}");
                }
            }
        }
    }
}

/// The bound each quantiser guarantees (see `fixtures.rs`), computed from the source values only:
/// half the quantisation step of the value's (sub-)block, where the step allows for the super-block
/// scale rounding up by one unit. `SLACK` absorbs f32 rounding.
fn error_bounds(dtype: &DType, x: &[f32]) -> Vec<f32> {
    let (per_block, _) = dtype.block().unwrap();
    let sub = match dtype {
        DType::Q2K | DType::Q3K | DType::Q6K => 16,
        DType::Q4K | DType::Q5K => 32,
        _ => per_block as usize,
    };
    let mut out = Vec::with_capacity(x.len());
    for blk in x.chunks(per_block as usize) {
        for s in blk.chunks(sub) {
            let bound = sub_block_bound(dtype, blk, s) * SLACK + 1e-5 * amax(blk);
            out.extend(std::iter::repeat_n(bound, s.len()));
        }
    }
    out
}

const SLACK: f32 = 1.002;

fn amax(s: &[f32]) -> f32 {
    s.iter().fold(0f32, |m, v| m.max(v.abs()))
}

/// Half a step for sub-block `s` of block `blk`.
fn sub_block_bound(dtype: &DType, blk: &[f32], s: &[f32]) -> f32 {
    let a = amax(blk);
    let lo = s.iter().fold(0f32, |m, &v| m.min(v));
    let hi = s.iter().fold(0f32, |m, &v| m.max(v));
    match dtype {
        DType::Q4_0 => 0.5 * a / 7.5,
        DType::Q5_0 => 0.5 * a / 15.5,
        DType::Q8_0 | DType::Q8K => 0.5 * a / 127.5,
        DType::Q4_1 | DType::Q5_1 => {
            let levels = if *dtype == DType::Q4_1 { 15.0 } else { 31.0 };
            let lo = s.iter().fold(f32::INFINITY, |m, &v| m.min(v));
            let hi = s.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            // The f16 minimum may sit up to one f16 ulp (2^-10 relative) below the true one.
            0.5 * (hi - lo + lo.abs() / 1024.0) / levels + lo.abs() / 1024.0
        }
        DType::Q3K | DType::Q6K => {
            let (half_range, smax) = if *dtype == DType::Q3K { (3.5, 31.0) } else { (31.5, 127.0) };
            0.5 * (amax(s) / half_range + a / half_range / smax)
        }
        DType::Q2K | DType::Q4K | DType::Q5K => {
            let (levels, smax) = match dtype {
                DType::Q2K => (3.0, 15.0),
                DType::Q4K => (15.0, 63.0),
                _ => (31.0, 63.0),
            };
            let dmin = a / smax * SLACK;
            let d = (2.0 * a + dmin) / levels / smax * SLACK;
            0.5 * ((hi - lo + dmin) / levels + d)
        }
        other => panic!("no bound for {other}"),
    }
}

#[test]
fn quantise_then_dequantise_stays_within_the_error_bound() {
    for (k, dtype) in QUANT_TYPES.iter().enumerate() {
        let (rows, dim) = (8, 512);
        let mut src = synth::random_init(rows, dim, 100 + k as u64);
        // Blocks of one sign and an all-zero block exercise the min/scale edge cases.
        for v in &mut src[..256] {
            *v = v.abs() + 0.5;
        }
        for v in &mut src[256..512] {
            *v = -v.abs();
        }
        for v in &mut src[512..768] {
            *v = 0.0;
        }
        let raw = quantize(dtype, &src).unwrap();
        assert_eq!(raw.len() as u64, dtype.bytes_for((rows * dim) as u64).unwrap());
        let mut back = vec![0f32; rows * dim];
        decode_rows(&raw, dtype, dim, &mut back).unwrap();
        let bounds = error_bounds(dtype, &src);
        let mut sq = 0f64;
        for i in 0..src.len() {
            let err = (back[i] - src[i]).abs();
            assert!(
                err <= bounds[i],
                "{dtype} element {i}: {} → {}, error {err} > bound {}",
                src[i],
                back[i],
                bounds[i]
            );
            sq += f64::from(err).powi(2);
        }
        let rms = (sq / src.len() as f64).sqrt();
        // Sanity on overall quality: about 2^-bits of the spread of N(0, 1) blocks.
        let max_rms = match dtype {
            DType::Q8_0 | DType::Q8K => 0.01,
            DType::Q6K => 0.03,
            DType::Q5_0 | DType::Q5_1 | DType::Q5K => 0.06,
            DType::Q4_0 | DType::Q4_1 | DType::Q4K => 0.12,
            DType::Q3K => 0.25,
            _ => 0.5,
        };
        assert!(rms < max_rms, "{dtype}: rms error {rms}");
        assert!(back[512..768].iter().all(|&v| v == 0.0), "{dtype}: zero block not exact");
    }
}

#[test]
fn quantise_refuses_partial_blocks_and_non_float_types() {
    assert!(quantize(&DType::Q4K, &[0.0; 100]).is_none());
    assert!(quantize(&DType::I32, &[0.0; 4]).is_none());
    assert_eq!(quantize(&DType::F16, &[1.0]).unwrap(), f16::from_f32(1.0).to_le_bytes());
}

// ---------------------------------------------------------------------------------------------
// GGUF

fn every_value_type() -> Vec<(&'static str, GgufValue)> {
    use GgufValue::*;
    vec![
        ("general.architecture", Str("llama".into())),
        ("general.name", Str("tiny ünïcode model".into())),
        ("t.u8", U8(200)),
        ("t.i8", I8(-100)),
        ("t.u16", U16(60000)),
        ("t.i16", I16(-30000)),
        ("t.u32", U32(4_000_000_000)),
        ("t.i32", I32(-2_000_000_000)),
        ("t.f32", F32(1.5)),
        ("t.bool", Bool(true)),
        ("t.u64", U64(1 << 60)),
        ("t.i64", I64(-(1 << 60))),
        ("t.f64", F64(-2.25)),
        ("t.empty_string", Str(String::new())),
        ("t.array_u8", Array { elem: GgufType::U8, items: vec![U8(1), U8(2), U8(3)] }),
        ("t.array_f32", Array { elem: GgufType::F32, items: vec![F32(0.5), F32(-0.5)] }),
        ("t.array_bool", Array { elem: GgufType::Bool, items: vec![Bool(false), Bool(true)] }),
        ("t.array_str", Array { elem: GgufType::Str, items: vec![Str("a".into()), Str("".into())] }),
        ("t.array_empty", Array { elem: GgufType::I64, items: vec![] }),
        (
            "t.nested",
            Array {
                elem: GgufType::Array,
                items: vec![
                    Array { elem: GgufType::I16, items: vec![I16(-1), I16(2)] },
                    Array {
                        elem: GgufType::Array,
                        items: vec![Array { elem: GgufType::Str, items: vec![Str("deep".into())] }],
                    },
                ],
            },
        ),
        ("t.long_scores", SkippedArray { elem: GgufType::F32, len: MAX_KEPT_ARRAY + 1 }),
        ("t.long_merges", SkippedArray { elem: GgufType::Str, len: MAX_KEPT_ARRAY + 10 }),
        ("t.long_nested", SkippedArray { elem: GgufType::Array, len: MAX_KEPT_ARRAY + 3 }),
        ("split.no", U16(0)),
        ("split.count", U16(1)),
        ("split.tensors.count", I32(5)),
    ]
}

fn vocab(n: usize) -> Vec<String> {
    (0..n).map(|i| if i % 7 == 0 { format!("▁tök{i}") } else { format!("t{i}") }).collect()
}

fn tokens_value(tokens: &[String]) -> GgufValue {
    GgufValue::Array { elem: GgufType::Str, items: tokens.iter().map(|t| GgufValue::Str(t.clone())).collect() }
}

/// File bytes, tensors written, metadata written, embedding source values.
type Sample = (Vec<u8>, Vec<GgufTensor>, Vec<(&'static str, GgufValue)>, Vec<f32>);

/// A GGUF with an embedding of `embd` type, F32/F16/BF16 tensors, every value type and alignment 64.
fn sample_gguf(version: u32, embd: &DType) -> Sample {
    let (n_vocab, n_embd) = (24usize, 256usize);
    let tokens = vocab(n_vocab);
    let values = synth::trained_like(n_vocab, n_embd, 3);
    let tensors = vec![
        GgufTensor::new(
            "token_embd.weight",
            embd.clone(),
            &[n_vocab as u64, n_embd as u64],
            quantize(embd, &values).unwrap(),
        ),
        GgufTensor::new("blk.0.attn_norm.weight", DType::F32, &[3, 5], quantize(&DType::F32, &[0.25; 15]).unwrap()),
        GgufTensor::new("blk.0.ffn.weight", DType::F16, &[4, 4], quantize(&DType::F16, &[1.0; 16]).unwrap()),
        GgufTensor::new("output.weight", DType::BF16, &[2, 8], quantize(&DType::BF16, &[-2.0; 16]).unwrap()),
        GgufTensor::new("scalar", DType::F32, &[], 7f32.to_le_bytes().to_vec()),
    ];
    let mut metadata = every_value_type();
    metadata.insert(1, ("general.alignment", GgufValue::U32(64)));
    metadata.push(("tokenizer.ggml.tokens", tokens_value(&tokens)));
    let bytes = gguf_bytes(version, &tensors, &metadata);
    (bytes, tensors, metadata, values)
}

#[test]
fn gguf_v2_and_v3_parse_with_shapes_ranges_vocab_and_metadata() {
    for version in [2, 3] {
        for embd in [DType::Q8_0, DType::Q6K] {
            let (bytes, tensors, metadata, values) = sample_gguf(version, &embd);
            let src = SliceSource::new("m.gguf", bytes.clone());
            let (info, extra) = read_gguf(&src, 2).unwrap();
            assert_eq!(info.format, "gguf");
            assert_eq!(extra.version, version);
            assert_eq!(extra.alignment, 64);
            assert_eq!(extra.data_start % 64, 0);
            assert_eq!(extra.tokens, vocab(24));
            assert_eq!(info.vocab_size, Some(24));
            assert_eq!((extra.split_no, extra.split_count, extra.split_tensors_count), (Some(0), Some(1), Some(5)));
            assert!(extra.metadata_complete);
            // Every entry comes back as written, except the vocabulary, which lives in `tokens`.
            assert_eq!(extra.metadata.len(), metadata.len());
            for ((k, v), (wk, wv)) in extra.metadata.iter().zip(&metadata) {
                assert_eq!(k, wk);
                if *wk == "tokenizer.ggml.tokens" {
                    assert_eq!(*v, GgufValue::SkippedArray { elem: GgufType::Str, len: 24 });
                } else {
                    assert_eq!(v, wv, "key {k}");
                }
            }
            assert_eq!(info.tensors.len(), tensors.len());
            for (t, w) in info.tensors.iter().zip(&tensors) {
                assert_eq!(t.name, w.name);
                assert_eq!(t.shape, w.shape, "{} shape is row-major", t.name);
                assert_eq!(t.file, 2);
                let (s, e) = t.byte_range;
                assert_eq!(s % 64, 0, "{} aligned", t.name);
                assert_eq!(&bytes[s as usize..e as usize], &w.data[..], "{} range holds its data", t.name);
            }
            let embd_info = &info.tensors[0];
            assert_eq!(embd_info.dtype, embd);
            assert_eq!(embd_info.matrix(), Some((24, 256)));
            assert_eq!(info.tensors[1].dtype, DType::F32);
            assert_eq!(info.tensors[2].dtype, DType::F16);
            assert_eq!(info.tensors[3].dtype, DType::BF16);
            assert_eq!(info.tensors[4].shape, Vec::<u64>::new());

            // One token's row is contiguous: row 5 alone decodes to (nearly) the source values.
            let row_bytes = embd.bytes_for(256).unwrap();
            let start = embd_info.byte_range.0 + 5 * row_bytes;
            let mut row = vec![0f32; 256];
            decode_rows(&bytes[start as usize..(start + row_bytes) as usize], &embd, 256, &mut row).unwrap();
            let src_row = &values[5 * 256..6 * 256];
            let amax = src_row.iter().fold(0f32, |m, v| m.max(v.abs()));
            for (a, b) in row.iter().zip(src_row) {
                assert!((a - b).abs() <= amax / 30.0, "{embd}: {a} vs {b}");
            }

            // read_model dispatches on the magic and gives the same tensors.
            let via_model = read_model(&src, 2).unwrap();
            assert_eq!(via_model, info);
        }
    }
}

#[test]
fn gguf_default_alignment_and_no_vocabulary() {
    let t = GgufTensor::new("token_embd.weight", DType::F32, &[3, 4], vec![0; 48]);
    let t2 = GgufTensor::new("b", DType::F16, &[3], vec![0; 6]);
    let bytes = gguf_bytes(
        3,
        &[t, t2],
        &[("general.architecture", GgufValue::Str("gpt2".into())), ("gpt2.vocab_size", GgufValue::U32(3))],
    );
    let (info, extra) = read_gguf(&SliceSource::new("a.gguf", bytes), 0).unwrap();
    assert_eq!(extra.alignment, gguf::DEFAULT_ALIGNMENT);
    assert!(extra.tokens.is_empty());
    assert_eq!(info.vocab_size, Some(3), "falls back to <arch>.vocab_size");
    assert_eq!(info.tensors[1].byte_range.0 % 32, 0);
    assert_eq!(info.tensors[1].byte_range.1 - info.tensors[1].byte_range.0, 6);
}

#[test]
fn gguf_header_is_read_lazily() {
    // 4 MB of data after a small header: only the header (one window at most) is read.
    let data = vec![0u8; 4 << 20];
    let t = GgufTensor::new("token_embd.weight", DType::F32, &[1024, 1024], data);
    let bytes = gguf_bytes(3, &[t], &[("tokenizer.ggml.tokens", tokens_value(&vocab(1024)))]);
    let src = Recording::new(SliceSource::new("big.gguf", bytes));
    let info = read_model(&src, 0).unwrap();
    assert_eq!(info.vocab_size, Some(1024));
    let read = bytes_read(&src.reads());
    assert!(read < (1 << 20) + 64, "read {read} bytes");
}

#[test]
fn gguf_unknown_ggml_types_are_listed_and_refused_by_name() {
    let tensors = [
        GgufTensor::new("token_embd.weight", DType::F32, &[2, 4], vec![0; 32]),
        GgufTensor::with_type_id("odd", 99, &[7], vec![1; 10]),
        GgufTensor::with_type_id("nv", 40, &[256], vec![2; 66]),
    ];
    let bytes = gguf_bytes(3, &tensors, &[]);
    let len = bytes.len() as u64;
    let info = read_model(&SliceSource::new("u.gguf", bytes), 0).unwrap();
    assert_eq!(info.tensors[1].dtype, DType::Other("ggml type 99".into()));
    assert_eq!(info.tensors[2].dtype, DType::Other("ggml type 40 (NVFP4)".into()));
    // A type of unknown size spans to the next tensor (or the end of the file).
    assert_eq!(info.tensors[1].byte_range.1, info.tensors[2].byte_range.0);
    assert_eq!(info.tensors[2].byte_range.1, len);
    let err = decode_rows(&[0; 10], &info.tensors[1].dtype, 7, &mut [0.0; 7]).unwrap_err();
    assert!(matches!(&err, DecodeError::Unsupported(n) if n == "ggml type 99"), "{err}");
    assert!(err.to_string().contains("ggml type 99"));
}

// Hostile GGUFs: each must fail with its own variant, quickly, without a large allocation.

fn err_of(bytes: Vec<u8>) -> FormatError {
    let src = SliceSource::new("h.gguf", bytes);
    let direct = read_gguf(&src, 0).map(|_| ()).unwrap_err();
    let via_model = read_model(&src, 0).map(|_| ()).unwrap_err();
    assert_eq!(direct, via_model);
    // Every message names the file.
    assert!(direct.to_string().starts_with("h.gguf"), "{direct}");
    direct
}

fn one_kv(key: &str, value_type: u32, payload: &[u8]) -> Vec<u8> {
    let mut w = GgufWriter::new();
    w.header(3, 0, 1).string(key).u32(value_type).raw(payload);
    w.bytes
}

#[test]
fn gguf_bad_magic_and_versions() {
    // read_model sends non-GGUF bytes to safetensors, whose own errors stand.
    let src = SliceSource::new("x.bin", b"GGUG\x03\0\0\0\0\0\0\0\0\0\0\0".to_vec());
    assert!(matches!(read_model(&src, 0), Err(FormatError::HeaderTooLarge { .. })));
    assert!(matches!(gguf::read_gguf(&src, 0), Err(FormatError::GgufBadMagic { .. })));
    let src = SliceSource::new("x.bin", b"GGU".to_vec());
    assert!(matches!(read_model(&src, 0), Err(FormatError::TooShort { .. })));
    assert!(matches!(gguf::read_gguf(&src, 0), Err(FormatError::GgufBadMagic { .. })));

    for (version, hint) in [(1u32, "version 1"), (4, ""), (3u32.swap_bytes(), "big-endian"), (0, "")] {
        let mut w = GgufWriter::new();
        w.header(version, 0, 0);
        let e = err_of(w.bytes);
        assert_eq!(e, FormatError::GgufUnsupportedVersion { file: "h.gguf".into(), version });
        assert!(e.to_string().contains(hint), "{e}");
    }
}

#[test]
fn gguf_truncated_anywhere_fails_cleanly() {
    let (bytes, ..) = sample_gguf(3, &DType::Q8_0);
    let full = read_gguf(&SliceSource::new("h.gguf", bytes.clone()), 0).unwrap();
    let header_end = full.1.data_start as usize;
    for cut in 4..bytes.len() {
        // Every cut through the fixed header and first entries, then a sample through the long
        // arrays and the data.
        if cut > 2048 && cut % 97 != 0 {
            continue;
        }
        let e = err_of(bytes[..cut].to_vec());
        let ok = match &e {
            FormatError::GgufTruncated { offset, file_len, .. } => *file_len == cut as u64 && *offset <= cut as u64,
            FormatError::GgufTooLarge { available, .. } => *available < cut as u64,
            FormatError::PastEof { end, file_len, .. } => cut >= header_end - 64 && end > file_len,
            _ => false,
        };
        assert!(ok, "cut at {cut}: {e:?}");
    }
    // Specific places: inside the version, inside the tensor count, inside tensor data.
    assert!(matches!(err_of(bytes[..6].to_vec()), FormatError::GgufTruncated { offset: 4, .. }));
    assert!(matches!(err_of(bytes[..12].to_vec()), FormatError::GgufTruncated { offset: 8, .. }));
    assert!(matches!(
        err_of(bytes[..header_end + 100].to_vec()),
        FormatError::PastEof { ref tensor, .. } if tensor == "token_embd.weight"
    ));
}

#[test]
fn gguf_string_length_past_eof() {
    // A key claiming 2^40 bytes.
    let mut w = GgufWriter::new();
    w.header(3, 0, 1).u64(1 << 40).raw(&[b'a'; 32]);
    let e = err_of(w.bytes);
    assert!(matches!(e, FormatError::GgufTooLarge { offset: 24, claimed, .. } if claimed == 1 << 40), "{e:?}");
    // A string value claiming a little more than is left.
    let mut payload = 10u64.to_le_bytes().to_vec();
    payload.extend_from_slice(b"short");
    let e = err_of(one_kv("k", 8, &payload));
    assert!(matches!(e, FormatError::GgufTooLarge { claimed: 10, available: 5, .. }), "{e:?}");
    // A string length of u64::MAX.
    let e = err_of(one_kv("k", 8, &u64::MAX.to_le_bytes()));
    assert!(matches!(e, FormatError::GgufTooLarge { .. }), "{e:?}");
}

#[test]
fn gguf_huge_counts_are_refused_before_allocating() {
    // Array of 2^60 uint32.
    let mut payload = 4u32.to_le_bytes().to_vec();
    payload.extend_from_slice(&(1u64 << 60).to_le_bytes());
    let e = err_of(one_kv("a", 9, &payload));
    assert!(matches!(e, FormatError::GgufTooLarge { claimed, .. } if claimed == 1 << 60), "{e:?}");
    // A vocabulary of 2^60 strings.
    let mut payload = 8u32.to_le_bytes().to_vec();
    payload.extend_from_slice(&(1u64 << 60).to_le_bytes());
    let e = err_of(one_kv("tokenizer.ggml.tokens", 9, &payload));
    assert!(matches!(e, FormatError::GgufTooLarge { .. }), "{e:?}");
    // Array of 2^60 arrays.
    let mut payload = 9u32.to_le_bytes().to_vec();
    payload.extend_from_slice(&(1u64 << 60).to_le_bytes());
    assert!(matches!(err_of(one_kv("a", 9, &payload)), FormatError::GgufTooLarge { .. }));
    // Tensor and key/value counts of 2^60.
    let mut w = GgufWriter::new();
    w.header(3, 1 << 60, 0);
    assert!(matches!(err_of(w.bytes), FormatError::GgufTooLarge { offset: 8, .. }));
    let mut w = GgufWriter::new();
    w.header(3, 0, 1 << 60);
    assert!(matches!(err_of(w.bytes), FormatError::GgufTooLarge { offset: 16, .. }));
}

#[test]
fn gguf_bad_value_types_and_nesting() {
    let e = err_of(one_kv("weird", 13, &[0; 16]));
    assert_eq!(
        e,
        FormatError::GgufBadValueType { file: "h.gguf".into(), offset: 37, key: "weird".into(), value_type: 13 }
    );
    // Bad element type inside an array.
    let mut payload = 77u32.to_le_bytes().to_vec();
    payload.extend_from_slice(&1u64.to_le_bytes());
    assert!(matches!(err_of(one_kv("a", 9, &payload)), FormatError::GgufBadValueType { value_type: 77, .. }));
    // Arrays nested 100 deep (each one element long).
    let mut payload = Vec::new();
    for _ in 0..100 {
        payload.extend_from_slice(&9u32.to_le_bytes());
        payload.extend_from_slice(&1u64.to_le_bytes());
    }
    payload.extend_from_slice(&[0; 16]);
    let e = err_of(one_kv("deep", 9, &payload));
    assert!(matches!(e, FormatError::GgufOverLimit { limit: gguf::MAX_DEPTH, .. }), "{e:?}");
}

#[test]
fn gguf_interpreted_keys_are_checked() {
    for (alignment, ok) in [(0u32, false), (3, false), (48, false), (16, true)] {
        let bytes = gguf_bytes(
            3,
            &[GgufTensor::new("a", DType::F32, &[4], vec![0; 16])],
            &[("general.alignment", GgufValue::U32(alignment))],
        );
        let r = read_gguf(&SliceSource::new("h.gguf", bytes), 0);
        if ok {
            assert_eq!(r.unwrap().1.alignment, 16);
        } else {
            assert_eq!(
                r.unwrap_err(),
                FormatError::GgufBadAlignment { file: "h.gguf".into(), alignment: alignment.into() }
            );
        }
    }
    let e = err_of(gguf_bytes(3, &[], &[("general.alignment", GgufValue::Str("32".into()))]));
    assert!(matches!(e, FormatError::GgufWrongType { ref key, .. } if key == "general.alignment"), "{e:?}");
    let e = err_of(gguf_bytes(3, &[], &[("tokenizer.ggml.tokens", GgufValue::U32(5))]));
    assert!(matches!(e, FormatError::GgufWrongType { .. }), "{e:?}");
    let ints = GgufValue::Array { elem: GgufType::I32, items: vec![GgufValue::I32(1)] };
    let e = err_of(gguf_bytes(3, &[], &[("tokenizer.ggml.tokens", ints)]));
    assert!(matches!(e, FormatError::GgufWrongType { ref found, .. } if found == "an array of int32"), "{e:?}");
    let e = err_of(gguf_bytes(3, &[], &[("split.count", GgufValue::I8(-1))]));
    assert!(matches!(e, FormatError::GgufWrongType { .. }), "{e:?}");
}

#[test]
fn gguf_bad_tensor_infos() {
    // Offset past the end of the file.
    let mut w = GgufWriter::new();
    w.header(3, 1, 0).tensor_info("token_embd.weight", &[4, 8], 0, 1 << 20).pad_to(32).raw(&[0; 128]);
    let e = err_of(w.bytes);
    assert!(matches!(e, FormatError::PastEof { ref tensor, .. } if tensor == "token_embd.weight"), "{e:?}");
    // Offset so large the absolute position overflows.
    let mut w = GgufWriter::new();
    w.header(3, 1, 0).tensor_info("t", &[4], 0, u64::MAX - 31);
    assert!(matches!(err_of(w.bytes), FormatError::PastEof { end: u64::MAX, .. }));
    // Five dimensions.
    let mut w = GgufWriter::new();
    w.header(3, 1, 0).tensor_info("t", &[1, 1, 1, 1, 1], 0, 0).raw(&[0; 64]);
    assert!(matches!(err_of(w.bytes), FormatError::GgufOverLimit { value: 5, limit: 4, .. }));
    // A Q8_0 row of 33 elements is not whole blocks.
    let mut w = GgufWriter::new();
    w.header(3, 1, 0).tensor_info("t", &[2, 33], 8, 0).raw(&[0; 256]);
    assert!(matches!(err_of(w.bytes), FormatError::GgufBadShape { .. }));
    // An element count that overflows u64.
    let mut w = GgufWriter::new();
    w.header(3, 1, 0).tensor_info("t", &[1 << 40, 1 << 40], 0, 0).raw(&[0; 64]);
    assert!(matches!(err_of(w.bytes), FormatError::GgufBadShape { .. }));
    // The same name twice.
    let mut w = GgufWriter::new();
    w.header(3, 2, 0).tensor_info("t", &[4], 0, 0).tensor_info("t", &[4], 0, 32).pad_to(32).raw(&[0; 64]);
    assert!(matches!(err_of(w.bytes), FormatError::GgufDuplicateTensor { .. }));
}

#[test]
fn gguf_tensor_offsets_must_keep_the_alignment() {
    // ggml's gguf_init_from_file: "tensor '%s' has offset %llu, expected a multiple of %zu".
    let mut w = GgufWriter::new();
    w.header(3, 2, 0).tensor_info("a", &[8], 0, 0).tensor_info("token_embd.weight", &[4, 8], 0, 48).pad_to(32);
    w.raw(&[0; 256]);
    assert_eq!(
        err_of(w.bytes),
        FormatError::GgufMisalignedTensor {
            file: "h.gguf".into(),
            tensor: "token_embd.weight".into(),
            offset: 48,
            alignment: 32
        }
    );
    // The alignment is the file's own: 48 is fine at 16, and 16 is not at 64.
    let align = |a: u32| ("general.alignment", GgufValue::U32(a));
    for (alignment, offset, ok) in [(16u32, 48u64, true), (64, 16, false), (64, 128, true)] {
        let mut w = GgufWriter::new();
        w.header(3, 1, 1).kv(align(alignment).0, &align(alignment).1);
        w.tensor_info("t", &[4], 0, offset).pad_to(alignment.into()).raw(&[0; 256]);
        let r = read_gguf(&SliceSource::new("h.gguf", w.bytes), 0);
        assert_eq!(r.is_ok(), ok, "alignment {alignment}, offset {offset}: {r:?}");
        if !ok {
            assert!(
                matches!(r.unwrap_err(), FormatError::GgufMisalignedTensor { alignment: a, offset: o, .. } if a == alignment as u64 && o == offset)
            );
        }
    }
}

/// A split part: `split.no` / `split.count` metadata as given, one small F32 tensor named after it.
fn split_part(tensor: &str, no: Option<u16>, count: Option<u16>) -> Vec<u8> {
    let mut meta = Vec::new();
    if let Some(no) = no {
        meta.push(("split.no", GgufValue::U16(no)));
    }
    if let Some(count) = count {
        meta.push(("split.count", GgufValue::U16(count)));
    }
    gguf_bytes(3, &[GgufTensor::new(tensor, DType::F32, &[2, 4], vec![0; 32])], &meta)
}

fn set_err(parts: &[(&str, Vec<u8>)]) -> FormatError {
    let sources: Vec<SliceSource> = parts.iter().map(|(n, b)| SliceSource::new(*n, b.clone())).collect();
    let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s as &dyn ByteSource).collect();
    read_model_set(&refs).map(|_| ()).unwrap_err()
}

#[test]
fn split_gguf_metadata_must_agree_with_itself_and_the_names() {
    let (a, b) = ("m-00001-of-00002.gguf", "m-00002-of-00002.gguf");
    // Agreeing parts read.
    let sources = [
        SliceSource::new(a, split_part("x", Some(0), Some(2))),
        SliceSource::new(b, split_part("y", Some(1), Some(2))),
    ];
    let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s as &dyn ByteSource).collect();
    assert!(read_model_set(&refs).is_ok());
    // split.count against the name's N.
    assert_eq!(
        set_err(&[(a, split_part("x", Some(0), Some(3))), (b, split_part("y", Some(1), Some(2)))]),
        FormatError::SplitCountMismatchesName { file: a.into(), count: 3, name_count: 2 }
    );
    // split.no against the name's k (1-based in names, 0-based in metadata).
    assert_eq!(
        set_err(&[(a, split_part("x", Some(0), Some(2))), (b, split_part("y", Some(0), Some(2)))]),
        FormatError::SplitNoMismatchesName { file: b.into(), no: 0, name_no: 2 }
    );
    // Parts read together whose split.count differ, whatever their names.
    assert_eq!(
        set_err(&[("a.gguf", split_part("x", None, Some(2))), ("b.gguf", split_part("y", None, Some(3)))]),
        FormatError::SplitCountMetadataDisagree {
            first: "a.gguf".into(),
            first_count: 2,
            second: "b.gguf".into(),
            second_count: 3
        }
    );
}

// ---------------------------------------------------------------------------------------------
// .npy

#[test]
fn npy_versions_and_dtypes() {
    let values: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 - 2.0).collect();
    for major in [1u8, 2, 3] {
        for (descr, dtype) in
            [("<f4", DType::F32), ("<f2", DType::F16), ("<f8", DType::F64), ("|f4", DType::F32), ("=f8", DType::F64)]
        {
            let data = quantize(&dtype, &values).unwrap();
            let bytes = npy_bytes(major, descr, false, &[3, 4], &data);
            let src = SliceSource::new("emb.npy", bytes.clone());
            let info = read_model(&src, 1).unwrap();
            assert_eq!(info, npy::read_header(&src, 1).unwrap());
            assert_eq!(info.format, "npy");
            let t = &info.tensors[0];
            assert_eq!((t.name.as_str(), &t.dtype, t.shape.as_slice(), t.file), ("array", &dtype, &[3u64, 4][..], 1));
            assert_eq!(t.byte_range.0 % 64, 0);
            assert_eq!(t.byte_range.1, bytes.len() as u64);
            let mut out = vec![0f32; 12];
            decode_rows(&bytes[t.byte_range.0 as usize..], &dtype, 4, &mut out).unwrap();
            assert_eq!(out, values, "v{major} {descr}");
        }
    }
    // 1-D and 3-D shapes are listed too (locate decides what to do with them).
    let bytes = npy_bytes(1, "<f4", false, &[2, 2, 2], &[0; 32]);
    assert_eq!(read_model(&SliceSource::new("a.npy", bytes), 0).unwrap().tensors[0].shape, vec![2, 2, 2]);
    let bytes = npy_bytes(1, "<f4", false, &[5], &[0; 20]);
    assert_eq!(read_model(&SliceSource::new("a.npy", bytes), 0).unwrap().tensors[0].shape, vec![5]);
}

fn npy_err(bytes: Vec<u8>) -> FormatError {
    let e = read_model(&SliceSource::new("e.npy", bytes), 0).unwrap_err();
    assert!(e.to_string().starts_with("e.npy"), "{e}");
    e
}

#[test]
fn npy_refusals() {
    assert_eq!(
        npy_err(npy_bytes(1, "<f4", true, &[2, 2], &[0; 16])),
        FormatError::NpyFortranOrder { file: "e.npy".into() }
    );
    for descr in ["<i4", ">f4", "<c8", "|u1", "<f16"] {
        let e = npy_err(npy_bytes(1, descr, false, &[2, 2], &[0; 64]));
        assert_eq!(e, FormatError::NpyUnsupportedDtype { file: "e.npy".into(), descr: descr.into() });
        assert!(e.to_string().contains(descr));
    }
    // A structured dtype: descr is a list.
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    let header = b"{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, 'shape': (2,), }\n";
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(&[0; 16]);
    assert!(matches!(npy_err(bytes), FormatError::NpyUnsupportedDtype { ref descr, .. } if descr.starts_with("[('a'")));
    // Missing key, bad shape.
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    let header = b"{'descr': '<f4', 'shape': (2,), }\n";
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header);
    assert!(matches!(npy_err(bytes), FormatError::NpyBadHeader { .. }));
    let mut v = npy_bytes(1, "<f4", false, &[2, 2], &[0; 16]);
    let at = v.windows(6).position(|w| w == b"(2, 2)").unwrap();
    v[at + 1] = b'x';
    assert!(matches!(npy_err(v), FormatError::NpyBadHeader { .. }));
    // Overflowing shape.
    let e = npy_err(npy_bytes(1, "<f4", false, &[1 << 40, 1 << 40], &[]));
    assert!(matches!(e, FormatError::NpyBadHeader { .. }), "{e:?}");
    // Versions.
    let mut v = npy_bytes(1, "<f4", false, &[2], &[0; 8]);
    v[6] = 4;
    assert_eq!(npy_err(v), FormatError::NpyUnsupportedVersion { file: "e.npy".into(), major: 4, minor: 0 });
    // Header length beyond the limit.
    let mut v = b"\x93NUMPY\x02\x00".to_vec();
    v.extend_from_slice(&u32::MAX.to_le_bytes());
    v.extend_from_slice(&[b' '; 64]);
    assert!(matches!(npy_err(v), FormatError::HeaderTooLarge { .. }));
    // read_npy directly on a non-npy file.
    let e = npy::read_header(&SliceSource::new("e.npy", b"PK\x03\x04abcd".to_vec()), 0).unwrap_err();
    assert!(matches!(e, FormatError::NpyBadMagic { .. }));
}

#[test]
fn npy_truncated_anywhere_fails_cleanly() {
    let bytes = npy_bytes(2, "<f4", false, &[4, 4], &[1; 64]);
    let data_start = bytes.len() - 64;
    for cut in 6..bytes.len() {
        let e = npy_err(bytes[..cut].to_vec());
        let ok = match e {
            FormatError::NpyTruncated { .. } => cut < data_start,
            FormatError::PastEof { ref tensor, .. } => cut >= data_start && tensor == "array",
            _ => false,
        };
        assert!(ok, "cut at {cut}: {e:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Dispatch and robustness

#[test]
fn safetensors_behaviour_is_unchanged_by_dispatch() {
    for (case, bytes) in synth::hostile_safetensors() {
        let src = SliceSource::new("s.safetensors", bytes);
        // Files of other kinds are named by the sniffer before the safetensors reader sees them.
        if case.starts_with("foreign-") || case == "not-safetensors" {
            assert!(matches!(read_model(&src, 0), Err(FormatError::Foreign { .. })), "{case}");
            continue;
        }
        assert_eq!(read_model(&src, 0), safetensors::read_header(&src, 0), "{case}");
    }
    let (_, demo) = synth::demo("class1-like").unwrap();
    let src = SliceSource::new("d.safetensors", demo);
    assert_eq!(read_model(&src, 0).unwrap().format, "safetensors");
    for short in [&b""[..], b"G", b"GGUF", b"\x93NUM"] {
        let src = SliceSource::new("s", short.to_vec());
        assert!(read_model(&src, 0).is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512), prefix in 0usize..4) {
        let mut v = match prefix {
            0 => Vec::new(),
            1 => b"GGUF\x03\x00\x00\x00".to_vec(),
            2 => b"\x93NUMPY\x01\x00".to_vec(),
            _ => b"GGUF\x02\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00".to_vec(),
        };
        v.extend_from_slice(&bytes);
        let _ = read_model(&SliceSource::new("p", v), 0);
    }

    #[test]
    fn corrupted_valid_files_never_panic(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8), which in 0usize..2) {
        let mut v = if which == 0 {
            let t = GgufTensor::new("token_embd.weight", DType::Q4K, &[2, 256], vec![0; 288]);
            let meta = [
                ("general.alignment", GgufValue::U32(64)),
                ("tokenizer.ggml.tokens", tokens_value(&vocab(2))),
                ("n", GgufValue::Array { elem: GgufType::Array, items: vec![GgufValue::Array { elem: GgufType::U8, items: vec![GgufValue::U8(1)] }] }),
            ];
            gguf_bytes(3, &[t], &meta)
        } else {
            npy_bytes(1, "<f4", false, &[2, 2], &[0; 16])
        };
        for (at, b) in flips {
            let i = at % v.len();
            v[i] = b;
        }
        let _ = read_model(&SliceSource::new("p", v), 0);
    }
}
