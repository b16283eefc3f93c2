//! A [`Report`] and a token's neighbours as plain text (the CLI without `--json`). Every figure
//! is a field of the Report: nothing is computed here.

use std::fmt::Write;

use crate::explain::neighbours::Neighbours;
use crate::pass::capacity::CapacityProven;
use crate::pass::stats::STRONGLY_OPPOSED;
use crate::read::locate::TensorRole;
use crate::result::proven;
use crate::result::report::{DictionaryReport, Report};

/// The Report as the CLI prints it without `--json`: one fact per line.
pub fn report(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{} · {} · {} · {} × {}", r.file, r.tensor, r.dtype, r.rows, r.dim);
    let _ = writeln!(s, "tensor: {}", r.tensor_reason);
    if let Some(note) = not_the_embedding(r) {
        let _ = writeln!(s, "NOTE: {note}");
    }
    if let Some(note) = quantised_note(r) {
        let _ = writeln!(s, "NOTE: {note}");
    }
    let _ = writeln!(
        s,
        "rows used {} (dropped {}), pairs {}, {}",
        r.rows_used,
        r.rows_dropped,
        r.pairs,
        if r.exact { "exact" } else { "estimate" }
    );
    let _ =
        writeln!(s, "μ = {:.6}  σ = {:.6}  ε = μ+2σ = {:.6}  μ+3σ = {:.6}", r.mu, r.sigma, r.epsilon, r.epsilon_3sigma);
    if let Some([lo, hi]) = r.epsilon_ci {
        let _ = writeln!(s, "ε 95% interval [{lo:.6}, {hi:.6}] (seed {})", r.seed);
    }
    let c = &r.log10_capacity;
    let _ = writeln!(
        s,
        "log10 capacity, {}: Eq. 7 {:.3}  Eq. 6 {:.3}{}",
        proven::LAW_NAME,
        c.adjusted_full,
        c.adjusted_simple,
        if r.capacity_determinate { "" } else { "  (indeterminate: ε ≥ 0.1)" }
    );
    let _ = writeln!(s, "log10 JL ({}): C=3.029 {:.3}  C=8 {:.3}", proven::JL_NOTE, c.jl_c3029, c.jl_c8);
    if let Some(p) = &r.capacity_proven {
        let _ = writeln!(
            s,
            "{}",
            proven_lines(p, r.epsilon, r.dim, r.rows_used, r.capacity_determinate.then_some(c.adjusted_full))
        );
    }
    if let Some(d) = &r.dictionary {
        let _ = writeln!(s, "{}", dictionary(d));
    }
    if let Some(t) = &r.trained {
        let _ = writeln!(s, "{}", crate::result::trained::summary(t));
        // Rules found but not set aside by default (the suspected rows): counted, so the user
        // knows the JSON's variants hold the numbers without them too.
        for rule in t.rules.iter().filter(|r| !r.enabled) {
            let what = crate::read::untrained::UntrainedRule::from_name(&rule.rule).map_or("", |u| u.describe());
            let _ =
                writeln!(s, "  not set aside: {} {what} (the JSON's trained.variants hold ε without them)", rule.rows);
        }
    }
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
            "geometry: λ₁/Σλ = {:.3}, participation ratio {:.2}, effective rank {}, ‖s/V‖ = {:.4} ({}, {:.0} ms)",
            g.leading_share(),
            g.participation_ratio,
            g.effective_rank_text(),
            g.mean_vector_norm,
            g.spectrum_label(r.dim),
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
    // Antipodal pairs (cos ≈ −1) are a known trait of trained dictionaries: named when the sample
    // holds a strongly opposed pair, silent otherwise (most matrices have none).
    if let Some(p) = r.antipodal_pairs.first().filter(|p| p.cosine < STRONGLY_OPPOSED) {
        let name = |id: u64, t: &Option<String>| t.as_ref().map_or(id.to_string(), |t| format!("{id} {t:?}"));
        let _ = writeln!(
            s,
            "most opposed pair of the sample ({} pairs): {} · {} (cos {:+.4}); {} of the {} most opposed below {STRONGLY_OPPOSED}",
            r.histogram.pairs_in_histogram,
            name(p.a, &p.a_token),
            name(p.b, &p.b_token),
            p.cosine,
            r.antipodal_pairs.iter().filter(|p| p.cosine < STRONGLY_OPPOSED).count(),
            r.antipodal_pairs.len()
        );
    }
    let _ = writeln!(s, "tied: {} — {}", r.tied.map_or("unknown", |t| if t { "yes" } else { "no" }), r.tied_evidence);
    if let Some(g) = &r.gpu {
        let software = if g.fallback_adapter { ", a software adapter" } else { "" };
        let _ = writeln!(s, "GPU: {} ({}{software})", g.adapter, g.backend);
    }
    if let Some(why) = &r.gpu_fallback {
        let _ = writeln!(s, "GPU not used: {why}");
    }
    let _ = writeln!(s, "{}, {:.0} ms, kernel {}", r.class.label(), r.timing_ms, r.kernel);
    s
}

