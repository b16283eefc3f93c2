//! Property tests of the header parsers (safetensors, GGUF, .npy, shard indexes, PyTorch zips): arbitrary bytes and mutated valid
//! headers never panic, and whatever a parser accepts is consistent with the bytes it was given —
//! every tensor's byte range lies inside its file and names a file that was given. The same
//! parsers are fuzzed for longer by `fuzz/` (`scripts/fuzz.sh`).

use orthoscope::fixtures::synth::{random_init, safetensors_bytes, TensorSpec};
use orthoscope::fixtures::writers::{gguf_bytes, npy_bytes, torch_zip_bytes, GgufTensor, TorchWrap};
use orthoscope::read::format::set::read_model_set;
use orthoscope::read::format::{read_model, DType, FormatError, ModelInfo};
use orthoscope::read::source::{ByteSource, SliceSource};
use proptest::prelude::*;

const EMBED: &str = "model.embed_tokens.weight";

/// A mutation of a valid file: byte flips, an insertion, a cut.
#[derive(Clone, Debug)]
struct Mutation {
    flips: Vec<(prop::sample::Index, u8)>,
    insert: Option<(prop::sample::Index, Vec<u8>)>,
    cut: Option<prop::sample::Index>,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    (
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        proptest::option::of((any::<prop::sample::Index>(), proptest::collection::vec(any::<u8>(), 1..16))),
        proptest::option::weighted(0.3, any::<prop::sample::Index>()),
    )
        .prop_map(|(flips, insert, cut)| Mutation { flips, insert, cut })
}

/// Applies `m` to the first `header` bytes of `bytes` (the rest, tensor data, is left alone so the
/// mutations hit what the parser reads).
fn mutate(mut bytes: Vec<u8>, header: usize, m: &Mutation) -> Vec<u8> {
    let span = header.clamp(1, bytes.len().max(1));
    for (at, b) in &m.flips {
        let i = at.index(span);
        if let Some(x) = bytes.get_mut(i) {
            *x = *b;
        }
    }
    if let Some((at, extra)) = &m.insert {
        let i = at.index(span).min(bytes.len());
        bytes.splice(i..i, extra.iter().copied());
    }
    if let Some(at) = &m.cut {
        let i = at.index(bytes.len().max(1));
        bytes.truncate(i);
    }
    bytes
}

/// What an accepted header must satisfy: ranges inside the file they name, start ≤ end.
fn consistent(info: &ModelInfo, lens: &[u64]) -> Result<(), String> {
    for t in &info.tensors {
        let len = lens.get(t.file).ok_or_else(|| format!("{} names file {} of {}", t.name, t.file, lens.len()))?;
        if t.byte_range.0 > t.byte_range.1 || t.byte_range.1 > *len {
            return Err(format!("{} at {:?} in a {len}-byte file", t.name, t.byte_range));
        }
    }
    Ok(())
}

fn check_one(name: &str, bytes: Vec<u8>) -> Result<(), TestCaseError> {
    let len = bytes.len() as u64;
    let outcome: Result<ModelInfo, FormatError> = read_model(&SliceSource::new(name, bytes), 0);
    if let Ok(info) = outcome {
        consistent(&info, &[len]).map_err(TestCaseError::fail)?;
    }
    Ok(())
}

fn valid_safetensors() -> (Vec<u8>, usize) {
    let v = random_init(6, 8, 1);
    let bytes = safetensors_bytes(&[
        TensorSpec::matrix(EMBED, DType::F32, 6, 8, &v),
        TensorSpec::matrix("lm_head.weight", DType::BF16, 6, 8, &v),
    ]);
    let header = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap_or([0; 8])) as usize;
    (bytes, header)
}

fn valid_gguf() -> (Vec<u8>, usize) {
    let v = random_init(4, 32, 2);
    let data: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let bytes = gguf_bytes(3, &[GgufTensor::new("token_embd.weight", DType::F32, &[4, 32], data)], &[]);
    let header = bytes.len() - 4 * 32 * 4;
    (bytes, header)
}

fn valid_npy() -> (Vec<u8>, usize) {
    let bytes = npy_bytes(1, "<f4", false, &[4, 8], &[0; 128]);
    let header = bytes.len() - 128;
    (bytes, header)
}

fn valid_index(shard: &str) -> String {
    format!("{{\"metadata\": {{\"total_size\": 384}}, \"weight_map\": {{\"{EMBED}\": \"{shard}\", \"lm_head.weight\": \"{shard}\"}}}}")
}

/// A small PyTorch checkpoint; every byte of it is "header" (the pickle and the central directory
/// sit on both sides of the storages).
fn valid_torch() -> (Vec<u8>, usize) {
    let data: Vec<u8> = random_init(8, 4, 3).iter().flat_map(|x| x.to_le_bytes()).collect();
    let bytes = torch_zip_bytes(&[("embed_tokens.weight", DType::F32, &[8, 4], &data)], TorchWrap::Lightning);
    let len = bytes.len();
    (bytes, len)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn torch_checkpoints_never_panic_and_stay_in_the_file(m in mutation(), raw in proptest::collection::vec(any::<u8>(), 0..64)) {
        let (bytes, header) = valid_torch();
        check_one("m.pt", mutate(bytes.clone(), header, &m))?;
        // Random bytes after the zip's start: its local header, then whatever follows.
        let mut prefixed = bytes[..64].to_vec();
        prefixed.extend(raw);
        check_one("r.pt", prefixed)?;
    }

    #[test]
    fn safetensors_headers_never_panic_and_stay_in_the_file(m in mutation(), raw in proptest::collection::vec(any::<u8>(), 0..64)) {
        let (bytes, header) = valid_safetensors();
        check_one("m.safetensors", mutate(bytes, header, &m))?;
        check_one("r.safetensors", raw)?;
    }

    #[test]
    fn gguf_headers_never_panic_and_stay_in_the_file(m in mutation(), raw in proptest::collection::vec(any::<u8>(), 0..64)) {
        let (bytes, header) = valid_gguf();
        check_one("m.gguf", mutate(bytes, header, &m))?;
        let mut prefixed = b"GGUF\x03\x00\x00\x00".to_vec();
        prefixed.extend(raw);
        check_one("r.gguf", prefixed)?;
    }

    #[test]
    fn npy_headers_never_panic_and_stay_in_the_file(m in mutation(), raw in proptest::collection::vec(any::<u8>(), 0..64)) {
        let (bytes, header) = valid_npy();
        check_one("m.npy", mutate(bytes, header, &m))?;
        let mut prefixed = b"\x93NUMPY\x01\x00".to_vec();
        prefixed.extend(raw);
        check_one("r.npy", prefixed)?;
    }

    #[test]
    fn shard_indexes_never_panic_and_name_only_given_files(
        m in mutation(),
        text in "\\{\"weight_map\": \\{(\"[a-z._/]{0,12}\": \"[a-z0-9._/-]{0,40}\",? ?){0,4}\\}\\}",
    ) {
        let shard = "model-00001-of-00001.safetensors";
        let (st, _) = valid_safetensors();
        let index = valid_index(shard).into_bytes();
        let header = index.len();
        for candidate in [mutate(index, header, &m), text.into_bytes()] {
            let sources = [
                SliceSource::new("model.safetensors.index.json", candidate),
                SliceSource::new(shard, st.clone()),
            ];
            let lens: Vec<u64> = sources.iter().map(|s| s.len()).collect();
            let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s as &dyn ByteSource).collect();
            if let Ok(set) = read_model_set(&refs) {
                consistent(&set.model_info(), &lens).map_err(TestCaseError::fail)?;
            }
        }
    }
}
