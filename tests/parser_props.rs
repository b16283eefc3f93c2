//! Property tests of the header parsers (safetensors, GGUF, .npy, shard indexes, PyTorch zips): arbitrary bytes and mutated valid
//! headers never panic, and whatever a parser accepts is consistent with the bytes it was given —
//! every tensor's byte range lies inside its file and names a file that was given. A sparse
//! autoencoder's config (`cfg.json`, `hyperparams.json`) of arbitrary bytes or arbitrary JSON
//! beside valid weights gives a typed error or a dictionary whose widths are its decoder's shape.
//! The same parsers are fuzzed for longer by `fuzz/` (`scripts/fuzz.sh`).

use orthoscope::fixtures::synth::{random_init, safetensors_bytes, TensorSpec};
use orthoscope::fixtures::writers::{gguf_bytes, npy_bytes, torch_zip_bytes, GgufTensor, TorchWrap};
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::read::format::set::read_model_set;
use orthoscope::read::format::Layout;
use orthoscope::read::format::{read_model, DType, FormatError, ModelInfo};
use orthoscope::read::source::{ByteSource, SliceSource};
use orthoscope::run::job::Job;
use proptest::prelude::*;
use serde_json::Value;
use std::rc::Rc;

const EMBED: &str = "model.embed_tokens.weight";

/// A mutation of a valid file: byte flips, an insertion, a cut.
#[derive(Clone, Debug)]
struct Mutation {
    flips: Vec<(prop::sample::Index, u8)>,
    insert: Option<(prop::sample::Index, Vec<u8>)>,
    cut: Option<prop::sample::Index>,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    (
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        proptest::option::of((any::<prop::sample::Index>(), proptest::collection::vec(any::<u8>(), 1..16))),
        proptest::option::weighted(0.3, any::<prop::sample::Index>()),
    )
        .prop_map(|(flips, insert, cut)| Mutation { flips, insert, cut })
}

/// Applies `m` to the first `header` bytes of `bytes` (the rest, tensor data, is left alone so the
/// mutations hit what the parser reads).
fn mutate(mut bytes: Vec<u8>, header: usize, m: &Mutation) -> Vec<u8> {
    let span = header.clamp(1, bytes.len().max(1));
    for (at, b) in &m.flips {
        let i = at.index(span);
        if let Some(x) = bytes.get_mut(i) {
            *x = *b;
        }
    }
    if let Some((at, extra)) = &m.insert {
        let i = at.index(span).min(bytes.len());
        bytes.splice(i..i, extra.iter().copied());
    }
    if let Some(at) = &m.cut {
        let i = at.index(bytes.len().max(1));
        bytes.truncate(i);
    }
    bytes
}

/// What an accepted header must satisfy: ranges inside the file they name, start ≤ end.
fn consistent(info: &ModelInfo, lens: &[u64]) -> Result<(), String> {
    for t in &info.tensors {
        let len = lens.get(t.file).ok_or_else(|| format!("{} names file {} of {}", t.name, t.file, lens.len()))?;
        if t.byte_range.0 > t.byte_range.1 || t.byte_range.1 > *len {
            return Err(format!("{} at {:?} in a {len}-byte file", t.name, t.byte_range));
        }
    }
    Ok(())
}

fn check_one(name: &str, bytes: Vec<u8>) -> Result<(), TestCaseError> {
    let len = bytes.len() as u64;
    let outcome: Result<ModelInfo, FormatError> = read_model(&SliceSource::new(name, bytes), 0);
    if let Ok(info) = outcome {
        consistent(&info, &[len]).map_err(TestCaseError::fail)?;
    }
    Ok(())
}

fn valid_safetensors() -> (Vec<u8>, usize) {
    let v = random_init(6, 8, 1);
    let bytes = safetensors_bytes(&[
        TensorSpec::matrix(EMBED, DType::F32, 6, 8, &v),
        TensorSpec::matrix("lm_head.weight", DType::BF16, 6, 8, &v),
    ]);
    let header = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap_or([0; 8])) as usize;
    (bytes, header)
}

