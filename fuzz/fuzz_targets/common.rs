//! What every target checks besides "no panic": an accepted header keeps its tensors inside the
//! file(s) it was given (a deflated member's tensor inside the member as inflated, and the member
//! inside the file).

use orthoscope::read::format::{read_model, Layout, ModelInfo};
use orthoscope::read::source::SliceSource;

pub fn check(info: &ModelInfo, lens: &[u64]) {
    for t in &info.tensors {
        let len = lens.get(t.file).copied();
        assert!(len.is_some(), "{} names file {} of {}", t.name, t.file, lens.len());
        let len = len.unwrap_or(0);
        let len = match t.layout {
            Layout::Deflate { start, end, inflated_len } => {
                assert!(start <= end && end <= len, "{}'s member at {start}..{end} in {len} bytes", t.name);
                inflated_len
            }
            _ => len,
        };
        assert!(
            t.byte_range.0 <= t.byte_range.1 && t.byte_range.1 <= len,
            "{} at {:?} in {len} bytes",
            t.name,
            t.byte_range
        );
    }
}

/// One file under `name`, read as the app reads it (unused by the shard-index target).
#[allow(dead_code)]
pub fn read_one(name: &str, bytes: Vec<u8>) {
    let len = bytes.len() as u64;
    if let Ok(info) = read_model(&SliceSource::new(name, bytes), 0) {
        check(&info, &[len]);
    }
}
