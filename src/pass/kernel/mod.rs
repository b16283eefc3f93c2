//! The hot loops: the Gram update `G += Σ uᵢuᵢᵀ` and row-against-row dot products.
//!
//! Two Gram updates, chosen by [`Precision`]:
//! - **f32** (default): unit rows normalised in f64 and rounded once to f32; a 4×8 tile of G is
//!   summed in f32 registers over at most [`MAX_CHUNK_ROWS`] rows, then folded into the f64 G. Rows
//!   come in batches of several chunks ([`batch_rows`]), and the tiles are visited block of G by
//!   block of G so that the folds hit cache, not memory ([`gram_update_f32_batch`]). About
//!   twice the f64 kernel's speed (four lanes instead of two). Its error is inside |Δε| ≤ 1e-7 and
//!   |Δσ|/σ ≤ 1e-6 for σ ≥ 1e-3 (`tests/f32_kernel.rs`), except when the cosines are so
//!   concentrated that σ² drowns in the rounding of E[cos²]: `analysis` then picks f64
//!   ([`f32_suffices`]).
//! - **f64**: f64 unit rows, products and sums; matches an all-pairs float64 loop to 1e-9.
//!
//! The histogram's `dots` stay f32: a 1/150-wide bin does not need more.
//!
//! Implementations: [`portable`] (native builds, tests) and [`simd`] (explicit `core::arch::wasm32`
//! f64x2/f32x4, used whenever simd128 is enabled, because LLVM does not vectorise these loops well for
//! wasm: ARCHITECTURE.md, "Facts the code relies on") share one arithmetic order and agree bit for bit. `relaxed` (cargo
//! feature `relaxed-simd`, wasm only) uses `f32x4.relaxed_madd`, which may fuse the multiply-add: it
//! agrees with the others within the tolerance above, not bit for bit. It is a separate worker build
//! because one relaxed instruction anywhere makes Safari reject the whole module.
//!
//! Rows are stored zero-padded to a multiple of [`LANES`] so that every vector load is whole; the
//! padding adds nothing to any dot product.

pub mod bench;
mod packed;
pub mod portable;
mod precision;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
pub mod relaxed;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod simd;
pub(crate) mod tiles;

pub use packed::{BandValues, PackedGram};
pub use precision::{f32_suffices, Precision, F32_MAX_CONCENTRATION, F32_MIN_SIGMA};

/// Rows are padded to a multiple of this many `f32`.
pub const LANES: usize = 8;
/// Height of one Gram tile (dimensions held as broadcast scalars).
pub const TILE_A: usize = 4;
/// Rows of one chunk: the f32 kernel sums a tile over at most this many rows before each fold into
/// the f64 G (the bound the error tests measure); the f64 kernel takes this many per call. Enough to
/// amortise loading and storing each Gram tile.
pub const MAX_CHUNK_ROWS: usize = 64;
/// Row panels of G updated together while one column panel of the chunk sits in L1: without this
/// blocking each row panel streams the whole packed chunk (2 MB at d = 4096) through the cache.
pub const PANEL_BLOCK: usize = 16;
/// Column octets of the block of G that the f32 kernel keeps in cache while a whole batch of chunks
/// passes through it: [`PANEL_BLOCK`]·4 rows × 64·8 columns of f64 are 256 KiB, inside a 1–2 MiB L2.
/// Each chunk's fold then hits cache; G itself streams through memory once per batch instead of once
/// per chunk (67 MB per 64 rows at d = 4096, the bound that kept two workers from scaling).
/// Inside a block the f32 kernels take one panel at a time across all its column octets: its four
/// rows of G are then read in address order, which the hardware prefetcher follows when the block
/// first comes from memory, while the chunk's 64 octets (128 KiB) stay in L2 for all 16 panels.
/// Measured in Chromium at d = 4096 against octet-major order (each octet against all 16 panels,
/// which reads 64 rows of G a line at a time): 36 → 40 GFLOP/s plain, 43 → 49 relaxed.
pub const COLUMN_BLOCK: usize = 64;
/// Most bytes of f32 rows the f32 pass buffers for one kernel call ([`batch_rows`]).
pub const BATCH_BYTES: usize = 4 << 20;
/// Most rows in one batch: past this the G traffic saved is already small against the arithmetic.
pub const MAX_BATCH_ROWS: usize = 1024;

