//! The ONNX reader (`src/read/format/onnx/`): the input is a whole `.onnx` file. Tensors in
//! external data carry byte ranges in a file not given, so only the others are checked.
#![no_main]
use libfuzzer_sys::fuzz_target;

use orthoscope::read::format::read_model;
use orthoscope::read::source::SliceSource;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let len = data.len() as u64;
    if let Ok(mut info) = read_model(&SliceSource::new("model.onnx", data.to_vec()), 0) {
        let external: Vec<String> = info.external.iter().map(|e| e.tensor.clone()).collect();
        info.tensors.retain(|t| !external.contains(&t.name));
        common::check(&info, &[len]);
    }
});
