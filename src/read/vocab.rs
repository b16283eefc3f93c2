//! Token strings for the tail explorer when the weights come without them (GGUF carries its own
//! `tokenizer.ggml.tokens`): a Hugging Face `tokenizer.json` dropped with the weights. Its
//! `model.vocab` maps token → id (BPE, WordPiece) or lists `[token, score]` in id order (Unigram);
//! `added_tokens` adds `{id, content}` entries on top.

use std::collections::HashMap;
use std::rc::Rc;

use serde::Deserialize;
use thiserror::Error;

use crate::read::source::{ByteSource, MAX_JSON_BYTES};

/// The file name looked for among the dropped files.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// Largest token id accepted (real vocabularies are below 300k; this bounds the table allocated).
pub const MAX_TOKEN_ID: u64 = 1 << 22;

/// Why a tokenizer.json gave no vocabulary.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum VocabError {
    #[error("tokenizer.json is not a tokenizer this app reads: {0}")]
    Json(String),
    #[error("tokenizer.json names token id {id}, above the {max} accepted")]
    IdTooLarge { id: u64, max: u64 },
    #[error("tokenizer.json is {len} bytes, more than the {max} read")]
    TooLarge { len: u64, max: u64 },
}

#[derive(Deserialize)]
struct TokenizerJson {
    model: Model,
    #[serde(default)]
    added_tokens: Vec<Added>,
}

