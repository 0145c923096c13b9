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

use super::activation::Activation;
use crate::simd::math::TINY;
use crate::simd::{Simd, dispatch};

/// What happens to each tile of accumulators before it is stored.
#[derive(Debug, Clone, Copy)]
pub enum Epilogue<'a> {
    /// Store the product as it is.
    Plain,
    /// `act(acc + bias[row])`; `bias` holds at least `m` values.
    BiasAct(&'a [f32], Activation),
    /// `acc · act'(a)`, where `a` (the activation's output) has the layout of `C`; magnitudes
    /// below [`TINY`] are stored as 0 (this is a gradient).
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
    // SAFETY: `check` established every bound `gemm_body` needs.
    unsafe { gemm_dispatched(g, c) }
}

dispatch!(
    /// [`gemm_body`] at the active level.
    ///
    /// # Safety
    /// As [`gemm_body`], less the instruction set.
    unsafe fn gemm_dispatched(g: &Gemm<'_>, c: &mut [f32]) => generic gemm_body
);

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
                    Epilogue::BiasAct(_, act) => act.apply_v(x.add(bias)),
                    Epilogue::ActGrad(a, act) => {
                        act.grad_v(x, load_rows::<V>(a.as_ptr().add(at), rows)).zero_where_tiny(V::splat(TINY))
                    }
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

/// Columns per micro-tile: `2 x 12` accumulators fill 24 of AVX-512's 32 registers, `2 x 6` 12 of
/// AVX2's 16.
const fn tile_columns<V: Simd>() -> usize {
    if V::LANES >= 16 { 12 } else { 6 }
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
            let nr = tile_columns::<V>().min(g.n - col);
            dispatch_tile::<V, MV>(g, o, c, row0, col, nr);
            col += nr;
        }
    }
}

/// `C = epilogue(A · B)` on `V` vectors.
///
/// # Safety
/// The CPU runs `V`'s instruction set, and `g.check(c)` passes: every index the kernel forms
/// (`(k-1)·lda + m` in A, `(k-1)·b_k + (n-1)·b_j` in B, `(n-1)·ldc + m` in C and the epilogue's
/// slices) is inside its slice.
#[inline(always)]
unsafe fn gemm_body<V: Simd>(g: &Gemm<'_>, c: &mut [f32]) {
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
    let mv = if g.n == 1 { 4 } else { 2 };
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
    // SAFETY: the body reads only inside the slices it is given.
    unsafe { sum_of_squares_dispatched(slices) }
}

dispatch!(
    /// [`sum_of_squares_body`] at the active level.
    ///
    /// # Safety
    /// None beyond the instruction set, which the dispatch checks.
    unsafe fn sum_of_squares_dispatched(slices: &[&[f32]]) -> f32 => generic sum_of_squares_body
);