fn valid_gguf() -> (Vec<u8>, usize) {
    let v = random_init(4, 32, 2);
    let data: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let bytes = gguf_bytes(3, &[GgufTensor::new("token_embd.weight", DType::F32, &[4, 32], data)], &[]);
    let header = bytes.len() - 4 * 32 * 4;
    (bytes, header)
}

fn valid_npy() -> (Vec<u8>, usize) {
    let bytes = npy_bytes(1, "<f4", false, &[4, 8], &[0; 128]);
    let header = bytes.len() - 128;
    (bytes, header)
}

fn valid_index(shard: &str) -> String {
    format!("{{\"metadata\": {{\"total_size\": 384}}, \"weight_map\": {{\"{EMBED}\": \"{shard}\", \"lm_head.weight\": \"{shard}\"}}}}")
}

/// A small PyTorch checkpoint; every byte of it is "header" (the pickle and the central directory
/// sit on both sides of the storages).
fn valid_torch() -> (Vec<u8>, usize) {
    let data: Vec<u8> = random_init(8, 4, 3).iter().flat_map(|x| x.to_le_bytes()).collect();
    let bytes = torch_zip_bytes(&[("embed_tokens.weight", DType::F32, &[8, 4], &data)], TorchWrap::Lightning);
    let len = bytes.len();
    (bytes, len)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn torch_checkpoints_never_panic_and_stay_in_the_file(m in mutation(), raw in proptest::collection::vec(any::<u8>(), 0..64)) {
        let (bytes, header) = valid_torch();
        check_one("m.pt", mutate(bytes.clone(), header, &m))?;
        // Random bytes after the zip's start: its local header, then whatever follows.
        let mut prefixed = bytes[..64].to_vec();
        prefixed.extend(raw);
        check_one("r.pt", prefixed)?;
    }

    #[test]
    fn safetensors_headers_never_panic_and_stay_in_the_file(m in mutation(), raw in proptest::collection::vec(any::<u8>(), 0..64)) {
        let (bytes, header) = valid_safetensors();
        check_one("m.safetensors", mutate(bytes, header, &m))?;
        check_one("r.safetensors", raw)?;
    }

    #[test]
    fn gguf_headers_never_panic_and_stay_in_the_file(m in mutation(), raw in proptest::collection::vec(any::<u8>(), 0..64)) {
        let (bytes, header) = valid_gguf();
        check_one("m.gguf", mutate(bytes, header, &m))?;
        let mut prefixed = b"GGUF\x03\x00\x00\x00".to_vec();
        prefixed.extend(raw);
        check_one("r.gguf", prefixed)?;
    }

    #[test]
    fn npy_headers_never_panic_and_stay_in_the_file(m in mutation(), raw in proptest::collection::vec(any::<u8>(), 0..64)) {
        let (bytes, header) = valid_npy();
        check_one("m.npy", mutate(bytes, header, &m))?;
        let mut prefixed = b"\x93NUMPY\x01\x00".to_vec();
        prefixed.extend(raw);
        check_one("r.npy", prefixed)?;
    }

    #[test]
    fn shard_indexes_never_panic_and_name_only_given_files(
        m in mutation(),
        text in "\\{\"weight_map\": \\{(\"[a-z._/]{0,12}\": \"[a-z0-9._/-]{0,40}\",? ?){0,4}\\}\\}",
    ) {
        let shard = "model-00001-of-00001.safetensors";
        let (st, _) = valid_safetensors();
        let index = valid_index(shard).into_bytes();
        let header = index.len();
        for candidate in [mutate(index, header, &m), text.into_bytes()] {
            let sources = [
                SliceSource::new("model.safetensors.index.json", candidate),
                SliceSource::new(shard, st.clone()),
            ];
            let lens: Vec<u64> = sources.iter().map(|s| s.len()).collect();
            let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s as &dyn ByteSource).collect();
            if let Ok(set) = read_model_set(&refs) {
                consistent(&set.model_info(), &lens).map_err(TestCaseError::fail)?;
            }
        }
    }
}

