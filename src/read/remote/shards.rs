//! A shard index opened by URL: the shards it names, each at an address next to the index.

use std::collections::BTreeSet;

use serde_json::Value;

use super::url::{path_of, percent_encode, split_origin};
use super::RemoteError;

/// The URL of `shard` in the folder of `index_url`. The shard must be a plain file name (the index
/// gives base names: `format::set` keeps only the part after the last `/`); it is percent-encoded
/// into one path segment, so it cannot leave the index's folder or origin. The index's query
/// (a signed link's signature) belongs to the index alone and is dropped.
pub fn shard_url(index_url: &str, shard: &str) -> Result<String, RemoteError> {
    let bad = || RemoteError::BadShardName { index: index_url.to_string(), shard: shard.to_string() };
    if shard.is_empty()
        || shard == "."
        || shard == ".."
        || shard.contains(['/', '\\'])
        || shard.chars().any(|c| c.is_control())
    {
        return Err(bad());
    }
    let (origin, _) = split_origin(index_url);
    let path = path_of(index_url);
    let folder = path.rfind('/').and_then(|i| path.get(..=i)).unwrap_or("/");
    Ok(format!("{origin}{folder}{}", percent_encode(shard)))
}

/// Shards named by an index's `weight_map`: `(file name, URL)`, each once, in name order.
pub fn index_shards(index_url: &str, json: &[u8]) -> Result<Vec<(String, String)>, RemoteError> {
    let bad = |reason: String| RemoteError::BadIndex { url: index_url.to_string(), reason };
    let value: Value = serde_json::from_slice(json).map_err(|e| bad(format!("invalid JSON: {e}")))?;
    let map = value
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("no \"weight_map\" object mapping tensor names to shard file names".to_string()))?;
    let mut names = BTreeSet::new();
    for (tensor, shard) in map {
        let shard = shard
            .as_str()
            .ok_or_else(|| bad(format!("\"weight_map\" entry for tensor '{tensor}' is not a file name string")))?;
        // As format::set reads it: the base name, next to the index.
        names.insert(shard.rsplit(['/', '\\']).next().unwrap_or(shard).to_string());
    }
    if names.is_empty() {
        return Err(bad("its \"weight_map\" names no shards".to_string()));
    }
    let pickled = |n: &String| {
        let n = n.to_ascii_lowercase();
        n.ends_with(".bin") || n.ends_with(".pt") || n.ends_with(".pth")
    };
    if names.iter().all(pickled) {
        return Err(bad(
            "it lists pickled PyTorch shards (.bin), which Orthoscope does not read; open the model's .safetensors \
             or .gguf files instead"
                .to_string(),
        ));
    }
    names.into_iter().map(|n| shard_url(index_url, &n).map(|u| (n, u))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_resolve_next_to_the_index_and_cannot_escape() {
        let index = "https://h.example/org/m/resolve/main/model.safetensors.index.json?sig=abc";
        assert_eq!(
            shard_url(index, "model-00001-of-00002.safetensors"),
            Ok("https://h.example/org/m/resolve/main/model-00001-of-00002.safetensors".to_string())
        );
        // Characters that would start a query, a fragment or a new segment are encoded.
        assert_eq!(
            shard_url(index, "a?b#c%d.safetensors").ok(),
            Some("https://h.example/org/m/resolve/main/a%3Fb%23c%25d.safetensors".into())
        );
        for bad in ["", ".", "..", "../x.safetensors", "/etc/x", "https://evil.example/x.safetensors", "a\\b"] {
            assert!(matches!(shard_url(index, bad), Err(RemoteError::BadShardName { .. })), "{bad}");
        }
        assert_eq!(shard_url("http://h:81/x.json", "s.safetensors").ok(), Some("http://h:81/s.safetensors".into()));
        assert_eq!(shard_url("http://h:81", "s.safetensors").ok(), Some("http://h:81/s.safetensors".into()));
    }

    #[test]
    fn index_shards_are_base_names_next_to_the_index() {
        let index = "https://h/o/m/resolve/main/model.safetensors.index.json";
        let json = br#"{"metadata":{},"weight_map":{"a":"model-00002-of-00002.safetensors","b":"model-00001-of-00002.safetensors","c":"../../other/model-00001-of-00002.safetensors"}}"#;
        let shards = index_shards(index, json).unwrap_or_default();
        assert_eq!(
            shards,
            vec![
                (
                    "model-00001-of-00002.safetensors".to_string(),
                    "https://h/o/m/resolve/main/model-00001-of-00002.safetensors".to_string()
                ),
                (
                    "model-00002-of-00002.safetensors".to_string(),
                    "https://h/o/m/resolve/main/model-00002-of-00002.safetensors".to_string()
                ),
            ]
        );
        assert!(matches!(index_shards(index, b"{"), Err(RemoteError::BadIndex { .. })));
        assert!(matches!(index_shards(index, br#"{"weight_map":{}}"#), Err(RemoteError::BadIndex { .. })));
        assert!(matches!(index_shards(index, br#"{"weight_map":{"a":3}}"#), Err(RemoteError::BadIndex { .. })));
        let pickled = index_shards(index, br#"{"weight_map":{"a":"pytorch_model-00001-of-00002.bin"}}"#);
        assert!(pickled.is_err_and(|e| e.to_string().contains("pickled")));
    }
}
