//! Opening what a request names: dropped files as `Blob`s, a built-in demo, a URL, a Hugging Face
//! repo (probing the server first).

use std::rc::Rc;
use std::sync::Arc;

use js_sys::Reflect;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, File};

use super::{cache_demo, cached_demo};
use crate::read::demo;
use crate::read::remote::{self, HfNext, HfRepo, RemoteError};
use crate::read::source::MAX_JSON_BYTES;
use crate::read::source::{ByteSource, ReadError, SliceSource};
use crate::worker::blob_source::{Batch, BlobSource};
use crate::worker::http_source::{HttpSource, Traffic};
use crate::worker::protocol::SourceSpec;

/// The `File`s attached to a request.
pub(super) fn attached_files(data: &JsValue) -> Vec<File> {
    Reflect::get(data, &"files".into())
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Array>().ok())
        .map(|a| a.iter().filter_map(|f| f.dyn_into::<File>().ok()).collect())
        .unwrap_or_default()
}

/// The sources of a request, and for a model opened by URL the address read and its traffic.
pub(super) struct Sources {
    pub(super) sources: Vec<Rc<dyn ByteSource>>,
    pub(super) url: Option<(String, Rc<Traffic>)>,
    /// The same sources where they are dropped files, by index, for reading ahead.
    blobs: Vec<Option<Rc<BlobSource>>>,
}

impl Sources {
    /// A reader ahead over these sources' dropped files.
    pub(super) fn read_ahead(&self) -> ReadAhead {
        ReadAhead { blobs: self.blobs.clone(), in_flight: None }
    }
}

/// Ranges of one batch at most (a `Blob` of that many slices), and ranges listed ahead of the
/// steps: those held and not yet read, and the next batch.
const BATCH_RANGES: usize = 1024;
const LISTED: usize = 2 * BATCH_RANGES;
/// Bytes of one batch read ahead: large enough that a batch costs its bytes rather than its
/// request (tens of ms at the browser's few hundred MB/s to 1 GB/s), small enough to bound memory.
const BATCH_BYTES: u64 = 16 << 20;
/// Bytes read ahead kept at most (normally the batch being read and the next): with one batch in
/// flight, reading ahead holds at most 64 MiB of JavaScript memory, none of it in wasm's.
const MAX_HELD: u64 = 3 * BATCH_BYTES;

/// Reads the ranges the pass will read next in batches (`BlobSource`), one batch ahead of the
/// steps, so that the browser reads the next batch while the pass computes on this one. The data
/// flows one way: the loop asks the pass what it reads next, reads it, then steps.
pub(super) struct ReadAhead {
    blobs: Vec<Option<Rc<BlobSource>>>,
    in_flight: Option<(usize, Batch)>,
}

impl ReadAhead {
    /// Before a step: makes sure its read is in memory (waiting for the batch in flight, or
    /// reading a new one), then starts reading the batch after. `upcoming(n)` lists the next `n`
    /// reads (`Job::upcoming_reads`): the file and its ranges in reading order. Sources other than
    /// dropped files (demos, URLs) are left to their own reads.
    pub(super) async fn before_step(&mut self, upcoming: impl Fn(usize) -> (usize, Vec<(u64, u64)>)) {
        let (file, next) = upcoming(1);
        let Some(&(offset, len)) = next.first() else { return };
        let Some(blob) = self.blobs.get(file).cloned().flatten() else { return };
        if !blob.holds(offset, len) {
            if let Some((of, batch)) = self.in_flight.take() {
                if let Some(Some(source)) = self.blobs.get(of) {
                    source.install(batch, MAX_HELD).await;
                }
            }
            if !blob.holds(offset, len) {
                let (_, listed) = upcoming(LISTED);
                if let Some(batch) = blob.fetch(batch_of(&listed, |_, _| false)) {
                    blob.install(batch, MAX_HELD).await;
                }
            }
        }
        if self.in_flight.is_none() {
            let (_, listed) = upcoming(LISTED);
            let batch = batch_of(&listed, |offset, len| blob.holds(offset, len));
            self.in_flight = blob.fetch(batch).map(|b| (file, b));
        }
    }
}

/// The first ranges of `listed` not already `held`, up to [`BATCH_BYTES`] and [`BATCH_RANGES`] (at
/// least one), each once: a range listed twice (a sample block read again by the pass) is read
/// again later.
fn batch_of(listed: &[(u64, u64)], held: impl Fn(u64, u64) -> bool) -> Vec<(u64, u64)> {
    let mut batch: Vec<(u64, u64)> = Vec::new();
    let mut bytes = 0u64;
    for &(offset, len) in listed {
        if held(offset, len) {
            continue;
        }
        if batch.iter().any(|&(o, _)| o == offset) {
            break;
        }
        if !batch.is_empty() && (bytes + len > BATCH_BYTES || batch.len() >= BATCH_RANGES) {
            break;
        }
        bytes += len;
        batch.push((offset, len));
    }
    batch
}

