//! Which arithmetic the Gram pass runs in, and when f32 is exact enough for the cosines at hand:
//! the policy, apart from the kernels that carry it out.

use serde::{Deserialize, Serialize};

/// Arithmetic of the Gram pass (`?precision=`; the CLI's `--precision`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// f32 tiles folded into an f64 G, unless the sample says σ is inside the f32 noise.
    #[default]
    F32,
    /// f64 throughout.
    F64,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
}

/// Smallest σ the f32 kernel is trusted with (the exactness target, |Δσ|/σ ≤ 1e-6, holds for σ ≥ 1e-3; the sample's σ
/// is an estimate, hence the margin).
pub const F32_MIN_SIGMA: f64 = 2e-3;
/// Largest E[cos²]/σ² = (μ² + σ²)/σ² the f32 kernel is trusted with. σ² = E[cos²] − μ², so a
/// rounding of relative size δ in E[cos²] becomes δ·E[cos²]/(2σ²) in σ. Measured with centred rows
/// (`stats::GramMoments`, `tests/f32_kernel.rs`): |Δσ|/σ = 9e-8 at E[cos²]/σ² = 2.1e4 (μ = 0.9,
/// σ = 6e-3, d = 515); 1e5 leaves a factor of two below 1e-6 if the error grows in proportion.
pub const F32_MAX_CONCENTRATION: f64 = 1e5;

/// Whether the f32 kernel meets the exactness targets (|Δε| ≤ 1e-7, |Δσ|/σ ≤ 1e-6) for cosines with this mean and spread
/// (from the histogram's sample, before the pass). Why not: `Err` with a short reason for the report.
pub fn f32_suffices(mu: f64, sigma: f64) -> Result<(), String> {
    if sigma.is_nan() || sigma < F32_MIN_SIGMA {
        return Err(format!("σ ≈ {sigma:.1e} in the sample is below {F32_MIN_SIGMA:.0e}, inside the f32 noise"));
    }
    let concentration = (mu * mu + sigma * sigma) / (sigma * sigma);
    if concentration > F32_MAX_CONCENTRATION {
        return Err(format!(
            "μ ≈ {mu:.3} with σ ≈ {sigma:.1e} in the sample: σ² would drown in the f32 rounding of E[cos²]"
        ));
    }
    Ok(())
}
