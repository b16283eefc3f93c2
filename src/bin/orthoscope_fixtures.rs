//! The fixture writers the end-to-end tests and the fuzz script call to make their files (cargo
//! feature `fixtures`): sparse huge files, sharded sets, GGUF models, hostile files, the
//! malformed-file corpus. A test tool, never shipped; the release CLI is `orthoscope`.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    use clap::Parser;
    match fixtures::run(fixtures::Cli::parse().command) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
mod fixtures {
    use std::path::{Path, PathBuf};

    use clap::{Parser, Subcommand};
    use orthoscope::fixtures::synth;
    use orthoscope::fixtures::writers::{
        gguf_model_seeded, npy_bytes, npz_bytes, torch_zip_bytes, TorchWrap, QUANT_TYPES,
    };
    use orthoscope::read::demo;
    use orthoscope::read::format::gguf::GGML_TYPES;
    use orthoscope::read::format::DType;

    #[derive(Parser)]
    #[command(name = "orthoscope-fixtures", about = "Test files for Orthoscope's end-to-end tests")]
    pub struct Cli {
        #[command(subcommand)]
        pub command: Command,
    }

    #[derive(Subcommand)]
    pub enum Command {
        /// Write a sparse safetensors file of --size-gib GiB with the embedding
        /// (model.embed_tokens.weight, --rows × --dim) at its very end, past the 4 GiB mark: a
        /// "huge shard" for testing files beyond 32-bit offsets without the disk space. Everything
        /// before the embedding is a bf16 MLP-like tensor left as a hole (never written), so the file
        /// costs about its embedding on disk where the filesystem supports holes.
        GenerateSparse {
            out: PathBuf,
            /// Total file size in GiB (2^30 bytes; fractions allowed).
            #[arg(long, default_value_t = 10.0)]
            size_gib: f64,
            #[arg(long, default_value_t = 16384)]
            rows: usize,
            #[arg(long, default_value_t = 1024)]
            dim: usize,
            #[arg(long, default_value = "BF16")]
            dtype: String,
            #[arg(long, default_value = "trained-like")]
            kind: String,
            #[arg(long, default_value_t = 1)]
            seed: u64,
        },
        /// Write sparse-autoencoder dictionaries into DIR: `saelens` (sae_weights.safetensors with
        /// W_enc [d_in, d_sae] and W_dec [d_sae, d_in], cfg.json, and sparsity.safetensors whose
        /// first --dead latents never fired) or `sparsify` (one folder layers.N per layer, N <
        /// --layers, with sae.safetensors and cfg.json). Decoder rows are trained-like with norms
        /// far from 1.
        GenerateSae {
            dir: PathBuf,
            #[arg(long, default_value = "saelens")]
            layout: String,
            #[arg(long, default_value_t = 64)]
            d_in: usize,
            #[arg(long, default_value_t = 1024)]
            d_sae: usize,
            #[arg(long, default_value_t = 3)]
            layers: usize,
            #[arg(long, default_value_t = 16)]
            dead: usize,
            #[arg(long, default_value_t = 1)]
            seed: u64,
        },
        /// Write a PyTorch checkpoint as torch.save writes it (zip, protocol-2 pickle, storages stored
        /// 64-byte aligned): `{"model": {"embed_tokens.weight": …}, "step": 5}`, --rows × --dim, which Orthoscope lists as
        /// model.embed_tokens.weight.
        GenerateTorch {
            #[arg(long)]
            out: PathBuf,
            #[arg(long, default_value_t = 4096)]
            rows: usize,
            #[arg(long, default_value_t = 256)]
            dim: usize,
            #[arg(long, default_value = "bf16")]
            dtype: String,
            #[arg(long, default_value = "trained-like")]
            kind: String,
            #[arg(long, default_value_t = 1)]
            seed: u64,
        },
        /// Write a sharded safetensors model into DIR: model-0000k-of-0000N.safetensors (the
        /// embedding model.embed_tokens.weight in the first), model.safetensors.index.json and config.json.
        GenerateShards {
            dir: PathBuf,
            #[arg(long, default_value_t = 8192)]
            rows: usize,
            #[arg(long, default_value_t = 1024)]
            dim: usize,
            #[arg(long, default_value_t = 2)]
            shards: usize,
            /// Leave out model.safetensors.index.json.
            #[arg(long)]
            no_index: bool,
            #[arg(long, default_value = "BF16")]
            dtype: String,
            #[arg(long, default_value = "trained-like")]
            kind: String,
            #[arg(long, default_value_t = 1)]
            seed: u64,
        },
        /// Write a llama.cpp-style GGUF model (token_embd.weight, output.weight, a vocabulary); with
        /// --split N, N files OUT-0000k-of-0000N.gguf.
        GenerateGguf {
            out: PathBuf,
            #[arg(long, default_value_t = 8192)]
            rows: usize,
            #[arg(long, default_value_t = 1024)]
            dim: usize,
            /// Q8_0, Q6_K, Q4_K, F16, F32, BF16, … (a row must be a whole number of blocks).
            #[arg(long = "type", default_value = "Q8_0")]
            ggml_type: String,
            #[arg(long, default_value_t = 1)]
            split: usize,
            #[arg(long, default_value = "trained-like")]
            kind: String,
            #[arg(long, default_value_t = 1)]
            seed: u64,
        },
        /// Write an mlx-lm model folder into DIR: model.safetensors with a quantised
        /// model.embed_tokens (U32 weight, BF16 scales and biases) and config.json's quantization.
        GenerateMlx {
            dir: PathBuf,
            #[arg(long, default_value_t = 4096)]
            rows: usize,
            #[arg(long, default_value_t = 512)]
            dim: usize,
            /// 2, 3, 4, 5, 6 or 8.
            #[arg(long, default_value_t = 4)]
            bits: u8,
            /// 32, 64 or 128.
            #[arg(long, default_value_t = 64)]
            group: usize,
            /// Leave out config.json (the reader then infers bits and group from the shapes).
            #[arg(long)]
            no_config: bool,
            #[arg(long, default_value = "trained-like")]
            kind: String,
            #[arg(long, default_value_t = 1)]
            seed: u64,
        },
        /// Write a NumPy .npz (as np.savez writes it; deflated as np.savez_compressed with
        /// --compressed) holding one matrix, --name (`W_dec` or `embedding`), --rows × --dim.
        GenerateNpz {
            #[arg(long)]
            out: PathBuf,
            #[arg(long, default_value_t = 8192)]
            rows: usize,
            #[arg(long, default_value_t = 1024)]
            dim: usize,
            #[arg(long, default_value = "W_dec")]
            name: String,
            /// F32, F16 or F64.
            #[arg(long, default_value = "F32")]
            dtype: String,
            #[arg(long)]
            compressed: bool,
            #[arg(long, default_value = "trained-like")]
            kind: String,
            #[arg(long, default_value_t = 1)]
            seed: u64,
        },
        /// Write one broken or hostile file per failure the reader must name.
        Hostile { dir: PathBuf },
        /// Write the malformed-file corpus: OUT/CASE/FILES for each case, and OUT/manifest.json
        /// listing each case's files, whether it must give an error or a report, and what its
        /// message must mention.
        Corpus {
            #[arg(long)]
            out: PathBuf,
        },
    }

    fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
        std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn create_dir(dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
    }

    pub fn run(command: Command) -> Result<(), String> {
        match command {
            Command::GenerateSparse { out, size_gib, rows, dim, dtype, kind, seed } => {
                let dtype = demo::float_dtype(&dtype)?;
                if !(size_gib.is_finite() && size_gib > 0.0 && size_gib < 1e9) {
                    return Err(format!("--size-gib {size_gib}: give a positive size"));
                }
                let file_len = (size_gib * (1u64 << 30) as f64).round() as u64;
                let values = demo::generate(&kind, rows, dim, seed)?;
                let t = synth::TensorSpec::matrix("model.embed_tokens.weight", dtype, rows, dim, &values);
                drop(values);
                let layout = synth::write_sparse_safetensors(&out, file_len, &t)
                    .map_err(|e| format!("{}: {e}", out.display()))?;
                let (start, end) = layout.embedding;
                let past = if start >= 1 << 32 {
                    "past the 4 GiB mark"
                } else {
                    "NOT past the 4 GiB mark: give a larger --size-gib"
                };
                println!(
                    "{}: {} bytes; {} at bytes {start}..{end} ({past}); {} hole bytes before it",
                    out.display(),
                    layout.file_len,
                    t.name,
                    layout.padding.iter().map(|(_, a, b)| b - a).sum::<u64>()
                );
            }
            Command::GenerateSae { dir, layout, d_in, d_sae, layers, dead, seed } => {
                write_sae(&dir, &layout, d_in, d_sae, layers, dead, seed)?
            }
            Command::GenerateTorch { out, rows, dim, dtype, kind, seed } => {
                let dtype = demo::float_dtype(&dtype)?;
                let values = demo::generate(&kind, rows, dim, seed)?;
                let data = demo::encode(&values, &dtype);
                let shape = [rows as u64, dim as u64];
                let bytes = torch_zip_bytes(&[("embed_tokens.weight", dtype, &shape, &data)], TorchWrap::Model);
                write(&out, &bytes)?;
            }
            Command::GenerateShards { dir, rows, dim, shards, no_index, dtype, kind, seed } => {
                if shards == 0 {
                    return Err("--shards must be at least 1".to_string());
                }
                let dtype = demo::float_dtype(&dtype)?;
                let values = demo::generate(&kind, rows, dim, seed)?;
                create_dir(&dir)?;
                for (name, bytes) in synth::sharded_safetensors(&values, rows, dim, &dtype, shards, seed, !no_index) {
                    write(&dir.join(name), &bytes)?;
                }
            }
            Command::GenerateGguf { out, rows, dim, ggml_type, split, kind, seed } => {
                let dtype = ggml_dtype(&ggml_type)?;
                // split.count is a uint16 in llama.cpp's files.
                if split == 0 || split > usize::from(u16::MAX) {
                    return Err(format!("--split must be between 1 and {}, not {split}", u16::MAX));
                }
                if let Some((per_block, _)) = dtype.block().filter(|&(b, _)| !(dim as u64).is_multiple_of(b)) {
                    return Err(format!(
                        "--dim {dim} is not a multiple of {per_block}, the block size of {}",
                        dtype.name()
                    ));
                }
                let values = demo::generate(&kind, rows, dim, seed)?;
                let output = demo::random_init(rows, dim, seed.wrapping_add(1));
                let parts = gguf_model_seeded(&values, &output, rows, dim, &dtype, split, seed)
                    .ok_or_else(|| format!("cannot write tensors of type {} ({rows} × {dim})", dtype.name()))?;
                let paths: Vec<PathBuf> = if split == 1 {
                    vec![out.clone()]
                } else {
                    // llama.cpp's split naming: PREFIX-0000k-of-0000N.gguf next to OUT.
                    let stem =
                        out.file_name().map_or_else(|| out.display().to_string(), |n| n.to_string_lossy().into_owned());
                    let stem = stem.strip_suffix(".gguf").unwrap_or(&stem).to_string();
                    (1..=split).map(|k| out.with_file_name(synth::shard_name(&stem, k, split, "gguf"))).collect()
                };
                for (path, bytes) in paths.iter().zip(parts) {
                    write(path, &bytes)?;
                }
            }
            Command::GenerateMlx { dir, rows, dim, bits, group, no_config, kind, seed } => {
                use orthoscope::read::format::mlx::{BITS, GROUPS};
                if !BITS.contains(&bits) || !GROUPS.contains(&(group as u32)) || !dim.is_multiple_of(group) {
                    return Err(format!("--bits {bits} --group {group} --dim {dim}: MLX stores 2, 3, 4, 5, 6 or 8 bits in groups of 32, 64 or 128 dividing d"));
                }
                let values = demo::generate(&kind, rows, dim, seed)?;
                create_dir(&dir)?;
                for (name, bytes) in
                    orthoscope::fixtures::mlx_writer::model(&values, rows, dim, bits, group, !no_config)
                {
                    write(&dir.join(name), &bytes)?;
                }
            }
            Command::GenerateNpz { out, rows, dim, name, dtype, compressed, kind, seed } => {
                let (dtype, descr) = match dtype.to_uppercase().as_str() {
                    "F32" => (DType::F32, "<f4"),
                    "F16" => (DType::F16, "<f2"),
                    "F64" => (DType::F64, "<f8"),
                    other => return Err(format!("--dtype {other}: write one of F32, F16, F64")),
                };
                let values = demo::generate(&kind, rows, dim, seed)?;
                let t = synth::TensorSpec::matrix(&name, dtype, rows, dim, &values);
                drop(values);
                let npy = npy_bytes(1, descr, false, &t.shape, &t.data);
                write(&out, &npz_bytes(&[(&format!("{name}.npy"), npy)], compressed))?;
            }
            Command::Hostile { dir } => {
                create_dir(&dir)?;
                for (case, bytes) in synth::hostile_safetensors() {
                    write(&dir.join(format!("{case}.safetensors")), &bytes)?;
                }
            }
            Command::Corpus { out } => write_corpus(&out)?,
        }
        Ok(())
    }

