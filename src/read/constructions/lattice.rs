//! The lines through the minimal vectors of the E8 and Leech lattices (Conway–Sloane, *Sphere
//! Packings, Lattices and Groups*, ch. 4 §8.1 and §11): each lattice's shortest vectors come in
//! antipodal pairs, and their inner products take so few values that the lines meet at only a few
//! angles. The Leech lattice is built in its standard coordinates (scaled by √8, so the minimal
//! vectors are integral of norm² 32) from the extended binary Golay code.

use super::{first_nonzero_positive, placed, width, Construction, ConstructionError};

const SPLAG: &str =
    "J. H. Conway, N. J. A. Sloane, Sphere Packings, Lattices and Groups, 3rd ed., Springer 1999, ch. 4";

/// Lines through the 240 roots of E8.
const E8_LINES: usize = 120;
/// Lines through the 196560 minimal vectors of the Leech lattice.
const LEECH_LINES: usize = 98280;

/// The 240 roots of E8, doubled to integers (norm² 8): (±2, ±2, 0⁶) in every two positions and
/// (±1)⁸ with an even number of minus signs.
fn e8_roots(mut root: impl FnMut(&[f64; 8])) {
    for i in 0..8 {
        for j in i + 1..8 {
            for (a, b) in [(2.0, 2.0), (2.0, -2.0), (-2.0, 2.0), (-2.0, -2.0)] {
                let mut v = [0.0; 8];
                v[i] = a;
                v[j] = b;
                root(&v);
            }
        }
    }
    for signs in (0u32..256).filter(|s| s.count_ones() % 2 == 0) {
        root(&std::array::from_fn(|k| if signs >> k & 1 == 1 { -1.0 } else { 1.0 }));
    }
}

/// 120 lines in R^8, |cos| ∈ {0, 1/2}.
pub(super) fn e8(dim: Option<usize>) -> Result<Construction, ConstructionError> {
    let name = "e8";
    let dim = width(name, E8_LINES, 8, dim)?;
    let mut lines = Vec::with_capacity(E8_LINES * 8);
    e8_roots(|v| {
        if first_nonzero_positive(v) {
            lines.extend_from_slice(v);
        }
    });
    Ok(Construction {
        name,
        rows: lines.len() / 8,
        native_dim: 8,
        dim,
        values: placed(&lines, 8, dim),
        max_abs_cos: 0.5,
        description: "120 lines in R^8 through the 240 roots of E8, |cos| ∈ {0, 1/2}".to_string(),
        source: SPLAG,
    })
}

/// The 4096 words of the extended binary Golay code, bit i coordinate i: the cyclic quadratic-residue
/// code of length 23 (generator polynomial x¹¹ + x¹⁰ + x⁶ + x⁵ + x⁴ + x² + 1, its 12 shifts a
/// basis) with an overall parity bit.
pub(super) fn golay_code() -> Vec<u32> {
    // Coefficients of x⁰ … x¹¹.
    const GENERATOR: [u32; 12] = [1, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 1];
    let basis: Vec<u32> = (0..12)
        .map(|shift| {
            let word = GENERATOR.iter().enumerate().fold(0u32, |w, (i, &c)| w ^ (c << ((i + shift) % 23)));
            word | (word.count_ones() & 1) << 23
        })
        .collect();
    (0u32..1 << 12)
        .map(|message| basis.iter().enumerate().filter(|(k, _)| message >> k & 1 == 1).fold(0, |w, (_, &b)| w ^ b))
        .collect()
}

/// The 196560 minimal vectors of the Leech lattice ×√8 (norm² 32): (±2)⁸ on each octad with an
/// even number of minus signs (97152); (∓3, ±1²³), the −3 at any position, signs flipped on a
/// Golay codeword (98304); (±4, ±4, 0²²) (1104).
pub(super) fn leech_minimal(mut vector: impl FnMut(&[i32; 24])) {
    let code = golay_code();
    for &octad in code.iter().filter(|w| w.count_ones() == 8) {
        let positions: Vec<usize> = (0..24).filter(|i| octad >> i & 1 == 1).collect();
        for signs in (0u32..256).filter(|s| s.count_ones() % 2 == 0) {
            let mut v = [0; 24];
            for (k, &i) in positions.iter().enumerate() {
                v[i] = if signs >> k & 1 == 1 { -2 } else { 2 };
            }
            vector(&v);
        }
    }
    for i in 0..24 {
        for &word in &code {
            let mut v = [1; 24];
            v[i] = -3;
            for (k, x) in v.iter_mut().enumerate() {
                if word >> k & 1 == 1 {
                    *x = -*x;
                }
            }
            vector(&v);
        }
    }
    for i in 0..24 {
        for j in i + 1..24 {
            for (a, b) in [(4, 4), (4, -4), (-4, 4), (-4, -4)] {
                let mut v = [0; 24];
                v[i] = a;
                v[j] = b;
                vector(&v);
            }
        }
    }
}

/// 98280 lines in R^24, |cos| ∈ {0, 1/4, 1/2}.
pub(super) fn leech(dim: Option<usize>) -> Result<Construction, ConstructionError> {
    let name = "leech";
    let dim = width(name, LEECH_LINES, 24, dim)?;
    let mut lines = Vec::with_capacity(LEECH_LINES * 24);
    leech_minimal(|v| {
        let v = v.map(f64::from);
        if first_nonzero_positive(&v) {
            lines.extend_from_slice(&v);
        }
    });
    Ok(Construction {
        name,
        rows: lines.len() / 24,
        native_dim: 24,
        dim,
        values: placed(&lines, 24, dim),
        max_abs_cos: 0.5,
        description: "98280 lines in R^24 through the 196560 minimal vectors of the Leech lattice, \
                      |cos| ∈ {0, 1/4, 1/2}"
            .to_string(),
        source: SPLAG,
    })
}
