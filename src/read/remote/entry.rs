//! What a user typed into the address field: a web address or a Hugging Face repo id.

use super::hf::HfRepo;
use super::url::normalise_url;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::remote::normalise_url;

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
}
