// The exact pass's Gram sums on the GPU (docs/method.md §1), three entry points run per block of rows:
//
// - `prep`: one invocation per row. Decodes the raw row (F32, BF16 or F16 bits, as the file stores
//   them), drops zero and non-finite rows, scales the row by a power of two
//   (exact), normalises it, subtracts the centre c and writes w = u − c (zeros for dropped rows and
//   padding), with ‖c + w‖² and ‖c + w‖⁴ of the row the Gram matrix will hold.
// - `sums`: one invocation per dimension (plus one for the scalars): s_w = Σw, Σ‖v‖², Σ‖v‖⁴, counts.
// - `gram`: tiles of the upper triangle of W = Σ w wᵀ, register-blocked, summed in f32 over at most K
//   rows, then folded into the band's accumulator.
// - `frob`: for a running estimate only, ‖G‖²_F of the band with G's entries rebuilt from W and the
//   centre terms (as the driver does in f64 at the end), summed in f32 per workgroup.
//
// WGSL has no f64. Every accumulator here is a 96-bit two's-complement fixed-point number (three u32
// words, low first, 48 fractional bits): f32 partial sums and exact f32 products are added to it with
// integer arithmetic only, so the result does not depend on the order of blocks or on whether the
// shader compiler reassociates or fuses float operations (an error-free two-float sum would).

