//! A file on a web server, read range by range with HTTP `Range` requests (worker only).
//!
//! [`HttpSource::open`] probes the address once with an async `fetch` of the first
//! [`PROBE_BYTES`]: it tells a CORS refusal, a 404, a gated model and a server that ignores Range
//! apart before anything else, learns the length, and keeps those bytes as the first read window.
//! After that every read is a **synchronous** `XMLHttpRequest` (allowed in dedicated workers, with
//! `responseType = "arraybuffer"` and a timeout), because [`ByteSource::read_at`] is synchronous
//! like `FileReaderSync`. Each asks for one `bytes=a-b` range, a CORS-safelisted header: no
//! preflight. The byte arithmetic (window, read-ahead, re-read memo) lives in [`crate::read::remote`].

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{ArrayBuffer, Uint8Array};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    AbortController, Headers, RequestInit, Response, WorkerGlobalScope, XmlHttpRequest, XmlHttpRequestResponseType,
};

use crate::read::remote::{
    classify_status, file_name, parse_content_range, plan_read, range_header, Memo, RemoteError, MEMO_BUDGET,
    PROBE_BYTES, READ_TIMEOUT_MS,
};
use crate::read::source::{check_range, ByteSource, ReadError};

/// Network use of one run, shared by its sources (progress and the report show the bytes).
#[derive(Debug, Default)]
pub struct Traffic {
    pub bytes: Cell<u64>,
}

impl Traffic {
    fn add(&self, bytes: u64) {
        self.bytes.set(self.bytes.get().saturating_add(bytes));
    }
}

pub struct HttpSource {
    /// The file name (last path segment), so an index's shard names match it.
    name: String,
    /// The address as given.
    url: String,
    /// Where reads go: the address after redirects (a Hugging Face `resolve/` link redirects to a
    /// CDN; asking the CDN directly saves the hub a request per block).
    read_url: RefCell<String>,
    len: u64,
    /// Start and bytes of the cached window (the probe's bytes at first).
    window: RefCell<(u64, Vec<u8>)>,
    memo: RefCell<Memo<Uint8Array>>,
    traffic: Rc<Traffic>,
}

/// Why one attempt at a read failed.
enum Attempt {
    /// The connection dropped, timed out or was cut short: worth one retry.
    Retry(String),
    /// The server answered, with something else than the bytes: retrying will not help.
    Fail(RemoteError),
}

fn scope() -> WorkerGlobalScope {
    js_sys::global().unchecked_into()
}

/// What a thrown JavaScript value says (a DOMException's name and message).
fn describe(e: &wasm_bindgen::JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| format!("{}: {}", String::from(e.name()), String::from(e.message())))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

