//! Native command line over the same core as the web page: the same `Report`, as JSON or text.
//! With the cargo feature `fixtures` (the `orthoscope-fixtures` binary) it also writes the test
//! fixtures, hostile files and the malformed-file corpus the end-to-end tests use.

#[cfg(not(target_arch = "wasm32"))]
pub fn main() -> std::process::ExitCode {
    cli::main()
}

#[cfg(target_arch = "wasm32")]
pub fn main() {}

#[cfg(not(target_arch = "wasm32"))]
mod cli {
    use std::path::PathBuf;
    use std::process::ExitCode;
    use std::rc::Rc;
    use std::sync::Mutex;
    use std::time::Instant;

    use clap::{Parser, Subcommand, ValueEnum};
    use orthoscope::analysis::AnalysisConfig;
    use orthoscope::demo;
    #[cfg(feature = "fixtures")]
    use orthoscope::format::fixtures::gguf_model;
    use orthoscope::format::set::{read_model_set, ModelSet};
    use orthoscope::format::DType;
    use orthoscope::job::Job;
    use orthoscope::locate::choose_in_set;
    use orthoscope::locate::locate;
    use orthoscope::neighbours::{nearest, Query};
    use orthoscope::pass::{shares_for, Share};
    use orthoscope::report::Report;
    use orthoscope::source::{ByteSource, FileSource};
    #[cfg(feature = "fixtures")]
    use orthoscope::synth;

    #[derive(Parser)]
    #[command(name = "orthoscope", version, about = "Representational capacity of a model's token embeddings")]
    struct Cli {
        #[command(subcommand)]
        command: Command,
    }

