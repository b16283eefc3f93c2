//! Models opened by URL (`?url=`, `?hf=`): everything about HTTP that can be decided without a
//! browser, so it is tested natively. The worker's `HttpSource` (src/worker/http_source.rs) does the
//! requests; this module says what a status means, where a Hugging Face file or a shard lives, and
//! which bytes a read must fetch.
//!
//! Every read is a single `Range: bytes=a-b` request: a CORS-safelisted header, so no preflight is
//! needed and any host that sends `Access-Control-Allow-Origin` works.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;
use thiserror::Error;

/// The first request asks for this many bytes: it tells whether the host allows CORS and honours
/// Range, gives the length, and holds the whole header of most single files (safetensors headers
/// of small models, GGUF's magic and counts, .npy's preamble).
pub const PROBE_BYTES: u64 = 64 << 10;

/// Reads shorter than this are header fields (the format readers ask for 4 to 16 bytes at a time;
/// GGUF brings its own 1 MiB window): they fetch a [`WINDOW_BYTES`] read-ahead so a header costs a
/// few requests, not one per field. A block of 64 embedding rows is never this short, so rows are
/// never read ahead (that would pull bytes nobody asked for).
pub const READ_AHEAD_BELOW: u64 = 64;

/// Size of the read-ahead window.
pub const WINDOW_BYTES: u64 = 64 << 10;

/// Bytes of block reads kept until they are read again (the histogram's sample blocks are the
/// first blocks of the pass, so each is asked for twice; see [`Memo`]).
pub const MEMO_BUDGET: u64 = 48 << 20;

/// Time allowed for one read before it counts as a dropped connection (a 64-row block of a wide
/// f32 embedding is a few MB; a slow line needs tens of seconds for it).
pub const READ_TIMEOUT_MS: u32 = 120_000;

/// Where `?hf=` looks when no `?hf_endpoint=` is given (like huggingface_hub's `HF_ENDPOINT`).
pub const DEFAULT_HF_ENDPOINT: &str = "https://huggingface.co";
/// What `?hf=` opens: the shard index first, the single file when there is no index.
pub const HF_INDEX_FILE: &str = "model.safetensors.index.json";
pub const HF_SINGLE_FILE: &str = "model.safetensors";

/// Longest repo id part Hugging Face accepts.
const MAX_HF_PART: usize = 96;
/// Longest revision accepted (branch names, tags and 40-hex commits are far shorter).
const MAX_REVISION: usize = 256;

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
    /// The index is larger than any real one (`format::set::MAX_JSON_BYTES`).
    #[error("{url}: {len} bytes is far more than any shard index needs (at most {max}); is it really an index?")]
    IndexTooLarge { url: String, len: u64, max: u64 },
    /// A shard name that does not resolve to a file in the index's folder.
    #[error("{index} names the shard '{shard}', which is not a plain file name next to the index")]
    BadShardName { index: String, shard: String },
}

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

/// Checks that `url` is an absolute `http(s)://` address `fetch` will accept.
pub fn check_url(url: &str) -> Result<(), RemoteError> {
    let bad = |reason: &str| Err(RemoteError::BadUrl { url: url.to_string(), reason: reason.to_string() });
    let Some((scheme, rest)) = url.split_once("://") else {
        return bad("it does not start with https://");
    };
    if !scheme.eq_ignore_ascii_case("https") && !scheme.eq_ignore_ascii_case("http") {
        return bad("only http:// and https:// addresses can be read");
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("it contains spaces or control characters");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() {
        return bad("it names no host");
    }
    if authority.contains('@') {
        return bad("it carries a user name or password, which the browser refuses to send");
    }
    Ok(())
}

/// `scheme://host` and the path (with query and fragment) of a checked URL.
fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let path_at = url.get(after_scheme..).and_then(|r| r.find(['/', '?', '#'])).map_or(url.len(), |i| after_scheme + i);
    (url.get(..path_at).unwrap_or(url), url.get(path_at..).unwrap_or(""))
}

