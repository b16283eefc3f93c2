//! The .npy header reader (`src/read/format/npy.rs`): the input follows the magic.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let mut bytes = b"\x93NUMPY".to_vec();
    bytes.extend_from_slice(data);
    common::read_one("embedding.npy", bytes);
});