    /// Decoder rows with norms from 0.05 to 20 (a dictionary's are not unit length).
    fn decoder(rows: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut values = demo::trained_like(rows, dim, seed);
        for (r, row) in values.chunks_exact_mut(dim.max(1)).enumerate() {
            let scale = 0.05 + 19.95 * ((r * 7919) % 1000) as f32 / 1000.0;
            row.iter_mut().for_each(|x| *x *= scale);
        }
        values
    }

    fn write_sae(
        dir: &Path,
        layout: &str,
        d_in: usize,
        d_sae: usize,
        layers: usize,
        dead: usize,
        seed: u64,
    ) -> Result<(), String> {
        let f32_tensor = |name: &str, rows: usize, dim: usize, values: &[f32]| {
            demo::TensorSpec::matrix(name, DType::F32, rows, dim, values)
        };
        match layout {
            "saelens" => {
                create_dir(dir)?;
                let w_enc = demo::random_init(d_in, d_sae, seed.wrapping_add(1));
                let w_dec = decoder(d_sae, d_in, seed);
                let weights = demo::safetensors_bytes(&[
                    f32_tensor("W_enc", d_in, d_sae, &w_enc),
                    f32_tensor("W_dec", d_sae, d_in, &w_dec),
                ]);
                write(&dir.join("sae_weights.safetensors"), &weights)?;
                let cfg = serde_json::json!({
                    "architecture": "standard", "d_in": d_in, "d_sae": d_sae,
                    "hook_name": "blocks.6.hook_resid_pre", "hook_layer": 6, "model_name": "gpt2-small",
                });
                write(&dir.join("cfg.json"), cfg.to_string().as_bytes())?;
                // log10 densities: the first `dead` latents never fired (SAELens's floor, −10).
                let sparsity: Vec<f32> =
                    (0..d_sae).map(|i| if i < dead { -10.0 } else { -3.0 + (i % 7) as f32 * 0.25 }).collect();
                let spec =
                    demo::TensorSpec { shape: vec![d_sae as u64], ..f32_tensor("sparsity", 1, d_sae, &sparsity) };
                write(&dir.join("sparsity.safetensors"), &demo::safetensors_bytes(&[spec]))?;
            }
            "sparsify" => {
                for layer in 0..layers {
                    let folder = dir.join(format!("layers.{layer}"));
                    create_dir(&folder)?;
                    let s = seed.wrapping_add(10 * layer as u64);
                    let weights = demo::safetensors_bytes(&[
                        f32_tensor("encoder.weight", d_sae, d_in, &demo::random_init(d_sae, d_in, s + 1)),
                        f32_tensor("W_dec", d_sae, d_in, &decoder(d_sae, d_in, s)),
                    ]);
                    write(&folder.join("sae.safetensors"), &weights)?;
                    let cfg = serde_json::json!({
                        "expansion_factor": (d_sae / d_in.max(1)), "normalize_decoder": true, "num_latents": d_sae,
                        "k": 32, "multi_topk": false, "skip_connection": false, "d_in": d_in,
                    });
                    write(&folder.join("cfg.json"), cfg.to_string().as_bytes())?;
                }
            }
            other => return Err(format!("--layout {other}: write saelens or sparsify")),
        }
        Ok(())
    }