/// Rows the f32 pass buffers before running the kernel (`stats::GramMoments`): whole chunks of
/// [`MAX_CHUNK_ROWS`], at most [`BATCH_BYTES`] of f32 rows and d/8 rows (the buffer then holds at
/// most an eighth of the triangle's bytes, so the accumulator's size stays the triangle's), at least
/// one chunk. 256 rows at d = 2048–4096 (4 MiB next to the 67 MB triangle at d = 4096), 128 at
/// d = 1024, one chunk below d = 1024, where the triangle nearly fits in cache anyway.
pub fn batch_rows(dim_padded: usize) -> usize {
    let d = dim_padded.max(1);
    let fit = (BATCH_BYTES / (4 * d)).min(d / 8) / MAX_CHUNK_ROWS * MAX_CHUNK_ROWS;
    fit.clamp(MAX_CHUNK_ROWS, MAX_BATCH_ROWS)
}

/// `dim` rounded up to a whole number of lanes.
pub fn padded_dim(dim: usize) -> usize {
    dim.div_ceil(LANES) * LANES
}

/// Copies up to [`MAX_CHUNK_ROWS`] f64 rows (`dim_padded` each) into the kernel's packed layout:
/// column panels of 4, `packed[(j * k + r) * 4 + l] = rows[r][4j + l]`. Both operands of a Gram tile
/// are then read as contiguous streams instead of 64 rows a whole row apart (measured: the strided
/// form ran at half the speed for d = 1024). Returns k, the number of rows packed.
pub fn pack_rows(rows: &[f64], dim_padded: usize, packed: &mut Vec<f64>) -> usize {
    if dim_padded == 0 {
        return 0;
    }
    let k = (rows.len() / dim_padded).min(MAX_CHUNK_ROWS);
    packed.clear();
    packed.resize(k * dim_padded, 0.0);
    for (r, row) in rows.chunks_exact(dim_padded).take(k).enumerate() {
        for (j, quad) in row.chunks_exact(4).enumerate() {
            let at = (j * k + r) * 4;
            packed[at..at + 4].copy_from_slice(quad);
        }
    }
    k
}

/// Rounds up to [`MAX_CHUNK_ROWS`] f64 unit rows (`dim_padded` each) to f32, once, into the f32
/// kernel's layout: column octets, `packed[(q * k + r) * 8 + l] = rows[r][8q + l]`, so a 4×8 tile
/// reads its 4 row-dimensions (half an octet) and its 8 column-dimensions as two contiguous streams.
/// Returns k, the number of rows packed.
pub fn pack_rows_f32(rows: &[f64], dim_padded: usize, packed: &mut Vec<f32>) -> usize {
    if dim_padded == 0 {
        return 0;
    }
    let k = (rows.len() / dim_padded).min(MAX_CHUNK_ROWS);
    packed.clear();
    packed.resize(k * dim_padded, 0.0);
    for (r, row) in rows.chunks_exact(dim_padded).take(k).enumerate() {
        for (q, octet) in row.chunks_exact(LANES).enumerate() {
            let at = (q * k + r) * LANES;
            for (o, &x) in packed[at..at + LANES].iter_mut().zip(octet) {
                *o = x as f32;
            }
        }
    }
    k
}

/// Writes one f64 row (`dim_padded` values), minus `centre` where one is given (empty: none), rounded
/// once to f32, as row `r` of a batch in the layout of [`gram_update_f32_batch`]: row r is row
/// `r % MAX_CHUNK_ROWS` of chunk `r / MAX_CHUNK_ROWS`, each chunk packed as [`pack_rows_f32`] packs
/// [`MAX_CHUNK_ROWS`] rows (a last, partial chunk keeps that stride; its unused slots are never read).
/// `batch` grows to hold the chunk. Returns the row as rounded, widened back to f64 (the caller's Σw̃ᵢ).
pub fn pack_row_f32_into(row: &[f64], centre: &[f64], r: usize, batch: &mut Vec<f32>, rounded: &mut Vec<f64>) {
    let d = row.len();
    let (chunk, at) = (r / MAX_CHUNK_ROWS, r % MAX_CHUNK_ROWS);
    let base = chunk * MAX_CHUNK_ROWS * d;
    if batch.len() < base + MAX_CHUNK_ROWS * d {
        batch.resize(base + MAX_CHUNK_ROWS * d, 0.0);
    }
    rounded.clear();
    // Zipped whole, the subtraction vectorises; value by value with a lookup, it did not.
    if centre.len() == d {
        rounded.extend(row.iter().zip(centre).map(|(&x, &c)| (x - c) as f32 as f64));
    } else {
        rounded.extend(row.iter().enumerate().map(|(a, &x)| (x - centre.get(a).copied().unwrap_or(0.0)) as f32 as f64));
    }
    for (q, octet) in rounded.chunks_exact(LANES).enumerate() {
        let to = base + (q * MAX_CHUNK_ROWS + at) * LANES;
        for (o, &x) in batch[to..to + LANES].iter_mut().zip(octet) {
            *o = x as f32;
        }
    }
}

