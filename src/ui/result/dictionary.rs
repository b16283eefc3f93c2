//! A sparse autoencoder's dictionary (docs/method.md §10): what its files say of it (d_sae, d_in,
//! layer, hook, architecture, layout, the side a transcoder writes), and the share of the capacity
//! its own ε allows that its d_sae features use (Eq. 7 at d = the decoder's width).

use leptos::prelude::*;

use crate::result::report::{group_digits, scientific_from_log10, DictionaryReport};

/// What a dictionary's decoder holds: "features" of the activations it reads, or of a transcoder's
/// output side.
pub fn features_of(d: &DictionaryReport) -> &'static str {
    if d.dictionary.transcoder {
        "features of the output side (decoder directions)"
    } else {
        "features (decoder directions)"
    }
}

/// `x` of "10^x" to two decimals, with a true minus sign.
fn exponent_text(x: f64) -> String {
    format!("{x:.2}").replace('-', "−")
}

/// The dictionary's details and the line "this dictionary uses 10^x of the capacity its own ε
/// allows".
#[component]
pub fn DictionaryDetails(
    /// `Report::dictionary`.
    dictionary: DictionaryReport,
    /// log10 of the Eq. 7 capacity at the features' ε.
    log10_capacity: f64,
    /// Whether the headline gives that capacity (ε < 0.1), or calls it indeterminate.
    determinate: bool,
    /// The decoder's width: the d of the capacity (d_in, or a transcoder's d_out).
    dim: u64,
) -> impl IntoView {
    let d = &dictionary.dictionary;
    let unknown = |v: Option<String>| v.unwrap_or_else(|| "unknown (the files do not say)".to_string());
    let side = d.transcoder.then(|| match d.d_out {
        Some(out) => format!("output side, d_out = {}: a transcoder writes its features there", group_digits(out)),
        None => "output side: a transcoder writes its features there".to_string(),
    });
    let layout = if d.columns_are_features {
        format!("{} (features read from the decoder's columns)", d.source_layout)
    } else {
        d.source_layout.clone()
    };
    let mut rows = vec![
        ("d_sae, features", group_digits(d.d_sae)),
        ("d_in, input width", group_digits(d.d_in)),
        ("layer", unknown(d.layer.map(|l| l.to_string()))),
        ("hook", unknown(d.hook.clone())),
        ("architecture", unknown(d.architecture.clone())),
        ("layout", layout),
        ("decoder", d.decoder.clone()),
    ];
    if let Some(side) = side {
        rows.insert(2, ("side", side));
    }
    let used_value = dictionary.log10_capacity_used.map_or_else(String::new, |x| x.to_string());
    // Past ε = 0.1 the headline calls the capacity indeterminate; Eq. 7 still gives a number there,
    // which the share is taken of, and the reader is told it extrapolates the paper's fits.
    let beyond = (!determinate).then_some(
        " At this ε (≥ 0.1) the headline calls the capacity indeterminate: Eq. 7 is applied past the range the paper fitted it in, so this share is a rough guide.",
    );
    let used = match dictionary.log10_capacity_used {
        Some(x) => view! {
            "This dictionary uses "
            <strong>"10"<sup>{exponent_text(x)}</sup></strong>
            {format!(
                " of the capacity its own ε allows: {} features against {} ε-nearly-orthogonal directions at d = {} (paper Eq. 7).",
                group_digits(d.d_sae),
                scientific_from_log10(log10_capacity),
                group_digits(dim)
            )}
            {beyond}
        }
        .into_any(),
        None => view! { "No share of the capacity to give: Eq. 7 has no finite capacity at the features' ε." }.into_any(),
    };
    view! {
        <section class="dictionary" data-testid="dictionary" aria-labelledby="dictionary-heading">
            <h3 id="dictionary-heading">"The dictionary"</h3>
            <p data-testid="capacity-used" data-log10-capacity-used=used_value>{used}</p>
            <dl class="facts">
                {rows.into_iter().map(|(k, v)| view! { <div><dt>{k}</dt><dd>{v}</dd></div> }).collect_view()}
            </dl>
            <p class="note">
                "A sparse autoencoder's decoder holds one direction per feature; their ε is measured as an embedding's, over the unit rows. The paper shares one capacity among embeddings and features, and tests only embeddings: this number is the features', not a place among the paper's models."
            </p>
        </section>
    }
}