struct Block {
    dim: u32,        // d
    dim_padded: u32, // d rounded up to a multiple of 16 (gram.rs's PAD)
    rows: u32,       // rows in this block (≤ capacity)
    capacity: u32,   // rows the block buffers hold
    dtype: u32,      // DTYPE_* of `raw`
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

struct Band {
    first: u32,  // first dimension a0 of the band (a multiple of 16)
    width: u32,  // columns stored per band row: dim_padded − first
    height: u32, // rows of G in the band (a multiple of 16)
    index: u32,  // the band's place in `partials` (frob)
}

// Rows summed in f32 before a fold (as the CPU kernel's MAX_CHUNK_ROWS).
const K: u32 = 64u;
const FRAC_BITS: i32 = 48;
// Per-row record: fate, ‖v‖² (3 words), ‖v‖⁴ (3 words).
const ROW_WORDS: u32 = 7u;
const KEPT: u32 = 0u;
const ZERO: u32 = 1u;
const NON_FINITE: u32 = 2u;
const EMPTY: u32 = 3u;
const DTYPE_F32: u32 = 0u;
const DTYPE_BF16: u32 = 1u;
const DTYPE_F16: u32 = 2u;

@group(0) @binding(0) var<uniform> block: Block;
// Raw rows back to back, indexed by element (a 16-bit type holds two per word, low half first).
@group(0) @binding(1) var<storage, read> raw: array<u32>;
@group(0) @binding(2) var<storage, read> centre: array<f32>;
@group(0) @binding(3) var<storage, read_write> centred: array<f32>;
@group(0) @binding(4) var<storage, read_write> row_stats: array<u32>;

// ---- 96-bit fixed point ----

fn add96(a: vec3<u32>, b: vec3<u32>) -> vec3<u32> {
    let x = a.x + b.x;
    let c0 = select(0u, 1u, x < a.x);
    let y1 = a.y + b.y;
    let c1 = select(0u, 1u, y1 < a.y);
    let y = y1 + c0;
    let c2 = select(0u, 1u, y < y1);
    return vec3<u32>(x, y, a.z + b.z + c1 + c2);
}

fn neg96(a: vec3<u32>) -> vec3<u32> {
    return add96(~a, vec3<u32>(1u, 0u, 0u));
}

// WGSL takes shift amounts modulo 32, so whole words and zero shifts are handled apart.
fn shl96(x: vec3<u32>, n: u32) -> vec3<u32> {
    if (n >= 96u) {
        return vec3<u32>(0u);
    }
    var v = x;
    var k = n;
    if (k >= 64u) {
        v = vec3<u32>(0u, 0u, v.x);
        k -= 64u;
    } else if (k >= 32u) {
        v = vec3<u32>(0u, v.x, v.y);
        k -= 32u;
    }
    if (k == 0u) {
        return v;
    }
    return vec3<u32>(v.x << k, (v.y << k) | (v.x >> (32u - k)), (v.z << k) | (v.y >> (32u - k)));
}

fn shr96(x: vec3<u32>, n: u32) -> vec3<u32> {
    if (n >= 96u) {
        return vec3<u32>(0u);
    }
    var v = x;
    var k = n;
    if (k >= 64u) {
        v = vec3<u32>(v.z, 0u, 0u);
        k -= 64u;
    } else if (k >= 32u) {
        v = vec3<u32>(v.y, v.z, 0u);
        k -= 32u;
    }
    if (k == 0u) {
        return v;
    }
    return vec3<u32>((v.x >> k) | (v.y << (32u - k)), (v.y >> k) | (v.z << (32u - k)), v.z >> k);
}

// magnitude · 2^exponent as fixed point, rounded to the nearest quantum (2^-48), with a sign.
fn to_fixed(magnitude: vec3<u32>, exponent: i32, negative: bool) -> vec3<u32> {
    let p = exponent + FRAC_BITS;
    var v: vec3<u32>;
    if (p >= 0) {
        v = shl96(magnitude, u32(p));
    } else {
        let n = u32(-p);
        if (n >= 96u) {
            return vec3<u32>(0u);
        }
        v = shr96(add96(magnitude, shl96(vec3<u32>(1u, 0u, 0u), n - 1u)), n);
    }
    return select(v, neg96(v), negative);
}

// An f32 as (integer mantissa, exponent), from its bits: subnormals stay exact (the GPU may flush
// them in arithmetic, never in integer code).
fn mantissa(bits: u32) -> u32 {
    let e = (bits >> 23u) & 0xffu;
    return select((bits & 0x7fffffu) | 0x800000u, bits & 0x7fffffu, e == 0u);
}

fn exponent(bits: u32) -> i32 {
    let e = (bits >> 23u) & 0xffu;
    return select(i32(e) - 150, -149, e == 0u);
}

fn fixed_of(x: f32) -> vec3<u32> {
    let bits = bitcast<u32>(x);
    return to_fixed(vec3<u32>(mantissa(bits), 0u, 0u), exponent(bits), (bits >> 31u) != 0u);
}

// x·y exactly (a 48-bit product of the two mantissas) as fixed point.
fn fixed_product(x: f32, y: f32) -> vec3<u32> {
    let bx = bitcast<u32>(x);
    let by = bitcast<u32>(y);
    let mx = mantissa(bx);
    let my = mantissa(by);
    let xl = mx & 0xffffu;
    let xh = mx >> 16u;
    let yl = my & 0xffffu;
    let yh = my >> 16u;
    let lo = xl * yl;
    let mid = xh * yl + xl * yh;
    let low = lo + (mid << 16u);
    let carry = select(0u, 1u, low < lo);
    let high = xh * yh + (mid >> 16u) + carry;
    let negative = ((bx ^ by) >> 31u) != 0u;
    return to_fixed(vec3<u32>(low, high, 0u), exponent(bx) + exponent(by), negative);
}

// The f32 nearest below |v| (24 leading bits, truncated), with v's sign.
fn f32_of(v: vec3<u32>) -> f32 {
    let negative = (v.z >> 31u) != 0u;
    let m = select(v, neg96(v), negative);
    var top: i32;
    if (m.z != 0u) {
        top = 95 - i32(countLeadingZeros(m.z));
    } else if (m.y != 0u) {
        top = 63 - i32(countLeadingZeros(m.y));
    } else if (m.x != 0u) {
        top = 31 - i32(countLeadingZeros(m.x));
    } else {
        return 0.0;
    }
    var bits: u32;
    if (top >= 23) {
        bits = shr96(m, u32(top - 23)).x;
    } else {
        bits = shl96(m, u32(23 - top)).x;
    }
    // m·2^-48 with its leading bit at `top`: biased exponent top − 48 + 127.
    let biased = u32(top + 79);
    let sign = select(0u, 0x80000000u, negative);
    return bitcast<f32>(sign | (biased << 23u) | (bits & 0x7fffffu));
}

// v as hi + lo, two f32 (about 48 significant bits).
fn split(v: vec3<u32>) -> vec2<f32> {
    let hi = f32_of(v);
    let lo = f32_of(add96(v, neg96(fixed_of(hi))));
    return vec2<f32>(hi, lo);
}

// Element i of the raw rows as f32 bits, decoded with integer operations only (exact, and no
// float arithmetic that a GPU could flush to zero): BF16 is the upper half of an f32; F16 is
// re-biased, its subnormals normalised, ±∞ and NaN kept, as the `half` crate converts.
fn load_bits(i: u32) -> u32 {
    if (block.dtype == DTYPE_F32) {
        return raw[i];
    }
    let word = raw[i >> 1u];
    let h = select(word & 0xffffu, word >> 16u, (i & 1u) == 1u);
    if (block.dtype == DTYPE_BF16) {
        return h << 16u;
    }
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0x1fu) {
        return sign | 0x7f800000u | (m << 13u);
    }
    if (e != 0u) {
        return sign | ((e + 112u) << 23u) | (m << 13u);
    }
    if (m == 0u) {
        return sign;
    }
    // m·2^-24 with its leading bit at `top`: biased exponent top − 24 + 127.
    let top = 31u - countLeadingZeros(m);
    return sign | ((top + 103u) << 23u) | ((m << (23u - top)) & 0x7fffffu);
}

