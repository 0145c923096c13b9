//! Register-tiled GEMM kernels with fused epilogues, and the vector math they share.
//!
//! Every matrix is column-major `f32`. One kernel covers the three products of a dense layer:
//!
//! * forward, `C = act(W · X + b)`: the bias and the activation run on the accumulators before
//!   the tile is stored;
//! * input gradient, `C = act'(A) ⊙ (Wᵀ · D)`: the previous layer's activation derivative is
//!   applied in the same way (with `Wᵀ` packed once per call);
//! * weight gradient, `C = D · Xᵀ`: `X` is read through strides, nothing is packed.
//!
//! The vector operand ("A") is read a column at a time as `MV` whole vectors (a vector that
//! runs past the last row reads the next column's first rows, and those lanes are dropped; only
//! at the very end of A do loads go partial); the other operand ("B") is read one broadcast
//! scalar at a time through arbitrary strides. A micro-tile keeps
//! `MV x NR` accumulators in registers (2 x 6 with AVX2, 2 x 12 with AVX-512), which is enough
//! independent FMA chains to hide the FMA latency on current cores, and loads only
//! `MV + NR` values per `MV * NR` FMAs, so no operand needs packing for these small shapes.
//!
//! For single-column products (one target at a time) a separate matrix-vector tile keeps two
//! interleaved accumulator sets per row vector instead.
//!
//! Everything is written once against [`Simd`] and dispatched at run time (see [`crate::simd`]).

use super::dense::Activation;
use crate::simd::{Simd, dispatch};

/// What happens to each tile of accumulators before it is stored.
#[derive(Debug, Clone, Copy)]
pub enum Epilogue<'a> {
    /// Store the product as it is.
    Plain,
    /// `act(acc + bias[row])`; `bias` holds at least `m` values.
    BiasAct(&'a [f32], Activation),
    /// `acc · act'(a)`, where `a` (the activation's output) has the layout of `C`.
    ActGrad(&'a [f32], Activation),
}

/// One product `C (m x n) = epilogue(A · B)`, with `A` (`m x k`) column-major with leading
/// dimension `lda >= m` and `B(p, j)` at `b[p * b_k + j * b_j]`.
#[derive(Debug, Clone, Copy)]
pub struct Gemm<'a> {
    /// Rows of `C`.
    pub m: usize,
    /// Columns of `C`.
    pub n: usize,
    /// The summed dimension.
    pub k: usize,
    /// The vector operand.
    pub a: &'a [f32],
    /// Its leading dimension.
    pub lda: usize,
    /// The broadcast operand.
    pub b: &'a [f32],
    /// Stride of `B` along `k`.
    pub b_k: usize,
    /// Stride of `B` along the columns of `C`.
    pub b_j: usize,
    /// Leading dimension of `C`.
    pub ldc: usize,
    /// What to do with each tile before storing it.
    pub epilogue: Epilogue<'a>,
}

impl Gemm<'_> {
    /// Checks that every index the kernel forms is inside its slice.
    ///
    /// # Panics
    /// On any shape or length mismatch (a programming error).
    fn check(&self, c: &[f32]) {
        let (m, n, k) = (self.m, self.n, self.k);
        assert!(self.lda >= m, "lda {} for {m} rows", self.lda);
        assert!(self.ldc >= m, "ldc {} for {m} rows", self.ldc);
        if m == 0 || n == 0 {
            return;
        }
        if k > 0 {
            assert!(self.a.len() >= (k - 1) * self.lda + m, "A holds {} < {k} x {}", self.a.len(), self.lda);
            assert!(self.b.len() > (k - 1) * self.b_k + (n - 1) * self.b_j, "B too short");
        }
        assert!(c.len() >= (n - 1) * self.ldc + m, "C too short");
        match self.epilogue {
            Epilogue::Plain => {}
            Epilogue::BiasAct(bias, _) => assert!(bias.len() >= m, "bias too short"),
            Epilogue::ActGrad(a, _) => assert!(a.len() >= (n - 1) * self.ldc + m, "activation too short"),
        }
    }
}