/// An SAE's weights as each layout stores them, 8 features over d_in = 4: (config file, weights
/// file, tensors). `transposed`: a SAELens-named decoder stored with features in its columns.
fn sae_files(layout: usize) -> (&'static str, &'static str, Vec<u8>) {
    let (enc, dec) = (random_init(4, 8, 1), random_init(8, 4, 2));
    let t = |name: &str, rows: usize, cols: usize, v: &[f32]| TensorSpec::matrix(name, DType::F32, rows, cols, v);
    match layout % 4 {
        0 => (
            "cfg.json",
            "sae_weights.safetensors",
            safetensors_bytes(&[t("W_enc", 4, 8, &enc), t("W_dec", 8, 4, &dec)]),
        ),
        1 => (
            "cfg.json",
            "layers.3/sae.safetensors",
            safetensors_bytes(&[t("encoder.weight", 8, 4, &enc), t("W_dec", 8, 4, &dec)]),
        ),
        2 => (
            "hyperparams.json",
            "checkpoints/final.safetensors",
            safetensors_bytes(&[t("encoder.weight", 8, 4, &enc), t("decoder.weight", 4, 8, &dec)]),
        ),
        _ => ("cfg.json", "sae_weights.safetensors", safetensors_bytes(&[t("W_dec", 4, 8, &dec)])),
    }
}

/// Keys the readers look for (the widths most), and some they do not.
fn config_key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec!["d_in", "d_sae", "d_model", "d_out", "num_latents"]).prop_map(str::to_string),
        2 => prop::sample::select(vec![
            "k", "top_k", "expansion_factor", "architecture", "act_fn", "hook_name", "hook_point", "hook_point_in",
            "hook_layer", "transcode", "metadata",
        ])
        .prop_map(str::to_string),
        1 => "[a-z_]{1,10}",
    ]
}

/// Any JSON leaf, weighted towards the widths of `sae_files` and their near misses.
fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::from),
        4 => prop::sample::select(vec![0u64, 1, 4, 8, 16, 1 << 40, u64::MAX]).prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        1 => "[ -~]{0,16}".prop_map(Value::from),
        // Long strings and control characters: what a card must not show as a hook.
        1 => proptest::collection::vec(any::<char>(), 0..300).prop_map(|c| Value::from(c.into_iter().collect::<String>())),
    ]
}

