//! One Range request over HTTP: what it asks for, and what the status and `Content-Range` of its
//! answer mean.

use super::RemoteError;

/// The first request asks for this many bytes: it tells whether the host allows CORS and honours
/// Range, gives the length, and holds the whole header of most single files (safetensors headers
/// of small models, GGUF's magic and counts, .npy's preamble).
pub const PROBE_BYTES: u64 = 64 << 10;

/// Time allowed for one read before it counts as a dropped connection (a 64-row block of a wide
/// f32 embedding is a few MB; a slow line needs tens of seconds for it).
pub const READ_TIMEOUT_MS: u32 = 120_000;

/// What a status answered to a Range request means. `Ok` only for 206 Partial Content.
pub fn classify_status(url: &str, status: u16) -> Result<(), RemoteError> {
    let url = url.to_string();
    match status {
        206 => Ok(()),
        0 => Err(RemoteError::Unreachable { url }),
        200 => Err(RemoteError::RangeIgnored { url }),
        401 | 403 => Err(RemoteError::Gated { url, status }),
        404 | 410 => Err(RemoteError::NotFound { url, status }),
        416 => Err(RemoteError::EmptyFile { url }),
        429 => Err(RemoteError::RateLimited { url }),
        _ => Err(RemoteError::Status { url, status }),
    }
}

/// The `Range` header value for `start .. end` (end exclusive, `end > start`).
pub fn range_header(start: u64, end: u64) -> String {
    format!("bytes={start}-{}", end.saturating_sub(1))
}

/// A parsed `Content-Range: bytes first-last/total` (last inclusive; total `*` when unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContentRange {
    pub first: u64,
    pub last: u64,
    pub total: Option<u64>,
}

pub fn parse_content_range(value: &str) -> Option<ContentRange> {
    let rest = value.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let (first, last) = range.trim().split_once('-')?;
    let (first, last) = (first.trim().parse::<u64>().ok()?, last.trim().parse::<u64>().ok()?);
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse::<u64>().ok()?),
    };
    if last < first || total.is_some_and(|t| last >= t) {
        return None;
    }
    Some(ContentRange { first, last, total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_their_own_errors() {
        let u = "https://h/x";
        assert_eq!(classify_status(u, 206), Ok(()));
        assert!(matches!(classify_status(u, 0), Err(RemoteError::Unreachable { .. })));
        assert!(matches!(classify_status(u, 200), Err(RemoteError::RangeIgnored { .. })));
        assert!(matches!(classify_status(u, 401), Err(RemoteError::Gated { status: 401, .. })));
        assert!(matches!(classify_status(u, 403), Err(RemoteError::Gated { status: 403, .. })));
        assert!(matches!(classify_status(u, 404), Err(RemoteError::NotFound { .. })));
        assert!(matches!(classify_status(u, 416), Err(RemoteError::EmptyFile { .. })));
        assert!(matches!(classify_status(u, 429), Err(RemoteError::RateLimited { .. })));
        assert!(matches!(classify_status(u, 500), Err(RemoteError::Status { status: 500, .. })));
    }

    #[test]
    fn range_headers_are_inclusive() {
        assert_eq!(range_header(0, PROBE_BYTES), "bytes=0-65535");
        assert_eq!(range_header(100, 101), "bytes=100-100");
    }

    #[test]
    fn content_ranges_parse_and_bad_ones_do_not() {
        assert_eq!(
            parse_content_range("bytes 0-65535/123456"),
            Some(ContentRange { first: 0, last: 65535, total: Some(123456) })
        );
        assert_eq!(parse_content_range("bytes 5-9/*"), Some(ContentRange { first: 5, last: 9, total: None }));
        assert_eq!(
            parse_content_range("bytes 0-9/10737418240"),
            Some(ContentRange { first: 0, last: 9, total: Some(10 << 30) })
        );
        for bad in ["bytes 9-5/100", "bytes 0-100/100", "items 0-1/2", "bytes 0-1", "bytes a-1/2", "bytes */100", ""] {
            assert_eq!(parse_content_range(bad), None, "{bad}");
        }
    }
}