/// Runs `g`, writing `C` into `c`.
///
/// # Panics
/// If the shapes or slice lengths do not fit (see [`Gemm`]).
pub fn gemm(g: &Gemm<'_>, c: &mut [f32]) {
    g.check(c);
    gemm_dispatched(g, c);
}

dispatch!(fn gemm_dispatched(g: &Gemm<'_>, c: &mut [f32]) => generic gemm_body);

// ---------------------------------------------------------------------------------------------
// Vector math.

/// `tanh` as the 13/6 rational function of [`super::dense::fast_tanh`], on a vector.
#[inline(always)]
pub(crate) unsafe fn tanh_v<V: Simd>(x: V) -> V {
    // SAFETY: vector arithmetic only; the caller runs at `V`'s level.
    unsafe {
        // Constant first: NaN lanes stay NaN.
        let x = V::splat(7.905_311).min(V::splat(-7.905_311).max(x));
        let x2 = x.mul(x);
        let mut p = V::fma(x2, V::splat(-2.760_768_5e-16), V::splat(2.000_188e-13));
        p = V::fma(x2, p, V::splat(-8.604_672e-11));
        p = V::fma(x2, p, V::splat(5.122_297e-8));
        p = V::fma(x2, p, V::splat(1.485_722_4e-5));
        p = V::fma(x2, p, V::splat(6.372_619_3e-4));
        p = V::fma(x2, p, V::splat(4.893_524_6e-3));
        p = p.mul(x);
        let mut q = V::fma(x2, V::splat(1.198_258_4e-6), V::splat(1.185_347_1e-4));
        q = V::fma(x2, q, V::splat(2.268_434_6e-3));
        q = V::fma(x2, q, V::splat(4.893_525e-3));
        p.div(q)
    }
}

/// `e^x` by Cephes' method, as [`super::loss::fast_exp`], on a vector.
#[inline(always)]
pub(crate) unsafe fn exp_v<V: Simd>(x: V) -> V {
    // SAFETY: vector arithmetic only.
    unsafe {
        let x = V::splat(88.0).min(V::splat(-87.0).max(x));
        let n = V::fma(x, V::splat(std::f32::consts::LOG2_E), V::splat(0.5)).floor();
        let r = V::fma(n, V::splat(-0.693_359_4), x);
        let r = V::fma(n, V::splat(2.121_944_4e-4), r);
        let mut p = V::fma(V::splat(1.987_569_1e-4), r, V::splat(1.398_199_9e-3));
        p = V::fma(p, r, V::splat(8.333_452e-3));
        p = V::fma(p, r, V::splat(4.166_579_6e-2));
        p = V::fma(p, r, V::splat(1.666_666_5e-1));
        p = V::fma(p, r, V::splat(0.5));
        let y = V::fma(p.mul(r), r, r).add(V::splat(1.0));
        y.mul(V::pow2i(n))
    }
}

/// Natural logarithm of positive normal lanes (about 1e-7 absolute on the mantissa part).
#[inline(always)]
pub(crate) unsafe fn ln_v<V: Simd>(x: V) -> V {
    // SAFETY: vector arithmetic only.
    unsafe {
        let (m, e) = x.split_exponent();
        // ln m = 2 atanh(t), t = (m - 1) / (m + 1) in [0, 1/3).
        let one = V::splat(1.0);
        let t = m.sub(one).div(m.add(one));
        let t2 = t.mul(t);
        let mut s = V::fma(t2, V::splat(1.0 / 13.0), V::splat(1.0 / 11.0));
        s = V::fma(t2, s, V::splat(1.0 / 9.0));
        s = V::fma(t2, s, V::splat(1.0 / 7.0));
        s = V::fma(t2, s, V::splat(1.0 / 5.0));
        s = V::fma(t2, s, V::splat(1.0 / 3.0));
        s = V::fma(t2, s, one);
        V::fma(e, V::splat(std::f32::consts::LN_2), s.mul(t).add(s.mul(t)))
    }
}

#[inline(always)]
unsafe fn activate<V: Simd>(x: V, act: Activation) -> V {
    // SAFETY: vector arithmetic only.
    unsafe {
        match act {
            Activation::Tanh => tanh_v(x),
            Activation::Relu => V::splat(0.0).max(x),
            Activation::Identity => x,
        }
    }
}

#[inline(always)]
unsafe fn act_grad<V: Simd>(g: V, a: V, act: Activation) -> V {
    // SAFETY: vector arithmetic only.
    unsafe {
        match act {
            Activation::Tanh => g.mul(V::splat(1.0).sub(a.mul(a))),
            Activation::Relu => V::keep_where_positive(a, g),
            Activation::Identity => g,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GEMM.

/// Loads row vector `v` of column `p` of a tile's A: whole when `p < k_full`, else only the
/// `rows_left - v * LANES` rows that exist (the last columns of an unpadded A).
#[inline(always)]
unsafe fn load_a<V: Simd>(ap: *const f32, v: usize, careful: bool, rows_left: usize) -> V {
    // SAFETY: the caller passes `careful` for every column where a whole vector could run past A.
    unsafe {
        let rows = rows_left - v * V::LANES;
        if careful && rows < V::LANES {
            V::load_partial(ap.add(v * V::LANES), rows)
        } else {
            V::load(ap.add(v * V::LANES))
        }
    }
}

/// Where a tile reads its operands.
#[derive(Clone, Copy)]
struct Operands {
    a: *const f32,
    lda: usize,
    b: *const f32,
    b_k: usize,
    b_j: usize,
    k: usize,
    /// Columns of A whose whole row vectors can be loaded; the rest load partially.
    k_full: usize,
    /// Rows of C from the tile's first row on (at least the tile's rows but the last vector's).
    rows_left: usize,
}

/// One rank-1 update of a tile's accumulators, from column `p` of A and row `p` of B.
#[allow(clippy::needless_range_loop)] // acc[v][j]: the index order of the register tile
#[inline(always)]
unsafe fn tile_step<V: Simd, const MV: usize, const NR: usize>(
    acc: &mut [[V; NR]; MV],
    o: &Operands,
    p: usize,
    careful: bool,
) {
    // SAFETY: forwarded from `tile`.
    unsafe {
        let ap = o.a.add(p * o.lda);
        let mut av = [V::splat(0.0); MV];
        for (v, x) in av.iter_mut().enumerate() {
            *x = load_a::<V>(ap, v, careful, o.rows_left);
        }
        let bp = o.b.add(p * o.b_k);
        for j in 0..NR {
            let bv = V::splat(*bp.add(j * o.b_j));
            for v in 0..MV {
                acc[v][j] = V::fma(av[v], bv, acc[v][j]);
            }
        }
    }
}

/// `MV x NR` accumulators of `A[rows of the tile, :] · B[:, NR columns]`.
#[inline(always)]
unsafe fn tile<V: Simd, const MV: usize, const NR: usize>(o: Operands) -> [[V; NR]; MV] {
    // SAFETY: `gemm_body` only passes tiles whose every A vector (whole before `k_full`,
    // partial after) and B scalar is in bounds.
    unsafe {
        let mut acc = [[V::splat(0.0); NR]; MV];
        for p in 0..o.k_full {
            tile_step(&mut acc, &o, p, false);
        }
        for p in o.k_full..o.k {
            tile_step(&mut acc, &o, p, true);
        }
        acc
    }
}

/// `MV` accumulators of `A[rows of the tile, :] · x` for one column, two interleaved sums per
/// row vector so the FMA chains overlap.
#[inline(always)]
unsafe fn tile_gemv<V: Simd, const MV: usize>(o: Operands) -> [[V; 1]; MV] {
    // SAFETY: as in `tile`.
    unsafe {
        let mut acc0 = [V::splat(0.0); MV];
        let mut acc1 = [V::splat(0.0); MV];
        let mut p = 0;
        while p + 1 < o.k_full {
            let (x0, x1) = (V::splat(*o.b.add(p * o.b_k)), V::splat(*o.b.add((p + 1) * o.b_k)));
            let (a0, a1) = (o.a.add(p * o.lda), o.a.add((p + 1) * o.lda));
            for v in 0..MV {
                acc0[v] = V::fma(V::load(a0.add(v * V::LANES)), x0, acc0[v]);
                acc1[v] = V::fma(V::load(a1.add(v * V::LANES)), x1, acc1[v]);
            }
            p += 2;
        }
        while p < o.k {
            let x0 = V::splat(*o.b.add(p * o.b_k));
            let a0 = o.a.add(p * o.lda);
            for (v, acc) in acc0.iter_mut().enumerate() {
                *acc = V::fma(load_a::<V>(a0, v, p >= o.k_full, o.rows_left), x0, *acc);
            }
            p += 1;
        }
        let mut out = [[V::splat(0.0); 1]; MV];
        for v in 0..MV {
            out[v][0] = acc0[v].add(acc1[v]);
        }
        out
    }
}

/// Loads `rows` floats, whole vector or partial.
#[inline(always)]
unsafe fn load_rows<V: Simd>(p: *const f32, rows: usize) -> V {
    // SAFETY: the caller guarantees `rows` readable floats.
    unsafe { if rows == V::LANES { V::load(p) } else { V::load_partial(p, rows) } }
}

/// Applies the epilogue to a tile whose first row is `row0` and first column `col0`, and stores
/// the rows below `m`.
#[inline(always)]
unsafe fn finish<V: Simd, const MV: usize, const NR: usize>(
    acc: [[V; NR]; MV],
    g: &Gemm<'_>,
    c: *mut f32,
    row0: usize,
    col0: usize,
) {
    // SAFETY: rows below `g.m` and columns below `g.n` are inside `c` and the epilogue's slices
    // (checked by `Gemm::check`); partial vectors go through the bounded partial accessors.
    unsafe {
        for (v, accs) in acc.iter().enumerate() {
            let row = row0 + v * V::LANES;
            if row >= g.m {
                break;
            }
            let rows = (g.m - row).min(V::LANES);
            let bias = match g.epilogue {
                Epilogue::BiasAct(bias, _) => load_rows::<V>(bias.as_ptr().add(row), rows),
                _ => V::splat(0.0),
            };
            for (j, &x) in accs.iter().enumerate() {
                let at = row + (col0 + j) * g.ldc;
                let y = match g.epilogue {
                    Epilogue::Plain => x,
                    Epilogue::BiasAct(_, act) => activate(x.add(bias), act),
                    Epilogue::ActGrad(a, act) => act_grad(x, load_rows::<V>(a.as_ptr().add(at), rows), act),
                };
                if rows == V::LANES {
                    y.store(c.add(at));
                } else {
                    y.store_partial(c.add(at), rows);
                }
            }
        }
    }
}

#[inline(always)]
unsafe fn run_tile<V: Simd, const MV: usize, const NR: usize>(
    g: &Gemm<'_>,
    o: Operands,
    c: *mut f32,
    row0: usize,
    col0: usize,
) {
    // SAFETY: forwarded from `gemm_body`.
    unsafe {
        let o = Operands { a: o.a.add(row0), b: o.b.add(col0 * o.b_j), rows_left: g.m - row0, ..o };
        let acc = if NR == 1 && g.n == 1 {
            // A single-column product: the matrix-vector tile has more independent chains
            // (and sums in another order, so only whole single-column products take it).
            let one = tile_gemv::<V, MV>(o);
            let mut acc = [[V::splat(0.0); NR]; MV];
            for v in 0..MV {
                acc[v][0] = one[v][0];
            }
            acc
        } else {
            tile::<V, MV, NR>(o)
        };
        finish::<V, MV, NR>(acc, g, c, row0, col0);
    }
}

/// One tile of `mv` row vectors and `nr` columns, matched onto the const-generic kernels.
#[inline(always)]
unsafe fn dispatch_tile<V: Simd, const MV: usize>(
    g: &Gemm<'_>,
    o: Operands,
    c: *mut f32,
    row0: usize,
    col0: usize,
    nr: usize,
) {
    macro_rules! arms {
        ($($n:literal)*) => {
            match nr {
                $($n => run_tile::<V, MV, $n>(g, o, c, row0, col0),)*
                _ => unreachable!("tile width {nr}"),
            }
        };
    }
    // SAFETY: forwarded from `gemm_body`.
    unsafe { arms!(1 2 3 4 5 6 7 8 9 10 11 12) }
}

#[inline(always)]
unsafe fn gemm_rows<V: Simd, const MV: usize>(g: &Gemm<'_>, o: Operands, c: *mut f32, row0: usize) {
    // SAFETY: forwarded from `gemm_body`.
    unsafe {
        if g.n == 1 {
            run_tile::<V, MV, 1>(g, o, c, row0, 0);
            return;
        }
        let mut col = 0;
        while col < g.n {
            let nr = V::NR.min(g.n - col);
            dispatch_tile::<V, MV>(g, o, c, row0, col, nr);
            col += nr;
        }
    }
}

#[inline(always)]
fn gemm_body<V: Simd>(g: &Gemm<'_>, c: &mut [f32]) {
    if g.m == 0 || g.n == 0 {
        return;
    }
    let vectors = g.m.div_ceil(V::LANES);
    // Whole row vectors may run past row `m` of a column into the next one (those lanes are
    // computed and dropped); only where they would run past the end of A do loads go partial.
    let reach = vectors * V::LANES;
    let k_full = if g.a.len() >= reach { g.k.min((g.a.len() - reach) / g.lda.max(1) + 1) } else { 0 };
    let o = Operands {
        a: g.a.as_ptr(),
        lda: g.lda,
        b: g.b.as_ptr(),
        b_k: g.b_k,
        b_j: g.b_j,
        k: g.k,
        k_full,
        rows_left: g.m,
    };
    let c = c.as_mut_ptr();
    // One column (a single target): four row vectors per tile, more chains per tile.
    let mv = if g.n == 1 { 4 } else { V::MV.min(2) };
    let mut v = 0;
    // SAFETY: `gemm` checked every bound: whole A vectors are loaded only in the first `k_full`
    // columns, where they end inside A; B and C hold every (k, column) and (row, column) these
    // tiles touch; partial row vectors of C are stored through `store_partial`.
    unsafe {
        while v < vectors {
            let row0 = v * V::LANES;
            match (vectors - v).min(mv) {
                4 => gemm_rows::<V, 4>(g, o, c, row0),
                3 => gemm_rows::<V, 3>(g, o, c, row0),
                2 => gemm_rows::<V, 2>(g, o, c, row0),
                _ => gemm_rows::<V, 1>(g, o, c, row0),
            }
            v += (vectors - v).min(mv);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Small element-wise kernels.

/// `sums[i] = Σ_j x[i + j·rows]` for a column-major `rows x (x.len() / rows)` matrix: the
/// bias gradient, run as the matrix-vector product `x · 1` on the GEMM kernel.
pub fn row_sums(x: &[f32], rows: usize, sums: &mut [f32]) {
    assert!(rows > 0 && sums.len() == rows && x.len().is_multiple_of(rows), "row_sums shapes");
    let ones = [1.0f32];
    let g = Gemm {
        m: rows,
        n: 1,
        k: x.len() / rows,
        a: x,
        lda: rows,
        b: &ones,
        b_k: 0,
        b_j: 0,
        ldc: rows,
        epilogue: Epilogue::Plain,
    };
    gemm(&g, sums);
}

/// `Σ x²` over several slices (in a fixed order, so deterministic).
pub fn sum_of_squares(slices: &[&[f32]]) -> f32 {
    sum_of_squares_dispatched(slices)
}

dispatch!(fn sum_of_squares_dispatched(slices: &[&[f32]]) -> f32 => generic sum_of_squares_body);

#[inline(always)]
fn sum_of_squares_body<V: Simd>(slices: &[&[f32]]) -> f32 {
    // SAFETY: splatting is valid at every level.
    let mut acc = [unsafe { V::splat(0.0) }; 4];
    let mut tail = 0.0f32;
    for s in slices {
        let mut chunks = s.chunks_exact(4 * V::LANES);
        for c in &mut chunks {
            // SAFETY: each chunk holds 4 * LANES floats.
            unsafe {
                for (q, a) in acc.iter_mut().enumerate() {
                    let x = V::load(c.as_ptr().add(q * V::LANES));
                    *a = V::fma(x, x, *a);
                }
            }
        }
        tail += chunks.remainder().iter().map(|g| g * g).sum::<f32>();
    }
    // SAFETY: vector arithmetic only.
    unsafe { acc[0].add(acc[1]).add(acc[2].add(acc[3])).reduce_sum() + tail }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::nn::dense::fast_tanh;
    use crate::nn::loss::fast_exp;
    use crate::simd::Scalar;

    /// Naive `C = A · B` reference for a `Gemm`.
    fn reference(g: &Gemm<'_>) -> Vec<f32> {
        let mut c = vec![0f32; g.ldc * g.n];
        for j in 0..g.n {
            for i in 0..g.m {
                let mut s = 0f64;
                for p in 0..g.k {
                    s += g.a[i + p * g.lda] as f64 * g.b[p * g.b_k + j * g.b_j] as f64;
                }
                let s = s as f32;
                c[i + j * g.ldc] = match g.epilogue {
                    Epilogue::Plain => s,
                    Epilogue::BiasAct(b, Activation::Tanh) => fast_tanh(s + b[i]),
                    Epilogue::BiasAct(b, Activation::Relu) => (s + b[i]).max(0.0),
                    Epilogue::BiasAct(b, Activation::Identity) => s + b[i],
                    Epilogue::ActGrad(a, Activation::Tanh) => s * (1.0 - a[i + j * g.ldc].powi(2)),
                    Epilogue::ActGrad(a, Activation::Relu) => {
                        if a[i + j * g.ldc] > 0.0 {
                            s
                        } else {
                            0.0
                        }
                    }
                    Epilogue::ActGrad(_, Activation::Identity) => s,
                };
            }
        }
        c
    }

    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    type Kernel = fn(&Gemm<'_>, &mut [f32]);

    fn kernels() -> Vec<(&'static str, Kernel)> {
        let mut k: Vec<(&'static str, Kernel)> =
            vec![("dispatched", gemm), ("scalar", |g, c| gemm_body::<Scalar>(g, c))];
        #[cfg(target_arch = "x86_64")]
        k.push(("sse2", |g, c| gemm_body::<crate::simd::Base>(g, c)));
        k
    }

    #[test]
    fn gemm_matches_the_reference_for_every_shape_and_epilogue() {
        for (name, kernel) in kernels() {
            for &(m, k, n) in &[
                (1usize, 1usize, 1usize),
                (3, 2, 5),
                (14, 64, 9),
                (64, 3, 13),
                (64, 64, 256),
                (17, 5, 1),
                (64, 14, 7),
                (40, 7, 1),
            ] {
                let lda = if n % 3 == 0 { m + 5 } else { m };
                let a = values(lda * k.saturating_sub(1) + m, 1);
                let (b_k, b_j) = if n % 2 == 0 { (1, k) } else { (n, 1) }; // both B layouts
                let b = values(k * n, 2);
                let bias = values(m, 3);
                let act = values(m * n + 3, 4);
                for epilogue in [
                    Epilogue::Plain,
                    Epilogue::BiasAct(&bias, Activation::Tanh),
                    Epilogue::BiasAct(&bias, Activation::Relu),
                    Epilogue::ActGrad(&act, Activation::Tanh),
                    Epilogue::ActGrad(&act, Activation::Relu),
                ] {
                    let g = Gemm { m, n, k, a: &a, lda, b: &b, b_k, b_j, ldc: m, epilogue };
                    let mut c = vec![f32::NAN; m * n];
                    g.check(&c);
                    kernel(&g, &mut c);
                    let want = reference(&g);
                    let worst = c.iter().zip(&want).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
                    assert!(worst < 1e-4 * (1.0 + k as f32).sqrt(), "{name} {m}x{k}x{n} {epilogue:?}: {worst}");
                }
            }
        }
    }

    #[test]
    fn vector_math_matches_scalar() {
        dispatch!(fn tanh_all(x: &[f32], out: &mut [f32]) => generic tanh_all_body);
        fn tanh_all_body<V: Simd>(x: &[f32], out: &mut [f32]) {
            for (x, o) in x.chunks_exact(V::LANES).zip(out.chunks_exact_mut(V::LANES)) {
                // SAFETY: chunks of LANES floats.
                unsafe {
                    tanh_v(V::load(x.as_ptr())).store(o.as_mut_ptr());
                }
            }
        }
        dispatch!(fn exp_all(x: &[f32], out: &mut [f32]) => generic exp_all_body);
        fn exp_all_body<V: Simd>(x: &[f32], out: &mut [f32]) {
            for (x, o) in x.chunks_exact(V::LANES).zip(out.chunks_exact_mut(V::LANES)) {
                // SAFETY: chunks of LANES floats.
                unsafe {
                    exp_v(V::load(x.as_ptr())).store(o.as_mut_ptr());
                }
            }
        }
        dispatch!(fn ln_all(x: &[f32], out: &mut [f32]) => generic ln_all_body);
        fn ln_all_body<V: Simd>(x: &[f32], out: &mut [f32]) {
            for (x, o) in x.chunks_exact(V::LANES).zip(out.chunks_exact_mut(V::LANES)) {
                // SAFETY: chunks of LANES floats.
                unsafe {
                    ln_v(V::load(x.as_ptr())).store(o.as_mut_ptr());
                }
            }
        }
        let x: Vec<f32> = (0..16_000).map(|i| (i as f32 - 8000.0) * 0.011).collect();
        let mut out = vec![0f32; x.len()];
        tanh_all(&x, &mut out);
        for (&x, &y) in x.iter().zip(&out) {
            assert!((y - fast_tanh(x)).abs() < 1e-6, "tanh {x}: {y}");
        }
        exp_all(&x, &mut out);
        for (&x, &y) in x.iter().zip(&out) {
            assert!(((y - fast_exp(x)) / fast_exp(x)).abs() < 1e-6, "exp {x}: {y}");
        }
        let pos: Vec<f32> = (1..16_001).map(|i| i as f32 * 0.37e-2).collect();
        ln_all(&pos, &mut out);
        for (&x, &y) in pos.iter().zip(&out) {
            assert!((y - x.ln()).abs() < 2e-6 * (1.0 + x.ln().abs()), "ln {x}: {y} vs {}", x.ln());
        }
    }

    #[test]
    fn row_sums_and_squares() {
        let x = values(14 * 9, 5);
        let mut s = vec![0f32; 14];
        row_sums(&x, 14, &mut s);
        for (i, &v) in s.iter().enumerate() {
            let want: f32 = (0..9).map(|j| x[i + 14 * j]).sum();
            assert!((v - want).abs() < 1e-5);
        }
        let want: f32 = x.iter().map(|v| v * v).sum();
        assert!((sum_of_squares(&[&x, &x[..7]]) - want - x[..7].iter().map(|v| v * v).sum::<f32>()).abs() < 1e-3);
    }
}
