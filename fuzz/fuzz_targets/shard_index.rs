//! The shard index (`model.safetensors.index.json`, `src/read/format/set/`) read together with one
//! valid shard, as a user drops a model's files.
#![no_main]
use libfuzzer_sys::fuzz_target;
use orthoscope::read::format::set::read_model_set;
use orthoscope::read::source::{ByteSource, SliceSource};

#[path = "common.rs"]
mod common;

/// A valid shard: one F32 tensor `model.embed_tokens.weight` of 2 × 4.
fn shard() -> Vec<u8> {
    let json = br#"{"model.embed_tokens.weight":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]}}"#;
    let mut v = (json.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(json);
    v.extend_from_slice(&[0; 32]);
    v
}

fuzz_target!(|data: &[u8]| {
    let sources = [
        SliceSource::new("model.safetensors.index.json", data.to_vec()),
        SliceSource::new("model-00001-of-00002.safetensors", shard()),
    ];
    let lens: Vec<u64> = sources.iter().map(|s| s.len()).collect();
    let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s as &dyn ByteSource).collect();
    if let Ok(set) = read_model_set(&refs) {
        common::check(&set.model_info(), &lens);
    }
});
