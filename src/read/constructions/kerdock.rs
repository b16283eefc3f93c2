//! Real mutually unbiased bases (Calderbank, Cameron, Kantor, Seidel 1997): in R^d, d = 2^n with n
//! even, the standard basis and 2^(n−1) further orthonormal bases of ±1/√d vectors, two vectors of
//! different bases always at |cos| = 1/√d. That is d(d/2 + 1) lines, the most R^d holds with
//! |cos| ≤ 1/√d. The ±1 patterns are the Kerdock code's cosets of the first-order Reed–Muller code:
//! a quadratic form Q_u over GF(2^m) × GF(2), m = n − 1 (odd), for each u ∈ GF(2^m), plus every
//! linear function (MacWilliams–Sloane, ch. 15).

use super::{width, Construction, ConstructionError, MAX_BYTES};

/// The width `kerdock` is built in when none is asked for.
pub const DEFAULT_DIM: usize = 64;

/// An irreducible polynomial of degree m over GF(2) for each odd m the sizes allowed reach
/// (d = 2^(m+1) ≤ 4096), bit i the coefficient of x^i.
const IRREDUCIBLE: [(u32, u32); 6] =
    [(1, 0b11), (3, 0b1011), (5, 0b10_0101), (7, 0b1000_0011), (9, 0b10_0001_0001), (11, 0b1000_0000_0101)];

const SOURCE: &str = "A. R. Calderbank, P. J. Cameron, W. M. Kantor, J. J. Seidel, Z4-Kerdock codes, orthogonal \
                      spreads, and extremal Euclidean line-sets, Proc. London Math. Soc. 75 (1997) 436–480";

/// GF(2^m): elements as the bits of polynomials of degree < m.
struct Field {
    m: u32,
    polynomial: u32,
    /// Tr(a) = a + a² + a⁴ + … + a^(2^(m−1)) ∈ GF(2), for every a.
    trace: Vec<u8>,
}

impl Field {
    fn new(m: u32, polynomial: u32) -> Self {
        let mut field = Field { m, polynomial, trace: Vec::new() };
        field.trace = (0..1u32 << m)
            .map(|a| {
                let (mut sum, mut x) = (0, a);
                for _ in 0..m {
                    sum ^= x;
                    x = field.mul(x, x);
                }
                // The sum lies in GF(2): the constant polynomial 0 or 1.
                (sum & 1) as u8
            })
            .collect();
        field
    }

    fn mul(&self, mut a: u32, mut b: u32) -> u32 {
        let mut product = 0;
        while b != 0 {
            if b & 1 == 1 {
                product ^= a;
            }
            b >>= 1;
            a <<= 1;
            if a >> self.m & 1 == 1 {
                a ^= self.polynomial;
            }
        }
        product
    }

    /// Σ_{j=1}^{(m−1)/2} Tr(y^(2^j + 1)), the quadratic part of the Kerdock form at y = u·x.
    fn quadratic(&self, y: u32) -> u8 {
        let (mut sum, mut frobenius) = (0, y);
        for _ in 0..(self.m - 1) / 2 {
            // y^(2^j) by squaring once more, times y.
            frobenius = self.mul(frobenius, frobenius);
            sum ^= self.trace[self.mul(frobenius, y) as usize];
        }
        sum
    }
}

/// The bases in the largest d = 4^k ≤ `dim` (k ≥ 1), placed in R^`dim`.
pub(super) fn construct(dim: usize) -> Result<Construction, ConstructionError> {
    let name = "kerdock";
    if dim < 4 {
        return Err(ConstructionError::DimBelowNative { name, dim, native: 4 });
    }
    // n = log2 d: the largest even n with 2^n ≤ dim.
    let n = (usize::BITS - 1 - dim.leading_zeros()) & !1;
    let lines = |n: u32| (1u128 << n) * ((1u128 << (n - 1)) + 1);
    let rows = lines(n);
    let too_large = || {
        // The widest --dim ≤ the one asked for whose bases fit: the largest d that fits at all, in
        // as many columns as fit, short of those that would choose the next d.
        let largest = (1..=n / 2)
            .rev()
            .map(|half| (2 * half, MAX_BYTES as u128 / (lines(2 * half) * 4)))
            .find(|&(k, fit)| fit >= 1 << k)
            .map_or(0, |(k, fit)| fit.min((1 << (k + 2)) - 1) as u64);
        ConstructionError::TooLarge {
            name,
            rows,
            dim: dim as u64,
            bytes: rows.saturating_mul(dim as u128 * 4),
            largest,
        }
    };
    let rows = usize::try_from(rows).map_err(|_| too_large())?;
    if (rows as u128).saturating_mul(dim as u128 * 4) > MAX_BYTES as u128 {
        return Err(too_large());
    }
    let dim = width(name, rows, 1 << n, Some(dim))?;
    let m = n - 1;
    let &(_, polynomial) = IRREDUCIBLE.iter().find(|(degree, _)| *degree == m).ok_or_else(too_large)?;
    let field = Field::new(m, polynomial);
    let d = 1usize << n;
    let scale = 1.0 / (d as f32).sqrt();
    let mut values = vec![0.0f32; rows * dim];
    let mut out = values.chunks_exact_mut(dim);
    for (i, row) in out.by_ref().take(d).enumerate() {
        row[i] = 1.0;
    }
    // A point (x, e) ∈ GF(2^m) × GF(2) is the index p = x + e·2^m, so a linear function b·(x, e)
    // is the parity of p & b.
    let low = (1usize << m) - 1;
    let mut form = vec![0u8; d];
    for u in 0..1u32 << m {
        for (p, q) in form.iter_mut().enumerate() {
            let ux = field.mul(u, (p & low) as u32);
            let e = (p >> m) as u8;
            *q = field.quadratic(ux) ^ (e & field.trace[ux as usize]);
        }
        for b in 0..d {
            let Some(row) = out.next() else { break };
            for (p, (x, &q)) in row.iter_mut().zip(&form).enumerate() {
                let sign = q ^ ((p & b).count_ones() & 1) as u8;
                *x = if sign == 0 { scale } else { -scale };
            }
        }
    }
    Ok(Construction {
        name,
        rows,
        native_dim: d,
        dim,
        values,
        max_abs_cos: 1.0 / (d as f64).sqrt(),
        description: format!(
            "{rows} lines in R^{d}: {} mutually unbiased real bases, |cos| ∈ {{0, 1/{}}}",
            d / 2 + 1,
            1usize << (n / 2)
        ),
        source: SOURCE,
    })
}
