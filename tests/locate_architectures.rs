//! Which tensor is the input token embedding, on the layouts of real architectures (names and
//! shapes as in their published checkpoints, scaled down), and what happens when the files hold
//! none: ε is a property of the input embedding (docs/method.md §1), so a block weight or the
//! output matrix is never analysed as if it were one.

use std::rc::Rc;

use orthoscope::fixtures::synth::{self, safetensors_bytes, TensorSpec};
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::read::format::set::read_model_set;
use orthoscope::read::format::{DType, ModelInfo, ShapeHints, TensorInfo};
use orthoscope::read::locate::{choose_in_set, locate, role_by_name, LocateError, TensorRole};
use orthoscope::read::source::{ByteSource, SliceSource};
use orthoscope::run::job::Job;
use orthoscope::Error;

/// A model header of `(name, shape)` tensors, all bf16 (no bytes are read by `locate`).
fn model(tensors: &[(&str, &[u64])], vocab_size: Option<u64>) -> ModelInfo {
    let tensors = tensors
        .iter()
        .map(|(name, shape)| TensorInfo {
            name: name.to_string(),
            dtype: DType::BF16,
            shape: shape.to_vec(),
            byte_range: (0, 0),
            file: 0,
            layout: Default::default(),
        })
        .collect();
    ModelInfo { format: "safetensors".into(), tensors, vocab_size, ..ModelInfo::default() }
}

fn chosen(m: &ModelInfo) -> Option<&str> {
    locate(m).embedding.map(|i| m.tensors[i].name.as_str())
}

fn unembedding(m: &ModelInfo) -> Option<&str> {
    locate(m).unembedding.map(|i| m.tensors[i].name.as_str())
}