// x · 2^k built from x's bits (exact; 0 if the result would be subnormal: below 2^-126 of a row
// whose largest entry is scaled to [1, 2), it cannot move a cosine).
fn scaled(bits: u32, k: i32) -> f32 {
    let m = mantissa(bits);
    if (m == 0u) {
        return 0.0;
    }
    let top = 31 - i32(countLeadingZeros(m));
    let shift = u32(23 - top);
    let biased = exponent(bits) + k - (23 - top) + 150;
    if (biased < 1) {
        return 0.0;
    }
    return bitcast<f32>((bits & 0x80000000u) | (u32(biased) << 23u) | ((m << shift) & 0x7fffffu));
}

fn store_row(r: u32, fate: u32, n2: vec3<u32>, n4: vec3<u32>) {
    let o = r * ROW_WORDS;
    row_stats[o] = fate;
    row_stats[o + 1u] = n2.x;
    row_stats[o + 2u] = n2.y;
    row_stats[o + 3u] = n2.z;
    row_stats[o + 4u] = n4.x;
    row_stats[o + 5u] = n4.y;
    row_stats[o + 6u] = n4.z;
}

fn clear_row(r: u32) {
    for (var a = 0u; a < block.dim_padded; a++) {
        centred[r * block.dim_padded + a] = 0.0;
    }
}

