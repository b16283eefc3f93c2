//! The safetensors header reader: an 8-byte length, then JSON (`src/read/format/safetensors.rs`).
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    common::read_one("model.safetensors", data.to_vec());
});