/// The path of a URL without its query and fragment.
fn path_of(url: &str) -> &str {
    let (_, path) = split_origin(url);
    path.split(['?', '#']).next().unwrap_or("")
}

/// The file name a URL points at (its last path segment, percent-decoded), used as the source's
/// name so that an index's shard names match, and for messages.
pub fn file_name(url: &str) -> String {
    let last = path_of(url).rsplit('/').next().unwrap_or("");
    let name = percent_decode(last);
    if name.is_empty() {
        split_origin(url).0.to_string()
    } else {
        name
    }
}

/// The URL of `shard` in the folder of `index_url`. The shard must be a plain file name (the index
/// gives base names: `format::set` keeps only the part after the last `/`); it is percent-encoded
/// into one path segment, so it cannot leave the index's folder or origin. The index's query
/// (a signed link's signature) belongs to the index alone and is dropped.
pub fn shard_url(index_url: &str, shard: &str) -> Result<String, RemoteError> {
    let bad = || RemoteError::BadShardName { index: index_url.to_string(), shard: shard.to_string() };
    if shard.is_empty()
        || shard == "."
        || shard == ".."
        || shard.contains(['/', '\\'])
        || shard.chars().any(|c| c.is_control())
    {
        return Err(bad());
    }
    let (origin, _) = split_origin(index_url);
    let path = path_of(index_url);
    let folder = path.rfind('/').and_then(|i| path.get(..=i)).unwrap_or("/");
    Ok(format!("{origin}{folder}{}", percent_encode(shard)))
}

/// Shards named by an index's `weight_map`: `(file name, URL)`, each once, in name order.
pub fn index_shards(index_url: &str, json: &[u8]) -> Result<Vec<(String, String)>, RemoteError> {
    let bad = |reason: String| RemoteError::BadIndex { url: index_url.to_string(), reason };
    let value: Value = serde_json::from_slice(json).map_err(|e| bad(format!("invalid JSON: {e}")))?;
    let map = value
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("no \"weight_map\" object mapping tensor names to shard file names".to_string()))?;
    let mut names = BTreeSet::new();
    for (tensor, shard) in map {
        let shard = shard
            .as_str()
            .ok_or_else(|| bad(format!("\"weight_map\" entry for tensor '{tensor}' is not a file name string")))?;
        // As format::set reads it: the base name, next to the index.
        names.insert(shard.rsplit(['/', '\\']).next().unwrap_or(shard).to_string());
    }
    if names.is_empty() {
        return Err(bad("its \"weight_map\" names no shards".to_string()));
    }
    let pickled = |n: &String| {
        let n = n.to_ascii_lowercase();
        n.ends_with(".bin") || n.ends_with(".pt") || n.ends_with(".pth")
    };
    if names.iter().all(pickled) {
        return Err(bad(
            "it lists pickled PyTorch shards (.bin), which Orthoscope does not read; open the model's .safetensors \
             or .gguf files instead"
                .to_string(),
        ));
    }
    names.into_iter().map(|n| shard_url(index_url, &n).map(|u| (n, u))).collect()
}

/// A Hugging Face repo and revision, from `org/name` or `org/name@revision`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HfRepo {
    pub org: String,
    pub name: String,
    pub revision: String,
}

