//! A `config.json` (`src/read/format/set/`: vocabulary size, width, tying, MLX quantisation and
//! the model's name) read together with one valid safetensors file, as a user drops a folder.
#![no_main]
use libfuzzer_sys::fuzz_target;
use orthoscope::read::format::set::read_model_set;
use orthoscope::read::source::{ByteSource, SliceSource};

#[path = "common.rs"]
mod common;

/// A valid file: one F32 tensor `model.embed_tokens.weight` of 2 × 4.
fn weights() -> Vec<u8> {
    let json = br#"{"model.embed_tokens.weight":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]}}"#;
    let mut v = (json.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(json);
    v.extend_from_slice(&[0; 32]);
    v
}

fuzz_target!(|data: &[u8]| {
    let sources = [SliceSource::new("config.json", data.to_vec()), SliceSource::new("model.safetensors", weights())];
    let lens: Vec<u64> = sources.iter().map(|s| s.len()).collect();
    let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s as &dyn ByteSource).collect();
    if let Ok(set) = read_model_set(&refs) {
        common::check(&set.model_info(), &lens);
        // A name shown on the card is short and printable, whatever the file held.
        if let Some(name) = &set.name {
            assert!(!name.is_empty() && name.chars().count() <= 120 && !name.chars().any(char::is_control));
        }
    }
});