    fn write_corpus(out: &Path) -> Result<(), String> {
        let mut manifest = Vec::new();
        for case in orthoscope::fixtures::corpus::corpus() {
            let dir = out.join(&case.name);
            create_dir(&dir)?;
            for (name, bytes) in &case.files {
                write(&dir.join(name), bytes)?;
            }
            let files: Vec<&str> = case.files.iter().map(|(n, _)| n.as_str()).collect();
            manifest.push(serde_json::json!({
                "name": case.name, "files": files, "expect": case.expect, "mention": case.mention,
            }));
        }
        let json = serde_json::to_vec_pretty(&manifest).map_err(|e| e.to_string())?;
        write(&out.join("manifest.json"), &json)?;
        println!("{} cases in {}", manifest.len(), out.display());
        Ok(())
    }

    /// A type the GGUF writer encodes, by its ggml name (Q8_0, Q6_K, F16, …).
    fn ggml_dtype(name: &str) -> Result<DType, String> {
        let upper = name.to_uppercase();
        let quant = GGML_TYPES.iter().map(|(_, d)| d).chain(&QUANT_TYPES).find(|d| d.name() == upper).cloned();
        match quant.unwrap_or_else(|| DType::from_safetensors(&upper)) {
            d @ (DType::F32 | DType::F16 | DType::BF16 | DType::F64) => Ok(d),
            d if d.block().is_some() && d.is_float() => Ok(d),
            _ => Err(format!("--type {name}: write one of F32, F16, BF16, F64, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, or (as random valid blocks) IQ2_XXS, IQ2_XS, IQ3_XXS, IQ1_S, IQ4_NL, IQ3_S, IQ2_S, IQ4_XS, IQ1_M, TQ1_0, TQ2_0, MXFP4")),
        }
    }
}