impl HfRepo {
    pub fn parse(id: &str) -> Result<HfRepo, RemoteError> {
        let bad = |reason: &str| RemoteError::BadHfId { id: id.to_string(), reason: reason.to_string() };
        let id_trimmed = id.trim();
        let (repo, revision) = match id_trimmed.split_once('@') {
            Some((repo, rev)) => (repo, rev),
            None => (id_trimmed, "main"),
        };
        if revision.is_empty() {
            return Err(bad("nothing after '@'"));
        }
        if revision.len() > MAX_REVISION || revision.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("the revision must be a branch, tag or commit without spaces"));
        }
        let (org, name) = repo.split_once('/').ok_or_else(|| bad("no '/' between organisation and model name"))?;
        for part in [org, name] {
            check_hf_part(part).map_err(|reason| bad(&reason))?;
        }
        Ok(HfRepo { org: org.to_string(), name: name.to_string(), revision: revision.to_string() })
    }

    /// `org/name@revision`, for messages and labels.
    pub fn id(&self) -> String {
        format!("{}/{}@{}", self.org, self.name, self.revision)
    }

    /// `{endpoint}/{org}/{name}/resolve/{revision}/{file}`, the revision as one encoded segment
    /// (as huggingface_hub does: `refs/pr/1` → `refs%2Fpr%2F1`).
    pub fn file_url(&self, endpoint: &str, file: &str) -> String {
        format!(
            "{}/{}/{}/resolve/{}/{}",
            endpoint.trim_end_matches('/'),
            self.org,
            self.name,
            percent_encode(&self.revision),
            percent_encode(file)
        )
    }
}

/// Hugging Face's repo name rules: letters, digits, `-`, `_`, `.`; no `--` or `..`; `-` and `.`
/// neither first nor last; at most 96 characters.
fn check_hf_part(part: &str) -> Result<(), String> {
    if part.is_empty() {
        return Err("an empty organisation or model name".into());
    }
    if part.len() > MAX_HF_PART {
        return Err(format!("a name longer than {MAX_HF_PART} characters"));
    }
    if let Some(c) = part.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))) {
        return Err(format!("'{c}' is not allowed in a name"));
    }
    if part.contains("--") || part.contains("..") {
        return Err("'--' and '..' are not allowed in a name".into());
    }
    if part.starts_with(['-', '.']) || part.ends_with(['-', '.']) {
        return Err("a name cannot start or end with '-' or '.'".into());
    }
    Ok(())
}

/// Checks a `?hf_endpoint=` and drops its trailing `/`.
pub fn hf_endpoint(endpoint: Option<&str>) -> Result<String, RemoteError> {
    let endpoint = endpoint.map(str::trim).filter(|e| !e.is_empty()).unwrap_or(DEFAULT_HF_ENDPOINT);
    check_url(endpoint)?;
    if endpoint.contains(['?', '#']) {
        return Err(RemoteError::BadUrl {
            url: endpoint.to_string(),
            reason: "an endpoint is a plain address, without ? or #".into(),
        });
    }
    Ok(endpoint.trim_end_matches('/').to_string())
}

/// What a user typed into the address field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    Url(String),
    Hf(String),
}

/// An entry with `://` is a URL; one that reads as `org/name[@rev]` with no dot in the organisation
/// (Hugging Face organisation names have none, host names do) is a repo id; anything else is taken
/// as an address typed without `https://`.
pub fn classify_entry(entry: &str) -> Entry {
    let entry = entry.trim();
    if entry.contains("://") {
        return Entry::Url(normalise_url(entry));
    }
    match HfRepo::parse(entry) {
        Ok(repo) if !repo.org.contains('.') => Entry::Hf(entry.to_string()),
        _ => Entry::Url(normalise_url(&format!("https://{entry}"))),
    }
}