impl HttpSource {
    /// Probes `url` and returns a source ready for synchronous reads.
    pub async fn open(url: String, traffic: Rc<Traffic>) -> Result<HttpSource, RemoteError> {
        let unreachable = || RemoteError::Unreachable { url: url.clone() };
        let controller = AbortController::new().map_err(|_| unreachable())?;
        let headers = Headers::new().map_err(|_| unreachable())?;
        headers.set("Range", &range_header(0, PROBE_BYTES)).map_err(|_| unreachable())?;
        let init = RequestInit::new();
        init.set_method("GET");
        init.set_headers(&headers);
        init.set_signal(Some(&controller.signal()));
        let response: Response = JsFuture::from(scope().fetch_with_str_and_init(&url, &init))
            .await
            .ok()
            .and_then(|r| r.dyn_into().ok())
            .ok_or_else(unreachable)?;
        let status = response.status();
        if status != 206 {
            // A 200 is the whole file on its way: stop it now.
            controller.abort();
            return Err(classify_status(&url, status).err().unwrap_or(RemoteError::RangeIgnored { url }));
        }
        let dropped =
            |detail: String| RemoteError::Dropped { file: file_name(&url), offset: 0, len: PROBE_BYTES, detail };
        let content_range = response.headers().get("Content-Range").ok().flatten();
        let body = match response.array_buffer() {
            Ok(p) => JsFuture::from(p).await.map_err(|e| dropped(describe(&e)))?,
            Err(e) => return Err(dropped(describe(&e))),
        };
        let bytes = Uint8Array::new(&body).to_vec();
        let got = bytes.len() as u64;
        traffic.add(got);
        let bad =
            |reason: String| RemoteError::BadResponse { url: url.clone(), start: 0, end: PROBE_BYTES - 1, reason };
        if got > PROBE_BYTES {
            return Err(bad(format!("{got} bytes for a range of {PROBE_BYTES}")));
        }
        let total = match content_range.as_deref().map(parse_content_range) {
            Some(Some(cr)) if cr.first == 0 && cr.last + 1 == got => cr.total,
            Some(Some(cr)) => {
                return Err(bad(format!("Content-Range says bytes {}–{}, {got} bytes came", cr.first, cr.last)))
            }
            Some(None) => return Err(bad(format!("unreadable Content-Range '{}'", content_range.unwrap_or_default()))),
            // CORS hides Content-Range unless the server exposes it.
            None => None,
        };
        let len = match total {
            Some(t) => t,
            // A short answer to a range means the file ends there.
            None if got < PROBE_BYTES => got,
            None => content_length(&url).await?,
        };
        if len < got {
            return Err(bad(format!("the file is {len} bytes long but {got} came")));
        }
        let read_url = if response.url().is_empty() { url.clone() } else { response.url() };
        Ok(HttpSource {
            name: file_name(&url),
            url,
            read_url: RefCell::new(read_url),
            len,
            window: RefCell::new((0, bytes)),
            memo: RefCell::new(Memo::new(MEMO_BUDGET)),
            traffic,
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Bytes `start .. end`, retried once when the connection drops. A link that stops working
    /// after a redirect (an expired signed CDN link) is followed again from the original address.
    fn fetch_range(&self, start: u64, end: u64) -> Result<Uint8Array, RemoteError> {
        let mut detail = String::new();
        for _ in 0..2 {
            let url = self.read_url.borrow().clone();
            match self.attempt(&url, start, end) {
                Ok((bytes, landed)) => {
                    // Following the original address again lands on a fresh link: read from it.
                    if !landed.is_empty() && landed != url {
                        *self.read_url.borrow_mut() = landed;
                    }
                    return Ok(bytes);
                }
                Err(Attempt::Retry(d)) => detail = d,
                Err(Attempt::Fail(
                    RemoteError::Gated { .. } | RemoteError::NotFound { .. } | RemoteError::Status { .. },
                )) if url != self.url => {
                    *self.read_url.borrow_mut() = self.url.clone();
                    detail = "the redirected link stopped working".into();
                }
                Err(Attempt::Fail(e)) => return Err(e),
            }
        }
        Err(RemoteError::Dropped { file: self.name.clone(), offset: start, len: end - start, detail })
    }

    /// One synchronous range request: the bytes, and the address it ended at after redirects.
    fn attempt(&self, url: &str, start: u64, end: u64) -> Result<(Uint8Array, String), Attempt> {
        let js = |e: wasm_bindgen::JsValue| Attempt::Retry(describe(&e));
        let xhr = XmlHttpRequest::new().map_err(js)?;
        xhr.open_with_async("GET", url, false).map_err(js)?;
        xhr.set_request_header("Range", &range_header(start, end)).map_err(js)?;
        xhr.set_response_type(XmlHttpRequestResponseType::Arraybuffer);
        xhr.set_timeout(READ_TIMEOUT_MS);
        // A dropped connection or a timeout throws (NetworkError, TimeoutError).
        xhr.send().map_err(js)?;
        let status = xhr.status().map_err(js)?;
        if status == 0 {
            return Err(Attempt::Retry("no answer".into()));
        }
        classify_status(url, status).map_err(Attempt::Fail)?;
        let buffer: ArrayBuffer =
            xhr.response().ok().and_then(|r| r.dyn_into().ok()).ok_or_else(|| Attempt::Retry("no body".into()))?;
        let bytes = Uint8Array::new(&buffer);
        let got = bytes.length() as u64;
        self.traffic.add(got);
        if got != end - start {
            return Err(Attempt::Retry(format!("{got} of {} bytes arrived", end - start)));
        }
        if let Some(cr) =
            xhr.get_response_header("Content-Range").ok().flatten().as_deref().and_then(parse_content_range)
        {
            if cr.first != start || cr.last + 1 != end {
                return Err(Attempt::Fail(RemoteError::BadResponse {
                    url: url.to_string(),
                    start,
                    end: end - 1,
                    reason: format!("it sent bytes {}–{}", cr.first, cr.last),
                }));
            }
        }
        Ok((bytes, xhr.response_url()))
    }
}

/// The length from a HEAD request, when CORS hides the probe's Content-Range.
async fn content_length(url: &str) -> Result<u64, RemoteError> {
    let unknown = || RemoteError::UnknownLength { url: url.to_string() };
    let init = RequestInit::new();
    init.set_method("HEAD");
    let response: Response = JsFuture::from(scope().fetch_with_str_and_init(url, &init))
        .await
        .ok()
        .and_then(|r| r.dyn_into().ok())
        .ok_or_else(unknown)?;
    if !response.ok() {
        return Err(unknown());
    }
    response.headers().get("Content-Length").ok().flatten().and_then(|v| v.trim().parse().ok()).ok_or_else(unknown)
}

impl ByteSource for HttpSource {
    fn name(&self) -> &str {
        &self.name
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let len = buf.len() as u64;
        check_range(&self.name, offset, len, self.len)?;
        let plan = {
            let window = self.window.borrow();
            let plan = plan_read(offset, len, window.0, window.1.len() as u64, self.len);
            if let Some((at, count)) = plan.cached {
                let from = window.1.get(at as usize..(at + count) as usize);
                match (from, buf.get_mut(..count as usize)) {
                    (Some(from), Some(to)) => to.copy_from_slice(from),
                    _ => return Err(self.internal(offset, len)),
                }
            }
            plan
        };
        let Some((start, end)) = plan.fetch else { return Ok(()) };
        let cached = plan.cached.map_or(0, |(_, c)| c as usize);
        let Some(rest) = buf.get_mut(cached..) else { return Err(self.internal(offset, len)) };
        if plan.new_window {
            let bytes = self.fetch(start, end)?.to_vec();
            match bytes.get(..rest.len()) {
                Some(head) => rest.copy_from_slice(head),
                None => return Err(self.internal(offset, len)),
            }
            *self.window.borrow_mut() = (start, bytes);
            return Ok(());
        }
        let kept = self.memo.borrow_mut().take(start, end - start);
        let bytes = match kept {
            Some(bytes) => bytes,
            None => {
                let bytes = self.fetch(start, end)?;
                self.memo.borrow_mut().keep(start, end - start, bytes.clone());
                bytes
            }
        };
        // fetch_range checked the length: end - start == rest.len().
        if bytes.length() as usize != rest.len() {
            return Err(self.internal(offset, len));
        }
        bytes.copy_to(rest);
        Ok(())
    }
}

impl HttpSource {
    /// [`Self::fetch_range`] for `read_at`: the network's failure becomes a read failure whose
    /// message is the network's own.
    fn fetch(&self, start: u64, end: u64) -> Result<Uint8Array, ReadError> {
        self.fetch_range(start, end).map_err(|e| ReadError::Unavailable { message: e.to_string() })
    }

    /// A plan that does not fit its buffers (a bug, reported rather than panicking).
    fn internal(&self, offset: u64, len: u64) -> ReadError {
        ReadError::Io { file: self.name.clone(), offset, len, message: "internal: read plan out of bounds".into() }
    }
}
