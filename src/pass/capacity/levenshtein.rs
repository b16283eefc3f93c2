//! Levenshtein's universal bound on the number of lines in R^d with every |cos| ≤ ε
//! (`docs/method.md` §2; Levenshtein 1982, 1998; the linear programme of Delsarte, Goethals and
//! Seidel 1975).
//!
//! On t = cos², the zonal polynomials of the projective space RP^{d−1} are the polynomials
//! orthogonal for μ = Beta(½, (d−1)/2), the law of cos² between two random unit vectors. For
//! τ = 2k − 1 Levenshtein's polynomial is f(t) = (t − s)·K(t, s)² with s = ε² and K the
//! Christoffel–Darboux kernel of degree k − 1 of the polynomials orthogonal for (1 − t)μ; for
//! τ = 2k it is t(t − s)·K(t, s)², K for t(1 − t)μ. τ is chosen by where s falls among the
//! largest zeros of those adjacent polynomials, where f's expansion is non-negative and the bound
//! f(1)/E_μ[f] holds. By Christoffel–Darboux, (t − s)K(t, s) ∝ W(t) = R_k(t)R_{k−1}(s) −
//! R_{k−1}(t)R_k(s), so the bound is W(1)/E_μ[W] (odd) or W(1)/E_μ[tW] (even): no quadrature,
//! whose tiny weights lose the digits that matter here. The μ-moments of the adjacent R_j are
//! the minimal solution of their recurrence and come from Miller's backward recurrence. All
//! products are kept as mantissa and log10 scale, so the bound holds at any size.

/// Largest k tried (τ ≤ 2·MAX_K): beyond it the cap-packing bound stands alone.
pub const MAX_K: usize = 256;

/// Extra terms Miller's backward recurrence starts above the one it needs (verified on E8,
/// Leech and Kerdock sets, where the bound is met, to 1e-13 relative).
const MILLER_EXTRA: usize = 200;

/// Recurrence coefficients of the polynomials orthonormal for Beta(p, q) on [0, 1]:
/// t·R_n = √b_{n+1}·R_{n+1} + a_n·R_n + √b_n·R_{n−1}. Jacobi's (α, β) = (q − 1, p − 1) on
/// x = 2t − 1, moved to t.
#[derive(Clone, Debug)]
struct Recurrence {
    a: Vec<f64>,
    /// √b_n, with sqrt_b[0] unused (0).
    sqrt_b: Vec<f64>,
}

impl Recurrence {
    fn new(p: f64, q: f64, n: usize) -> Recurrence {
        let (al, be) = (q - 1.0, p - 1.0);
        let mut a = Vec::with_capacity(n);
        let mut sqrt_b = Vec::with_capacity(n);
        for k in 0..n {
            let kf = k as f64;
            let s = 2.0 * kf + al + be;
            let ax = if k == 0 { (be - al) / (al + be + 2.0) } else { (be * be - al * al) / (s * (s + 2.0)) };
            a.push((ax + 1.0) / 2.0);
            let bx = match k {
                0 => 0.0,
                // The general form's (n + α + β)/(2n + α + β − 1) is 0/0 at n = 1 when α + β = −1.
                1 => 4.0 * (1.0 + al) * (1.0 + be) / ((2.0 + al + be).powi(2) * (3.0 + al + be)),
                _ => 4.0 * kf * (kf + al) * (kf + be) * (kf + al + be) / (s * s * (s + 1.0) * (s - 1.0)),
            };
            sqrt_b.push((bx / 4.0).max(0.0).sqrt());
        }
        Recurrence { a, sqrt_b }
    }

    /// Number of eigenvalues below x of the leading k × k Jacobi matrix (Sturm count), i.e. of
    /// zeros of R_k below x.
    fn zeros_below(&self, k: usize, x: f64) -> usize {
        let mut count = 0;
        let mut q = 1.0f64;
        for i in 0..k {
            let off = if i == 0 { 0.0 } else { self.sqrt_b[i] * self.sqrt_b[i] / q };
            q = self.a[i] - x - off;
            if q == 0.0 {
                q = -1e-300;
            }
            if q < 0.0 {
                count += 1;
            }
        }
        count
    }

    /// The largest zero of R_k (k ≥ 1), by bisection on the Sturm count.
    fn largest_zero(&self, k: usize) -> f64 {
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for _ in 0..64 {
            let mid = 0.5 * (lo + hi);
            if self.zeros_below(k, mid) >= k {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        0.5 * (lo + hi)
    }

    /// (R_{k−1}(t), R_k(t)) scaled by 10^−scale, and scale.
    fn pair_at(&self, k: usize, t: f64) -> (f64, f64, f64) {
        let (mut prev, mut cur, mut scale) = (0.0f64, 1.0f64, 0.0f64);
        for j in 0..k {
            let back = if j == 0 { 0.0 } else { self.sqrt_b[j] * prev };
            let next = ((t - self.a[j]) * cur - back) / self.sqrt_b[j + 1];
            prev = cur;
            cur = next;
            let m = cur.abs().max(prev.abs());
            if m > 1e100 {
                prev /= 1e100;
                cur /= 1e100;
                scale += 100.0;
            }
        }
        (prev, cur, scale)
    }
}

/// The bound for one d, with the adjacent systems' zeros found once and kept.
pub struct Levenshtein {
    d: f64,
    /// Beta(½, (d+1)/2): (1 − t)μ.
    odd: Recurrence,
    /// Beta(3/2, (d+1)/2): t(1 − t)μ.
    even: Recurrence,
    /// Largest zeros of the odd system's R_k and the even system's R_k (index k), found as needed.
    zeros_odd: Vec<Option<f64>>,
    zeros_even: Vec<Option<f64>>,
}

/// One evaluation: log10 of the bound and its degree τ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Evaluated {
    pub log10: f64,
    pub tau: usize,
}

impl Levenshtein {
    pub fn new(d: f64) -> Levenshtein {
        let n = MAX_K + MILLER_EXTRA + 2;
        let q = (d - 1.0) / 2.0;
        Levenshtein {
            d,
            odd: Recurrence::new(0.5, q + 1.0, n),
            even: Recurrence::new(1.5, q + 1.0, n),
            zeros_odd: Vec::new(),
            zeros_even: Vec::new(),
        }
    }

