//! Web addresses: which ones `fetch` may be given, the file a URL names, a Hugging Face page
//! address turned into its file, and percent-coding.

use super::RemoteError;

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
pub(super) fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let path_at = url.get(after_scheme..).and_then(|r| r.find(['/', '?', '#'])).map_or(url.len(), |i| after_scheme + i);
    (url.get(..path_at).unwrap_or(url), url.get(path_at..).unwrap_or(""))
}

/// The path of a URL without its query and fragment.
pub(super) fn path_of(url: &str) -> &str {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::remote::RemoteError;

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
    fn percent_coding_round_trips() {
        for s in ["model.safetensors", "a b/c?d#e%f", "ünïcode.gguf"] {
            assert_eq!(percent_decode(&percent_encode(s)), s);
        }
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