/// A Hugging Face page address pasted for a file (`…/blob/main/x`) becomes the file itself
/// (`…/resolve/main/x`): the page is HTML. Other addresses are left as they are.
pub fn normalise_url(url: &str) -> String {
    let (origin, rest) = split_origin(url);
    let host = origin.rsplit("://").next().unwrap_or("").to_ascii_lowercase();
    if host == "huggingface.co" || host == "www.huggingface.co" || host == "hf.co" {
        if let Some((before, after)) = rest.split_once("/blob/") {
            // Only /org/name/blob/…: exactly two path segments before it.
            if before.matches('/').count() == 2 {
                return format!("{origin}{before}/resolve/{after}");
            }
        }
    }
    url.to_string()
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes (malformed ones are kept as they are).
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (b, hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// How one `read_at(offset, len)` is served, given the cached window `window_start ..
/// window_start + window_len` of a file of `file_len` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadPlan {
    /// The first `count` bytes of the read come from the window, starting `window_offset` into it.
    pub cached: Option<(u64, u64)>,
    /// Bytes `start .. end` to fetch; their first bytes complete the read.
    pub fetch: Option<(u64, u64)>,
    /// Whether the fetched bytes replace the window (a read-ahead).
    pub new_window: bool,
}

/// Plans a read (`offset + len <= file_len`, checked by the caller):
/// - all of it inside the window → from the window;
/// - a short read ([`READ_AHEAD_BELOW`]) otherwise → fetch a [`WINDOW_BYTES`] read-ahead from
///   `offset`, which becomes the window;
/// - a long read → the part that starts inside the window from it, the rest fetched exactly.
pub fn plan_read(offset: u64, len: u64, window_start: u64, window_len: u64, file_len: u64) -> ReadPlan {
    let window_end = window_start.saturating_add(window_len);
    let end = offset.saturating_add(len);
    if len == 0 {
        return ReadPlan { cached: None, fetch: None, new_window: false };
    }
    let starts_inside = offset >= window_start && offset < window_end;
    if starts_inside && end <= window_end {
        return ReadPlan { cached: Some((offset - window_start, len)), fetch: None, new_window: false };
    }
    if len < READ_AHEAD_BELOW {
        let ahead_end = offset.saturating_add(WINDOW_BYTES).min(file_len).max(end);
        return ReadPlan { cached: None, fetch: Some((offset, ahead_end)), new_window: true };
    }
    if starts_inside {
        let count = window_end - offset;
        return ReadPlan {
            cached: Some((offset - window_start, count)),
            fetch: Some((window_end, end)),
            new_window: false,
        };
    }
    ReadPlan { cached: None, fetch: Some((offset, end)), new_window: false }
}

/// Where a [`Memo`] stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoState {
    /// Keeping reads, none asked for again yet.
    Filling,
    /// Reads are being asked for again and handed out.
    Draining,
    /// A read was missed after the re-reads began: the pattern is over; nothing is kept.
    Off,
}

/// Keeps block reads until they are read again, once.
///
/// The analysis reads the histogram's sample blocks first and then starts its pass with those
/// same blocks (`plan`: the sample is the first blocks of the pass order). Over HTTP that would
/// pull the sample twice; this memo serves the second read instead. It keeps reads (up to
/// [`MEMO_BUDGET`] bytes) until one is asked for again, hands each out once, and switches itself
/// off at the first read it cannot serve after that, so the rest of the pass holds nothing.
pub struct Memo<V> {
    entries: HashMap<(u64, u64), V>,
    bytes: u64,
    budget: u64,
    state: MemoState,
}

impl<V> Memo<V> {
    pub fn new(budget: u64) -> Self {
        Self { entries: HashMap::new(), bytes: 0, budget, state: MemoState::Filling }
    }

    pub fn state(&self) -> MemoState {
        self.state
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The kept read of `offset .. offset + len`, removed from the memo.
    pub fn take(&mut self, offset: u64, len: u64) -> Option<V> {
        if self.state == MemoState::Off {
            return None;
        }
        match self.entries.remove(&(offset, len)) {
            Some(v) => {
                self.bytes -= len;
                self.state = MemoState::Draining;
                Some(v)
            }
            None => {
                if self.state == MemoState::Draining {
                    self.state = MemoState::Off;
                    self.entries.clear();
                    self.bytes = 0;
                }
                None
            }
        }
    }

    /// Keeps a read while filling and within the budget.
    pub fn keep(&mut self, offset: u64, len: u64, value: V) {
        if self.state != MemoState::Filling || self.bytes.saturating_add(len) > self.budget {
            return;
        }
        if self.entries.insert((offset, len), value).is_none() {
            self.bytes += len;
        }
    }
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

    #[test]
    fn only_http_urls_are_accepted() {
        assert!(check_url("https://huggingface.co/a/b/resolve/main/model.safetensors").is_ok());
        assert!(check_url("http://127.0.0.1:8000/x.gguf").is_ok());
        for bad in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "huggingface.co/x",
            "https://",
            "https://u:p@h/x",
            "https://h/a b",
        ] {
            assert!(matches!(check_url(bad), Err(RemoteError::BadUrl { .. })), "{bad}");
        }
    }

