//! The malformed-file corpus (issue 9 item 5): inputs across every format a user might drop —
//! truncations, lying lengths, bad UTF-8/JSON, duplicate names, unknown dtypes, overflowing shapes,
//! offsets past EOF / reversed / overlapping / gapped, non-2-D embeddings, V or d of 0 or 1,
//! NaN/Inf/zero rows, GGUF wrong magic / version / absurd counts / strings past EOF / unknown types /
//! misalignment, shard indexes with `..` paths or missing shards, `.npy` lying headers / Fortran
//! order / big-endian / object dtype, and the foreign files of `synth::foreign_files`.
//!
//! Each case is one or more named files (the extension picks the reader) and what a user must see:
//! a message mentioning [`CorpusCase::mention`], or a result. `tests/corpus.rs` pins each case to its
//! error variant; the CLI (`orthoscope-fixtures corpus --out DIR`) writes them for the browser test.
//! Test code only (cargo feature `fixtures`).

use serde::Serialize;

use crate::demo::{encode, random_init, safetensors_bytes, TensorSpec};
use crate::format::fixtures::{gguf_bytes, npy_bytes, GgufTensor, GgufWriter};
use crate::format::gguf::{GgufType, GgufValue};
use crate::format::DType;
use crate::synth::{foreign_files, hostile_safetensors};

/// What analysing a case must give.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// An error whose message contains [`CorpusCase::mention`].
    Error,
    /// A report (the rows that are usable give ε).
    Report,
}

/// One corpus input.
#[derive(Clone, Debug, Serialize)]
pub struct CorpusCase {
    /// Unique, also the case's directory name.
    pub name: String,
    /// (file name, bytes), analysed together as a user would drop them.
    #[serde(skip)]
    pub files: Vec<(String, Vec<u8>)>,
    pub expect: Expect,
    /// Text the error message must contain: what is wrong, in the user's terms (empty for a report).
    pub mention: String,
    /// For a report: the matrix (rows, dim, values) whose usable rows give the right ε.
    #[serde(skip)]
    pub reference: Option<(usize, usize, Vec<f32>)>,
}

const EMBED: &str = "model.embed_tokens.weight";

fn case(name: &str, file: &str, bytes: Vec<u8>, expect: Expect, mention: &str) -> CorpusCase {
    CorpusCase {
        name: name.to_string(),
        files: vec![(file.to_string(), bytes)],
        expect,
        mention: mention.to_string(),
        reference: None,
    }
}

/// A case that must give the report of `reference`.
fn ok(name: &str, file: &str, bytes: Vec<u8>, reference: (usize, usize, Vec<f32>)) -> CorpusCase {
    CorpusCase { reference: Some(reference), ..case(name, file, bytes, Expect::Report, "") }
}

fn err(name: &str, file: &str, bytes: Vec<u8>, mention: &str) -> CorpusCase {
    case(name, file, bytes, Expect::Error, mention)
}

