//! Register-tiled GEMM kernels with fused epilogues, and the small reductions of training.
//!
//! Every matrix is column-major `f32`. One kernel covers the three products of a dense layer:
//!
//! * forward, `C = act(W · X + b)`: the bias and the activation run on the accumulators before
//!   the tile is stored;
//! * input gradient, `C = act'(A) ⊙ (Wᵀ · D)`: the activation derivative of the layer below is
//!   applied the same way;
//! * weight gradient, `C = D · Xᵀ`.
//!
//! The product is cut into micro-tiles of `MV` row vectors by `NC` columns, whose `MV · NC`
//! accumulators stay in registers while the kernel runs down the whole summed dimension: one
//! step loads `MV` vectors of A and broadcasts `NC` scalars of B for `MV · NC` fused
//! multiply-adds. The tile is sized per level (see `Tiling`), so that it holds at least twice
//! the 8 independent FMA chains a core with two 4-cycle FMA pipes needs, and leaves registers
//! for the operands.
//!
//! Operands are read in place where their layout already suits the tile (A's rows contiguous, B
//! contiguous along either index), which is every whole tile of the network's products; only
//! the ragged edges (a last block of fewer rows or columns than a tile), transposed A (`Wᵀ`) and
//! B with two strides are packed, once per call, into zero-padded panels in a per-thread buffer.
//! On these small shapes (at most 64 x 256 x 256) every tile of B is used by at most two row
//! blocks, so packing whole operands would cost as many loads as it saves.
//!
//! Single-column products (one target at a time) take a matrix-vector tile with two
//! interleaved accumulator sets per row vector instead.
//!
//! Everything is written once against [`Simd`] and dispatched at run time (see [`crate::simd`]).

use std::cell::RefCell;

use super::activation::Activation;
use crate::simd::math::TINY;
use crate::simd::{Level, Simd, dispatch};

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

/// One product `C (m x n) = epilogue(A · B)`, with `A(i, p)` at `a[i * a_i + p * a_k]`,
/// `B(p, j)` at `b[p * b_k + j * b_j]` and `C(i, j)` at `c[i + j * ldc]`.
///
/// A column-major `m x k` matrix with leading dimension `lda` is `a_i = 1, a_k = lda`; its
/// transpose is `a_i = lda, a_k = 1`.
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
    /// Stride of `A` along the rows of `C`.
    pub a_i: usize,
    /// Stride of `A` along `k`.
    pub a_k: usize,
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
        assert!(self.ldc >= m, "ldc {} for {m} rows", self.ldc);
        if m == 0 || n == 0 {
            return;
        }
        if k > 0 {
            let a_end = (m - 1) * self.a_i + (k - 1) * self.a_k;
            assert!(self.a.len() > a_end, "A holds {} floats, the shape reads index {a_end}", self.a.len());
            let b_end = (k - 1) * self.b_k + (n - 1) * self.b_j;
            assert!(self.b.len() > b_end, "B holds {} floats, the shape reads index {b_end}", self.b.len());
        }
        let c_len = (n - 1) * self.ldc + m;
        assert!(c.len() >= c_len, "C holds {} floats, the shape needs {c_len}", c.len());
        match self.epilogue {
            Epilogue::Plain => {}
            Epilogue::BiasAct(bias, _) => assert!(bias.len() >= m, "bias holds {} < {m} floats", bias.len()),
            Epilogue::ActGrad(a, _) => assert!(a.len() >= c_len, "the activation holds {} < {c_len} floats", a.len()),
        }
    }
}

/// Runs `g`, writing `C` into `c`.
///
/// # Panics
/// If the shapes or slice lengths do not fit (see [`Gemm`]).
pub fn gemm(g: &Gemm<'_>, c: &mut [f32]) {
    g.check(c);
    if g.m == 0 || g.n == 0 {
        return;
    }
    // SAFETY: `check` established every bound `gemm_body` needs (a single column with
    // contiguous rows packs nothing).
    if g.n == 1 && g.a_i == 1 {
        unsafe { gemm_dispatched(g, c, &mut Vec::new()) }
    } else {
        PACK.with_borrow_mut(|pack| unsafe { gemm_dispatched(g, c, pack) })
    }
}

