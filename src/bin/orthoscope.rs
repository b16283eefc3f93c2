//! Native command line over the same core as the web page: the same `Report`, as JSON or text.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    cli::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
mod cli {
    use std::path::PathBuf;
    use std::process::ExitCode;
    use std::time::Instant;

    use clap::{Parser, Subcommand, ValueEnum};
    use orthoscope::analysis::{Analysis, AnalysisConfig, Origin};
    use orthoscope::format::{read_model, DType};
    use orthoscope::locate::{choose, locate};
    use orthoscope::report::Report;
    use orthoscope::source::FileSource;
    use orthoscope::synth;

    #[derive(Parser)]
    #[command(name = "orthoscope", version, about = "Representational capacity of a model's token embeddings")]
    struct Cli {
        #[command(subcommand)]
        command: Command,
    }

    #[derive(Subcommand)]
    enum Command {
        /// Compute ε and the capacities for a model file.
        Analyze {
            file: PathBuf,
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
        },
        /// List the tensors of a model file and the one that would be analysed.
        Inspect { file: PathBuf },
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
        /// Write one broken or hostile file per failure the reader must name.
        Hostile { dir: PathBuf },
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
            Command::Analyze { file, tensor, seed, rows, json } => {
                let report = analyze(&file, tensor.as_deref(), seed, rows)?;
                let text = if json {
                    serde_json::to_string_pretty(&report).map_err(|e| e.to_string())? + "\n"
                } else {
                    text_report(&report)
                };
                // A closed pipe (`| head`) is not an error worth a panic.
                let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
                Ok(())
            }
            Command::Inspect { file } => {
                let source = FileSource::open(&file).map_err(|e| e.to_string())?;
                let model = read_model(&source, 0).map_err(|e| e.to_string())?;
                let located = locate(&model);
                for (i, t) in model.tensors.iter().enumerate() {
                    let mark = if located.embedding == Some(i) { "  <- embedding" } else if located.unembedding == Some(i) { "  <- unembedding" } else { "" };
                    println!("{:<50} {:<6} {:?}{}", t.name, t.dtype.name(), t.shape, mark);
                }
                println!("choice: {}", located.reason);
                Ok(())
            }
            Command::Generate { out, kind, rows, dim, dtype, seed, name } => {
                let values = match kind {
                    Kind::TrainedLike => synth::trained_like(rows, dim, seed),
                    Kind::RandomInit => synth::random_init(rows, dim, seed),
                    Kind::Class1Like => synth::class1_like(rows, dim, seed),
                };
                let dtype = DType::from_safetensors(&dtype.to_uppercase());
                let t = synth::TensorSpec::matrix(&name, dtype, rows, dim, &values);
                std::fs::write(&out, synth::safetensors_bytes(&[t])).map_err(|e| format!("{}: {e}", out.display()))
            }
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

    fn analyze(file: &std::path::Path, tensor: Option<&str>, seed: u64, rows: Option<u64>) -> Result<Report, String> {
        let started = Instant::now();
        let source = FileSource::open(file).map_err(|e| e.to_string())?;
        let model = read_model(&source, 0).map_err(|e| e.to_string())?;
        let name = source_name(file);
        let (info, reason) = choose(&model, tensor, &name).map_err(|e| e.to_string())?;
        let origin = Origin { file: name, format: model.format.clone(), tensor_reason: reason };
        let config = AnalysisConfig { seed, stop_after_rows: rows, ..AnalysisConfig::default() };
        let analysis = Analysis::new(Box::new(source), info, origin, config).map_err(|e| e.to_string())?;
        let analysis = analysis.run(&mut |_| {}).map_err(|e| e.to_string())?;
        analysis.report(started.elapsed().as_secs_f64() * 1000.0).map_err(|e| e.to_string())
    }

    fn source_name(path: &std::path::Path) -> String {
        path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
    }

    fn text_report(r: &Report) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "{} · {} · {} · {} × {}", r.file, r.tensor, r.dtype, r.rows, r.dim);
        let _ = writeln!(s, "rows used {} (dropped {}), pairs {}, {}", r.rows_used, r.rows_dropped, r.pairs, if r.exact { "exact" } else { "estimate" });
        let _ = writeln!(s, "μ = {:.6}  σ = {:.6}  ε = μ+2σ = {:.6}  μ+3σ = {:.6}", r.mu, r.sigma, r.epsilon, r.epsilon_3sigma);
        if let Some([lo, hi]) = r.epsilon_ci {
            let _ = writeln!(s, "ε 95% interval [{lo:.6}, {hi:.6}] (seed {})", r.seed);
        }
        let c = &r.log10_capacity;
        let _ = writeln!(s, "log10 capacity: full {:.3}  simple {:.3}  JL C=3.029 {:.3}  JL C=8 {:.3}{}", c.adjusted_full, c.adjusted_simple, c.jl_c3029, c.jl_c8,
            if r.capacity_determinate { "" } else { "  (indeterminate: ε ≥ 0.1)" });
        let _ = writeln!(s, "class {:?}, {:.0} ms, kernel {}", r.class, r.timing_ms, r.kernel);
        s
    }
}