@compute @workgroup_size(64)
fn prep(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r = gid.x;
    if (r >= block.capacity) {
        return;
    }
    let z = vec3<u32>(0u);
    if (r >= block.rows) {
        clear_row(r);
        store_row(r, EMPTY, z, z);
        return;
    }
    let d = block.dim;
    let base = r * d;
    // Finiteness and the largest |x|, on the bits (integer order is float order for |x|).
    var largest = 0u;
    var finite = true;
    for (var a = 0u; a < d; a++) {
        let bits = load_bits(base + a) & 0x7fffffffu;
        finite = finite && (bits & 0x7f800000u) != 0x7f800000u;
        largest = max(largest, bits);
    }
    if (!finite || largest == 0u) {
        clear_row(r);
        store_row(r, select(ZERO, NON_FINITE, !finite), z, z);
        return;
    }
    // Scale so that the largest entry is in [1, 2): no overflow or underflow in what follows.
    let lm = mantissa(largest);
    let k = -(exponent(largest) + 31 - i32(countLeadingZeros(lm)));
    // ‖y‖² exactly, then 1/‖y‖ to within an f32 rounding: inverseSqrt (2 ulp in Vulkan and WebGPU)
    // and one Newton step whose residual 1 − ‖y‖²r² is formed exactly. A systematic error in r
    // would shift every cosine by the same factor and μ by 2μ times it (docs/method.md §1's 1e-7).
    var norm2 = vec3<u32>(0u);
    for (var a = 0u; a < d; a++) {
        let y = scaled(load_bits(base + a), k);
        norm2 = add96(norm2, fixed_product(y, y));
    }
    let n = split(norm2);
    let r0 = inverseSqrt(n.x);
    let p = split(add96(fixed_product(n.x, r0), fixed_product(n.y, r0)));
    let q = add96(fixed_product(p.x, r0), fixed_product(p.y, r0));
    // 1 is 2^48 in fixed point: bit 16 of the middle word.
    let residual = f32_of(add96(vec3<u32>(0u, 0x10000u, 0u), neg96(q)));
    let r1 = r0 + 0.5 * r0 * residual;
    // w = u − c, and ‖c + w‖² exactly: the row whose outer product W + (centre terms) holds.
    var v2 = vec3<u32>(0u);
    let dst = r * block.dim_padded;
    for (var a = 0u; a < d; a++) {
        let u = scaled(load_bits(base + a), k) * r1;
        let c = centre[a];
        let w = u - c;
        centred[dst + a] = w;
        v2 = add96(v2, add96(fixed_product(c, c), add96(fixed_product(2.0 * c, w), fixed_product(w, w))));
    }
    for (var a = d; a < block.dim_padded; a++) {
        centred[dst + a] = 0.0;
    }
    let h = split(v2);
    let v4 = add96(fixed_product(h.x, h.x), add96(fixed_product(2.0 * h.x, h.y), fixed_product(h.y, h.y)));
    store_row(r, KEPT, v2, v4);
}

// ---- sums: s_w, Σ‖v‖², Σ‖v‖⁴ and the counts, added to the running totals ----
// Layout of `totals` (u32 words): s_w as dim_padded fixed numbers, then Σ‖v‖², Σ‖v‖⁴ (fixed), then
// kept, zero, non-finite counts (u32: up to 2^32 − 1 rows, far above any vocabulary).

@group(0) @binding(5) var<storage, read_write> totals: array<u32>;

fn add_total(i: u32, v: vec3<u32>) {
    let o = 3u * i;
    let t = add96(vec3<u32>(totals[o], totals[o + 1u], totals[o + 2u]), v);
    totals[o] = t.x;
    totals[o + 1u] = t.y;
    totals[o + 2u] = t.z;
}

@compute @workgroup_size(64)
fn sums(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let dp = block.dim_padded;
    if (i < dp) {
        var s = vec3<u32>(0u);
        for (var r = 0u; r < block.rows; r++) {
            s = add96(s, fixed_of(centred[r * dp + i]));
        }
        add_total(i, s);
    } else if (i == dp) {
        var n2 = vec3<u32>(0u);
        var n4 = vec3<u32>(0u);
        var counts = vec3<u32>(0u);
        for (var r = 0u; r < block.rows; r++) {
            let o = r * ROW_WORDS;
            let fate = row_stats[o];
            if (fate == KEPT) {
                n2 = add96(n2, vec3<u32>(row_stats[o + 1u], row_stats[o + 2u], row_stats[o + 3u]));
                n4 = add96(n4, vec3<u32>(row_stats[o + 4u], row_stats[o + 5u], row_stats[o + 6u]));
                counts.x += 1u;
            } else if (fate == ZERO) {
                counts.y += 1u;
            } else if (fate == NON_FINITE) {
                counts.z += 1u;
            }
        }
        add_total(dp, n2);
        add_total(dp + 1u, n4);
        let o = 3u * (dp + 2u);
        totals[o] += counts.x;
        totals[o + 1u] += counts.y;
        totals[o + 2u] += counts.z;
    }
}