thread_local! {
    /// Packed panels (ragged edges, transposed A, doubly strided B), reused between calls.
    static PACK: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

dispatch!(
    /// [`gemm_body`] at the active level.
    ///
    /// # Safety
    /// As [`gemm_body`], less the instruction set.
    unsafe fn gemm_dispatched(g: &Gemm<'_>, c: &mut [f32], pack: &mut Vec<f32>) => generic gemm_body
);

/// `C = epilogue(A · B)` on `V` vectors, with the level's register tile: `MV` row vectors by
/// `NC` columns, and `NC1` columns for a block of a single row vector (a product of at most
/// `LANES` rows, or the last block):
///
/// * AVX-512 (32 registers): 4 x 6 = 24 accumulators + 4 A vectors + a broadcast = 29
///   registers; 24 chains are three times the 8 that two 4-cycle FMA pipes keep busy, and a step
///   issues 10 loads for 24 FMAs (12 cycles). A 64-row layer is one row block, so B is read
///   once. A lone row vector takes 16 columns (16 chains, 17 loads per 8 cycles: within the
///   three load ports).
/// * AVX2 (16 registers): 2 x 6 = 12 accumulators + 2 A vectors + a broadcast = 15 registers;
///   a lone row vector takes 12 columns (14 registers).
/// * Scalar: 4 x 4 = 16 accumulators (the baseline's 16 SSE registers), 8 columns alone.
///
/// # Safety
/// The CPU runs `V`'s instruction set, `m` and `n` are positive, and `g.check(c)` passes:
/// every index the kernel forms (`(m-1)·a_i + (k-1)·a_k` in A, `(k-1)·b_k + (n-1)·b_j` in B,
/// `(n-1)·ldc + m` in C and the epilogue's slices) is inside its slice.
#[inline(always)]
unsafe fn gemm_body<V: Simd>(g: &Gemm<'_>, c: &mut [f32], pack: &mut Vec<f32>) {
    // SAFETY: forwarded; the tile shapes are the level's own.
    unsafe {
        if g.n == 1 && g.a_i == 1 {
            return gemv::<V>(g, c.as_mut_ptr());
        }
        match V::LEVEL {
            Level::Avx512 => gemm_blocks::<V, 4, 6, 3, 16, 8>(g, c.as_mut_ptr(), pack),
            Level::Avx2 => gemm_blocks::<V, 2, 6, 3, 12, 6>(g, c.as_mut_ptr(), pack),
            Level::Baseline => gemm_blocks::<V, 4, 4, 2, 8, 4>(g, c.as_mut_ptr(), pack),
        }
    }
}

/// Where a tile reads B: `B(p, j)` at `ptr[p * step + j]` (rows: packed panels and
/// row-major B) or at `ptr[p + j * step]` (columns: column-major B).
#[derive(Clone, Copy)]
struct BPanel {
    ptr: *const f32,
    step: usize,
    by_rows: bool,
}

/// Where a tile reads A: `MV · LANES` contiguous rows at `ptr[p * step..]` for each `p`.
#[derive(Clone, Copy)]
struct APanel {
    ptr: *const f32,
    step: usize,
}

/// The product cut into row blocks of `MV` vectors and column blocks of `NC` (a block of one row
/// vector takes `NC1` columns); `NH` and `NH1` are the halves of `NC` and `NC1`.
///
/// # Safety
/// As [`gemm_body`], with `n > 1`.
#[inline(always)]
unsafe fn gemm_blocks<
    V: Simd,
    const MV: usize,
    const NC: usize,
    const NH: usize,
    const NC1: usize,
    const NH1: usize,
>(
    g: &Gemm<'_>,
    c: *mut f32,
    pack: &mut Vec<f32>,
) {
    let lanes = V::LANES;
    let vectors = g.m.div_ceil(lanes);
    // Room for the packed A panels (every row block, if A's rows are strided; else only a
    // ragged last block) and one B panel (a ragged column block, or any block of a B with two
    // strides). The packing writes every float a tile reads, padding included.
    let a_rows_strided = g.a_i != 1;
    let b_strided = g.b_j != 1 && g.b_k != 1;
    let a_len = if a_rows_strided {
        g.k * vectors.div_ceil(MV) * MV * lanes
    } else if !g.m.is_multiple_of(lanes) {
        g.k * MV * lanes
    } else {
        0
    };
    let b_len = g.k * NC.max(NC1);
    if pack.len() < a_len + b_len {
        pack.resize(a_len + b_len, 0.0);
    }
    let (a_pack, b_pack) = pack.split_at_mut(a_len);
    // SAFETY: the caller's contract covers every read of A and B and every write of C; the
    // packed panels are written inside `a_pack` and `b_pack` by construction.
    unsafe {
        let mut v0 = 0;
        let mut a_next = a_pack.as_mut_ptr();
        while v0 < vectors {
            let mv = MV.min(vectors - v0);
            let row0 = v0 * lanes;
            let rows = (g.m - row0).min(mv * lanes);
            let a = if !a_rows_strided && rows == mv * lanes {
                APanel { ptr: g.a.as_ptr().add(row0 * g.a_i), step: g.a_k }
            } else {
                let panel = APanel { ptr: a_next, step: mv * lanes };
                pack_a(g, row0, rows, mv * lanes, a_next);
                a_next = a_next.add(g.k * mv * lanes);
                panel
            };
            match mv {
                1 => column_blocks::<V, 1, NC1, NH1>(g, a, c, row0, b_pack, b_strided),
                2 => column_blocks::<V, 2, NC, NH>(g, a, c, row0, b_pack, b_strided),
                3 => column_blocks::<V, 3, NC, NH>(g, a, c, row0, b_pack, b_strided),
                _ => column_blocks::<V, MV, NC, NH>(g, a, c, row0, b_pack, b_strided),
            }
            v0 += mv;
        }
    }
}

/// Copies rows `row0..row0 + rows` of A into a panel of `width` rows per column (zero below).
///
/// # Safety
/// A's reads as in [`gemm_body`]; `dst` holds `k · width` floats.
#[inline(always)]
unsafe fn pack_a(g: &Gemm<'_>, row0: usize, rows: usize, width: usize, dst: *mut f32) {
    // SAFETY: the caller's contract; `dst` is written at `p * width + r`, `p < k`, `r < width`.
    unsafe {
        let panel = std::slice::from_raw_parts_mut(dst, g.k * width);
        let a = g.a.as_ptr().add(row0 * g.a_i);
        if g.a_i == 1 {
            // A ragged block of contiguous rows: copy each column, zero below.
            for (p, col) in panel.chunks_exact_mut(width).enumerate() {
                col[..rows].copy_from_slice(std::slice::from_raw_parts(a.add(p * g.a_k), rows));
                col[rows..].fill(0.0);
            }
        } else {
            // Rows strided (A transposed, as `Wᵀ`): read each row along p, write it down the
            // panel's column.
            panel.fill(0.0);
            for r in 0..rows {
                let src = a.add(r * g.a_i);
                for p in 0..g.k {
                    *panel.get_unchecked_mut(p * width + r) = *src.add(p * g.a_k);
                }
            }
        }
    }
}

/// Copies columns `col0..col0 + cols` of B into a row-major panel `NC` wide (zero to the right).
///
/// # Safety
/// B's reads as in [`gemm_body`]; `dst` holds `k · NC` floats.
#[inline(always)]
unsafe fn pack_b<const NC: usize>(g: &Gemm<'_>, col0: usize, cols: usize, dst: *mut f32) {
    // SAFETY: the caller's contract.
    unsafe {
        for p in 0..g.k {
            let src = g.b.as_ptr().add(p * g.b_k + col0 * g.b_j);
            let row = std::slice::from_raw_parts_mut(dst.add(p * NC), NC);
            for (j, x) in row.iter_mut().enumerate() {
                *x = if j < cols { *src.add(j * g.b_j) } else { 0.0 };
            }
        }
    }
}

/// One row block against every column block of `NC` (a last block of at most `NH = NC / 2`
/// columns takes a tile half as wide).
///
/// # Safety
/// As [`gemm_blocks`]; `b_pack` holds at least `k · NC` floats.
#[inline(always)]
unsafe fn column_blocks<V: Simd, const MV: usize, const NC: usize, const NH: usize>(
    g: &Gemm<'_>,
    a: APanel,
    c: *mut f32,
    row0: usize,
    b_pack: &mut [f32],
    b_strided: bool,
) {
    // SAFETY: forwarded from the caller; packed panels stay inside `b_pack`.
    unsafe {
        let mut col0 = 0;
        while col0 < g.n {
            let cols = NC.min(g.n - col0);
            let b = if cols == NC && g.b_j == 1 {
                BPanel { ptr: g.b.as_ptr().add(col0), step: g.b_k, by_rows: true }
            } else if cols == NC && g.b_k == 1 && !b_strided {
                BPanel { ptr: g.b.as_ptr().add(col0 * g.b_j), step: g.b_j, by_rows: false }
            } else {
                let dst = b_pack.as_mut_ptr();
                pack_b::<NC>(g, col0, cols, dst);
                BPanel { ptr: dst, step: NC, by_rows: true }
            };
            if cols <= NH {
                // A ragged block of at most half a tile (all of a product 3 columns wide): half
                // the FMAs, packed to half the width.
                const { assert!(2 * NH == NC) };
                let half = BPanel { ptr: b_pack.as_mut_ptr(), step: NH, by_rows: true };
                pack_b::<NH>(g, col0, cols, b_pack.as_mut_ptr());
                let acc = tile::<V, MV, NH, true>(a, half, g.k);
                finish::<V, MV, NH>(acc, g, c, row0, col0, cols);
            } else {
                let acc =
                    if b.by_rows { tile::<V, MV, NC, true>(a, b, g.k) } else { tile::<V, MV, NC, false>(a, b, g.k) };
                finish::<V, MV, NC>(acc, g, c, row0, col0, cols);
            }
            col0 += cols;
        }
    }
}

/// `MV x NC` accumulators of `A[rows of the panel, :] · B[:, NC columns]`.
///
/// # Safety
/// The CPU runs `V`'s instruction set; the panels hold `k` steps of `MV · LANES` rows and `NC`
/// columns.
#[allow(clippy::needless_range_loop)] // acc[v][j]: the index order of the register tile
#[inline(always)]
unsafe fn tile<V: Simd, const MV: usize, const NC: usize, const BY_ROWS: bool>(
    a: APanel,
    b: BPanel,
    k: usize,
) -> [[V; NC]; MV] {
    // SAFETY: the caller's contract.
    unsafe {
        let mut acc = [[V::splat(0.0); NC]; MV];
        let (mut ap, mut bp) = (a.ptr, b.ptr);
        let (b_p, b_j) = if BY_ROWS { (b.step, 1) } else { (1, b.step) };
        for _ in 0..k {
            let mut av = [V::splat(0.0); MV];
            for (v, x) in av.iter_mut().enumerate() {
                *x = V::load(ap.add(v * V::LANES));
            }
            for j in 0..NC {
                let bv = V::splat(*bp.add(j * b_j));
                for v in 0..MV {
                    acc[v][j] = V::fma(av[v], bv, acc[v][j]);
                }
            }
            ap = ap.add(a.step);
            bp = bp.add(b_p);
        }
        acc
    }
}

/// The single-column product with A's rows contiguous: up to four row vectors at a time, each
/// with two interleaved accumulators over even and odd `p`, reading A in place (a last vector
/// that runs past `m` loads only its rows).
///
/// # Safety
/// As [`gemm_body`], with `n == 1` and `a_i == 1`.
#[inline(always)]
unsafe fn gemv<V: Simd>(g: &Gemm<'_>, c: *mut f32) {
    // SAFETY: forwarded.
    unsafe {
        let vectors = g.m.div_ceil(V::LANES);
        let ragged = !g.m.is_multiple_of(V::LANES);
        let mut v0 = 0;
        while v0 < vectors {
            let mv = 4.min(vectors - v0);
            let last = v0 + mv == vectors;
            match (mv, last && ragged) {
                (1, false) => gemv_rows::<V, 1, false>(g, c, v0),
                (1, true) => gemv_rows::<V, 1, true>(g, c, v0),
                (2, false) => gemv_rows::<V, 2, false>(g, c, v0),
                (2, true) => gemv_rows::<V, 2, true>(g, c, v0),
                (3, false) => gemv_rows::<V, 3, false>(g, c, v0),
                (3, true) => gemv_rows::<V, 3, true>(g, c, v0),
                (_, false) => gemv_rows::<V, 4, false>(g, c, v0),
                (_, true) => gemv_rows::<V, 4, true>(g, c, v0),
            }
            v0 += mv;
        }
    }
}

/// [`gemv`] for the `MV` row vectors from vector `v0` on; the last one holds only `m % LANES`
/// rows when `RAGGED`.
///
/// # Safety
/// As [`gemv`].
#[allow(clippy::needless_range_loop)] // acc[v]: one accumulator per row vector
#[inline(always)]
unsafe fn gemv_rows<V: Simd, const MV: usize, const RAGGED: bool>(g: &Gemm<'_>, c: *mut f32, v0: usize) {
    // SAFETY: forwarded; the ragged vector loads only the rows below `m`.
    unsafe {
        let lanes = V::LANES;
        let row0 = v0 * lanes;
        let tail = g.m - (row0 + (MV - 1) * lanes);
        let load = |p: usize, v: usize| -> V {
            let at = g.a.as_ptr().add(row0 + v * lanes + p * g.a_k);
            if RAGGED && v == MV - 1 { V::load_partial(at, tail) } else { V::load(at) }
        };
        let b = |p: usize| V::splat(*g.b.as_ptr().add(p * g.b_k));
        let (mut acc0, mut acc1) = ([V::splat(0.0); MV], [V::splat(0.0); MV]);
        let mut p = 0;
        while p + 1 < g.k {
            let (x0, x1) = (b(p), b(p + 1));
            for v in 0..MV {
                acc0[v] = V::fma(load(p, v), x0, acc0[v]);
                acc1[v] = V::fma(load(p + 1, v), x1, acc1[v]);
            }
            p += 2;
        }
        if p < g.k {
            let x0 = b(p);
            for v in 0..MV {
                acc0[v] = V::fma(load(p, v), x0, acc0[v]);
            }
        }
        let mut acc = [[V::splat(0.0); 1]; MV];
        for v in 0..MV {
            acc[v][0] = acc0[v].add(acc1[v]);
        }
        finish::<V, MV, 1>(acc, g, c, row0, 0, 1);
    }
}

/// Loads `rows` floats, whole vector or partial.
#[inline(always)]
unsafe fn load_rows<V: Simd>(p: *const f32, rows: usize) -> V {
    // SAFETY: the caller guarantees `rows` readable floats.
    unsafe { if rows == V::LANES { V::load(p) } else { V::load_partial(p, rows) } }
}

/// Applies the epilogue to a tile whose first row is `row0` and first column `col0`, and stores
/// its rows below `m` and first `cols` columns.
///
/// # Safety
/// As [`gemm_body`]; `col0 + cols <= n`.
#[inline(always)]
unsafe fn finish<V: Simd, const MV: usize, const NC: usize>(
    acc: [[V; NC]; MV],
    g: &Gemm<'_>,
    c: *mut f32,
    row0: usize,
    col0: usize,
    cols: usize,
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
            for (j, &x) in accs.iter().enumerate().take(cols) {
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

// ---------------------------------------------------------------------------------------------
// Small reductions.

/// `sums[i] = Σ_j x[i + j·rows]` for a column-major `rows x (x.len() / rows)` matrix (the bias
/// gradient).
///
/// # Panics
/// If `rows` is 0, `sums` does not hold `rows` values or `x` is not a whole number of columns.
pub fn row_sums(x: &[f32], rows: usize, sums: &mut [f32]) {
    assert!(rows > 0 && sums.len() == rows && x.len().is_multiple_of(rows), "row_sums shapes");
    // SAFETY: the shapes were checked just above.
    unsafe { row_sums_dispatched(x, rows, sums) }
}

dispatch!(
    /// [`row_sums_body`] at the active level.
    ///
    /// # Safety
    /// As [`row_sums_body`], less the instruction set.
    unsafe fn row_sums_dispatched(x: &[f32], rows: usize, sums: &mut [f32]) => generic row_sums_body
);

/// [`row_sums`] on `V` vectors: up to four row vectors at a time, each summed down the columns
/// with two interleaved accumulators (eight independent add chains).
///
/// # Safety
/// The CPU runs `V`'s instruction set; `rows > 0`, `sums.len() == rows` and `x.len()` is a
/// multiple of `rows`.
#[inline(always)]
unsafe fn row_sums_body<V: Simd>(x: &[f32], rows: usize, sums: &mut [f32]) {
    let cols = x.len() / rows;
    // SAFETY: row `r < rows` of column `j < cols` is `x[r + j * rows]`; partial vectors load
    // and store only the rows that exist.
    unsafe {
        let vectors = rows.div_ceil(V::LANES);
        let mut v0 = 0;
        while v0 < vectors {
            match vectors - v0 {
                1 => row_sums_block::<V, 1>(x, rows, cols, v0, sums),
                2 => row_sums_block::<V, 2>(x, rows, cols, v0, sums),
                3 => row_sums_block::<V, 3>(x, rows, cols, v0, sums),
                _ => row_sums_block::<V, 4>(x, rows, cols, v0, sums),
            }
            v0 += 4;
        }
    }
}

/// [`row_sums_body`] for the `MV` row vectors from vector `v0` on.
///
/// # Safety
/// As [`row_sums_body`], with `cols = x.len() / rows` and the `MV` vectors from `v0` on
/// starting below `rows`.
#[inline(always)]
unsafe fn row_sums_block<V: Simd, const MV: usize>(x: &[f32], rows: usize, cols: usize, v0: usize, sums: &mut [f32]) {
    // SAFETY: the caller's contract; a vector past `rows` loads and stores only its rows.
    unsafe {
        let row0 = v0 * V::LANES;
        let n = |v: usize| (rows - row0 - v * V::LANES).min(V::LANES);
        let col = |j: usize, v: usize| load_rows::<V>(x.as_ptr().add(row0 + v * V::LANES + j * rows), n(v));
        let (mut s0, mut s1) = ([V::splat(0.0); MV], [V::splat(0.0); MV]);
        let mut j = 0;
        while j + 1 < cols {
            for v in 0..MV {
                s0[v] = s0[v].add(col(j, v));
                s1[v] = s1[v].add(col(j + 1, v));
            }
            j += 2;
        }
        if j < cols {
            for (v, s) in s0.iter_mut().enumerate() {
                *s = s.add(col(j, v));
            }
        }
        for v in 0..MV {
            let (s, at) = (s0[v].add(s1[v]), sums.as_mut_ptr().add(row0 + v * V::LANES));
            if n(v) == V::LANES { s.store(at) } else { s.store_partial(at, n(v)) }
        }
    }
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
            let t = g.a[i * g.a_i + p * g.a_k] as f64 * g.b[p * g.b_k + j * g.b_j] as f64;
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

    /// Runs `gemm` on one shape at the active level for every epilogue, both layouts of A and
    /// three of B, with every slice starting at `offset` and padded leading dimensions, and
    /// checks each entry of C (and that nothing outside C's `m x n` block was written).
    fn check_shape(m: usize, k: usize, n: usize, offset: usize, level: crate::simd::Level) {
        let ldc = m + 2 * offset;
        let bias = values(offset + m, 3);
        let act = values(offset + ldc * (n - 1) + m, 4);
        // (a_i, a_k): column-major A (forward, weight gradient), transposed A (input gradient).
        // (b_k, b_j): column-major B (forward, input gradient), row-major B (weight gradient),
        // and a B with two strides.
        let layouts =
            [((1, m + offset), (1, k + offset)), ((k + offset, 1), (n + offset, 1)), ((1, m), (2 * n + offset, 2))];
        for ((a_i, a_k), (b_k, b_j)) in layouts {
            // Every slice is exactly as long as the shape needs, so reads past it would show.
            let end = |s_i: usize, i: usize, s_k: usize| if k == 0 { 0 } else { (i - 1) * s_i + (k - 1) * s_k + 1 };
            let a = values(offset + end(a_i, m, a_k), 1);
            let b = values(offset + end(b_j, n, b_k), 2);
            for epilogue in epilogues(&bias[offset..], &act[offset..]) {
                let g = Gemm { m, n, k, a: &a[offset..], a_i, a_k, b: &b[offset..], b_k, b_j, ldc, epilogue };
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
                            "{level:?} {m}x{k}x{n} offset {offset} A({a_i},{a_k}) B({b_k},{b_j}) {epilogue:?} at ({i},{j}): {got} vs {want}"
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
                    a_i: 1,
                    a_k: 4,
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
        let ok =
            Gemm { m: 3, n: 5, k: 4, a: &a, a_i: 1, a_k: 3, b: &b, b_k: 1, b_j: 4, ldc: 3, epilogue: Epilogue::Plain };
        gemm(&ok, &mut c.clone());
        let bad = [
            Gemm { a: &a[..11], ..ok },
            Gemm { b: &b[..19], ..ok },
            Gemm { b_j: 5, ..ok },
            Gemm { a_k: 4, ..ok },
            Gemm { a_i: 5, a_k: 1, ..ok },
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