/// Opens the sources named by the request (probing the server for a URL).
pub(super) async fn open_sources(source: &SourceSpec, files: Vec<File>) -> Result<Sources, String> {
    let local = |sources| Ok(Sources { sources, url: None, blobs: Vec::new() });
    match source {
        SourceSpec::Files => {
            if files.is_empty() {
                return Err("internal: no file attached to the request".into());
            }
            let blobs = files
                .into_iter()
                .map(|f| {
                    let name = f.name();
                    let blob: Blob = f.into();
                    BlobSource::new(name, blob).map(Rc::new).map_err(|e| e.to_string())
                })
                .collect::<Result<Vec<_>, _>>()?;
            let sources = blobs.iter().map(|b| b.clone() as Rc<dyn ByteSource>).collect();
            Ok(Sources { sources, url: None, blobs: blobs.into_iter().map(Some).collect() })
        }
        SourceSpec::Demo(name) => {
            let bytes = match cached_demo(name) {
                Some(b) => b,
                None => {
                    let (_, bytes) = demo::demo(name).ok_or_else(|| {
                        let names: Vec<&str> = demo::DEMOS.iter().map(|d| d.0).collect();
                        format!("no built-in demo named '{name}' (try {})", names.join(", "))
                    })?;
                    let bytes = Arc::new(bytes);
                    cache_demo(name, bytes.clone());
                    bytes
                }
            };
            local(vec![Rc::new(SliceSource::new(format!("demo-{name}.safetensors"), bytes))])
        }
        SourceSpec::Url { url } => {
            let traffic = Rc::new(Traffic::default());
            let url = remote::normalise_url(url.trim());
            remote::check_url(&url).map_err(|e| e.to_string())?;
            let first = HttpSource::open(url.clone(), traffic.clone()).await.map_err(|e| e.to_string())?;
            let sources = open_remote(first, &traffic).await?;
            Ok(Sources { sources, url: Some((url, traffic)), blobs: Vec::new() })
        }
        SourceSpec::Hf { id, endpoint } => {
            let traffic = Rc::new(Traffic::default());
            let repo = HfRepo::parse(id).map_err(|e| e.to_string())?;
            let endpoint = remote::hf_endpoint(endpoint.as_deref()).map_err(|e| e.to_string())?;
            let first = open_hf(&repo, &endpoint, &traffic).await.map_err(|e| e.to_string())?;
            let url = first.url().to_string();
            let sources = open_remote(first, &traffic).await?;
            Ok(Sources { sources, url: Some((url, traffic)), blobs: Vec::new() })
        }
    }
}

/// Probes the files of a Hugging Face repo in the order `HfRepo::next_after` gives, until one
/// opens or it says why none will.
async fn open_hf(repo: &HfRepo, endpoint: &str, traffic: &Rc<Traffic>) -> Result<HttpSource, RemoteError> {
    let mut url = repo.first_url(endpoint);
    loop {
        match HttpSource::open(url.clone(), traffic.clone()).await {
            Ok(source) => return Ok(source),
            Err(error) => match repo.next_after(endpoint, &url, error) {
                HfNext::Try(next) => url = next,
                HfNext::Fail(error) => return Err(error),
            },
        }
    }
}

/// A probed model file as it is, or a probed shard index read whole (it is small) with its shards
/// probed next to it; handed to `Job` like dropped files, named by their file names.
async fn open_remote(first: HttpSource, traffic: &Rc<Traffic>) -> Result<Vec<Rc<dyn ByteSource>>, String> {
    if !first.name().to_ascii_lowercase().ends_with(".json") {
        return Ok(vec![Rc::new(first)]);
    }
    let len = first.len();
    if len > MAX_JSON_BYTES {
        let e = RemoteError::IndexTooLarge { url: first.url().to_string(), len, max: MAX_JSON_BYTES };
        return Err(e.to_string());
    }
    // len <= 64 MB, so it fits in usize.
    let mut json = vec![0u8; len as usize];
    first.read_at(0, &mut json).map_err(|e: ReadError| e.to_string())?;
    let shards = remote::index_shards(first.url(), &json).map_err(|e| e.to_string())?;
    // Probed together: a model of 30 shards should not wait for 30 round trips in a row.
    let probes = shards.into_iter().map(|(_, url)| HttpSource::open(url, traffic.clone()));
    let opened = futures::future::try_join_all(probes).await.map_err(|e| e.to_string())?;
    let mut sources: Vec<Rc<dyn ByteSource>> = vec![Rc::new(SliceSource::new(first.name(), json))];
    sources.extend(opened.into_iter().map(|s| Rc::new(s) as Rc<dyn ByteSource>));
    Ok(sources)
}
