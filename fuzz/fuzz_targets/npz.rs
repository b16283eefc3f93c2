//! The `.npz` reader (`src/read/format/npz.rs`) and the inflated view of a deflated member
//! (`src/read/inflate.rs`): the input is a stored member's `.npy` bytes, then the bytes XORed into a
//! valid compressed `.npz` after its first local header (the member's deflate stream and the end
//! records), whose accepted tensors are read through their inflated view as the pass reads them.
#![no_main]
use std::rc::Rc;

use libfuzzer_sys::fuzz_target;
use orthoscope::fixtures::writers::{npy_bytes, npz_bytes};
use orthoscope::read::format::read_model;
use orthoscope::read::layout::tensor_source;
use orthoscope::read::source::{ByteSource, SliceSource};

#[path = "common.rs"]
mod common;

/// Bytes of each tensor read, at most: a forged header may claim far more than the member holds.
const READ_CAP: u64 = 1 << 16;

fuzz_target!(|data: &[u8]| {
    common::read_one("params.npz", npz_bytes(&[("embed.npy", data.to_vec())], false));

    let values: Vec<u8> = (0..64u32 * 8).flat_map(|i| ((i % 97) as f32 / 97.0).to_le_bytes()).collect();
    let mut file = npz_bytes(&[("embed.npy", npy_bytes(1, "<f4", false, &[64, 8], &values))], true);
    // After the local header (30 bytes and the member's name).
    for (b, d) in file.iter_mut().skip(30 + "embed.npy".len()).zip(data) {
        *b ^= d;
    }
    let len = file.len() as u64;
    let source: Rc<dyn ByteSource> = Rc::new(SliceSource::new("params.npz", file));
    let Ok(info) = read_model(source.as_ref(), 0) else { return };
    common::check(&info, &[len]);
    for tensor in &info.tensors {
        let Ok(view) = tensor_source(std::slice::from_ref(&source), tensor) else { continue };
        let (start, end) = tensor.byte_range;
        let end = end.min(start.saturating_add(READ_CAP));
        let mut at = start;
        let mut buf = [0u8; 4096];
        while at < end {
            let n = (end - at).min(buf.len() as u64) as usize;
            if view.read_at(at, &mut buf[..n]).is_err() {
                break;
            }
            at += n as u64;
        }
    }
});
