//! A sparse autoencoder's own config (`cfg.json`, `hyperparams.json`; `src/read/format/set/`,
//! `src/read/dictionary.rs`) read beside valid weights of one of four layouts, 8 features over
//! d_in = 4: SAELens, sparsify, Llama Scope (features in columns) and a SAELens-named decoder
//! stored by columns. The first byte picks the layout, the rest is the config. Besides "no panic":
//! a dictionary's widths are its decoder's shape, and its hook and architecture are printable.
#![no_main]
use libfuzzer_sys::fuzz_target;
use orthoscope::fixtures::synth::{random_init, safetensors_bytes, TensorSpec};
use orthoscope::read::format::set::read_model_set;
use orthoscope::read::format::{DType, Layout};
use orthoscope::read::source::{ByteSource, SliceSource};

#[path = "common.rs"]
mod common;

fn sae_files(layout: u8) -> (&'static str, &'static str, Vec<u8>) {
    let (enc, dec) = (random_init(4, 8, 1), random_init(8, 4, 2));
    let t = |name: &str, rows: usize, cols: usize, v: &[f32]| TensorSpec::matrix(name, DType::F32, rows, cols, v);
    match layout % 4 {
        0 => ("cfg.json", "sae_weights.safetensors", safetensors_bytes(&[t("W_enc", 4, 8, &enc), t("W_dec", 8, 4, &dec)])),
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

fuzz_target!(|data: &[u8]| {
    let Some((&layout, config_bytes)) = data.split_first() else { return };
    let (config, weights_name, weights) = sae_files(layout);
    let sources = [SliceSource::new(config, config_bytes.to_vec()), SliceSource::new(weights_name, weights)];
    let lens: Vec<u64> = sources.iter().map(|s| s.len()).collect();
    let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s as &dyn ByteSource).collect();
    let Ok(set) = read_model_set(&refs) else { return };
    common::check(&set.model_info(), &lens);
    if let Some(d) = &set.dictionary {
        let decoder = set.tensors.iter().find(|t| t.name == d.decoder);
        assert!(decoder.is_some(), "no tensor {}", d.decoder);
        if let Some(decoder) = decoder {
            assert_eq!(decoder.shape, vec![d.d_sae, d.d_out.unwrap_or(d.d_in)], "{d:?}");
            assert_eq!(d.columns_are_features, matches!(decoder.layout, Layout::Transposed { .. }), "{d:?}");
        }
        assert!(d.d_sae > 0 && d.d_in > 0, "{d:?}");
        for text in [&d.hook, &d.architecture].into_iter().flatten() {
            assert!(text.chars().count() <= 120 && !text.chars().any(char::is_control), "{text:?}");
        }
    }
});
