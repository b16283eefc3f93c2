//! The PyTorch checkpoint reader (`src/read/format/{zip,pickle,torch}.rs`): the input is the
//! pickle of a valid torch zip, then the same bytes as a whole file after a zip's local header.
#![no_main]
use libfuzzer_sys::fuzz_target;
use orthoscope::fixtures::writers::{zip_bytes, ZipMember};

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let _ = orthoscope::read::format::pickle::parse("data.pkl", data);
    let members = [
        ZipMember { name: "archive/data.pkl".into(), data: data.to_vec(), deflate: false },
        ZipMember { name: "archive/data/0".into(), data: vec![0; 64], deflate: false },
    ];
    common::read_one("model.pt", zip_bytes(&members, false, 64));
    let mut raw = b"PK\x03\x04".to_vec();
    raw.extend_from_slice(data);
    common::read_one("model.pt", raw);
});
