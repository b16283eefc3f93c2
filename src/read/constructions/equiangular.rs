//! Equiangular lines that meet the absolute bound d(d + 1)/2 (Lemmens–Seidel 1973): 28 lines in R^7
//! at 1/3 and 276 in R^23 at 1/5. Each is found inside a hyperplane of R^8 or R^24, orthogonal to a
//! vector w, and brought into R^(n−1) by the Householder reflection that sends w/|w| to the last
//! axis, whose coordinate is then zero.

use super::lattice::leech_minimal;
use super::{first_nonzero_positive, placed, width, Construction, ConstructionError};

const SOURCE: &str = "P. W. H. Lemmens, J. J. Seidel, Equiangular lines, J. Algebra 24 (1973) 494–512";

/// `lines` (flattened, `n` wide, each orthogonal to `w`) reflected by the Householder map sending
/// w/|w| to e_n, their last coordinate dropped: `n − 1` wide. In f64, so the f32 rows are rounded once.
fn into_hyperplane(lines: &[f64], w: &[f64]) -> Vec<f64> {
    let n = w.len();
    let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
    // a = w/|w| − e_n; H = I − 2aaᵀ/(aᵀa). Not zero: w is not along e_n in either use.
    let mut a: Vec<f64> = w.iter().map(|x| x / norm).collect();
    a[n - 1] -= 1.0;
    let aa: f64 = a.iter().map(|x| x * x).sum();
    let mut out = Vec::with_capacity(lines.len() / n * (n - 1));
    for x in lines.chunks_exact(n) {
        let ax: f64 = a.iter().zip(x).map(|(a, x)| a * x).sum();
        let k = 2.0 * ax / aa;
        out.extend(x.iter().zip(&a).take(n - 1).map(|(x, a)| x - k * a));
    }
    out
}

/// 28 lines in R^7 at |cos| = 1/3: the vectors of R^8 with two coordinates 3 and six −1, all
/// orthogonal to (1, …, 1).
pub(super) fn lines_28(dim: Option<usize>) -> Result<Construction, ConstructionError> {
    let name = "equiangular-28";
    let dim = width(name, 28, 7, dim)?;
    let mut lines = Vec::with_capacity(28 * 8);
    for i in 0..8 {
        for j in i + 1..8 {
            lines.extend((0..8).map(|k| if k == i || k == j { 3.0 } else { -1.0 }));
        }
    }
    let lines = into_hyperplane(&lines, &[1.0; 8]);
    Ok(Construction {
        name,
        rows: lines.len() / 7,
        native_dim: 7,
        dim,
        values: placed(&lines, 7, dim),
        max_abs_cos: 1.0 / 3.0,
        description: "28 equiangular lines in R^7 at |cos| = 1/3, the absolute bound".to_string(),
        source: SOURCE,
    })
}

/// 276 lines in R^23 at |cos| = 1/5: with w = (5, 1²³) (norm² 48), the 552 minimal vectors v of
/// the Leech lattice ×√8 with ⟨v, w⟩ = 24 give v − w/2, orthogonal to w, in 276 antipodal pairs
/// (v and w − v).
pub(super) fn lines_276(dim: Option<usize>) -> Result<Construction, ConstructionError> {
    let name = "equiangular-276";
    let dim = width(name, 276, 23, dim)?;
    let mut w = [1i32; 24];
    w[0] = 5;
    let mut lines = Vec::with_capacity(276 * 24);
    leech_minimal(|v| {
        if v.iter().zip(&w).map(|(a, b)| a * b).sum::<i32>() == 24 {
            // 2v − w: v − w/2 in integers.
            let x: Vec<f64> = v.iter().zip(&w).map(|(&a, &b)| f64::from(2 * a - b)).collect();
            if first_nonzero_positive(&x) {
                lines.extend(x);
            }
        }
    });
    let lines = into_hyperplane(&lines, &w.map(f64::from));
    Ok(Construction {
        name,
        rows: lines.len() / 23,
        native_dim: 23,
        dim,
        values: placed(&lines, 23, dim),
        max_abs_cos: 0.2,
        description: "276 equiangular lines in R^23 at |cos| = 1/5, the absolute bound".to_string(),
        source: SOURCE,
    })
}