/// (architecture, tensors in file order, the input embedding, the output matrix if separate).
type Layout = (&'static str, Vec<(&'static str, &'static [u64])>, &'static str, Option<&'static str>);

fn layouts() -> Vec<Layout> {
    vec![
        (
            "Llama 2/3, Mistral, Qwen2 (Hugging Face)",
            vec![
                ("lm_head.weight", &[320, 64]),
                ("model.embed_tokens.weight", &[320, 64]),
                ("model.layers.0.mlp.down_proj.weight", &[64, 172]),
                ("model.layers.0.mlp.up_proj.weight", &[172, 64]),
                ("model.layers.0.self_attn.q_proj.weight", &[64, 64]),
                ("model.norm.weight", &[64]),
            ],
            "model.embed_tokens.weight",
            Some("lm_head.weight"),
        ),
        (
            "Llama / Mistral consolidated (Meta's own format)",
            vec![
                ("layers.0.attention.wq.weight", &[64, 64]),
                ("layers.0.feed_forward.w1.weight", &[172, 64]),
                ("norm.weight", &[64]),
                ("output.weight", &[320, 64]),
                ("tok_embeddings.weight", &[320, 64]),
            ],
            "tok_embeddings.weight",
            Some("output.weight"),
        ),
        (
            "GPT-2 (tied; position embeddings are not token embeddings)",
            vec![
                ("h.0.attn.c_attn.weight", &[48, 144]),
                ("h.0.mlp.c_fc.weight", &[48, 192]),
                ("ln_f.weight", &[48]),
                ("wpe.weight", &[1024, 48]),
                ("wte.weight", &[503, 48]),
            ],
            "wte.weight",
            None,
        ),
        (
            "GPT-NeoX / Pythia",
            vec![
                ("embed_out.weight", &[504, 64]),
                ("gpt_neox.embed_in.weight", &[504, 64]),
                ("gpt_neox.layers.0.attention.query_key_value.weight", &[192, 64]),
            ],
            "gpt_neox.embed_in.weight",
            Some("embed_out.weight"),
        ),
        (
            "BERT",
            vec![
                ("bert.embeddings.position_embeddings.weight", &[512, 48]),
                ("bert.embeddings.token_type_embeddings.weight", &[2, 48]),
                ("bert.embeddings.word_embeddings.weight", &[305, 48]),
                ("bert.encoder.layer.0.attention.self.query.weight", &[48, 48]),
                ("cls.predictions.transform.dense.weight", &[48, 48]),
            ],
            "bert.embeddings.word_embeddings.weight",
            None,
        ),
        (
            "T5",
            vec![
                ("decoder.block.0.layer.0.SelfAttention.q.weight", &[32, 32]),
                ("decoder.embed_tokens.weight", &[321, 32]),
                ("encoder.embed_tokens.weight", &[321, 32]),
                ("lm_head.weight", &[321, 32]),
                ("shared.weight", &[321, 32]),
            ],
            "shared.weight",
            Some("lm_head.weight"),
        ),
        (
            "OPT",
            vec![
                ("lm_head.weight", &[502, 48]),
                ("model.decoder.embed_positions.weight", &[2050, 48]),
                ("model.decoder.embed_tokens.weight", &[502, 48]),
                ("model.decoder.layers.0.fc1.weight", &[192, 48]),
            ],
            "model.decoder.embed_tokens.weight",
            Some("lm_head.weight"),
        ),
        (
            "Falcon",
            vec![
                ("lm_head.weight", &[650, 64]),
                ("transformer.h.0.self_attention.query_key_value.weight", &[192, 64]),
                ("transformer.word_embeddings.weight", &[650, 64]),
            ],
            "transformer.word_embeddings.weight",
            Some("lm_head.weight"),
        ),
        (
            "BLOOM",
            vec![
                ("h.0.mlp.dense_h_to_4h.weight", &[256, 64]),
                ("word_embeddings.weight", &[2508, 64]),
                ("word_embeddings_layernorm.weight", &[64]),
            ],
            "word_embeddings.weight",
            None,
        ),
        (
            "ChatGLM",
            vec![
                ("transformer.embedding.word_embeddings.weight", &[650, 64]),
                ("transformer.encoder.layers.0.self_attention.query_key_value.weight", &[192, 64]),
                ("transformer.output_layer.weight", &[650, 64]),
            ],
            "transformer.embedding.word_embeddings.weight",
            Some("transformer.output_layer.weight"),
        ),
        (
            "Phi-2 (original names)",
            vec![
                ("layers.1.mixer.Wqkv.weight", &[192, 64]),
                ("lm_head.linear.weight", &[512, 64]),
                ("transformer.embd.wte.weight", &[512, 64]),
            ],
            "transformer.embd.wte.weight",
            Some("lm_head.linear.weight"),
        ),
        (
            "Mamba",
            vec![
                ("backbone.embedding.weight", &[502, 48]),
                ("backbone.layers.0.mixer.in_proj.weight", &[192, 48]),
                ("lm_head.weight", &[502, 48]),
            ],
            "backbone.embedding.weight",
            Some("lm_head.weight"),
        ),
        (
            "RWKV (the output matrix sorts after the embedding and has its shape)",
            vec![
                ("blocks.0.att.key.weight", &[64, 64]),
                ("blocks.0.ffn.value.weight", &[64, 256]),
                ("emb.weight", &[655, 64]),
                ("head.weight", &[655, 64]),
                ("ln_out.weight", &[64]),
            ],
            "emb.weight",
            Some("head.weight"),
        ),
        (
            "Gemma 3 multimodal (vision tower beside the language model)",
            vec![
                ("language_model.model.embed_tokens.weight", &[2621, 64]),
                ("multi_modal_projector.mm_input_projection_weight", &[72, 64]),
                ("vision_tower.vision_model.embeddings.position_embedding.weight", &[4096, 72]),
                ("vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight", &[288, 72]),
            ],
            "language_model.model.embed_tokens.weight",
            None,
        ),
        (
            "InternLM2",
            vec![
                ("model.layers.0.attention.wqkv.weight", &[192, 64]),
                ("model.tok_embeddings.weight", &[920, 64]),
                ("output.weight", &[920, 64]),
            ],
            "model.tok_embeddings.weight",
            Some("output.weight"),
        ),
        (
            "XLM-RoBERTa",
            vec![
                ("lm_head.decoder.weight", &[2500, 48]),
                ("roberta.embeddings.position_embeddings.weight", &[514, 48]),
                ("roberta.embeddings.word_embeddings.weight", &[2500, 48]),
            ],
            "roberta.embeddings.word_embeddings.weight",
            Some("lm_head.decoder.weight"),
        ),
        (
            "llama.cpp GGUF",
            vec![
                ("blk.0.attn_q.weight", &[64, 64]),
                ("blk.0.ffn_up.weight", &[172, 64]),
                ("output.weight", &[320, 64]),
                ("output_norm.weight", &[64]),
                ("token_embd.weight", &[320, 64]),
            ],
            "token_embd.weight",
            Some("output.weight"),
        ),
    ]
}

#[test]
fn the_input_embedding_of_every_architecture_in_the_table() {
    for (arch, tensors, embedding, output) in layouts() {
        let m = model(&tensors, None);
        assert_eq!(chosen(&m), Some(embedding), "{arch}: {}", locate(&m).reason);
        assert_eq!(unembedding(&m), output, "{arch}");
        assert_eq!(role_by_name(embedding), TensorRole::InputEmbedding, "{arch}");
        if let Some(out) = output {
            assert_eq!(role_by_name(out), TensorRole::OutputMatrix, "{arch}");
        }
        // The same names under a prefix no checkpoint uses still name the embedding.
        if embedding.ends_with("embed_tokens.weight") {
            let prefixed: Vec<(String, &[u64])> = tensors.iter().map(|(n, s)| (format!("wrapper.{n}"), *s)).collect();
            let refs: Vec<(&str, &[u64])> = prefixed.iter().map(|(n, s)| (n.as_str(), *s)).collect();
            let m = model(&refs, None);
            assert_eq!(chosen(&m), Some(format!("wrapper.{embedding}").as_str()), "{arch} with a prefix");
        }
    }
}

#[test]
fn block_weights_and_output_matrices_are_never_the_input_embedding() {
    for name in [
        "model.layers.31.mlp.up_proj.weight",
        "model.layers.0.self_attn.o_proj.weight",
        "blk.7.ffn_down.weight",
        "h.11.attn.c_proj.weight",
        "transformer.h.3.mlp.c_fc.weight",
        "attn.q_proj.weight",
        "encoder.layer.2.attention.output.dense.weight",
        "wpe.weight",
        "model.decoder.embed_positions.weight",
        "bert.embeddings.token_type_embeddings.weight",
    ] {
        assert_eq!(role_by_name(name), TensorRole::Other, "{name}");
    }
    for name in ["lm_head.weight", "output.weight", "embed_out.weight", "head.weight", "model.lm_head.weight"] {
        assert_eq!(role_by_name(name), TensorRole::OutputMatrix, "{name}");
    }
}

#[test]
fn the_second_shard_of_llama_2_alone_holds_no_input_embedding() {
    // Its last layers, the final norm and lm_head: the tallest matrix is an MLP weight.
    let m = model(
        &[
            ("lm_head.weight", &[320, 64]),
            ("model.layers.31.mlp.down_proj.weight", &[64, 172]),
            ("model.layers.31.mlp.up_proj.weight", &[172, 64]),
            ("model.norm.weight", &[64]),
        ],
        None,
    );
    let located = locate(&m);
    assert_eq!(located.embedding, None);
    assert!(
        located.reason.contains("lm_head.weight") && located.reason.contains("not the paper's ε"),
        "{}",
        located.reason
    );
}

#[test]
fn a_file_of_attention_weights_only_holds_no_input_embedding() {
    let m = model(
        &[("attn.q_proj.weight", &[64, 64]), ("attn.k_proj.weight", &[64, 64]), ("attn.v_proj.weight", &[640, 64])],
        None,
    );
    let located = locate(&m);
    assert_eq!(located.embedding, None, "{}", located.reason);
    assert!(located.reason.contains("only transformer-block weights"), "{}", located.reason);
}

#[test]
fn unnamed_matrices_need_a_stated_vocabulary_size_or_a_clear_shape() {
    let two = [("enc.a", &[1000u64, 16][..]), ("enc.b", &[3000, 16][..])];
    assert_eq!(chosen(&model(&two, None)), None, "two tall unnamed matrices: no guess");
    assert_eq!(chosen(&model(&two, Some(1000))), Some("enc.a"), "the one with the stated vocabulary size");
    assert_eq!(chosen(&model(&two, Some(7))), None, "a vocabulary size no matrix has: no guess");
    // The only matrix in the file (a .npy, a bare tensor file) is what the user means.
    assert_eq!(chosen(&model(&[("array", &[200, 16])], None)), Some("array"));
    // One tall matrix outside the blocks, beside block weights.
    let beside = [("E", &[32000u64, 4096][..]), ("layers.0.attn.q.weight", &[4096, 4096][..])];
    assert_eq!(chosen(&model(&beside, None)), Some("E"));
    // …but not a square-ish one.
    let square = [("E", &[5000u64, 4096][..]), ("layers.0.attn.q.weight", &[4096, 4096][..])];
    assert_eq!(chosen(&model(&square, None)), None);
}

// ---------------------------------------------------------------------------------------------
// Through real files: the refusal's message, and an explicit choice that is labelled.

fn sources(files: &[(String, Vec<u8>)]) -> Vec<Rc<dyn ByteSource>> {
    files.iter().map(|(n, b)| Rc::new(SliceSource::new(n.clone(), b.clone())) as Rc<dyn ByteSource>).collect()
}

fn second_shard() -> (String, Vec<u8>) {
    let out = synth::random_init(320, 32, 2);
    let up = synth::random_init(96, 32, 3);
    let bytes = safetensors_bytes(&[
        TensorSpec::matrix("lm_head.weight", DType::F32, 320, 32, &out),
        TensorSpec::matrix("model.layers.31.mlp.up_proj.weight", DType::F32, 96, 32, &up),
    ]);
    ("model-00002-of-00002.safetensors".to_string(), bytes)
}

#[test]
fn a_shard_without_the_embedding_names_the_shard_to_drop_and_runs_nothing() {
    let files = vec![second_shard()];
    let refs: Vec<Rc<dyn ByteSource>> = sources(&files);
    let set = read_model_set(&refs.iter().map(|s| s.as_ref()).collect::<Vec<_>>()).expect("the shard reads");
    let err = choose_in_set(&set, None).expect_err("no input embedding");
    let LocateError::NoInputEmbedding { candidates, .. } = &err else {
        panic!("expected NoInputEmbedding, got {err:?}")
    };
    assert_eq!(candidates, &["lm_head.weight", "model.layers.31.mlp.up_proj.weight"]);
    let message = err.to_string();
    for part in ["model-00001-of-00002.safetensors", "lm_head.weight", "not the paper's ε", "drop it"] {
        assert!(message.contains(part), "message lacks {part:?}: {message}");
    }
    // The job refuses as well: no analysis is prepared.
    let refused = Job::open(sources(&files), None, AnalysisConfig::default());
    assert!(matches!(refused, Err(Error::Locate(LocateError::NoInputEmbedding { .. }))));
}

#[test]
fn an_explicit_choice_is_analysed_and_labelled_as_not_the_embedding() {
    let files = vec![second_shard()];
    for (tensor, role) in
        [("lm_head.weight", TensorRole::OutputMatrix), ("model.layers.31.mlp.up_proj.weight", TensorRole::Other)]
    {
        let (job, opened) = Job::open(sources(&files), Some(tensor), AnalysisConfig::default()).expect("opens");
        assert_eq!(opened.chosen, tensor);
        let report = job.run().expect("runs").report_with_geometry(0.0).expect("report");
        assert_eq!(report.tensor_reason, "chosen by you");
        assert_eq!(report.tensor_role, role, "{tensor}");
        let json = serde_json::to_value(&report).expect("json");
        let want = if role == TensorRole::OutputMatrix { "output_matrix" } else { "other" };
        assert_eq!(json["tensor_role"], want);
        let text = orthoscope::result::text::report(&report);
        assert!(text.contains("not comparable with the paper's Table 1"), "{text}");
    }
}

#[test]
fn the_located_embedding_is_labelled_the_input_embedding() {
    let v = synth::random_init(200, 16, 1);
    let files = vec![(
        "m.safetensors".to_string(),
        safetensors_bytes(&[TensorSpec::matrix("model.embed_tokens.weight", DType::F32, 200, 16, &v)]),
    )];
    let (job, _) = Job::open(sources(&files), None, AnalysisConfig::default()).expect("opens");
    let report = job.run().expect("runs").report_with_geometry(0.0).expect("report");
    assert_eq!(
        (report.tensor_reason.as_str(), report.tensor_role),
        ("known embedding name", TensorRole::InputEmbedding)
    );
    assert!(!orthoscope::result::text::report(&report).contains("NOTE"));
}

#[test]
fn split_gguf_parts_whose_counts_disagree_are_refused_with_both_counts() {
    let values = synth::random_init(64, 32, 1);
    let output = synth::random_init(64, 32, 2);
    let three = orthoscope::fixtures::writers::gguf_model(&values, &output, 64, 32, &DType::F32, 3).expect("3 parts");
    let two = orthoscope::fixtures::writers::gguf_model(&values, &output, 64, 32, &DType::F32, 2).expect("2 parts");
    let files = vec![
        (synth::shard_name("m", 1, 3, "gguf"), three[0].clone()),
        (synth::shard_name("m", 2, 2, "gguf"), two[1].clone()),
    ];
    let refs = sources(&files);
    let err = read_model_set(&refs.iter().map(|s| s.as_ref()).collect::<Vec<_>>()).expect_err("counts disagree");
    let message = err.to_string();
    for part in ["m-00001-of-00003.gguf", "3 parts", "m-00002-of-00002.gguf", "says 2"] {
        assert!(message.contains(part), "message lacks {part:?}: {message}");
    }
}

#[test]
fn a_split_gguf_part_of_blocks_only_names_the_first_part() {
    let values = synth::random_init(64, 32, 1);
    let output = synth::random_init(64, 32, 2);
    let parts = orthoscope::fixtures::writers::gguf_model(&values, &output, 64, 32, &DType::F32, 3).expect("3 parts");
    // Which parts hold token_embd is the writer's business: find one that does not.
    let names: Vec<String> = (1..=3).map(|k| synth::shard_name("m", k, 3, "gguf")).collect();
    for (k, part) in parts.iter().enumerate() {
        let files = vec![(names[k].clone(), part.clone())];
        let refs = sources(&files);
        let set = read_model_set(&refs.iter().map(|s| s.as_ref()).collect::<Vec<_>>()).expect("a part reads");
        if set.tensors.iter().any(|t| t.name == "token_embd.weight") {
            continue;
        }
        let message = choose_in_set(&set, None).expect_err("no embedding in this part").to_string();
        assert!(message.contains(&names[0]), "part {}: {message}", k + 1);
    }
}

fn with_hints(tensors: &[(&str, &[u64])], vocab_size: Option<u64>, hints: ShapeHints) -> ModelInfo {
    ModelInfo { hints, ..model(tensors, vocab_size) }
}

#[test]
fn config_hidden_size_tie_and_tokenizer_size_pick_an_unnamed_matrix() {
    let two = [("a", &[1000u64, 16][..]), ("b", &[1000, 32][..])];
    assert_eq!(chosen(&model(&two, Some(1000))), None, "two matrices with the vocabulary's rows");
    let hidden = ShapeHints { hidden_size: Some(32), ..ShapeHints::default() };
    assert_eq!(chosen(&with_hints(&two, Some(1000), hidden)), Some("b"), "the one with the hidden size");

    // A tied model that keeps its one token matrix as lm_head.
    let tied_only = [("lm_head.weight", &[320u64, 64][..]), ("model.layers.0.mlp.up_proj.weight", &[172, 64][..])];
    assert_eq!(chosen(&model(&tied_only, None)), None, "an output matrix alone is not the input embedding");
    let tied = ShapeHints { tied: Some(true), ..ShapeHints::default() };
    let m = with_hints(&tied_only, Some(320), tied);
    assert_eq!(chosen(&m), Some("lm_head.weight"));
    assert!(locate(&m).reason.contains("tie_word_embeddings"), "{}", locate(&m).reason);
    assert_eq!(orthoscope::read::locate::role_of_choice(&m, "lm_head.weight"), TensorRole::InputEmbedding);
    let untied = ShapeHints { tied: Some(false), ..ShapeHints::default() };
    assert_eq!(chosen(&with_hints(&tied_only, Some(320), untied)), None);

    // The tokenizer's 50295 tokens in a 51200-row matrix (Phi-2's padding), beside a square one.
    let phi = [("E", &[51200u64, 64][..]), ("P", &[2048, 64][..])];
    let tokens = ShapeHints { tokenizer_tokens: Some(50295), ..ShapeHints::default() };
    assert_eq!(chosen(&with_hints(&phi, None, tokens)), Some("E"));
    let too_few = ShapeHints { tokenizer_tokens: Some(60000), ..ShapeHints::default() };
    assert_eq!(chosen(&with_hints(&phi, None, too_few)), None, "fewer rows than tokens: not the embedding");
}

#[test]
fn a_dropped_config_and_tokenizer_reach_the_choice() {
    let a = synth::random_init(300, 16, 1);
    let b = synth::random_init(300, 24, 2);
    let weights = (
        "weights.safetensors".to_string(),
        safetensors_bytes(&[
            TensorSpec::matrix("enc.a", DType::F32, 300, 16, &a),
            TensorSpec::matrix("enc.b", DType::F32, 300, 24, &b),
        ]),
    );
    let read = |files: &[(String, Vec<u8>)]| {
        let refs = sources(files);
        let set = read_model_set(&refs.iter().map(|s| s.as_ref()).collect::<Vec<_>>()).expect("reads");
        choose_in_set(&set, None).map(|(t, reason)| (t.name, reason))
    };
    assert!(read(std::slice::from_ref(&weights)).is_err(), "no hint: no guess");
    let config = ("config.json".to_string(), br#"{"text_config": {"vocab_size": 300, "hidden_size": 24}}"#.to_vec());
    let (name, reason) = read(&[weights.clone(), config]).expect("config decides");
    assert_eq!(name, "enc.b");
    assert!(reason.contains("hidden size 24"), "{reason}");
    // A tokenizer of 290 tokens (+ padding) and d from n_embd.
    let vocab: Vec<String> = (0..290).map(|i| format!("\"t{i}\":{i}")).collect();
    let tokenizer = format!("{{\"model\":{{\"type\":\"BPE\",\"vocab\":{{{}}}}}}}", vocab.join(","));
    let config = ("config.json".to_string(), br#"{"n_embd": 16}"#.to_vec());
    let (name, reason) =
        read(&[weights, config, ("tokenizer.json".to_string(), tokenizer.into_bytes())]).expect("tokenizer decides");
    assert_eq!(name, "enc.a");
    assert!(reason.contains("290 tokens"), "{reason}");
}
