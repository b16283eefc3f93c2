//! Opening what a request names: dropped files as `Blob`s, a built-in demo, a URL, a Hugging Face
//! repo (probing the server first).

use std::rc::Rc;
use std::sync::Arc;

use js_sys::Reflect;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, File};

use super::{cache_demo, cached_demo};
use crate::read::ahead::{Limits, ReadAhead};
use crate::read::demo;
use crate::read::remote::{self, HfNext, HfRepo, RemoteError};
use crate::read::source::MAX_JSON_BYTES;
use crate::read::source::{ByteSource, ReadError, SliceSource};
use crate::worker::blob_source::BlobSource;
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
    pub(super) fn read_ahead(&self) -> ReadAhead<BlobSource> {
        ReadAhead::new(self.blobs.clone(), Limits::BROWSER)
    }
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