/// The norms of one row that the f32 pass keeps ([`pack_row_f32_summing`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowNorms {
    /// ‖uᵢ‖², of the unit row as read.
    pub unit: f64,
    /// ‖c + w̃ᵢ‖², of the row whose outer product the f32 G holds (w̃ᵢ: uᵢ − c rounded to f32).
    pub used: f64,
}

/// [`pack_row_f32_into`] and, in the same pass over the row, the f32 pass's sums of it: adds the
/// row to `sum` and (with a centre) w̃ᵢ to `sum_centred`, and returns the two squared norms, each
/// summed as [`crate::read::matrix::lane_sum`] sums it (lane a mod 8). The same values in the same
/// order as the separate loops, so the same bits. Those were seven passes over every row: at
/// 2,000,000×256 they took a fifth of the CLI's pass (a seventh fused), and one worker in a tab
/// 5.41–5.53 s against 5.02–5.06 s fused. `centre` is empty or `row.len()` long, `row.len()` a
/// multiple of [`LANES`], `sum` and `sum_centred` (centred only) at least as long as `row`;
/// otherwise this is the separate loops.
pub fn pack_row_f32_summing(
    row: &[f64],
    centre: &[f64],
    r: usize,
    batch: &mut Vec<f32>,
    sum: &mut [f64],
    sum_centred: &mut [f64],
) -> RowNorms {
    let d = row.len();
    let centred = !centre.is_empty();
    let regular =
        d.is_multiple_of(LANES) && sum.len() >= d && (!centred || (centre.len() == d && sum_centred.len() >= d));
    if !regular {
        return separate_row_sums(row, centre, r, batch, sum, sum_centred);
    }
    let (chunk, at) = (r / MAX_CHUNK_ROWS, r % MAX_CHUNK_ROWS);
    let base = chunk * MAX_CHUNK_ROWS * d;
    if batch.len() < base + MAX_CHUNK_ROWS * d {
        batch.resize(base + MAX_CHUNK_ROWS * d, 0.0);
    }
    let (mut unit, mut used) = ([0.0f64; LANES], [0.0f64; LANES]);
    for (q, u) in row.chunks_exact(LANES).enumerate() {
        let to = base + (q * MAX_CHUNK_ROWS + at) * LANES;
        let out = &mut batch[to..to + LANES];
        let s = &mut sum[q * LANES..(q + 1) * LANES];
        if centred {
            let c = &centre[q * LANES..(q + 1) * LANES];
            let sc = &mut sum_centred[q * LANES..(q + 1) * LANES];
            for l in 0..LANES {
                let x = u[l];
                s[l] += x;
                unit[l] += x * x;
                let w = (x - c[l]) as f32;
                out[l] = w;
                let w = w as f64;
                sc[l] += w;
                let kept = w + c[l];
                used[l] += kept * kept;
            }
        } else {
            for l in 0..LANES {
                let x = u[l];
                s[l] += x;
                unit[l] += x * x;
                let w = x as f32;
                out[l] = w;
                let w = w as f64;
                used[l] += w * w;
            }
        }
    }
    RowNorms { unit: lanes_total(unit), used: lanes_total(used) }
}

/// `lane_sum`'s last step: the eight lanes in its fixed order, then its (empty) tail.
fn lanes_total(l: [f64; LANES]) -> f64 {
    let [a, b, c, d, e, g, h, i] = l;
    (((a + b) + (c + d)) + ((e + g) + (h + i))) + 0.0
}

/// [`pack_row_f32_summing`] as separate loops, for rows it does not take whole.
fn separate_row_sums(
    row: &[f64],
    centre: &[f64],
    r: usize,
    batch: &mut Vec<f32>,
    sum: &mut [f64],
    sum_centred: &mut [f64],
) -> RowNorms {
    use crate::read::matrix::lane_sum;
    for (s, &x) in sum.iter_mut().zip(row) {
        *s += x;
    }
    let unit = lane_sum(row, |x| x * x);
    let mut wide = Vec::with_capacity(row.len());
    pack_row_f32_into(row, centre, r, batch, &mut wide);
    if !centre.is_empty() {
        for (s, &w) in sum_centred.iter_mut().zip(&wide) {
            *s += w;
        }
        for (w, &c) in wide.iter_mut().zip(centre) {
            *w += c;
        }
    }
    RowNorms { unit, used: lane_sum(&wide, |x| x * x) }
}