/// A safetensors file of one header JSON and `data` zero bytes.
fn st_raw(json: &str, data: usize) -> Vec<u8> {
    let mut v = (json.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(json.as_bytes());
    v.resize(v.len() + data, 0);
    v
}

/// An F32 embedding of `rows × dim` with the given values.
fn st_matrix(rows: usize, dim: usize, values: &[f32]) -> Vec<u8> {
    safetensors_bytes(&[TensorSpec::matrix(EMBED, DType::F32, rows, dim, values)])
}

fn gguf_matrix(name: &str, rows: u64, dim: u64, ggml_type: u32, data: Vec<u8>) -> GgufTensor {
    GgufTensor::with_type_id(name, ggml_type, &[rows, dim], data)
}

/// A small valid GGUF model: token_embd.weight (F32, 64 × 16) and a one-token vocabulary.
fn gguf_valid() -> Vec<u8> {
    let values = gguf_valid_values();
    gguf_bytes(3, &[gguf_matrix("token_embd.weight", 64, 16, 0, encode(&values, &DType::F32))], &[])
}

fn gguf_valid_values() -> Vec<f32> {
    random_init(64, 16, 7)
}

/// Every case, in a fixed order.
pub fn corpus() -> Vec<CorpusCase> {
    let mut cases = Vec::new();
    // The hostile safetensors set and the foreign files already name one failure each.
    let hostile_mentions: &[(&str, &str)] = &[
        ("not-safetensors", "zip"),
        ("truncated-header", "too short"),
        ("header-past-eof", "truncated"),
        ("header-too-large", "limit"),
        ("invalid-json", "JSON"),
        ("unknown-dtype", "Q7"),
        ("size-mismatch", EMBED),
        ("offsets-past-eof", "past the end"),
        ("not-2d", "2-D"),
        ("zero-rows", "nothing to analyse"),
        ("offsets-overlap", "overlap"),
        ("offsets-gap", "belong to no tensor"),
        ("all-rows-zero", "all-zero"),
    ];
    let foreign: Vec<&str> = foreign_files().iter().map(|(n, _)| *n).collect();
    for (name, bytes) in hostile_safetensors() {
        let mention = hostile_mentions.iter().find(|(n, _)| *n == name).map(|(_, m)| *m);
        match mention {
            Some(m) => cases.push(err(&format!("st-{name}"), &format!("{name}.safetensors"), bytes, m)),
            // Foreign files: the message says what the file is; its name is the least it mentions.
            None if foreign.contains(&name) => {
                cases.push(err(name, &format!("{name}.safetensors"), bytes, &format!("{name}.safetensors")))
            }
            None => cases.push(err(&format!("st-{name}"), &format!("{name}.safetensors"), bytes, name)),
        }
    }
    cases.extend(safetensors_cases());
    cases.extend(row_cases());
    cases.extend(memory_cases());
    cases.extend(gguf_cases());
    cases.extend(npy_cases());
    cases.extend(index_cases());
    cases
}

fn safetensors_cases() -> Vec<CorpusCase> {
    let f = "model.safetensors";
    let mut bad_utf8 =
        st_raw(&format!("{{\"{EMBED}\":{{\"dtype\":\"F32\",\"shape\":[4,8],\"data_offsets\":[0,128]}}}}"), 128);
    // A byte that is never valid UTF-8 inside the tensor's name.
    if let Some(b) = bad_utf8.get_mut(12) {
        *b = 0xff;
    }
    vec![
        err("st-bad-utf8", f, bad_utf8, "JSON"),
        err(
            "st-duplicate-name",
            f,
            st_raw(
                &format!(
                    "{{\"{EMBED}\":{{\"dtype\":\"F32\",\"shape\":[4,8],\"data_offsets\":[0,128]}},\
                     \"{EMBED}\":{{\"dtype\":\"F32\",\"shape\":[4,8],\"data_offsets\":[128,256]}}}}"
                ),
                256,
            ),
            EMBED,
        ),
        err(
            "st-reversed-offsets",
            f,
            st_raw(&format!("{{\"{EMBED}\":{{\"dtype\":\"F32\",\"shape\":[4,8],\"data_offsets\":[128,0]}}}}"), 128),
            "start after end",
        ),
        err(
            "st-overflowing-shape",
            f,
            st_raw(
                &format!(
                    "{{\"{EMBED}\":{{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,128]}}}}"
                ),
                128,
            ),
            EMBED,
        ),
        err(
            "st-shape-not-numbers",
            f,
            st_raw(&format!("{{\"{EMBED}\":{{\"dtype\":\"F32\",\"shape\":[\"a\",8],\"data_offsets\":[0,128]}}}}"), 128),
            EMBED,
        ),
        err("st-header-not-object", f, st_raw("[1, 2, 3]     ", 0), "JSON"),
        err(
            "st-1d-embedding",
            f,
            safetensors_bytes(&[TensorSpec {
                name: EMBED.into(),
                dtype: DType::F32,
                shape: vec![32],
                data: encode(&[1.0; 32], &DType::F32),
            }]),
            "2-D",
        ),
        err(
            "st-integer-embedding",
            f,
            st_raw(&format!("{{\"{EMBED}\":{{\"dtype\":\"I32\",\"shape\":[4,8],\"data_offsets\":[0,128]}}}}"), 128),
            "I32",
        ),
        err(
            "st-zero-columns",
            f,
            st_raw(&format!("{{\"{EMBED}\":{{\"dtype\":\"F32\",\"shape\":[8,0],\"data_offsets\":[0,0]}}}}"), 0),
            "nothing to analyse",
        ),
        err("st-truncated-data", f, {
            let mut v = st_matrix(16, 8, &random_init(16, 8, 1));
            v.truncate(v.len() - 100);
            v
        }, "past the end"),
    ]
}

/// V or d of 1, NaN/Inf/zero rows: what is left of the rows decides.
fn row_cases() -> Vec<CorpusCase> {
    let f = "model.safetensors";
    let mut some_nan = random_init(32, 8, 2);
    let mut all_bad = random_init(8, 8, 3);
    for r in [3usize, 17, 30] {
        if let Some(x) = some_nan.get_mut(r * 8 + 1) {
            *x = f32::NAN;
        }
    }
    if let Some(x) = some_nan.get_mut(5 * 8) {
        *x = f32::INFINITY;
    }
    for (i, x) in all_bad.iter_mut().enumerate() {
        if i % 8 == 0 {
            *x = if i % 16 == 0 { f32::NAN } else { f32::NEG_INFINITY };
        }
    }
    let mut nan_and_zero = vec![0.0f32; 6 * 8];
    if let Some(x) = nan_and_zero.get_mut(8) {
        *x = f32::NAN;
    }
    vec![
        ok("rows-some-nan-inf", f, st_matrix(32, 8, &some_nan), (32, 8, some_nan.clone())),
        err("rows-all-nan-inf", f, st_matrix(8, 8, &all_bad), "NaN/Inf"),
        err("rows-zero-and-nan", f, st_matrix(6, 8, &nan_and_zero), "usable"),
        err("rows-one", f, st_matrix(1, 8, &random_init(1, 8, 4)), "at least two"),
        // d = 1: every cosine is ±1, a valid (if degenerate) answer.
        ok("rows-d-1", f, st_matrix(16, 1, &random_init(16, 1, 5)), (16, 1, random_init(16, 1, 5))),
        ok("rows-two", f, st_matrix(2, 8, &random_init(2, 8, 6)), (2, 8, random_init(2, 8, 6))),
    ]
}

/// Shapes whose naive accumulators dwarf their data (issue 9 item 2): d = 16384 with two rows
/// (a d² Gram would be 1 GiB), an unembedding of the same width, and fewer rows than dimensions.
/// Their results must come from memory sized by the rows present.
fn memory_cases() -> Vec<CorpusCase> {
    let wide = 16384;
    let embedding = crate::demo::trained_like(2, wide, 11);
    let unembedding = random_init(2, wide, 12);
    let with_head = safetensors_bytes(&[
        TensorSpec::matrix(EMBED, DType::F32, 2, wide, &embedding),
        TensorSpec::matrix("lm_head.weight", DType::F32, 2, wide, &unembedding),
    ]);
    let two = random_init(2, wide, 13);
    let (few, dim) = (48, 8192);
    let narrow = random_init(few, dim, 14);
    let f = "model.safetensors";
    vec![
        ok("mem-wide-embedding-and-lm-head", f, with_head, (2, wide, embedding)),
        ok("mem-two-rows-of-16384", f, st_matrix(2, wide, &two), (2, wide, two)),
        ok("mem-fewer-rows-than-dims", f, st_matrix(few, dim, &narrow), (few, dim, narrow)),
    ]
}

fn gguf_cases() -> Vec<CorpusCase> {
    let f = "model.gguf";
    let valid = gguf_valid();
    let header_only = |version: u32, tensors: u64, kvs: u64| {
        let mut w = GgufWriter::new();
        w.header(version, tensors, kvs);
        w.bytes
    };
    let mut wrong_magic = valid.clone();
    if let Some(m) = wrong_magic.get_mut(..4) {
        m.copy_from_slice(b"GGML");
    }
    let string_past_eof = {
        let mut w = GgufWriter::new();
        w.header(3, 0, 1).u64(1 << 40).raw(b"general.name");
        w.bytes
    };
    let unknown_value_type = {
        let mut w = GgufWriter::new();
        w.header(3, 0, 1).string("general.name").u32(99).u64(0);
        w.bytes
    };
    let array_past_eof = {
        let mut w = GgufWriter::new();
        w.header(3, 0, 1)
            .string("tokenizer.ggml.tokens")
            .u32(GgufType::Array.id())
            .u32(GgufType::Str.id())
            .u64(1 << 50);
        w.bytes
    };
    let unknown_tensor_type = gguf_bytes(3, &[gguf_matrix("token_embd.weight", 4, 32, 99, vec![0; 512])], &[]);
    let bad_alignment = gguf_bytes(
        3,
        &[gguf_matrix("token_embd.weight", 4, 8, 0, encode(&random_init(4, 8, 1), &DType::F32))],
        &[("general.alignment", GgufValue::U32(3))],
    );
    let misaligned = {
        // A tensor offset that is not a multiple of the alignment (32): llama.cpp refuses it, this
        // reader reads the bytes where the offset says, which is the right matrix.
        let mut w = GgufWriter::new();
        w.header(3, 1, 0).tensor_info("token_embd.weight", &[4, 8], 0, 4).pad_to(32);
        w.raw(&[0; 4]).raw(&encode(&random_init(4, 8, 1), &DType::F32));
        w.bytes
    };
    let duplicate = {
        let data = encode(&random_init(4, 8, 1), &DType::F32);
        gguf_bytes(
            3,
            &[gguf_matrix("token_embd.weight", 4, 8, 0, data.clone()), gguf_matrix("token_embd.weight", 4, 8, 0, data)],
            &[],
        )
    };
    let past_eof = {
        let mut v = valid.clone();
        v.truncate(v.len() - 1000);
        v
    };
    let overflowing_shape = {
        let mut w = GgufWriter::new();
        w.header(3, 1, 0).tensor_info("token_embd.weight", &[1 << 40, 1 << 40], 0, 0).pad_to(32).raw(&[0; 64]);
        w.bytes
    };
    let three_d = {
        let mut w = GgufWriter::new();
        w.header(3, 1, 0).tensor_info("token_embd.weight", &[2, 4, 8], 0, 0).pad_to(32).raw(&[0; 256]);
        w.bytes
    };
    let mut truncated_kv = gguf_bytes(3, &[], &[("general.name", GgufValue::Str("a model with a long name".into()))]);
    truncated_kv.truncate(40);
    vec![
        ok("gguf-valid", f, valid, (64, 16, gguf_valid_values())),
        err("gguf-wrong-magic", f, wrong_magic, "GGUF"),
        err("gguf-version-1", f, header_only(1, 0, 0), "version 1"),
        err("gguf-version-99", f, header_only(99, 0, 0), "version 99"),
        err("gguf-truncated-fixed-header", f, b"GGUF\x03\x00\x00\x00\x01\x00".to_vec(), "model.gguf"),
        err("gguf-truncated-metadata", f, truncated_kv, "model.gguf"),
        err("gguf-absurd-tensor-count", f, header_only(3, 1 << 60, 0), "tensor"),
        err("gguf-absurd-kv-count", f, header_only(3, 0, 1 << 60), "model.gguf"),
        err("gguf-string-past-eof", f, string_past_eof, "model.gguf"),
        err("gguf-array-past-eof", f, array_past_eof, "tokenizer.ggml.tokens"),
        err("gguf-unknown-value-type", f, unknown_value_type, "general.name"),
        err("gguf-unknown-tensor-type", f, unknown_tensor_type, "token_embd.weight"),
        err("gguf-bad-alignment", f, bad_alignment, "alignment"),
        ok("gguf-misaligned-offset", f, misaligned, (4, 8, random_init(4, 8, 1))),
        err("gguf-duplicate-tensor", f, duplicate, "twice"),
        err("gguf-data-past-eof", f, past_eof, "token_embd.weight"),
        err("gguf-overflowing-shape", f, overflowing_shape, "token_embd.weight"),
        err("gguf-3d-embedding", f, three_d, "token_embd.weight"),
    ]
}

fn npy_cases() -> Vec<CorpusCase> {
    let f = "embedding.npy";
    let data = |rows: usize, dim: usize| encode(&random_init(rows, dim, 8), &DType::F32);
    let mut bad_magic = npy_bytes(1, "<f4", false, &[8, 4], &data(8, 4));
    if let Some(b) = bad_magic.get_mut(1) {
        *b = b'X';
    }
    let mut version_9 = npy_bytes(1, "<f4", false, &[8, 4], &data(8, 4));
    if let Some(b) = version_9.get_mut(6) {
        *b = 9;
    }
    let header_past_eof = {
        let mut v = b"\x93NUMPY\x01\x00".to_vec();
        v.extend_from_slice(&60000u16.to_le_bytes());
        v.extend_from_slice(b"{'descr': '<f4', ");
        v
    };
    let garbage_header = {
        let mut v = b"\x93NUMPY\x01\x00".to_vec();
        let h = format!("{:<53}\n", "this is not a python dict at all");
        v.extend_from_slice(&(h.len() as u16).to_le_bytes());
        v.extend_from_slice(h.as_bytes());
        v
    };
    vec![
        ok("npy-valid", f, npy_bytes(1, "<f4", false, &[32, 8], &data(32, 8)), (32, 8, random_init(32, 8, 8))),
        err("npy-lying-shape", f, npy_bytes(1, "<f4", false, &[1000, 8], &data(32, 8)), "embedding.npy"),
        err("npy-fortran-order", f, npy_bytes(1, "<f4", true, &[8, 4], &data(8, 4)), "Fortran"),
        err("npy-big-endian", f, npy_bytes(1, ">f4", false, &[8, 4], &data(8, 4)), ">f4"),
        err("npy-object-dtype", f, npy_bytes(1, "|O", false, &[8, 4], &[0; 256]), "|O"),
        err("npy-integer-dtype", f, npy_bytes(1, "<i4", false, &[8, 4], &data(8, 4)), "<i4"),
        err("npy-bad-magic", f, bad_magic, "embedding.npy"),
        err("npy-version-9", f, version_9, "9.0"),
        err("npy-header-past-eof", f, header_past_eof, "embedding.npy"),
        err("npy-garbage-header", f, garbage_header, "header"),
        err("npy-3d", f, npy_bytes(1, "<f4", false, &[2, 4, 4], &data(8, 4)), "2-D"),
        err("npy-one-row", f, npy_bytes(1, "<f4", false, &[1, 8], &data(1, 8)), "at least two"),
        err("npy-truncated-preamble", f, b"\x93NUMPY\x01".to_vec(), "embedding.npy"),
    ]
}

fn index_cases() -> Vec<CorpusCase> {
    let idx = "model.safetensors.index.json";
    let shard = |k: usize, n: usize| format!("model-{k:05}-of-{n:05}.safetensors");
    let embed_values = random_init(16, 8, 9);
    let embed = safetensors_bytes(&[TensorSpec::matrix(EMBED, DType::F32, 16, 8, &embed_values)]);
    let head = safetensors_bytes(&[TensorSpec::matrix("lm_head.weight", DType::F32, 16, 8, &random_init(16, 8, 10))]);
    let index = |map: &[(&str, String)]| {
        let weight_map: serde_json::Map<String, serde_json::Value> =
            map.iter().map(|(t, f)| (t.to_string(), serde_json::Value::String(f.clone()))).collect();
        serde_json::to_vec(&serde_json::json!({"metadata": {}, "weight_map": weight_map})).unwrap_or_default()
    };
    let multi = |name: &str, files: Vec<(String, Vec<u8>)>, expect: Expect, mention: &str| CorpusCase {
        name: name.to_string(),
        files,
        expect,
        mention: mention.to_string(),
        reference: None,
    };
    vec![
        // Only the files given are ever read: a `..` in the index names a file by its last part.
        CorpusCase {
            reference: Some((16, 8, embed_values.clone())),
            ..multi(
                "index-dotdot-path",
                vec![
                    (idx.into(), index(&[(EMBED, "../../secrets/model-00001-of-00001.safetensors".into())])),
                    (shard(1, 1), embed.clone()),
                ],
                Expect::Report,
                "",
            )
        },
        multi(
            "index-missing-shard",
            vec![
                (idx.into(), index(&[(EMBED, shard(2, 2)), ("lm_head.weight", shard(1, 2))])),
                (shard(1, 2), head.clone()),
            ],
            Expect::Error,
            &shard(2, 2),
        ),
        multi(
            "index-invalid-json",
            vec![(idx.into(), b"{\"weight_map\": {".to_vec()), (shard(1, 1), embed.clone())],
            Expect::Error,
            idx,
        ),
        multi(
            "index-not-a-map",
            vec![(idx.into(), b"{\"weight_map\": [1, 2, 3]}".to_vec()), (shard(1, 1), embed.clone())],
            Expect::Error,
            idx,
        ),
        multi(
            "index-shard-lacks-tensor",
            vec![
                (idx.into(), index(&[(EMBED, shard(1, 2)), ("lm_head.weight", shard(2, 2))])),
                (shard(1, 2), head.clone()),
                (shard(2, 2), embed.clone()),
            ],
            Expect::Error,
            EMBED,
        ),
        CorpusCase {
            reference: Some((16, 8, embed_values)),
            ..multi(
                "index-valid",
                vec![
                    (idx.into(), index(&[(EMBED, shard(1, 2)), ("lm_head.weight", shard(2, 2))])),
                    (shard(1, 2), embed),
                    (shard(2, 2), head),
                ],
                Expect::Report,
                "",
            )
        },
    ]
}