/// `Σ x²` on `V` vectors: four interleaved accumulators per slice's whole chunks, the rest scalar.
///
/// # Safety
/// The CPU runs `V`'s instruction set.
#[inline(always)]
unsafe fn sum_of_squares_body<V: Simd>(slices: &[&[f32]]) -> f32 {
    // SAFETY: the caller runs at `V`'s level.
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
    use crate::simd::for_each_level;

    /// Deterministic values in [-1, 1].
    pub(crate) fn values(n: usize, seed: u32) -> Vec<f32> {
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

    /// Plain `C = epilogue(A · B)` in f64 with libm's tanh, and a bound on its rounding: the entry
    /// `(i, j)` of C and `Σ_p |A(i,p) B(p,j)|`.
    fn reference(g: &Gemm<'_>, i: usize, j: usize) -> (f64, f64) {
        let (mut s, mut mag) = (0f64, 0f64);
        for p in 0..g.k {
            let t = g.a[i + p * g.lda] as f64 * g.b[p * g.b_k + j * g.b_j] as f64;
            s += t;
            mag += t.abs();
        }
        let at = i + j * g.ldc;
        let value = match g.epilogue {
            Epilogue::Plain => s,
            Epilogue::BiasAct(b, act) => {
                let z = s + b[i] as f64;
                match act {
                    Activation::Tanh => z.tanh(),
                    Activation::Relu => z.max(0.0),
                    Activation::Identity => z,
                }
            }
            Epilogue::ActGrad(a, act) => {
                let y = a[at] as f64;
                match act {
                    Activation::Tanh => s * (1.0 - y * y),
                    Activation::Relu if y > 0.0 => s,
                    Activation::Relu => 0.0,
                    Activation::Identity => s,
                }
            }
        };
        (value, mag)
    }

    /// Every epilogue the layers use.
    fn epilogues<'a>(bias: &'a [f32], act: &'a [f32]) -> Vec<Epilogue<'a>> {
        let mut e = vec![Epilogue::Plain];
        for a in [Activation::Tanh, Activation::Relu, Activation::Identity] {
            e.push(Epilogue::BiasAct(bias, a));
            e.push(Epilogue::ActGrad(act, a));
        }
        e
    }

    /// Runs `gemm` on one shape at the active level for every epilogue and both layouts of B,
    /// with every slice starting at `offset` and padded leading dimensions, and checks each
    /// entry of C (and that nothing outside C's `m x n` block was written).
    fn check_shape(m: usize, k: usize, n: usize, offset: usize, level: crate::simd::Level) {
        let (lda, ldc) = (m + offset, m + 2 * offset);
        // Every slice is exactly as long as the shape needs, so loads past it would show.
        let a = values(offset + if k == 0 { 0 } else { (k - 1) * lda + m }, 1);
        let bias = values(offset + m, 3);
        let act = values(offset + ldc * (n - 1) + m, 4);
        // (b_k, b_j): column-major B (forward, input gradient), row-major B (weight gradient).
        for (b_k, b_j) in [(1, k + offset), (n + offset, 1)] {
            let b = values(offset + if k == 0 { 0 } else { (k - 1) * b_k + (n - 1) * b_j + 1 }, 2);
            for epilogue in epilogues(&bias[offset..], &act[offset..]) {
                let g = Gemm { m, n, k, a: &a[offset..], lda, b: &b[offset..], b_k, b_j, ldc, epilogue };
                let mut c = vec![f32::NAN; offset + ldc * n + 5];
                gemm(&g, &mut c[offset..]);
                let c = &c[offset..];
                for j in 0..n {
                    for i in 0..ldc {
                        let got = c[i + j * ldc];
                        if i >= m {
                            assert!(got.is_nan(), "{level:?} {m}x{k}x{n}: wrote row {i} of column {j} past m");
                            continue;
                        }
                        let (want, mag) = reference(&g, i, j);
                        let tol = 1e-6 * (1.0 + mag) + 2e-7;
                        assert!(
                            (got as f64 - want).abs() <= tol,
                            "{level:?} {m}x{k}x{n} offset {offset} B({b_k},{b_j}) {epilogue:?} at ({i},{j}): {got} vs {want}"
                        );
                    }
                }
                assert!(c[ldc * n..].iter().all(|v| v.is_nan()), "{level:?}: wrote past C");
            }
        }
    }

    #[test]
    fn gemm_matches_the_reference_at_every_level() {
        for_each_level(|level| {
            for &(m, k, n) in &[
                (1usize, 1usize, 1usize),
                (7, 3, 1),
                (15, 7, 17),
                (17, 15, 7),
                (63, 17, 13),
                (65, 1, 15),
                (64, 64, 33),
                (14, 64, 25),
                (64, 14, 1),
                (3, 65, 63),
                (33, 0, 5),
            ] {
                for offset in [0, 1, 3] {
                    check_shape(m, k, n, offset, level);
                }
            }
        });
    }

    #[test]
    fn gradient_epilogues_store_no_subnormals_at_every_level() {
        // Column 0 is 1e-20 · (1e-20 or 1) (subnormal or below TINY): the input gradient
        // stores 0 instead. Column 1 keeps the ordinary entries and flushes only the 1e-20s.
        let (a, b) = ([1e-20f32, 1.0, 1e-20, 1.0], [1e-20f32, 1.0]);
        let act = [0.5f32; 8];
        for_each_level(|level| {
            for f in [Activation::Tanh, Activation::Relu, Activation::Identity] {
                let g = Gemm {
                    m: 4,
                    n: 2,
                    k: 1,
                    a: &a,
                    lda: 4,
                    b: &b,
                    b_k: 1,
                    b_j: 1,
                    ldc: 4,
                    epilogue: Epilogue::ActGrad(&act, f),
                };
                let mut c = [f32::NAN; 8];
                gemm(&g, &mut c);
                let kept = if f == Activation::Tanh { 0.75 } else { 1.0 };
                assert_eq!(c, [0.0, 0.0, 0.0, 0.0, 0.0, kept, 0.0, kept], "{level:?} {f:?}");
            }
        });
    }

    #[test]
    fn gemm_refuses_slices_too_short_for_the_shape() {
        let (a, b, c, bias) = (vec![0f32; 12], vec![0f32; 20], vec![0f32; 15], vec![0f32; 3]);
        let ok = Gemm { m: 3, n: 5, k: 4, a: &a, lda: 3, b: &b, b_k: 1, b_j: 4, ldc: 3, epilogue: Epilogue::Plain };
        gemm(&ok, &mut c.clone());
        let bad = [
            Gemm { a: &a[..11], ..ok },
            Gemm { b: &b[..19], ..ok },
            Gemm { b_j: 5, ..ok },
            Gemm { lda: 2, ..ok },
            Gemm { ldc: 4, ..ok },
            Gemm { epilogue: Epilogue::BiasAct(&bias[..2], Activation::Tanh), ..ok },
            Gemm { epilogue: Epilogue::ActGrad(&c[..14], Activation::Tanh), ..ok },
        ];
        for (i, g) in bad.iter().enumerate() {
            let mut out = c.clone();
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| gemm(g, &mut out)));
            assert!(caught.is_err(), "case {i} was accepted");
        }
        let caught = std::panic::catch_unwind(|| gemm(&ok, &mut [0f32; 14]));
        assert!(caught.is_err(), "a short C was accepted");
    }

    #[test]
    fn row_sums_and_squares_match_the_reference_at_every_level() {
        for_each_level(|level| {
            for rows in [1usize, 7, 15, 17, 63, 65] {
                for (cols, offset) in [(1usize, 0usize), (9, 1), (256, 3)] {
                    let x = values(offset + rows * cols, rows as u32);
                    let x = &x[offset..];
                    let mut s = vec![f32::NAN; offset + rows];
                    row_sums(x, rows, &mut s[offset..]);
                    for (i, &v) in s[offset..].iter().enumerate() {
                        let want: f64 = (0..cols).map(|j| x[i + rows * j] as f64).sum();
                        assert!(
                            (v as f64 - want).abs() < 1e-6 * (1.0 + cols as f64),
                            "{level:?} {rows}x{cols} row {i}"
                        );
                    }
                    let y = &x[..x.len() / 2];
                    let want: f64 = x.iter().chain(y).map(|&v| (v as f64).powi(2)).sum();
                    let got = sum_of_squares(&[x, y, &[]]) as f64;
                    // f32 partial sums: a few ulp per thousand terms (one dropped term is ~4e-5).
                    assert!((got - want).abs() <= 1e-5 * want + 1e-7, "{level:?} {rows}x{cols}: {got} vs {want}");
                }
            }
        });
    }
}
