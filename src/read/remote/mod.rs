//! Models opened by URL (`?url=`, `?hf=`): everything about HTTP that can be decided without a
//! browser, so it is tested natively. The worker's `HttpSource` (src/worker/http_source.rs) does the
//! requests; this module says what a status means, where a Hugging Face file or a shard lives, and
//! which bytes a read must fetch.
//!
//! Every read is a single `Range: bytes=a-b` request: a CORS-safelisted header, so no preflight is
//! needed and any host that sends `Access-Control-Allow-Origin` works.
//!
//! By concern, each re-exported here so callers name `read::remote::…` alone:
//! - `request`: one Range request, what it asks for and what its answer's status and
//!   `Content-Range` mean;
//! - `url`: which addresses can be read, the file a URL names, percent-coding;
//! - `shards`: a shard index's shards and their addresses;
//! - `hf`: Hugging Face repo ids, their files' addresses, the fallback from the index to the single
//!   file;
//! - `entry`: what was typed into the address field;
//! - `window`: which bytes a read fetches (the read window, the read-ahead, the re-read memo).

mod entry;
mod hf;
mod request;
mod shards;
mod url;
mod window;

use thiserror::Error;

pub use entry::{classify_entry, Entry};
pub use hf::{hf_endpoint, HfNext, HfRepo, DEFAULT_HF_ENDPOINT, HF_INDEX_FILE, HF_SINGLE_FILE};
pub use request::{classify_status, parse_content_range, range_header, ContentRange, PROBE_BYTES, READ_TIMEOUT_MS};
pub use shards::{index_shards, shard_url};
pub use url::{check_url, file_name, normalise_url, percent_decode, percent_encode};
pub use window::{plan_read, Memo, MemoState, ReadPlan, MEMO_BUDGET, READ_AHEAD_BELOW, WINDOW_BYTES};

/// Why a model could not be opened or read over the network. Each message says what to do.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum RemoteError {
    /// Not an `http(s)://` address (or one `fetch` refuses, such as one with a user name in it).
    #[error("'{url}' is not a web address Orthoscope can open: {reason}")]
    BadUrl { url: String, reason: String },
    /// `?hf=` was not `org/name` or `org/name@revision`.
    #[error("'{id}' is not a Hugging Face repo id ({reason}); write it as org/name or org/name@revision")]
    BadHfId { id: String, reason: String },
    /// HTTP 404 or 410.
    #[error(
        "{url} was not found (HTTP {status}). Check the address: a Hugging Face file is at …/resolve/<revision>/<file>, \
         not …/blob/…"
    )]
    NotFound { url: String, status: u16 },
    /// `?hf=`: neither the shard index nor the single file exists.
    #[error(
        "{repo} has no {HF_INDEX_FILE} and no {HF_SINGLE_FILE} (HTTP 404 for both). For a GGUF or another file name, \
         open that file's …/resolve/<revision>/<file> address with ?url=, or download it and drop it here"
    )]
    HfNoModel { repo: String },
    /// HTTP 401 or 403: a gated or private model, or an expired signed link.
    #[error(
        "{url} needs permission (HTTP {status}): the model is gated or private. Accept its licence on the model page, \
         download the file and drop it here (Orthoscope sends no login or token)"
    )]
    Gated { url: String, status: u16 },
    /// HTTP 200 to a Range request: the whole file would come down.
    #[error(
        "{url}: the server ignores Range requests (it answered with the whole file instead of the part asked for), \
         so the file cannot be read a piece at a time. Download the file and drop it here"
    )]
    RangeIgnored { url: String },
    /// HTTP 416 to `bytes=0-…`: there is no first byte.
    #[error("{url} is empty (HTTP 416 for its first bytes)")]
    EmptyFile { url: String },
    /// HTTP 429.
    #[error("{url}: the server is rate-limiting requests (HTTP 429). Wait a few minutes and try again, or download the file and drop it here")]
    RateLimited { url: String },
    /// Any other status.
    #[error("{url}: the server answered HTTP {status} instead of the part of the file asked for. Try again later, or download the file and drop it here")]
    Status { url: String, status: u16 },
    /// The request failed without a status: `fetch` cannot tell a CORS refusal from an unreachable
    /// host, so the message names both.
    #[error(
        "could not read {url}: either its server does not let other sites read it (no CORS header), or the host \
         cannot be reached. Check the address and your connection. If the address opens in a new tab, download the \
         file and drop it here, or use a host that allows CORS (huggingface.co does)"
    )]
    Unreachable { url: String },
    /// Neither `Content-Range` (exposed by CORS) nor a HEAD's `Content-Length` gives the length.
    #[error(
        "{url}: the server does not tell the page how long the file is (it hides Content-Range from other sites \
         and HEAD gives no Content-Length). Download the file and drop it here"
    )]
    UnknownLength { url: String },
    /// A 206 whose `Content-Range` or body does not match the range asked for.
    #[error("{url}: the server answered a request for bytes {start}–{end} wrongly ({reason}). Download the file and drop it here")]
    BadResponse { url: String, start: u64, end: u64, reason: String },
    /// A read failed mid-way, and again when retried.
    #[error(
        "the connection dropped while reading {len} bytes at offset {offset} of {file} ({detail}), and again when \
         retried. Check your connection and open the address again, or download the file and drop it here"
    )]
    Dropped { file: String, offset: u64, len: u64, detail: String },
    /// The shard index is not JSON with a `weight_map`, or names only files Orthoscope cannot read.
    #[error("{url}: not a usable shard index: {reason}")]
    BadIndex { url: String, reason: String },
    /// The index is larger than any real one (`source::MAX_JSON_BYTES`).
    #[error("{url}: {len} bytes is far more than any shard index needs (at most {max}); is it really an index?")]
    IndexTooLarge { url: String, len: u64, max: u64 },
    /// A shard name that does not resolve to a file in the index's folder.
    #[error("{index} names the shard '{shard}', which is not a plain file name next to the index")]
    BadShardName { index: String, shard: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do() {
        let msg = |s| classify_status("https://h/m.safetensors", s).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg(0).contains("CORS") && msg(0).contains("cannot be reached") && msg(0).contains("drop it here"));
        assert!(msg(200).contains("ignores Range") && msg(200).contains("drop it here"));
        assert!(msg(403).contains("gated") && msg(403).contains("licence"));
        assert!(msg(404).contains("not found") && msg(404).contains("resolve"));
        let dropped = RemoteError::Dropped { file: "m.safetensors".into(), offset: 4096, len: 512, detail: "x".into() };
        let text = dropped.to_string();
        assert!(text.contains("m.safetensors") && text.contains("4096") && text.contains("512"), "{text}");
        assert!(text.contains("drop it here"));
    }
}
