//! Hugging Face repos (`?hf=org/name[@revision]`): the id's rules, where a repo's files live, and
//! which file to probe next when one is missing.

use super::url::{check_url, percent_encode};
use super::RemoteError;

/// Where `?hf=` looks when no `?hf_endpoint=` is given (like huggingface_hub's `HF_ENDPOINT`).
pub const DEFAULT_HF_ENDPOINT: &str = "https://huggingface.co";
/// What `?hf=` opens first: the shard index of a sharded model.
pub const HF_INDEX_FILE: &str = "model.safetensors.index.json";
/// What `?hf=` opens when the repo has no shard index: the one file of an unsharded model.
pub const HF_SINGLE_FILE: &str = "model.safetensors";

/// Longest repo id part Hugging Face accepts.
const MAX_HF_PART: usize = 96;
/// Longest revision accepted (branch names, tags and 40-hex commits are far shorter).
const MAX_REVISION: usize = 256;

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

    /// The first address `?hf=` probes: the shard index.
    pub fn first_url(&self, endpoint: &str) -> String {
        self.file_url(endpoint, HF_INDEX_FILE)
    }

    /// What `?hf=` does after probing `tried` failed with `error`. Only a missing file moves on: no
    /// index means an unsharded model, so the single file is tried; no single file either means
    /// the repo holds no safetensors model under the names `?hf=` knows. Any other failure (gated,
    /// rate-limited, unreachable …) stands as it is: the other file would fail the same way, and
    /// the user needs that reason, not a "not found".
    pub fn next_after(&self, endpoint: &str, tried: &str, error: RemoteError) -> HfNext {
        if !matches!(error, RemoteError::NotFound { .. }) {
            return HfNext::Fail(error);
        }
        if tried == self.file_url(endpoint, HF_INDEX_FILE) {
            HfNext::Try(self.file_url(endpoint, HF_SINGLE_FILE))
        } else if tried == self.file_url(endpoint, HF_SINGLE_FILE) {
            HfNext::Fail(RemoteError::HfNoModel { repo: self.id() })
        } else {
            HfNext::Fail(error)
        }
    }
}

/// The step after a failed probe of a Hugging Face repo ([`HfRepo::next_after`]).
#[derive(Clone, Debug, PartialEq)]
pub enum HfNext {
    /// Probe this address next.
    Try(String),
    /// Stop: the repo cannot be opened, for this reason.
    Fail(RemoteError),
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_missing_index_falls_back_to_the_single_file_then_to_no_model() {
        let repo = HfRepo::parse("org/m@v1").unwrap_or_else(|e| panic!("{e}"));
        let endpoint = "http://127.0.0.1:9000";
        let index = repo.first_url(endpoint);
        assert_eq!(index, "http://127.0.0.1:9000/org/m/resolve/v1/model.safetensors.index.json");
        let single = "http://127.0.0.1:9000/org/m/resolve/v1/model.safetensors".to_string();
        let not_found = |url: &str| RemoteError::NotFound { url: url.to_string(), status: 404 };

        assert_eq!(repo.next_after(endpoint, &index, not_found(&index)), HfNext::Try(single.clone()));
        let gone = RemoteError::NotFound { url: single.clone(), status: 410 };
        let none = repo.next_after(endpoint, &single, gone);
        assert_eq!(none, HfNext::Fail(RemoteError::HfNoModel { repo: "org/m@v1".into() }));
        if let HfNext::Fail(e) = none {
            let text = e.to_string();
            assert!(text.contains("org/m@v1") && text.contains(HF_INDEX_FILE), "{text}");
        }
    }

    #[test]
    fn other_failures_stand_without_a_fallback() {
        let repo = HfRepo::parse("org/m").unwrap_or_else(|e| panic!("{e}"));
        let index = repo.first_url(DEFAULT_HF_ENDPOINT);
        let single = repo.file_url(DEFAULT_HF_ENDPOINT, HF_SINGLE_FILE);
        for tried in [&index, &single] {
            for error in [
                RemoteError::Gated { url: tried.clone(), status: 403 },
                RemoteError::Unreachable { url: tried.clone() },
                RemoteError::RateLimited { url: tried.clone() },
                RemoteError::Status { url: tried.clone(), status: 500 },
            ] {
                assert_eq!(repo.next_after(DEFAULT_HF_ENDPOINT, tried, error.clone()), HfNext::Fail(error));
            }
        }
        // A file `?hf=` never probes has no next one.
        let other = repo.file_url(DEFAULT_HF_ENDPOINT, "model.gguf");
        let missing = RemoteError::NotFound { url: other.clone(), status: 404 };
        assert_eq!(repo.next_after(DEFAULT_HF_ENDPOINT, &other, missing.clone()), HfNext::Fail(missing));
    }
}