    fn zero(&mut self, even: bool, k: usize) -> f64 {
        if k == 0 {
            return 0.0;
        }
        let (zeros, rec) = if even { (&mut self.zeros_even, &self.even) } else { (&mut self.zeros_odd, &self.odd) };
        if zeros.len() <= k {
            zeros.resize(k + 1, None);
        }
        match zeros[k] {
            Some(z) => z,
            None => {
                let z = rec.largest_zero(k);
                zeros[k] = Some(z);
                z
            }
        }
    }

    /// The degree for s = ε²: τ = 2k − 1 on (z_even(k − 1), z_odd(k)], τ = 2k on
    /// (z_odd(k), z_even(k)] (the zeros interlace and grow with k, so these intervals tile [0, 1)
    /// and k is found by bisection). None past MAX_K.
    pub fn degree(&mut self, s: f64) -> Option<usize> {
        if s > self.zero(false, MAX_K) {
            return (s <= self.zero(true, MAX_K)).then_some(2 * MAX_K);
        }
        // The smallest k with s ≤ z_odd(k).
        let (mut lo, mut hi) = (1usize, MAX_K);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if s <= self.zero(false, mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let k = lo;
        if k >= 2 && s <= self.zero(true, k - 1) {
            Some(2 * (k - 1))
        } else {
            Some(2 * k - 1)
        }
    }

    /// log10 of Levenshtein's bound at |cos| ≤ eps, or None where its degree would pass MAX_K or
    /// the arithmetic fails (the caller falls back to the cap-packing bound).
    pub fn log10_bound(&mut self, eps: f64) -> Option<Evaluated> {
        let s = eps * eps;
        let tau = self.degree(s)?;
        let even = tau % 2 == 0;
        let k = tau.div_ceil(2);
        let d = self.d;
        let rec = if even { &self.even } else { &self.odd };
        // c = μ-mass of the adjacent weight; m0 = E_μ[g] with g = 1 (odd) or t (even).
        let (c, m0) = if even { ((d - 1.0) / (d * (d + 2.0)), 1.0 / d) } else { (1.0 - 1.0 / d, 1.0) };
        // m_1 from the inhomogeneous first step; σ_j = m_j / m_{j−1} (j ≥ 2) from Miller.
        let m1 = ((1.0 - rec.a[0]) * m0 - c) / rec.sqrt_b[1];
        let top = k + MILLER_EXTRA;
        let mut sigma = vec![0.0f64; top + 2];
        for j in (2..=top).rev() {
            let denom = (1.0 - rec.a[j]) - rec.sqrt_b[j + 1] * sigma[j + 1];
            sigma[j] = rec.sqrt_b[j] / denom;
        }
        // log10 |m_{k−1}| with its sign, and σ_k = m_k / m_{k−1}.
        let (mut log_m, mut sign_m) = (m0.abs().log10(), m0.signum());
        if k >= 2 {
            log_m = m1.abs().log10();
            sign_m = m1.signum();
            for s_j in &sigma[2..k] {
                log_m += s_j.abs().log10();
                sign_m *= s_j.signum();
            }
        }
        let ratio_k = if k == 1 { m1 / m0 } else { sigma[k] };
        let (r1_prev, r1_cur, r1_scale) = rec.pair_at(k, 1.0);
        let (rs_prev, rs_cur, _) = rec.pair_at(k, s);
        // W(1) / E_μ[gW], both with R(s)'s scale, which cancels.
        let numerator = r1_cur * rs_prev - r1_prev * rs_cur;
        let denominator = sign_m * (ratio_k * rs_prev - rs_cur);
        let log10 = r1_scale + numerator.abs().log10() - log_m - denominator.abs().log10();
        let positive = numerator * denominator > 0.0;
        (positive && log10.is_finite()).then_some(Evaluated { log10, tau })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degree_one_and_two_are_the_closed_forms() {
        // τ = 1: the relative bound d(1 − s)/(1 − ds); τ = 2: d(d+2)(1 − s)/(3 − (d+2)s).
        let d = 100.0;
        let mut l = Levenshtein::new(d);
        let eps = 0.05f64;
        let s = eps * eps;
        let got = l.log10_bound(eps).unwrap();
        assert_eq!(got.tau, 1);
        assert!((got.log10 - (d * (1.0 - s) / (1.0 - d * s)).log10()).abs() < 1e-12);
        let eps = 0.11f64;
        let s = eps * eps;
        let got = l.log10_bound(eps).unwrap();
        assert_eq!(got.tau, 2);
        assert!((got.log10 - (d * (d + 2.0) * (1.0 - s) / (3.0 - (d + 2.0) * s)).log10()).abs() < 1e-12);
    }
}