    #[test]
    fn file_names_are_the_decoded_last_segment() {
        assert_eq!(file_name("https://h/a/b/model.safetensors?download=true#x"), "model.safetensors");
        assert_eq!(file_name("https://h/a/my%20model.gguf"), "my model.gguf");
        assert_eq!(file_name("https://h"), "https://h");
    }

    #[test]
    fn shards_resolve_next_to_the_index_and_cannot_escape() {
        let index = "https://h.example/org/m/resolve/main/model.safetensors.index.json?sig=abc";
        assert_eq!(
            shard_url(index, "model-00001-of-00002.safetensors"),
            Ok("https://h.example/org/m/resolve/main/model-00001-of-00002.safetensors".to_string())
        );
        // Characters that would start a query, a fragment or a new segment are encoded.
        assert_eq!(
            shard_url(index, "a?b#c%d.safetensors").ok(),
            Some("https://h.example/org/m/resolve/main/a%3Fb%23c%25d.safetensors".into())
        );
        for bad in ["", ".", "..", "../x.safetensors", "/etc/x", "https://evil.example/x.safetensors", "a\\b"] {
            assert!(matches!(shard_url(index, bad), Err(RemoteError::BadShardName { .. })), "{bad}");
        }
        assert_eq!(shard_url("http://h:81/x.json", "s.safetensors").ok(), Some("http://h:81/s.safetensors".into()));
        assert_eq!(shard_url("http://h:81", "s.safetensors").ok(), Some("http://h:81/s.safetensors".into()));
    }