/// The proven interval, the floor and where the law stands, one per line, with the log10 values
/// the card rounds.
pub fn proven_lines(p: &CapacityProven, eps: f64, dim: u64, rows: u64, law: Option<f64>) -> String {
    let t = proven::describe(p, eps, dim, rows, law);
    let log = |x: Option<f64>| x.map_or("unbounded".to_string(), |v| format!("{v:.3}"));
    let mut out = format!(
        "proven: {}\n  log10 at least {} ({}), at most {} ({})\n  {}",
        t.interval,
        log(p.log10_at_least),
        p.at_least_by.name(),
        log(p.log10_at_most),
        p.at_most_by.name(),
        t.floor
    );
    if let Some(v) = t.verdict {
        out.push_str("\n  ");
        out.push_str(&v);
    }
    out
}

/// The dictionary's lines: what it is, and the share of its ε's capacity it uses (docs/method.md §10).
pub fn dictionary(d: &DictionaryReport) -> String {
    let x = &d.dictionary;
    let or_unknown = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
    let side = match (x.transcoder, x.d_out) {
        (true, Some(out)) => format!(" (a transcoder: features of its {out}-wide output side)"),
        (true, None) => " (a transcoder: features of its output side)".to_string(),
        _ => String::new(),
    };
    let mut s = format!(
        "dictionary: {} features over d_in = {}{side}, layer {}, hook {}, architecture {}, {} layout{}",
        x.d_sae,
        x.d_in,
        or_unknown(x.layer.map(|l| l.to_string())),
        or_unknown(x.hook.clone()),
        or_unknown(x.architecture.clone()),
        x.source_layout,
        if x.columns_are_features { " (features read from the decoder's columns)" } else { "" },
    );
    if let Some(used) = d.log10_capacity_used {
        let _ =
            write!(s, "\nthis dictionary uses 10^{used:.2} of the capacity its own ε allows (Eq. 7 at d = its width)");
    }
    s
}

/// Several models' Reports side by side (`analyze --each`): one line each with its path, layer,
/// d_sae and d_in (a matrix's rows and width when it is not a dictionary), ε, class, and the share
/// of its ε's capacity a dictionary uses.
pub fn each(reports: &[(String, Report)]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<40} {:>5} {:>9} {:>6} {:>9}  {:<19} capacity used",
        "path", "layer", "d_sae", "d_in", "ε", "class"
    );
    for (path, r) in reports {
        let d = r.dictionary.as_ref().map(|d| &d.dictionary);
        let layer = d.and_then(|d| d.layer).map_or("-".to_string(), |l| l.to_string());
        let (d_sae, d_in) = d.map_or((r.rows, r.dim), |d| (d.d_sae, d.d_in));
        let used =
            r.dictionary.as_ref().and_then(|d| d.log10_capacity_used).map_or("-".to_string(), |x| format!("10^{x:.2}"));
        let estimate = if r.exact { "" } else { "~" };
        let _ = writeln!(
            s,
            "{path:<40} {layer:>5} {d_sae:>9} {d_in:>6} {estimate}{:>8.5}  {:<19} {used}",
            r.epsilon,
            r.class.label(),
        );
    }
    s
}

/// A token's nearest neighbours, most similar first, one per line.
pub fn neighbours(found: &Neighbours) -> String {
    let name = |r: u64, t: &Option<String>| t.as_ref().map_or(format!("row {r}"), |t| format!("row {r} {t:?}"));
    let mut out = format!("nearest to {} over {} rows:\n", name(found.row, &found.token), found.rows_compared);
    for n in &found.neighbours {
        let _ = writeln!(out, "{:>10.6}  {}", n.cosine, name(n.row, &n.token));
    }
    out
}

/// For a tensor that is not the input embedding: what it is, and that its ε, class and capacity
/// are not the paper's (docs/method.md §1). `None` for the input embedding.
pub fn not_the_embedding(r: &Report) -> Option<String> {
    let what = match r.tensor_role {
        TensorRole::InputEmbedding => return None,
        TensorRole::OutputMatrix => "the output matrix",
        TensorRole::Other => "not the input token embedding",
        TensorRole::SaeDecoder => {
            return Some(format!(
                "{} is a sparse autoencoder's decoder: this ε is that of its feature directions, not the paper's embedding ε, and its class and capacity are not comparable with the paper's Table 1",
                r.tensor
            ))
        }
    };
    Some(format!(
        "{} is {what}: its ε is not the paper's, and its class and capacity are not comparable with the paper's Table 1",
        r.tensor
    ))
}

/// What the card and the CLI say of a quantised tensor: its ε is that of the stored values.
pub fn quantised_note(r: &Report) -> Option<String> {
    r.quantised.then(|| {
        let guessed = if r.dtype.ends_with(", inferred") {
            "; its bits and group size were inferred from the tensors' shapes (no quantization in a config.json): give the model's config.json with it to be sure"
        } else {
            ""
        };
        format!(
            "the weights are stored quantised ({}): this ε is that of the quantised values, which can differ from the model as trained{guessed}",
            r.dtype
        )
    })
}