#[derive(Deserialize)]
struct Model {
    vocab: VocabTable,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum VocabTable {
    Map(HashMap<String, u64>),
    Scored(Vec<(String, f64)>),
}

#[derive(Deserialize)]
struct Added {
    id: u64,
    content: String,
}

/// Token strings by id from a tokenizer.json's bytes (ids no entry names stay empty strings).
pub fn parse_tokenizer_json(bytes: &[u8]) -> Result<Vec<String>, VocabError> {
    let t: TokenizerJson = serde_json::from_slice(bytes).map_err(|e| VocabError::Json(e.to_string()))?;
    let mut pairs: Vec<(u64, String)> = match t.model.vocab {
        VocabTable::Map(m) => m.into_iter().map(|(s, id)| (id, s)).collect(),
        VocabTable::Scored(v) => v.into_iter().enumerate().map(|(i, (s, _))| (i as u64, s)).collect(),
    };
    pairs.extend(t.added_tokens.into_iter().map(|a| (a.id, a.content)));
    let max = pairs.iter().map(|p| p.0).max().unwrap_or(0);
    if max > MAX_TOKEN_ID {
        return Err(VocabError::IdTooLarge { id: max, max: MAX_TOKEN_ID });
    }
    let mut out = if pairs.is_empty() { Vec::new() } else { vec![String::new(); max as usize + 1] };
    for (id, s) in pairs {
        if let Some(slot) = out.get_mut(id as usize) {
            *slot = s;
        }
    }
    Ok(out)
}

/// Reads and parses a source holding a tokenizer.json.
pub fn read_tokenizer_json(source: &dyn ByteSource) -> Result<Vec<String>, VocabError> {
    let len = source.len();
    if len > MAX_JSON_BYTES {
        return Err(VocabError::TooLarge { len, max: MAX_JSON_BYTES });
    }
    // len ≤ 64 MiB: fits in usize.
    let mut bytes = vec![0u8; len as usize];
    source.read_at(0, &mut bytes).map_err(|e| VocabError::Json(e.to_string()))?;
    parse_tokenizer_json(&bytes)
}

/// The vocabulary of a `tokenizer.json` among the sources (`files` names them by index), or empty.
/// The vocabulary only names tokens: a missing or unreadable one never fails the analysis.
pub fn from_sources(sources: &[Rc<dyn ByteSource>], files: &[String]) -> Vec<String> {
    files
        .iter()
        .position(|f| f.rsplit(['/', '\\']).next() == Some(TOKENIZER_FILE))
        .and_then(|i| sources.get(i))
        .and_then(|s| read_tokenizer_json(s.as_ref()).ok())
        .unwrap_or_default()
}

/// A token as a reader sees it: byte-level BPE's alphabet (GPT-2's `bytes_to_unicode`, where a
/// space is `Ġ` and a newline `Ċ`) decoded back to text, SentencePiece's `▁` as a space, and then
/// spaces, newlines and tabs drawn as ␣, ↵ and ⇥ so they can be seen. Display only: the Report
/// and a token search keep the token as the tokenizer spells it.
///
/// A token is decoded as byte-level only when it uses that alphabet's space or control letters
/// and every one of its characters is in the alphabet and the bytes are UTF-8; otherwise only
/// `▁` and a leading `Ġ` are shown as a space (a vocabulary's own letter Ġ, as in Maltese, is
/// rare, and the raw token is one hover away in the views).
pub fn visible(token: &str) -> String {
    let decoded = byte_level(token).unwrap_or_else(|| {
        let t = token.strip_prefix('\u{120}').map_or_else(|| token.to_string(), |rest| format!(" {rest}"));
        t.replace('\u{2581}', " ")
    });
    decoded
        .chars()
        .map(|c| match c {
            ' ' => '␣',
            '\n' => '↵',
            '\t' => '⇥',
            '\r' => '⏎',
            c => c,
        })
        .collect()
}

/// The byte of GPT-2's byte-level alphabet `c` stands for: printable Latin-1 stands for itself,
/// and the other 68 bytes (controls, space, DEL, NBSP, soft hyphen) are the letters from U+0100 on,
/// in byte order.
fn byte_of(c: char) -> Option<u8> {
    let printable = |b: u32| (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || (0xae..=0xff).contains(&b);
    let u = c as u32;
    if printable(u) {
        return u8::try_from(u).ok();
    }
    let n = u.checked_sub(0x100)?;
    (0u32..=255).filter(|&b| !printable(b)).nth(usize::try_from(n).ok()?).and_then(|b| u8::try_from(b).ok())
}

fn byte_level(token: &str) -> Option<String> {
    // Only a token that uses the alphabet's stand-ins (space, newline, other bytes) is decoded.
    if !token.chars().any(|c| (0x100..=0x143).contains(&(c as u32))) {
        return None;
    }
    let bytes: Option<Vec<u8>> = token.chars().map(byte_of).collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn byte_level_and_sentencepiece_tokens_show_their_spaces_and_newlines() {
        assert_eq!(visible("\u{120}the"), "␣the");
        assert_eq!(visible("\u{10a}\u{10a}"), "↵↵");
        assert_eq!(visible("\u{109}x"), "⇥x");
        // "é" is two bytes in the byte-level alphabet: Ã and ©.
        assert_eq!(visible("\u{120}caf\u{c3}\u{a9}"), "␣café");
        assert_eq!(visible("\u{2581}the"), "␣the");
        assert_eq!(visible("the"), "the");
        assert_eq!(visible("##ing"), "##ing");
        // Not byte-level (é as itself): only the leading Ġ is a space.
        assert_eq!(visible("\u{120}café"), "␣café");
        assert_eq!(visible("[unused3]"), "[unused3]");
        assert_eq!(byte_of('\u{120}'), Some(b' '));
        assert_eq!(byte_of('\u{10a}'), Some(b'\n'));
        assert_eq!(byte_of('\u{100}'), Some(0));
        assert_eq!(byte_of('\u{143}'), Some(0xad));
        assert_eq!(byte_of('\u{144}'), None);
    }

    use super::*;

    #[test]
    fn bpe_maps_and_unigram_lists_give_tokens_by_id() {
        let bpe = br#"{"model":{"type":"BPE","vocab":{"a":1,"b":0,"\u0120the":2}},"added_tokens":[{"id":4,"content":"<eos>"}]}"#;
        assert_eq!(parse_tokenizer_json(bpe).unwrap(), vec!["b", "a", "Ġthe", "", "<eos>"]);
        let unigram = br#"{"model":{"type":"Unigram","vocab":[["<unk>",0.0],["\u2581x",-1.5]]}}"#;
        assert_eq!(parse_tokenizer_json(unigram).unwrap(), vec!["<unk>", "▁x"]);
        assert!(matches!(parse_tokenizer_json(b"{}"), Err(VocabError::Json(_))));
        let huge = br#"{"model":{"vocab":{"a":99999999}}}"#;
        assert!(matches!(parse_tokenizer_json(huge), Err(VocabError::IdTooLarge { .. })));
    }
}
