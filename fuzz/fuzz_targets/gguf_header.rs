//! The GGUF header reader (`src/read/format/gguf.rs`): the input follows a valid magic so the fuzzer
//! spends its time in the counts, strings, arrays and tensor infos.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let mut bytes = b"GGUF".to_vec();
    bytes.extend_from_slice(data);
    common::read_one("model.gguf", bytes);
});