/// Adds Σ_r u_r u_rᵀ over `k` f32 rows packed by [`pack_rows_f32`] into `g`: each 4×8 tile summed
/// in f32 over the k rows, then added to G in f64. Dispatches to the relaxed or plain SIMD kernel
/// when compiled in.
pub fn gram_update_f32(packed: &[f32], k: usize, g: &mut PackedGram) {
    gram_update_f32_chunks(packed, k, k, g);
}

/// Adds `rows` f32 rows packed as [`pack_row_f32_into`] writes them (chunks of [`MAX_CHUNK_ROWS`])
/// into `g`. Each tile is summed in f32 over one chunk and folded into G in f64, chunk after chunk,
/// exactly as one [`gram_update_f32`] call per chunk would (bit for bit); only the order in which
/// the tiles are visited changes, so that a block of G stays in cache for the whole batch.
pub fn gram_update_f32_batch(packed: &[f32], rows: usize, g: &mut PackedGram) {
    gram_update_f32_chunks(packed, MAX_CHUNK_ROWS, rows, g);
}

/// Least length of a batch of `rows` rows in chunks of `stride` (the last may hold fewer) for
/// `dim_padded`: the last chunk's last octet ends after its k rows. 0 for no rows.
pub fn chunks_len(stride: usize, rows: usize, dim_padded: usize) -> usize {
    if rows == 0 || stride == 0 || dim_padded < LANES {
        return 0;
    }
    let chunks = rows.div_ceil(stride);
    let last = rows - (chunks - 1) * stride;
    (chunks - 1) * stride * dim_padded + (dim_padded / LANES - 1) * stride * LANES + last * LANES
}

/// `rows` rows in chunks of `stride` rows (the last may hold fewer), chunk c at `c·stride·d_pad`,
/// each packed as [`pack_rows_f32`] packs `stride` rows.
pub fn gram_update_f32_chunks(packed: &[f32], stride: usize, rows: usize, g: &mut PackedGram) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
    relaxed::gram_update_f32_chunks(packed, stride, rows, g);
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", not(feature = "relaxed-simd")))]
    simd::gram_update_f32_chunks(packed, stride, rows, g);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    portable::gram_update_f32_chunks(packed, stride, rows, g);
}

/// Adds Σ_r u_r u_rᵀ over `k` rows packed by [`pack_rows`] into `g`, in f64. Dispatches to the SIMD
/// kernel when compiled in.
pub fn gram_update(packed: &[f64], k: usize, g: &mut PackedGram) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    simd::gram_update(packed, k, g);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    portable::gram_update(packed, k, g);
}

/// Rows of `b` that [`dots`] takes against every row of `a` before moving on (a multiple of 4, so
/// the kernels' tiles never straddle two blocks): 16 rows of d = 4096 f32 are 256 KiB, which stay
/// in L2 while all of `a` passes over them. Without the blocking every pair of `a` rows streamed
/// all of `b` from memory (32 MB for a 2048-row sample at d = 4096).
pub const DOTS_B_BLOCK: usize = 16;

/// `out[i * nb + j] = a_i · b_j` for rows of `a` and `b` (each `dim_padded` long).
pub fn dots(a: &[f32], b: &[f32], dim_padded: usize, out: &mut [f32]) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    simd::dots(a, b, dim_padded, out);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    portable::dots(a, b, dim_padded, out);
}

