//! A sharded model's index (`model.safetensors.index.json`, `pytorch_model.bin.index.json`): its
//! `weight_map` read entry by entry, within limits, without building a JSON tree of the document.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::{MAX_INDEX_ENTRIES, MAX_INDEX_SHARDS};
use crate::read::format::FormatError;
use crate::read::source::base_name;

/// `weight_map` of an index: tensor name → shard base name. Read entry by entry (no JSON tree of
/// the whole document), counting entries and shards against [`MAX_INDEX_ENTRIES`] and
/// [`MAX_INDEX_SHARDS`] as they come.
pub(super) fn parse_index(name: &str, bytes: &[u8]) -> Result<BTreeMap<String, String>, FormatError> {
    let bad = |reason: String| FormatError::InvalidIndex { file: name.to_string(), reason };
    let text = std::str::from_utf8(bytes).map_err(|e| bad(format!("not UTF-8 ({e})")))?;
    let failure = Cell::new(None);
    let parsed = IndexSeed { failure: &failure }.deserialize(&mut serde_json::Deserializer::from_str(text));
    if let Some(failure) = failure.take() {
        return Err(match failure {
            IndexFailure::OverLimit { what, limit } => {
                FormatError::IndexOverLimit { file: name.to_string(), what, limit }
            }
            IndexFailure::NotAString(tensor) => {
                bad(format!("\"weight_map\" entry for tensor '{tensor}' is not a file name string"))
            }
        });
    }
    parsed
        .map_err(|e| bad(format!("invalid JSON: {e}")))?
        .ok_or_else(|| bad("no \"weight_map\" object mapping tensor names to shard file names".to_string()))
}

/// Why [`IndexSeed`] stopped, kept aside so the error is a [`FormatError`] and not serde's text.
enum IndexFailure {
    OverLimit { what: &'static str, limit: u64 },
    NotAString(String),
}

/// Reads an index document: a JSON object whose `weight_map` is taken, everything else skipped.
struct IndexSeed<'a> {
    failure: &'a Cell<Option<IndexFailure>>,
}

impl<'de> DeserializeSeed<'de> for IndexSeed<'_> {
    type Value = Option<BTreeMap<String, String>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for IndexSeed<'_> {
    type Value = Option<BTreeMap<String, String>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object with a \"weight_map\"")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut weight_map = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "weight_map" {
                weight_map = Some(map.next_value_seed(WeightMapSeed { failure: self.failure })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(weight_map)
    }
}

/// Reads a `weight_map` object entry by entry, within the limits.
struct WeightMapSeed<'a> {
    failure: &'a Cell<Option<IndexFailure>>,
}

impl<'de> DeserializeSeed<'de> for WeightMapSeed<'_> {
    type Value = BTreeMap<String, String>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for WeightMapSeed<'_> {
    type Value = BTreeMap<String, String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object mapping tensor names to shard file names")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        let mut shards: BTreeSet<String> = BTreeSet::new();
        let mut entries = 0u64;
        let stop = |failure: IndexFailure| {
            self.failure.set(Some(failure));
            de::Error::custom("index refused")
        };
        while let Some(tensor) = map.next_key::<String>()? {
            entries += 1;
            if entries > MAX_INDEX_ENTRIES {
                return Err(stop(IndexFailure::OverLimit { what: "entries", limit: MAX_INDEX_ENTRIES }));
            }
            let Value::String(shard) = map.next_value::<Value>()? else {
                return Err(stop(IndexFailure::NotAString(tensor)));
            };
            // Most entries name a bare file: keep the string rather than copy it.
            let shard = if base_name(&shard).len() == shard.len() { shard } else { base_name(&shard).to_string() };
            if !shards.contains(&shard) {
                if shards.len() as u64 >= MAX_INDEX_SHARDS {
                    return Err(stop(IndexFailure::OverLimit { what: "shard files", limit: MAX_INDEX_SHARDS }));
                }
                shards.insert(shard.clone());
            }
            out.insert(tensor, shard);
        }
        Ok(out)
    }
}