    #[test]
    fn index_shards_are_base_names_next_to_the_index() {
        let index = "https://h/o/m/resolve/main/model.safetensors.index.json";
        let json = br#"{"metadata":{},"weight_map":{"a":"model-00002-of-00002.safetensors","b":"model-00001-of-00002.safetensors","c":"../../other/model-00001-of-00002.safetensors"}}"#;
        let shards = index_shards(index, json).unwrap_or_default();
        assert_eq!(
            shards,
            vec![
                (
                    "model-00001-of-00002.safetensors".to_string(),
                    "https://h/o/m/resolve/main/model-00001-of-00002.safetensors".to_string()
                ),
                (
                    "model-00002-of-00002.safetensors".to_string(),
                    "https://h/o/m/resolve/main/model-00002-of-00002.safetensors".to_string()
                ),
            ]
        );
        assert!(matches!(index_shards(index, b"{"), Err(RemoteError::BadIndex { .. })));
        assert!(matches!(index_shards(index, br#"{"weight_map":{}}"#), Err(RemoteError::BadIndex { .. })));
        assert!(matches!(index_shards(index, br#"{"weight_map":{"a":3}}"#), Err(RemoteError::BadIndex { .. })));
        let pickled = index_shards(index, br#"{"weight_map":{"a":"pytorch_model-00001-of-00002.bin"}}"#);
        assert!(pickled.is_err_and(|e| e.to_string().contains("pickled")));
    }

    #[test]
    fn hf_ids_expand_to_resolve_urls() {
        let repo = HfRepo::parse("meta-llama/Llama-3.1-8B").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(repo.revision, "main");
        assert_eq!(
            repo.file_url(DEFAULT_HF_ENDPOINT, HF_INDEX_FILE),
            "https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/model.safetensors.index.json"
        );
        let pr = HfRepo::parse("org/name@refs/pr/3").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pr.id(), "org/name@refs/pr/3");
        assert_eq!(
            pr.file_url("http://127.0.0.1:9000/", "model.safetensors"),
            "http://127.0.0.1:9000/org/name/resolve/refs%2Fpr%2F3/model.safetensors"
        );
        let commit = HfRepo::parse(" EleutherAI/pythia-70m@a39f36b100fe8a5377810d56c3f4789b9c53ac42 ");
        assert_eq!(commit.map(|r| r.revision.len()), Ok(40));
    }

    #[test]
    fn malformed_hf_ids_are_rejected_with_a_reason() {
        for bad in [
            "gpt2",
            "a/b/c",
            "/name",
            "org/",
            "org/na me",
            "org/name@",
            "-org/name",
            "org/name.",
            "org/na--me",
            "org/a..b",
            "org/name@a b",
        ] {
            let e = HfRepo::parse(bad);
            assert!(matches!(e, Err(RemoteError::BadHfId { .. })), "{bad}: {e:?}");
        }
        let long = format!("org/{}", "x".repeat(97));
        assert!(HfRepo::parse(&long).is_err());
        let msg = HfRepo::parse("a/b/c").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("org/name@revision"), "{msg}");
    }

    #[test]
    fn endpoints_are_checked_and_trimmed() {
        assert_eq!(hf_endpoint(None), Ok(DEFAULT_HF_ENDPOINT.to_string()));
        assert_eq!(hf_endpoint(Some("  ")), Ok(DEFAULT_HF_ENDPOINT.to_string()));
        assert_eq!(hf_endpoint(Some("http://127.0.0.1:9/mirror/")), Ok("http://127.0.0.1:9/mirror".to_string()));
        assert!(hf_endpoint(Some("ftp://x")).is_err());
        assert!(hf_endpoint(Some("https://x/?a=1")).is_err());
    }

    #[test]
    fn entries_are_told_apart() {
        assert_eq!(classify_entry("org/name"), Entry::Hf("org/name".into()));
        assert_eq!(classify_entry(" org/name@v1.0 "), Entry::Hf("org/name@v1.0".into()));
        assert_eq!(classify_entry("https://h/x.gguf"), Entry::Url("https://h/x.gguf".into()));
        assert_eq!(
            classify_entry("example.com/model.safetensors"),
            Entry::Url("https://example.com/model.safetensors".into())
        );
        assert_eq!(
            classify_entry("https://huggingface.co/org/m/blob/main/model.safetensors"),
            Entry::Url("https://huggingface.co/org/m/resolve/main/model.safetensors".into())
        );
        // Not a file page: left alone.
        assert_eq!(normalise_url("https://example.com/org/m/blob/main/x"), "https://example.com/org/m/blob/main/x");
    }

    #[test]
    fn percent_coding_round_trips() {
        for s in ["model.safetensors", "a b/c?d#e%f", "ünïcode.gguf"] {
            assert_eq!(percent_decode(&percent_encode(s)), s);
        }
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn reads_inside_the_window_fetch_nothing() {
        let p = plan_read(8, 8, 0, PROBE_BYTES, 1 << 30);
        assert_eq!(p, ReadPlan { cached: Some((8, 8)), fetch: None, new_window: false });
        let p = plan_read(PROBE_BYTES - 16, 16, 0, PROBE_BYTES, 1 << 30);
        assert_eq!(p.cached, Some((PROBE_BYTES - 16, 16)));
        assert_eq!(p.fetch, None);
        assert_eq!(plan_read(5, 0, 0, 0, 10), ReadPlan { cached: None, fetch: None, new_window: false });
    }

    #[test]
    fn short_reads_outside_the_window_read_ahead_within_the_file() {
        let p = plan_read(100_000, 8, 0, PROBE_BYTES, 1 << 30);
        assert_eq!(p, ReadPlan { cached: None, fetch: Some((100_000, 100_000 + WINDOW_BYTES)), new_window: true });
        // Near the end of the file the read-ahead stops at the end.
        let p = plan_read(990, 8, 0, 100, 1000);
        assert_eq!(p.fetch, Some((990, 1000)));
        // A short read straddling the window's end is re-fetched whole as a new window.
        let p = plan_read(PROBE_BYTES - 4, 8, 0, PROBE_BYTES, 1 << 30);
        assert_eq!(p.fetch, Some((PROBE_BYTES - 4, PROBE_BYTES - 4 + WINDOW_BYTES)));
        assert!(p.new_window);
    }

    #[test]
    fn long_reads_take_the_window_prefix_and_fetch_exactly_the_rest() {
        // A safetensors header longer than the probe: 8 .. 8 + 100 000.
        let p = plan_read(8, 100_000, 0, PROBE_BYTES, 1 << 30);
        assert_eq!(p.cached, Some((8, PROBE_BYTES - 8)));
        assert_eq!(p.fetch, Some((PROBE_BYTES, 100_008)));
        assert!(!p.new_window);
        // A block of rows far from the window: exactly its bytes.
        let p = plan_read(5_000_000, 16384, 0, PROBE_BYTES, 1 << 30);
        assert_eq!(p, ReadPlan { cached: None, fetch: Some((5_000_000, 5_016_384)), new_window: false });
        // A long read starting before the window is fetched whole (forward readers never do this).
        let p = plan_read(10, 1000, 500, 1000, 1 << 30);
        assert_eq!(p.fetch, Some((10, 1010)));
        assert_eq!(p.cached, None);
    }

    #[test]
    fn the_window_covers_every_byte_exactly_once() {
        // Property: for any read, cached count + fetched bytes used == len, and the fetch starts
        // where the cached part ends.
        let (ws, wl, file_len) = (1000u64, 5000u64, 20_000u64);
        for offset in (0..file_len).step_by(97) {
            for len in [0u64, 1, 7, 63, 64, 65, 4000, 9000] {
                if offset + len > file_len {
                    continue;
                }
                let p = plan_read(offset, len, ws, wl, file_len);
                let cached = p.cached.map_or(0, |(o, c)| {
                    assert_eq!(ws + o, offset, "cached bytes start at the read");
                    assert!(o + c <= wl);
                    c
                });
                let fetched = p.fetch.map_or(0, |(s, e)| {
                    assert_eq!(s, offset + cached, "fetch continues the cached part");
                    assert!(e <= file_len);
                    (e - s).min(len - cached)
                });
                assert_eq!(cached + fetched, len, "offset {offset} len {len}");
            }
        }
    }

    #[test]
    fn the_memo_serves_each_sample_block_once_then_switches_off() {
        let mut memo: Memo<Vec<u8>> = Memo::new(300);
        // Sample phase: three blocks kept, a fourth over budget is not.
        for (i, off) in [0u64, 100, 200, 300].iter().enumerate() {
            assert_eq!(memo.take(*off, 100), None);
            memo.keep(*off, 100, vec![i as u8; 100]);
        }
        assert_eq!(memo.bytes(), 300);
        assert_eq!(memo.state(), MemoState::Filling);
        // Pass: the same blocks again, in order.
        assert_eq!(memo.take(0, 100), Some(vec![0; 100]));
        assert_eq!(memo.state(), MemoState::Draining);
        assert_eq!(memo.take(0, 100), None, "handed out once");
        assert_eq!(memo.state(), MemoState::Off, "a miss after the re-reads began ends the memo");
        assert_eq!(memo.bytes(), 0);
        memo.keep(500, 100, vec![9; 100]);
        assert_eq!(memo.take(500, 100), None, "nothing is kept once off");
    }

    #[test]
    fn the_memo_keys_on_offset_and_length() {
        let mut memo: Memo<u8> = Memo::new(1000);
        memo.keep(0, 100, 1);
        assert_eq!(memo.take(0, 50), None);
        assert_eq!(memo.state(), MemoState::Filling, "a miss while filling changes nothing");
        assert_eq!(memo.take(0, 100), Some(1));
    }
}
