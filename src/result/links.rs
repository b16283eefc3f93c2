//! The links a result gives its reader: the query that runs it again from the model's address, the
//! permalink and the `<iframe>` snippet that embeds it. Pure string work over a [`Report`]; the page
//! passes in its own address (origin and path, from `window.location`), so every link is tested
//! natively and the page only supplies where it lives.

use crate::result::report::Report;

/// Characters JavaScript's `encodeURIComponent` leaves as they are (ECMA-262's uriUnreserved):
/// ASCII letters and digits, and these marks.
const UNRESERVED_MARKS: &[u8] = b"-_.!~*'()";

/// JavaScript's `encodeURIComponent`: every byte of the UTF-8 form outside A–Z a–z 0–9
/// `- _ . ! ~ * ' ( )` becomes `%XX` (uppercase hex). The page's own query parser reads what the
/// browser wrote, so the links must escape exactly what the browser would, no more and no less.
/// (A Rust `str` never holds the lone surrogates for which JavaScript throws.)
pub fn encode_uri_component(s: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || UNRESERVED_MARKS.contains(&b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0F)]));
        }
    }
    out
}

/// The page's own address without query or fragment, from `location.origin` and
/// `location.pathname`: every link below starts with it.
pub fn page_base(origin: &str, pathname: &str) -> String {
    format!("{origin}{pathname}")
}

/// The query that re-runs a result opened by URL: `?hf=org/name[@rev]` for a Hugging Face id
/// (kept in `source_url` as `hf:org/name[@rev]`), `?url=…` for any other address; `None` for a
/// result read from local files, which no link can open again.
pub fn rerun_query(r: &Report) -> Option<String> {
    let url = r.source_url.as_deref()?;
    Some(match url.strip_prefix("hf:") {
        Some(id) => format!("?hf={}", encode_uri_component(id)),
        None => format!("?url={}", encode_uri_component(url)),
    })
}

/// The full address that re-runs a result opened by URL (see [`rerun_query`]).
pub fn rerun_href(base: &str, r: &Report) -> Option<String> {
    rerun_query(r).map(|q| format!("{base}{q}"))
}

/// The permalink of a report: the full view, the Report in the fragment (`permalink::encode`) and,
/// for a model opened by URL, the query that runs it again, so a reader can check the result.
pub fn permalink_href(base: &str, r: &Report, fragment: &str) -> String {
    format!("{base}{}#{fragment}", rerun_query(r).unwrap_or_default())
}

/// The `<iframe>` snippet that embeds this result in a blog post: the compact card (`embed=1`), at
/// the 640 × 420 the card is laid out for. Double quotes in the model's name become single ones, so
/// the `title` attribute stays one attribute.
pub fn embed_snippet(base: &str, r: &Report, fragment: &str) -> String {
    let query = match rerun_query(r) {
        Some(q) => format!("{q}&embed=1"),
        None => "?embed=1".to_string(),
    };
    let title = format!("Orthoscope: ε of {}", r.model_name()).replace('"', "'");
    format!(
        "<iframe src=\"{base}{query}#{fragment}\" width=\"640\" height=\"420\" style=\"border:0;max-width:100%\" title=\"{title}\" loading=\"lazy\"></iframe>"
    )
}