/// Which kernel this build runs: "relaxed-simd" (the worker built with the cargo feature
/// `relaxed-simd`), "simd128" or "portable", for the report and the benchmark. The f64 Gram update
/// has no relaxed form: with [`Precision::F64`] the relaxed build runs the simd128 kernel.
pub fn kernel_name(precision: Precision) -> &'static str {
    if cfg!(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))
        && precision == Precision::F32
    {
        "relaxed-simd"
    } else if cfg!(all(target_arch = "wasm32", target_feature = "simd128")) {
        "simd128"
    } else {
        "portable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some_rows(dim: usize, k: usize) -> Vec<f64> {
        let d = padded_dim(dim);
        let mut rows = vec![0.0; k * d];
        for r in 0..k {
            for c in 0..dim {
                rows[r * d + c] = ((r * 31 + c * 17) % 13) as f64 / 13.0 - 0.4;
            }
        }
        rows
    }

    #[test]
    fn a_row_packed_while_summing_gives_the_separate_loops_bits() {
        for dim in [8usize, 40, 259] {
            let d = padded_dim(dim);
            let rows = some_rows(dim, 70);
            let centre: Vec<f64> = (0..d).map(|i| ((i * 5) % 7) as f64 * 0.01 - 0.03).collect();
            for centre in [&centre[..], &[][..]] {
                let (mut fused, mut apart) =
                    ((Vec::new(), vec![0.0; d], vec![0.0; d]), (Vec::new(), vec![0.0; d], vec![0.0; d]));
                for (r, row) in rows.chunks_exact(d).enumerate() {
                    let got = pack_row_f32_summing(row, centre, r, &mut fused.0, &mut fused.1, &mut fused.2);
                    let want = separate_row_sums(row, centre, r, &mut apart.0, &mut apart.1, &mut apart.2);
                    assert_eq!((got.unit.to_bits(), got.used.to_bits()), (want.unit.to_bits(), want.used.to_bits()));
                    assert!(got.unit > 0.0 && got.used > 0.0);
                }
                assert_eq!(fused, apart, "d = {dim}, centred: {}", !centre.is_empty());
                assert!(fused.1.iter().any(|&s| s != 0.0));
                assert_eq!(fused.2.iter().any(|&s| s != 0.0), !centre.is_empty());
            }
            // A centre of another length is taken by the separate loops.
            let (mut batch, mut sum, mut sum_centred) = (Vec::new(), vec![0.0; d], vec![0.0; d]);
            let short = vec![0.01; d / 2];
            let norms = pack_row_f32_summing(&rows[..d], &short, 0, &mut batch, &mut sum, &mut sum_centred);
            assert!(norms.used > 0.0 && sum_centred[0] != 0.0);
        }
    }

    #[test]
    fn the_centred_frobenius_norm_is_the_entrywise_one_bit_for_bit() {
        for dim in [1usize, 7, 37, 130] {
            let dp = padded_dim(dim);
            let mut full = PackedGram::new(dim);
            let mut packed = Vec::new();
            let k = pack_rows(&some_rows(dim, 9), dp, &mut packed);
            gram_update(&packed, k, &mut full);
            let mut band = PackedGram::band(dim, full.panels() / 2..full.panels());
            gram_update(&packed, k, &mut band);
            let unallocated = PackedGram::new(dim);
            let c: Vec<f64> = (0..dp).map(|i| ((i * 5) % 7) as f64 * 0.3 - 0.7).collect();
            let s: Vec<f64> = (0..dp).map(|i| ((i * 3) % 11) as f64 * 0.11 - 0.4).collect();
            // Full-length centres, shorter ones (entries past them add nothing), and none.
            for (c, s) in
                [(&c[..], &s[..]), (&c[..dim / 2], &s[..]), (&c[..], &s[..dim.div_ceil(3)]), (&[][..], &[][..])]
            {
                let n = 17.0;
                let entrywise = |a: usize, b: usize| match (c.get(a), c.get(b), s.get(a), s.get(b)) {
                    (Some(&ca), Some(&cb), Some(&sa), Some(&sb)) => ca * sb + sa * cb + n * ca * cb,
                    _ => 0.0,
                };
                for g in [&full, &band, &unallocated] {
                    let want = g.frobenius_sq_plus(entrywise);
                    assert_eq!(g.frobenius_sq_centred(c, s, n).to_bits(), want.to_bits(), "d = {dim}");
                }
            }
        }
    }

    #[test]
    fn a_g_added_from_values_apart_is_the_merge_bit_for_bit() {
        // d = 400: 80 000-odd values, past one 64 Ki slice of `merge_from`.
        let dim = 400;
        let dp = padded_dim(dim);
        let (mut mine, mut theirs) = (PackedGram::new(dim), PackedGram::new(dim));
        let mut packed = Vec::new();
        let k = pack_rows(&some_rows(dim, 7), dp, &mut packed);
        gram_update(&packed, k, &mut mine);
        let k = pack_rows(&some_rows(dim, 11).into_iter().map(|v| v * 0.3 + 0.01).collect::<Vec<_>>(), dp, &mut packed);
        gram_update(&packed, k, &mut theirs);
        assert!(theirs.stored_len() > 1 << 16);
        let mut want = mine.clone();
        want.merge(&theirs);
        let mut sent = theirs.clone();
        let values = sent.take_values();
        assert!(!sent.is_allocated());
        let mut got = mine.clone();
        assert!(got.merge_from(&sent, &values.as_slice()));
        assert_eq!(got, want, "the same sums, bit for bit");
        // Into a G not yet allocated, and a G of zeros sent (no values): what merge gives.
        let mut empty = PackedGram::new(dim);
        assert!(empty.merge_from(&sent, &values.as_slice()));
        assert_eq!(empty.values(), theirs.values());
        let mut unchanged = mine.clone();
        assert!(unchanged.merge_from(&PackedGram::new(dim), &[].as_slice()));
        assert_eq!(unchanged, mine);
        // A value too few or too many, or another layout: refused, nothing added.
        let mut refused = mine.clone();
        assert!(!refused.merge_from(&sent, &&values[1..]));
        let mut more = values.clone();
        more.push(1.0);
        assert!(!refused.merge_from(&sent, &more.as_slice()));
        assert!(!refused.merge_from(&PackedGram::band(dim, 0..2), &values.as_slice()));
        assert_eq!(refused, mine);
        // Given back, the values make the G that was sent.
        assert!(sent.restore_values(&values.as_slice()));
        assert_eq!(sent, theirs);
        assert!(!PackedGram::new(dim).restore_values(&&values[1..]));
    }

    #[test]
    fn a_g_is_allocated_by_its_first_write_and_reads_as_zero_until_then() {
        let dim = 40;
        let mut lazy = PackedGram::new(dim);
        assert!(!lazy.is_allocated());
        assert_eq!(lazy.bytes(), lazy.stored_len() * 8, "the bytes it will hold");
        let mut zeros = PackedGram::new(dim);
        zeros.panel_mut(0);
        assert!(zeros.is_allocated() && zeros.values().iter().all(|&v| v == 0.0));
        // Every reader gives what an allocated G of zeros gives.
        let extra = |a: usize, b: usize| (a * 3 + b) as f64 * 0.01;
        assert_eq!(lazy.frobenius_sq_plus(extra), zeros.frobenius_sq_plus(extra));
        assert_eq!(lazy.frobenius_sq(), 0.0);
        let v: Vec<f64> = (0..padded_dim(dim)).map(|i| i as f64).collect();
        assert_eq!(lazy.quadratic_form(&v), zeros.quadratic_form(&v));
        assert_eq!(lazy.get(3, 7), 0.0);
        // Merging into it, or placing a band of zeros, is merging into zeros.
        let mut full = PackedGram::new(dim);
        let rows = some_rows(dim, 5);
        let mut packed = Vec::new();
        let k = pack_rows(&rows, padded_dim(dim), &mut packed);
        gram_update(&packed, k, &mut full);
        lazy.merge(&full);
        assert_eq!(lazy, full);
        let band = PackedGram::band(dim, 2..6);
        assert!(full.place(&band));
        assert!(
            (8..24).all(|a| (a..padded_dim(dim)).all(|b| full.get(a, b) == 0.0)),
            "the band's panels are zero again"
        );
    }

    #[test]
    fn a_band_widens_to_the_whole_g_keeping_its_panels_and_the_first_in_place() {
        let dim = 70;
        let d = padded_dim(dim);
        let rows = some_rows(dim, 9);
        let mut packed = Vec::new();
        let k = pack_rows(&rows, d, &mut packed);
        let mut whole = PackedGram::new(dim);
        gram_update(&packed, k, &mut whole);
        let panels = whole.panels();
        for range in [0..6, 6..panels, 2..10] {
            let mut band = PackedGram::band(dim, range.clone());
            gram_update(&packed, k, &mut band);
            let at = band.values().as_ptr();
            band.widen();
            assert_eq!(band.panel_range(), 0..panels);
            if range.start == 0 {
                assert_eq!(band.values().as_ptr(), at, "the first band grows in place");
            }
            let stored = PackedGram::band(dim, range.clone()).panel_range();
            for a in 0..d {
                for b in a..d {
                    let want = if stored.contains(&(a / TILE_A)) { whole.get(a, b) } else { 0.0 };
                    assert_eq!(band.get(a, b), want, "{range:?}: G[{a},{b}]");
                }
            }
        }
    }
}