// ---- gram: one band of the upper triangle of W ----
// `band_values` holds band.height rows of band.width fixed numbers: entry (a, b), a0 ≤ a < a0 + height,
// a0 ≤ b < dim_padded, at 3·((a − a0)·width + (b − a0)).
//
// Register blocking: a workgroup of THREADS × THREADS invocations sums one SIDE × SIDE tile of W
// (SIDE = THREADS·BLOCK; tiles counted from the band's first dimension), and each invocation holds
// BLOCK × BLOCK entries of it in registers: rows lid.y + i·THREADS, columns lid.x + j·THREADS of the
// tile (strided, so that neighbouring invocations read neighbouring words of workgroup memory). STAGE
// rows of the tile's two column ranges are staged in workgroup memory at a time, and each value read
// from there feeds BLOCK multiply-adds instead of one. The three sizes are substituted by gram.rs
// for the adapter's limits (`GramShape`); the values below are its defaults.
const THREADS: u32 = 16u;
const BLOCK: u32 = 4u;
const STAGE: u32 = 32u;
const SIDE: u32 = THREADS * BLOCK;
const ENTRIES: u32 = BLOCK * BLOCK;

@group(1) @binding(0) var<uniform> band: Band;
@group(1) @binding(1) var<storage, read_write> band_values: array<u32>;

var<workgroup> tile_a: array<f32, STAGE * SIDE>;
var<workgroup> tile_b: array<f32, STAGE * SIDE>;

// One block's sums (at most 256 rows) fit two words: |w| ≤ 3 (|u| ≤ 1, and the driver refuses
// |c| > 2), so each product is at most 9 and a block's sum below 2^12, below 2^60 with 48 fractional
// bits. The band's third word is then the sign's extension.
fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let x = a.x + b.x;
    return vec2<u32>(x, a.y + b.y + select(0u, 1u, x < a.x));
}

// `fixed_of` for |x| < 2^12 (the bound above), in two words: the same rounding, fewer shifts.
fn fixed64_of(x: f32) -> vec2<u32> {
    let bits = bitcast<u32>(x);
    let m = mantissa(bits);
    let p = exponent(bits) + FRAC_BITS;
    var v = vec2<u32>(0u);
    if (p >= 32) {
        v = vec2<u32>(0u, m << u32(p - 32));
    } else if (p > 0) {
        v = vec2<u32>(m << u32(p), m >> u32(32 - p));
    } else if (p == 0) {
        v = vec2<u32>(m, 0u);
    } else if (p > -25) {
        // Half up to the nearest quantum, as `to_fixed`; with m < 2^24, n ≥ 25 always gives 0.
        let n = u32(-p);
        v = vec2<u32>((m + (1u << (n - 1u))) >> n, 0u);
    }
    if ((bits >> 31u) != 0u) {
        v = add64(~v, vec2<u32>(1u, 0u));
    }
    return v;
}