/// Any JSON value, nested (`metadata` inside `metadata`, arrays of objects, …).
fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(4, 48, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(config_key(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The config a layout of [`sae_files`] is saved with.
fn plain_config(layout: usize) -> Value {
    match layout % 4 {
        1 => serde_json::json!({"d_in": 4, "num_latents": 8, "k": 2}),
        2 => serde_json::json!({"d_model": 4, "d_sae": 8, "hook_point_in": "blocks.3.hook_resid_post"}),
        _ => {
            serde_json::json!({"d_in": 4, "d_sae": 8, "architecture": "standard", "hook_name": "blocks.3.hook_resid_pre"})
        }
    }
}

/// A config for `layout`: mostly its plain config with a few keys replaced or added (so the
/// dictionary path is reached with hostile values), else any JSON at all.
fn sae_config(layout: usize) -> impl Strategy<Value = Value> {
    let value = prop_oneof![3 => json_leaf(), 1 => json_value()];
    let edits = proptest::collection::btree_map(config_key(), value, 1..4);
    prop_oneof![
        3 => edits.prop_map(move |edits| {
            let mut config = plain_config(layout);
            if let Some(object) = config.as_object_mut() {
                object.extend(edits);
            }
            config
        }),
        1 => proptest::collection::btree_map(config_key(), json_value(), 0..10).prop_map(|m| Value::Object(m.into_iter().collect())),
        1 => json_value(),
    ]
}

/// The config `bytes` beside the weights of `layout`, read as a dropped folder and analysed: no
/// panic; invalid JSON is a typed error naming the config; a dictionary's d_sae and width
/// (d_in, or d_out for a transcoder) are its decoder's shape, read by columns where it says so,
/// and its hook and architecture are short and printable; the analysis reports those widths.
fn check_sae_config(layout: usize, bytes: Vec<u8>) -> Result<(), TestCaseError> {
    let (config, weights_name, weights) = sae_files(layout);
    let is_json = serde_json::from_slice::<Value>(&bytes).is_ok();
    let sources = [SliceSource::new(config, bytes.clone()), SliceSource::new(weights_name, weights.clone())];
    let lens: Vec<u64> = sources.iter().map(|s| s.len()).collect();
    let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s as &dyn ByteSource).collect();
    let set = match read_model_set(&refs) {
        Ok(set) => set,
        Err(e) => {
            prop_assert!(!is_json, "valid JSON refused: {e}");
            prop_assert!(matches!(&e, FormatError::InvalidConfig { file, .. } if file == config), "{e:?}");
            return Ok(());
        }
    };
    consistent(&set.model_info(), &lens).map_err(TestCaseError::fail)?;
    let Some(d) = set.dictionary.clone() else { return Ok(()) };
    let decoder = set.tensors.iter().find(|t| t.name == d.decoder);
    let decoder = decoder.ok_or_else(|| TestCaseError::fail(format!("no tensor {}", d.decoder)))?;
    let width = d.d_out.unwrap_or(d.d_in);
    prop_assert_eq!(&decoder.shape, &vec![d.d_sae, width], "{:?}", d);
    prop_assert!(d.d_sae > 0 && d.d_in > 0, "{:?}", d);
    prop_assert_eq!(d.columns_are_features, matches!(decoder.layout, Layout::Transposed { .. }), "{:?}", d);
    prop_assert_eq!(d.transcoder || d.d_out.is_some(), d.transcoder, "a d_out only for a transcoder: {:?}", d);
    for text in [&d.hook, &d.architecture].into_iter().flatten() {
        prop_assert!(text.chars().count() <= 120 && !text.chars().any(char::is_control), "{text:?}");
    }
    // The analysis of the files says the same, over the decoder's rows.
    let owned: Vec<Rc<dyn ByteSource>> =
        vec![Rc::new(SliceSource::new(config, bytes)), Rc::new(SliceSource::new(weights_name, weights))];
    let report = Job::open(owned, None, AnalysisConfig::default())
        .and_then(|(job, _)| job.run())
        .and_then(|job| job.report(0.0))
        .map_err(|e| TestCaseError::fail(format!("{d:?}: {e}")))?;
    let got = report.dictionary.as_ref().map(|r| &r.dictionary);
    prop_assert_eq!(got, Some(&d));
    prop_assert_eq!((report.rows, report.dim), (d.d_sae, width));
    Ok(())
}

proptest! {
    // Cheap cases (8 × 4 matrices): more of them, so that hostile values reach the dictionary path.
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn sae_configs_of_arbitrary_json_give_an_error_or_a_dictionary_of_the_decoders_shape(
        (layout, config) in (0usize..4).prop_flat_map(|layout| (Just(layout), sae_config(layout))),
    ) {
        check_sae_config(layout, serde_json::to_vec(&config).unwrap_or_default())?;
    }

    #[test]
    fn sae_configs_of_arbitrary_bytes_never_panic(
        layout in 0usize..4,
        raw in proptest::collection::vec(any::<u8>(), 0..96),
        m in mutation(),
    ) {
        check_sae_config(layout, raw)?;
        // A valid config, mutated.
        let valid = br#"{"d_in": 4, "d_sae": 8, "d_model": 4, "architecture": "jumprelu", "metadata": {"hook_name": "blocks.3.hook_resid_post"}}"#.to_vec();
        let len = valid.len();
        check_sae_config(layout, mutate(valid, len, &m))?;
    }
}

#[test]
fn each_sae_layout_of_the_property_is_read_as_a_dictionary_with_a_plain_config() {
    // The property's layouts are dictionaries with their right config: the generators reach the
    // dictionary path, not only refusals.
    for layout in 0..4 {
        let (config, _, _) = sae_files(layout);
        let text =
            if config == "hyperparams.json" { r#"{"d_model": 4, "d_sae": 8}"# } else { r#"{"d_in": 4, "d_sae": 8}"# };
        let sources = [
            SliceSource::new(config, text.as_bytes().to_vec()),
            SliceSource::new(sae_files(layout).1, sae_files(layout).2),
        ];
        let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s as &dyn ByteSource).collect();
        let d = read_model_set(&refs).expect("reads").dictionary.expect("a dictionary");
        assert_eq!((d.d_sae, d.d_in, d.columns_are_features), (8, 4, layout >= 2), "layout {layout}");
        check_sae_config(layout, text.as_bytes().to_vec()).expect("the property holds");
    }
}