    #[derive(Subcommand)]
    enum Command {
        /// Compute ε and the capacities for a model: one file, or the files of a sharded model
        /// (shards, index, config.json; a directory stands for the files in it).
        Analyze {
            #[arg(required = true)]
            files: Vec<PathBuf>,
            /// Tensor to analyse (default: the located token embedding).
            #[arg(long)]
            tensor: Option<String>,
            /// Seed of the visiting order and the histogram sample.
            #[arg(long, default_value_t = orthoscope::plan::DEFAULT_SEED)]
            seed: u64,
            /// Stop after this many rows and report an estimate with its interval.
            #[arg(long)]
            rows: Option<u64>,
            /// Print the Report as JSON.
            #[arg(long)]
            json: bool,
            /// Also compute μ, σ, ε of the mean-centred rows (a second pass; not the paper's ε).
            #[arg(long)]
            centred: bool,
            /// Threads sharing the pass (default: every core). Fewer run when their accumulators
            /// would not fit the memory budget (600 MB at d = 8192 allows 2).
            #[arg(long)]
            threads: Option<usize>,
        },
        /// The exact nearest neighbours (by cosine, over all rows) of one row of the embedding, named
        /// by its row id or its token string (from a GGUF vocabulary or a tokenizer.json given too).
        Neighbours {
            #[arg(required = true)]
            files: Vec<PathBuf>,
            /// Row id (token id).
            #[arg(long, conflicts_with = "token", required_unless_present = "token")]
            row: Option<u64>,
            /// Token string, looked up in the vocabulary.
            #[arg(long)]
            token: Option<String>,
            /// How many neighbours.
            #[arg(long, default_value_t = 10)]
            k: u32,
            #[arg(long)]
            tensor: Option<String>,
            #[arg(long)]
            json: bool,
        },
        /// List the tensors of a model (files or directories, as for analyze), the one that would be
        /// analysed, and the files missing or ignored.
        Inspect {
            #[arg(required = true)]
            files: Vec<PathBuf>,
        },
        /// Write a generated matrix as a safetensors file (fixtures, benchmarks).
        Generate {
            out: PathBuf,
            #[arg(long, value_enum, default_value_t = Kind::TrainedLike)]
            kind: Kind,
            #[arg(long, default_value_t = 8192)]
            rows: usize,
            #[arg(long, default_value_t = 1024)]
            dim: usize,
            #[arg(long, default_value = "BF16")]
            dtype: String,
            #[arg(long, default_value_t = 1)]
            seed: u64,
            #[arg(long, default_value = "model.embed_tokens.weight")]
            name: String,
        },
        #[cfg(feature = "fixtures")]
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
            #[arg(long, value_enum, default_value_t = Kind::TrainedLike)]
            kind: Kind,
            #[arg(long, default_value_t = 1)]
            seed: u64,
        },
        #[cfg(feature = "fixtures")]
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
            #[arg(long, value_enum, default_value_t = Kind::TrainedLike)]
            kind: Kind,
            #[arg(long, default_value_t = 1)]
            seed: u64,
        },
        #[cfg(feature = "fixtures")]
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
            #[arg(long, value_enum, default_value_t = Kind::TrainedLike)]
            kind: Kind,
            #[arg(long, default_value_t = 1)]
            seed: u64,
        },
        #[cfg(feature = "fixtures")]
        /// Write one broken or hostile file per failure the reader must name.
        Hostile { dir: PathBuf },
        #[cfg(feature = "fixtures")]
        /// Write the malformed-file corpus: OUT/CASE/FILES for each case, and OUT/manifest.json
        /// listing each case's files, whether it must give an error or a report, and what its
        /// message must mention.
        Corpus {
            #[arg(long)]
            out: PathBuf,
        },
    }

    #[derive(Clone, Copy, ValueEnum)]
    enum Kind {
        TrainedLike,
        RandomInit,
        Class1Like,
    }

    pub fn main() -> ExitCode {
        let cli = Cli::parse();
        match run(cli.command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("error: {message}");
                ExitCode::FAILURE
            }
        }
    }

    fn run(command: Command) -> Result<(), String> {
        match command {
            Command::Analyze { files, tensor, seed, rows, json, centred, threads } => {
                let report = analyze(&files, tensor.as_deref(), seed, rows, centred, threads)?;
                let text = if json {
                    serde_json::to_string_pretty(&report).map_err(|e| e.to_string())? + "\n"
                } else {
                    text_report(&report)
                };
                // A closed pipe (`| head`) is not an error worth a panic.
                let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
                Ok(())
            }
            Command::Neighbours { files, row, token, k, tensor, json } => {
                let sources: Vec<Rc<dyn ByteSource>> =
                    open_all(&files)?.into_iter().map(|s| Rc::new(s) as Rc<dyn ByteSource>).collect();
                let (job, _) =
                    Job::open(sources, tensor.as_deref(), AnalysisConfig::default()).map_err(|e| e.to_string())?;
                let query = match (row, token) {
                    (Some(r), _) => Query::Row(r),
                    (None, Some(t)) => Query::Token(t),
                    (None, None) => return Err("give --row N or --token STRING".to_string()),
                };
                let row = job.matrix().resolve(&query).map_err(|e| e.to_string())?;
                let found = nearest(job.matrix(), row, k).map_err(|e| e.to_string())?;
                let text = if json {
                    serde_json::to_string_pretty(&found).map_err(|e| e.to_string())? + "\n"
                } else {
                    let name = |r: u64, t: &Option<String>| {
                        t.as_ref().map_or(format!("row {r}"), |t| format!("row {r} {t:?}"))
                    };
                    let mut out =
                        format!("nearest to {} over {} rows:\n", name(found.row, &found.token), found.rows_compared);
                    for n in &found.neighbours {
                        out.push_str(&format!("{:>10.6}  {}\n", n.cosine, name(n.row, &n.token)));
                    }
                    out
                };
                let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
                Ok(())
            }
            Command::Inspect { files } => {
                let sources = open_all(&files)?;
                let set = read_set(&sources)?;
                let model = set.model_info();
                let located = locate(&model);
                let chosen = choose_in_set(&set, None);
                let embedding = chosen.as_ref().ok().map(|(t, _)| (t.name.clone(), t.file));
                // One file keeps the one-file listing; several add the file holding each tensor.
                let several = set.shards.len() > 1;
                for (i, t) in model.tensors.iter().enumerate() {
                    let mark = if embedding == Some((t.name.clone(), t.file)) {
                        "  <- embedding"
                    } else if located.unembedding == Some(i) {
                        "  <- unembedding"
                    } else {
                        ""
                    };
                    let file = if several {
                        format!("  [{}]", set.files.get(t.file).map_or("?", String::as_str))
                    } else {
                        String::new()
                    };
                    println!("{:<50} {:<6} {:?}{}{}", t.name, t.dtype.name(), t.shape, file, mark);
                }
                if several {
                    println!("format: {}", set.format);
                }
                for m in &set.missing {
                    println!("missing: {m}");
                }
                for i in &set.ignored {
                    println!("ignored: {i}");
                }
                match chosen {
                    Ok((_, reason)) => println!("choice: {reason}"),
                    Err(e @ orthoscope::Error::MissingShard { .. }) => println!("choice: none: {e}"),
                    Err(_) => println!("choice: {}", located.reason),
                }
                Ok(())
            }
            Command::Generate { out, kind, rows, dim, dtype, seed, name } => {
                let dtype = float_dtype(&dtype)?;
                let values = generate(kind, rows, dim, seed);
                let t = demo::TensorSpec::matrix(&name, dtype, rows, dim, &values);
                std::fs::write(&out, demo::safetensors_bytes(&[t])).map_err(|e| format!("{}: {e}", out.display()))
            }
            #[cfg(feature = "fixtures")]
            Command::GenerateSparse { out, size_gib, rows, dim, dtype, kind, seed } => {
                let dtype = float_dtype(&dtype)?;
                if !(size_gib.is_finite() && size_gib > 0.0 && size_gib < 1e9) {
                    return Err(format!("--size-gib {size_gib}: give a positive size"));
                }
                let file_len = (size_gib * (1u64 << 30) as f64).round() as u64;
                let values = generate(kind, rows, dim, seed);
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
                Ok(())
            }
            #[cfg(feature = "fixtures")]
            Command::GenerateShards { dir, rows, dim, shards, no_index, dtype, kind, seed } => {
                if shards == 0 {
                    return Err("--shards must be at least 1".to_string());
                }
                let dtype = float_dtype(&dtype)?;
                let values = generate(kind, rows, dim, seed);
                std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                for (name, bytes) in synth::sharded_safetensors(&values, rows, dim, &dtype, shards, seed, !no_index) {
                    let path = dir.join(name);
                    std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
                }
                Ok(())
            }
            #[cfg(feature = "fixtures")]
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
                let values = generate(kind, rows, dim, seed);
                let output = demo::random_init(rows, dim, seed.wrapping_add(1));
                let parts = gguf_model(&values, &output, rows, dim, &dtype, split)
                    .ok_or_else(|| format!("cannot write tensors of type {} ({rows} × {dim})", dtype.name()))?;
                let paths: Vec<PathBuf> = if split == 1 {
                    vec![out.clone()]
                } else {
                    // llama.cpp's split naming: PREFIX-0000k-of-0000N.gguf next to OUT.
                    let stem = source_name(&out);
                    let stem = stem.strip_suffix(".gguf").unwrap_or(&stem).to_string();
                    (1..=split).map(|k| out.with_file_name(synth::shard_name(&stem, k, split, "gguf"))).collect()
                };
                for (path, bytes) in paths.iter().zip(parts) {
                    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
                }
                Ok(())
            }
            #[cfg(feature = "fixtures")]
            Command::Corpus { out } => write_corpus(&out),
            #[cfg(feature = "fixtures")]
            Command::Hostile { dir } => {
                std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
                for (case, bytes) in synth::hostile_safetensors() {
                    let path = dir.join(format!("{case}.safetensors"));
                    std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
                }
                Ok(())
            }
        }
    }

    #[cfg(feature = "fixtures")]
    fn write_corpus(out: &std::path::Path) -> Result<(), String> {
        let io = |p: &std::path::Path, e: std::io::Error| format!("{}: {e}", p.display());
        let mut manifest = Vec::new();
        for case in orthoscope::corpus::corpus() {
            let dir = out.join(&case.name);
            std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
            for (name, bytes) in &case.files {
                let path = dir.join(name);
                std::fs::write(&path, bytes).map_err(|e| io(&path, e))?;
            }
            let files: Vec<&str> = case.files.iter().map(|(n, _)| n.as_str()).collect();
            manifest.push(serde_json::json!({
                "name": case.name, "files": files, "expect": case.expect, "mention": case.mention,
            }));
        }
        let path = out.join("manifest.json");
        let json = serde_json::to_vec_pretty(&manifest).map_err(|e| e.to_string())?;
        std::fs::write(&path, json).map_err(|e| io(&path, e))?;
        println!("{} cases in {}", manifest.len(), out.display());
        Ok(())
    }

    fn analyze(
        files: &[PathBuf],
        tensor: Option<&str>,
        seed: u64,
        rows: Option<u64>,
        centred: bool,
        threads: Option<usize>,
    ) -> Result<Report, String> {
        let started = Instant::now();
        let open = || -> Result<Vec<Rc<dyn ByteSource>>, String> {
            Ok(open_all(files)?.into_iter().map(|s| Rc::new(s) as Rc<dyn ByteSource>).collect())
        };
        let config = AnalysisConfig { seed, stop_after_rows: rows, ..AnalysisConfig::default() };
        let (mut job, opened) = Job::open(open()?, tensor, config.clone()).map_err(|e| e.to_string())?;
        let requested = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let of = shares_for(u32::try_from(requested).unwrap_or(u32::MAX), job.accumulator_bytes());
        job.split(of);
        // The lead job (share 0, the histogram's sample, the unembedding) runs on this thread; each
        // other share on a pool thread that opens the files itself (sources are not Send).
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads((of as usize).saturating_sub(1).max(1))
            .build()
            .map_err(|e| format!("could not start {of} threads: {e}"))?;
        let partials = Mutex::new(Vec::new());
        let mut lead = None;
        pool.in_place_scope(|scope| {
            for index in 1..of {
                let (partials, chosen, config) = (&partials, &opened.chosen, config.clone());
                scope.spawn(move |_| {
                    let partial = open().and_then(|sources| {
                        let share = Share::new(index, of).ok_or("internal: share out of range")?;
                        let analysis = Job::open_share(sources, chosen, config, share).map_err(|e| e.to_string())?;
                        Ok(analysis.run(&mut |_| {}).map_err(|e| e.to_string())?.into_partial())
                    });
                    if let Ok(mut all) = partials.lock() {
                        all.push(partial);
                    }
                });
            }
            lead = Some(job.run());
        });
        let mut job = lead.ok_or("internal: the lead share did not run")?.map_err(|e| e.to_string())?;
        let partials = partials.into_inner().map_err(|_| "a worker thread panicked".to_string())?;
        if partials.len() + 1 != of as usize {
            return Err("a worker thread panicked".to_string());
        }
        for partial in partials {
            job.absorb(&partial?).map_err(|e| e.to_string())?;
        }
        let mut report =
            job.report_with_geometry(started.elapsed().as_secs_f64() * 1000.0).map_err(|e| e.to_string())?;
        if centred {
            report.centred = Some(orthoscope::centred::centred(job.matrix()).map_err(|e| e.to_string())?);
        }
        Ok(report)
    }

    /// Opens every file named, a directory standing for the regular files directly in it (sorted,
    /// not recursive; symbolic links to files count, as in the Hugging Face cache).
    fn open_all(paths: &[PathBuf]) -> Result<Vec<FileSource>, String> {
        let mut files = Vec::new();
        for path in paths {
            if path.is_dir() {
                let entries = std::fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))?;
                let mut inside = Vec::new();
                for entry in entries {
                    let entry = entry.map_err(|e| format!("{}: {e}", path.display()))?;
                    if entry.path().is_file() {
                        inside.push(entry.path());
                    }
                }
                if inside.is_empty() {
                    return Err(format!("{}: the directory holds no files", path.display()));
                }
                inside.sort();
                files.extend(inside);
            } else {
                files.push(path.clone());
            }
        }
        files.iter().map(|f| FileSource::open(f).map_err(|e| e.to_string())).collect()
    }

    fn read_set(sources: &[FileSource]) -> Result<ModelSet, String> {
        let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s as &dyn ByteSource).collect();
        read_model_set(&refs).map_err(|e| e.to_string())
    }

    fn generate(kind: Kind, rows: usize, dim: usize, seed: u64) -> Vec<f32> {
        match kind {
            Kind::TrainedLike => demo::trained_like(rows, dim, seed),
            Kind::RandomInit => demo::random_init(rows, dim, seed),
            Kind::Class1Like => demo::class1_like(rows, dim, seed),
        }
    }

    /// A float dtype the safetensors writer encodes.
    fn float_dtype(name: &str) -> Result<DType, String> {
        match DType::from_safetensors(&name.to_uppercase()) {
            d @ (DType::F32 | DType::F64 | DType::F16 | DType::BF16) => Ok(d),
            _ => Err(format!("--dtype {name}: write F32, F64, F16 or BF16")),
        }
    }

    #[cfg(feature = "fixtures")]
    /// A type the GGUF writer encodes, by its ggml name (Q8_0, Q6_K, F16, …).
    fn ggml_dtype(name: &str) -> Result<DType, String> {
        let upper = name.to_uppercase();
        let quant = orthoscope::format::fixtures::QUANT_TYPES.iter().find(|d| d.name() == upper).cloned();
        match quant.unwrap_or_else(|| DType::from_safetensors(&upper)) {
            d @ (DType::F32 | DType::F16 | DType::BF16 | DType::F64) => Ok(d),
            d if d.block().is_some() && d.is_float() => Ok(d),
            _ => Err(format!("--type {name}: write one of F32, F16, BF16, F64, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K")),
        }
    }

    #[cfg(feature = "fixtures")]
    fn source_name(path: &std::path::Path) -> String {
        path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
    }

    fn text_report(r: &Report) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "{} · {} · {} · {} × {}", r.file, r.tensor, r.dtype, r.rows, r.dim);
        let _ = writeln!(
            s,
            "rows used {} (dropped {}), pairs {}, {}",
            r.rows_used,
            r.rows_dropped,
            r.pairs,
            if r.exact { "exact" } else { "estimate" }
        );
        let _ = writeln!(
            s,
            "μ = {:.6}  σ = {:.6}  ε = μ+2σ = {:.6}  μ+3σ = {:.6}",
            r.mu, r.sigma, r.epsilon, r.epsilon_3sigma
        );
        if let Some([lo, hi]) = r.epsilon_ci {
            let _ = writeln!(s, "ε 95% interval [{lo:.6}, {hi:.6}] (seed {})", r.seed);
        }
        let c = &r.log10_capacity;
        let _ = writeln!(
            s,
            "log10 capacity: full {:.3}  simple {:.3}  JL C=3.029 {:.3}  JL C=8 {:.3}{}",
            c.adjusted_full,
            c.adjusted_simple,
            c.jl_c3029,
            c.jl_c8,
            if r.capacity_determinate { "" } else { "  (indeterminate: ε ≥ 0.1)" }
        );
        if let Some(u) = &r.unembedding {
            let _ = writeln!(
                s,
                "unembedding {} (not the paper's ε): μ = {:.6}  σ = {:.6}  μ+2σ = {:.6} over {} of {} rows",
                u.tensor, u.mu, u.sigma, u.mu_plus_2sigma, u.rows_seen, u.rows
            );
        }
        if let Some(g) = &r.geometry {
            let dims: Vec<String> =
                g.top_mean_dimensions.iter().map(|m| format!("{} ({:+.4})", m.dim, m.contribution)).collect();
            let _ = writeln!(
                s,
                "geometry: λ₁/Σλ = {:.3}, participation ratio {:.2}, effective rank {:.2}, ‖s/V‖ = {:.4} ({:.0} ms)",
                g.leading_share(),
                g.participation_ratio,
                g.effective_rank,
                g.mean_vector_norm,
                g.eigen_ms
            );
            let _ = writeln!(s, "dimensions that carry μ: {}", dims.join(", "));
        }
        if let Some(c) = &r.centred {
            let _ = writeln!(
                s,
                "centred (not the paper's ε): μ = {:.6}  σ = {:.6}  μ+2σ = {:.6} after subtracting the mean row (‖m‖ = {:.4})",
                c.mu, c.sigma, c.epsilon, c.mean_norm
            );
        }
        if let Some(p) = r.top_pairs.first() {
            let name = |id: u64, t: &Option<String>| t.as_ref().map_or(id.to_string(), |t| format!("{id} {t:?}"));
            let _ = writeln!(
                s,
                "most similar pair of the sample: {} · {} (cos {:.4}); {} of the top {} above ε",
                name(p.a, &p.a_token),
                name(p.b, &p.b_token),
                p.cosine,
                r.top_pairs.iter().filter(|p| p.cosine > r.epsilon).count(),
                r.top_pairs.len()
            );
        }
        let _ =
            writeln!(s, "tied: {} — {}", r.tied.map_or("unknown", |t| if t { "yes" } else { "no" }), r.tied_evidence);
        let _ = writeln!(s, "class {:?}, {:.0} ms, kernel {}", r.class, r.timing_ms, r.kernel);
        s
    }
}