@compute @workgroup_size(THREADS, THREADS)
fn gram(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    // Whole tiles below the diagonal have nothing to do (uniform: the ids are per workgroup).
    if (wid.x < wid.y) {
        return;
    }
    // A tile on the diagonal stages one column range for both operands and skips the blocks i > j,
    // which lie wholly below the diagonal (|lx − ly| < THREADS): no invocation idles there.
    let diagonal = wid.x == wid.y;
    let dp = block.dim_padded;
    let a0 = band.first + wid.y * SIDE;
    let b0 = band.first + wid.x * SIDE;
    var total: array<vec2<u32>, ENTRIES>;
    var acc: array<f32, ENTRIES>;
    for (var r0 = 0u; r0 < block.rows; r0 += K) {
        for (var e = 0u; e < ENTRIES; e++) {
            acc[e] = 0.0;
        }
        // The K rows in order, STAGE at a time: each entry's f32 sum runs over them one by one.
        for (var s0 = r0; s0 < min(r0 + K, block.rows); s0 += STAGE) {
            for (var e = li; e < STAGE * SIDE; e += THREADS * THREADS) {
                let row = s0 + e / SIDE;
                let col = e % SIDE;
                var xa = 0.0;
                var xb = 0.0;
                if (row < block.rows) {
                    if (a0 + col < dp) {
                        xa = centred[row * dp + a0 + col];
                    }
                    if (!diagonal && b0 + col < dp) {
                        xb = centred[row * dp + b0 + col];
                    }
                }
                tile_a[e] = xa;
                if (!diagonal) {
                    tile_b[e] = xb;
                }
            }
            workgroupBarrier();
            var va: array<f32, BLOCK>;
            var vb: array<f32, BLOCK>;
            if (diagonal) {
                for (var rr = 0u; rr < STAGE; rr++) {
                    for (var i = 0u; i < BLOCK; i++) {
                        va[i] = tile_a[rr * SIDE + lid.y + i * THREADS];
                        vb[i] = tile_a[rr * SIDE + lid.x + i * THREADS];
                    }
                    for (var i = 0u; i < BLOCK; i++) {
                        for (var j = i; j < BLOCK; j++) {
                            acc[i * BLOCK + j] += va[i] * vb[j];
                        }
                    }
                }
            } else {
                for (var rr = 0u; rr < STAGE; rr++) {
                    for (var i = 0u; i < BLOCK; i++) {
                        va[i] = tile_a[rr * SIDE + lid.y + i * THREADS];
                        vb[i] = tile_b[rr * SIDE + lid.x + i * THREADS];
                    }
                    for (var i = 0u; i < BLOCK; i++) {
                        for (var j = 0u; j < BLOCK; j++) {
                            acc[i * BLOCK + j] += va[i] * vb[j];
                        }
                    }
                }
            }
            workgroupBarrier();
        }
        for (var e = 0u; e < ENTRIES; e++) {
            total[e] = add64(total[e], fixed64_of(acc[e]));
        }
    }
    let last = band.first + band.height;
    for (var i = 0u; i < BLOCK; i++) {
        let a = a0 + lid.y + i * THREADS;
        for (var j = 0u; j < BLOCK; j++) {
            let b = b0 + lid.x + j * THREADS;
            if (a >= last || b >= dp || b < a) {
                continue;
            }
            let t = total[i * BLOCK + j];
            let sum = vec3<u32>(t.x, t.y, select(0u, 0xffffffffu, (t.y >> 31u) != 0u));
            let o = 3u * ((a - band.first) * band.width + (b - band.first));
            let v = add96(vec3<u32>(band_values[o], band_values[o + 1u], band_values[o + 2u]), sum);
            band_values[o] = v.x;
            band_values[o + 1u] = v.y;
            band_values[o + 2u] = v.z;
        }
    }
}

// ---- frob: ‖G‖²_F of one band, for a running estimate ----
// G_ab = W_ab + c_a·s_w,b + s_w,a·c_b + n·c_a·c_b in f32 (W and s_w rounded from fixed point), each
// entry above the diagonal counted twice; FROB_GROUPS workgroups stride over the band and leave one
// f32 partial sum each at partials[band.index·FROB_GROUPS + group].

const FROB_GROUPS: u32 = 64u;
@group(0) @binding(6) var<storage, read_write> partials: array<f32>;
var<workgroup> frob_sums: array<f32, 256>;

fn total_f32(i: u32) -> f32 {
    let o = 3u * i;
    let v = vec3<u32>(totals[o], totals[o + 1u], totals[o + 2u]);
    let h = split(v);
    return h.x + h.y;
}

@compute @workgroup_size(256)
fn frob(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let d = block.dim;
    let n = f32(totals[3u * (block.dim_padded + 2u)]);
    let entries = band.height * band.width;
    var acc = 0.0;
    for (var e = wid.x * 256u + li; e < entries; e += FROB_GROUPS * 256u) {
        let a = band.first + e / band.width;
        let b = band.first + e % band.width;
        if (a >= d || b >= d || b < a) {
            continue;
        }
        let o = 3u * e;
        let w = f32_of(vec3<u32>(band_values[o], band_values[o + 1u], band_values[o + 2u]));
        let ca = centre[a];
        let cb = centre[b];
        let g = w + ca * total_f32(b) + total_f32(a) * cb + n * ca * cb;
        acc += select(2.0, 1.0, a == b) * g * g;
    }
    frob_sums[li] = acc;
    workgroupBarrier();
    for (var half = 128u; half > 0u; half >>= 1u) {
        if (li < half) {
            frob_sums[li] += frob_sums[li + half];
        }
        workgroupBarrier();
    }
    if (li == 0u) {
        partials[band.index * FROB_GROUPS + wid.x] = frob_sums[0];
    }
}
