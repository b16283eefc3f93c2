//! The native command line over the same core as the web page: the same `Report`, as JSON or text.
//! Argument parsing and printing only; the pass is `run::threads`, the text `result::text`.

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
    use std::rc::Rc;

    use clap::{Parser, Subcommand};
    use orthoscope::explain::neighbours::nearest;
    use orthoscope::pass::analysis::AnalysisConfig;
    use orthoscope::pass::gpu::GpuChoice;
    use orthoscope::pass::plan::DEFAULT_SEED;
    use orthoscope::read::constructions::construct;
    use orthoscope::read::demo;
    use orthoscope::read::format::set::read_model_set;
    use orthoscope::read::locate::{choose_in_set, locate, LocateError};
    use orthoscope::read::matrix::Query;
    use orthoscope::read::source::ByteSource;
    use orthoscope::result::text;
    use orthoscope::run::job::Job;
    use orthoscope::run::threads::{
        analyze_each, analyze_paths, each_model, open_paths, PassRequest, Split, ThreadsError,
    };
    use orthoscope::Error;

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
            #[arg(long, default_value_t = DEFAULT_SEED)]
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
            /// Threads sharing the pass (default: every core). Each takes a share of the rows with
            /// a whole Gram matrix while they fit the memory budget (600 MB: 8 at d = 4096) and
            /// d < 8192; beyond that each takes every row and a band of the matrix's columns. The
            /// eigen step of the geometry runs on them too.
            #[arg(long)]
            threads: Option<usize>,
            /// How the threads share the pass: auto (rows while the budget holds, else columns),
            /// rows, or columns (each thread reads every row and sums a band of G).
            #[arg(long, value_enum, default_value = "auto")]
            split: Split,
            /// Run the Gram pass on a GPU: the first adapter found (Vulkan, Metal or DX12; a
            /// software one such as lavapipe too, which is no faster than the CPU). Where there is
            /// none, or it fails, or the sample says f64 is needed, the CPU runs the pass and the
            /// output says why.
            #[arg(long)]
            gpu: bool,
            /// Each path (a file or a folder) is its own model, analysed one after another: a
            /// dictionary per layer, say; a folder of several dictionaries in folders of their own
            /// (layers.N/, layer_N/…) stands for each. With --json a JSON array of Reports, else a table.
            #[arg(long)]
            each: bool,
            /// A dictionary's latents whose log10 firing density (SAELens's sparsity.safetensors,
            /// given alongside) is below this are set aside as dead (default −9.5: never fired;
            /// −12 … 0, as the page's ?dead_below=).
            #[arg(long, value_name = "LOG10", allow_negative_numbers = true,
                  value_parser = |s: &str| orthoscope::read::dictionary::parse_dead_below(s).map_err(|e| e.to_string()))]
            dead_below: Option<f64>,
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
        /// Write a generated matrix, or a known optimal line packing, as a safetensors file
        /// (fixtures, benchmarks, references).
        Generate {
            out: PathBuf,
            /// trained-like, random-init or class1-like (the built-in demos' generators).
            #[arg(long, default_value = "trained-like")]
            kind: String,
            #[arg(long, default_value_t = 8192)]
            rows: usize,
            /// Width (default 1024). With --construction, the R^N its lines are placed in (default:
            /// their own; kerdock: 64, and the bases are those of the largest d = 4^k ≤ N).
            #[arg(long)]
            dim: Option<usize>,
            /// F32, F64, F16 or BF16 (default BF16; F32 for a construction, whose values bf16 does
            /// not all hold).
            #[arg(long)]
            dtype: Option<String>,
            #[arg(long, default_value_t = 1)]
            seed: u64,
            #[arg(long, default_value = "model.embed_tokens.weight")]
            name: String,
            /// A known optimal line packing instead of a generated matrix: kerdock, e8, leech,
            /// equiangular-28 or equiangular-276 (one unit row per line).
            #[arg(long, conflicts_with_all = ["kind", "rows", "seed"])]
            construction: Option<String>,
        },
    }

    pub fn main() -> ExitCode {
        match run(Cli::parse().command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("error: {message}");
                ExitCode::FAILURE
            }
        }
    }

    /// Prints `text`; a closed pipe (`| head`) is not an error worth a panic.
    fn print(text: &str) {
        let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
    }

    fn json<T: serde::Serialize>(value: &T) -> Result<String, String> {
        serde_json::to_string_pretty(value).map(|j| j + "\n").map_err(|e| e.to_string())
    }

    fn sources(files: &[PathBuf]) -> Result<Vec<Rc<dyn ByteSource>>, String> {
        let opened = open_paths(files).map_err(|e| e.to_string())?;
        Ok(opened.into_iter().map(|s| Rc::new(s) as Rc<dyn ByteSource>).collect())
    }

    fn run(command: Command) -> Result<(), String> {
        match command {
            Command::Analyze {
                files,
                tensor,
                seed,
                rows,
                json: as_json,
                centred,
                threads,
                split,
                gpu,
                each,
                dead_below,
            } => {
                let config = AnalysisConfig {
                    seed,
                    stop_after_rows: rows,
                    dead_below_log10: dead_below,
                    ..AnalysisConfig::default()
                };
                // Asked for explicitly: any adapter, software ones included.
                let gpu = if gpu { GpuChoice::Any } else { GpuChoice::Off };
                let request = PassRequest { tensor, config, threads, split, centred, gpu, ..PassRequest::default() };
                if each {
                    let files = each_model(&files).map_err(describe)?;
                    let reports = analyze_each(&files, &request).map_err(describe)?;
                    if as_json {
                        print(&json(&reports)?);
                    } else {
                        let named: Vec<(String, _)> =
                            files.iter().map(|f| f.display().to_string()).zip(reports).collect();
                        print(&text::each(&named));
                    }
                    return Ok(());
                }
                let report = analyze_paths(&files, &request).map_err(describe)?;
                print(&if as_json { json(&report)? } else { text::report(&report) });
            }
            Command::Neighbours { files, row, token, k, tensor, json: as_json } => {
                let (job, _) = Job::open(sources(&files)?, tensor.as_deref(), AnalysisConfig::default())
                    .map_err(|e| e.to_string())?;
                let query = match (row, token) {
                    (Some(r), _) => Query::Row(r),
                    (None, Some(t)) => Query::Token(t),
                    (None, None) => return Err("give --row N or --token STRING".to_string()),
                };
                let row = job.matrix().resolve(&query).map_err(|e| e.to_string())?;
                let found = nearest(job.matrix(), row, k).map_err(|e| e.to_string())?;
                print(&if as_json { json(&found)? } else { text::neighbours(&found) });
            }
            Command::Inspect { files } => inspect(&files)?,
            Command::Generate { out, kind, rows, dim, dtype, seed, name, construction } => {
                let t = match construction {
                    Some(construction) => {
                        let dtype = demo::float_dtype(dtype.as_deref().unwrap_or("F32"))?;
                        let c = construct(&construction, dim).map_err(|e| e.to_string())?;
                        println!("{} × {} {}: {} ({})", c.rows, c.dim, dtype.name(), c.description, c.source);
                        demo::TensorSpec::matrix(&name, dtype, c.rows, c.dim, &c.values)
                    }
                    None => {
                        let dtype = demo::float_dtype(dtype.as_deref().unwrap_or("BF16"))?;
                        let dim = dim.unwrap_or(1024);
                        let values = demo::generate(&kind, rows, dim, seed)?;
                        demo::TensorSpec::matrix(&name, dtype, rows, dim, &values)
                    }
                };
                std::fs::write(&out, demo::safetensors_bytes(&[t])).map_err(|e| format!("{}: {e}", out.display()))?;
            }
        }
        Ok(())
    }

    /// The error, and when the files hold no input embedding, the tensors `--tensor` may name.
    fn describe(e: ThreadsError) -> String {
        let mut text = e.to_string();
        let inner = match &e {
            ThreadsError::Each { source, .. } => source.as_ref(),
            other => other,
        };
        if let ThreadsError::Analysis(Error::Locate(LocateError::NoInputEmbedding { candidates, .. })) = inner {
            if !candidates.is_empty() {
                text.push_str("\n2-D tensors --tensor can name (their ε is then not the paper's):");
                for c in candidates {
                    text.push_str("\n  ");
                    text.push_str(c);
                }
            }
        }
        text
    }

    fn inspect(files: &[PathBuf]) -> Result<(), String> {
        let opened = open_paths(files).map_err(|e| e.to_string())?;
        let refs: Vec<&dyn ByteSource> = opened.iter().map(|s| s as &dyn ByteSource).collect();
        let set = read_model_set(&refs).map_err(|e| e.to_string())?;
        let model = set.model_info();
        let located = locate(&model);
        let chosen = choose_in_set(&set, None);
        let embedding = chosen.as_ref().ok().map(|(t, _)| (t.name.clone(), t.file));
        // One file keeps the one-file listing; several add the file holding each tensor.
        let several = set.shards.len() > 1;
        for (i, t) in model.tensors.iter().enumerate() {
            let mark = if embedding == Some((t.name.clone(), t.file)) && set.dictionary.is_some() {
                "  <- decoder (feature directions)"
            } else if embedding == Some((t.name.clone(), t.file)) {
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
            Err(e @ LocateError::MissingShard { .. }) => println!("choice: none: {e}"),
            Err(_) => println!("choice: {}", located.reason),
        }
        Ok(())
    }
}
