//! Models split into numbered parts (`PREFIX-0000k-of-0000N.EXT`: Hugging Face shards, llama.cpp's
//! GGUF splits): the names of every part from one, and what llama.cpp checks of a split's metadata.

use super::MAX_LISTED_PARTS;
use crate::read::format::{FormatError, ModelInfo};

/// The names of all parts of a `PREFIX-0000k-of-0000N.EXT` file (Hugging Face shards and
/// llama.cpp splits both use five digits), or `None` for other names.
pub(super) fn split_parts(name: &str) -> Option<Vec<String>> {
    let (prefix, ext, count) = split_name(name)?;
    if count == 0 || count > MAX_LISTED_PARTS {
        return None;
    }
    Some((1..=count).map(|k| format!("{prefix}-{k:05}-of-{count:05}{ext}")).collect())
}

/// `(PREFIX, .EXT, N)` of a `PREFIX-0000k-of-0000N.EXT` name, or `None` for other names.
pub(super) fn split_name(name: &str) -> Option<(&str, &str, u64)> {
    split_name_no(name).map(|(prefix, ext, _, count)| (prefix, ext, count))
}

/// `(PREFIX, .EXT, k, N)` of a `PREFIX-0000k-of-0000N.EXT` name, or `None` for other names.
pub(super) fn split_name_no(name: &str) -> Option<(&str, &str, u64, u64)> {
    let dot = name.rfind('.')?;
    let (stem, ext) = name.split_at(dot);
    let (rest, count) = stem.rsplit_once("-of-")?;
    let (prefix, no) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(count) || !digits(no) {
        return None;
    }
    Some((prefix, ext, no.parse().ok()?, count.parse().ok()?))
}

/// What llama.cpp checks of a split GGUF's parts: each part's `split.count` and `split.no`
/// metadata agree with its `-0000k-of-0000N` name, and all parts read together (named so or not)
/// have the same `split.count`.
pub(super) fn check_split_metadata(infos: &[(usize, ModelInfo)], files: &[String]) -> Result<(), FormatError> {
    let mut first: Option<(u64, &str)> = None;
    for (i, info) in infos {
        let Some(name) = files.get(*i) else { continue };
        if let Some((_, _, name_no, name_count)) = split_name_no(name) {
            if let Some(count) = info.split_count.filter(|&c| c != name_count) {
                return Err(FormatError::SplitCountMismatchesName { file: name.clone(), count, name_count });
            }
            if let Some(no) = info.split_no.filter(|&n| n.checked_add(1) != Some(name_no)) {
                return Err(FormatError::SplitNoMismatchesName { file: name.clone(), no, name_no });
            }
        }
        let Some(count) = info.split_count else { continue };
        match first {
            Some((first_count, first_name)) if first_count != count => {
                return Err(FormatError::SplitCountMetadataDisagree {
                    first: first_name.to_string(),
                    first_count,
                    second: name.clone(),
                    second_count: count,
                });
            }
            Some(_) => {}
            None => first = Some((count, name.as_str())),
        }
    }
    Ok(())
}

/// The display format: the shards' own format, with their number when there are several.
pub(super) fn display_format(
    infos: &[(usize, ModelInfo)],
    files: &[String],
    missing: usize,
) -> Result<String, FormatError> {
    let Some((_, first)) = infos.first() else {
        // Only possible with an index none of whose shards were given.
        return Ok(format!("safetensors (0 of {missing} shards)"));
    };
    if infos.iter().any(|(_, info)| info.format != first.format) {
        let list: Vec<String> = infos
            .iter()
            .map(|(i, info)| format!("{} ({})", files.get(*i).map_or("?", String::as_str), info.format))
            .collect();
        return Err(FormatError::MixedFormats { files: list.join(", ") });
    }
    Ok(match (infos.len(), missing) {
        (1, 0) => first.format.clone(),
        (n, 0) => format!("{} ({n} shards)", first.format),
        (n, m) => format!("{} ({n} of {} shards)", first.format, n + m),
    })
}
