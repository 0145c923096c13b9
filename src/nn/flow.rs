//! A conditional normalizing flow: an invertible map `z = f(x; y)` from samples `x` to a standard
//! normal `z`, conditioned on `y`, so that `p(x | y) = N(f(x; y)) · |det ∂f/∂x|` is exact and a
//! sample is `f⁻¹(z; y)` of a normal draw (RealNVP, Dinh et al. 2017; the conditional form of
//! Ardizzone et al. 2019 and IKFlow, Ames et al. 2022).
//!
//! The map is a stack of [`Coupling`] blocks. Each block first turns the state by a fixed random
//! rotation (an orthogonal matrix: a Glow-style invertible 1x1 mixing whose log-determinant is
//! zero), then keeps the first half `a` of the coordinates and moves the rest, `b`, by an affine
//! map whose log-scales `s` and shifts `t` a small network computes from `a` and from features of
//! the condition: `b' = b ⊙ exp(s) + t`, `log |det| = Σ s`. The scales are soft-clamped,
//! `s = clamp · tanh(raw / clamp)`, so no block can blow up. The features come from a
//! conditioning network `y → c` shared by every block and trained with them.
//!
//! Training minimises the negative log-likelihood of `(y, x)` pairs, `½|z|² − log |det| +
//! d/2 · ln 2π` averaged over a minibatch, through [`Trainable`], so the lab's one fitter (Adam
//! on a cosine schedule) trains it like every other net. Sampling runs through a
//! [`Conditioned`] flow: the features of one `y` are computed once and folded into the first
//! layer's bias of every block, so each sample costs only the coupling networks on `a`, batched
//! through the GEMM kernels. The state of a sample is kept in `f64` and only the networks run in
//! `f32`, so [`Conditioned::inverse`] undoes [`Conditioned::forward`] to rounding (the same
//! network sees the same `a` both ways).

use super::activation::Activation;
use super::mlp::{BatchScratch, Gradients, Mlp, Scratch};
use super::trainable::Trainable;
use crate::simd::Simd;
use crate::simd::math::{exp, fast_exp, fast_tanh, tanh};
use nalgebra::DMatrix;
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

/// `ln(2π) / 2`.
const HALF_LN_TAU: f64 = 0.918_938_533_204_672_8;

/// The shape of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FlowShape {
    /// Coordinates of a sample (at least 2).
    pub dims: usize,
    /// Values of the condition.
    pub conds: usize,
    /// Coupling blocks.
    pub blocks: usize,
    /// Width of each coupling network's hidden layers.
    pub hidden: usize,
    /// Hidden layers of each coupling network.
    pub depth: usize,
    /// Width of the conditioning network's hidden layers.
    pub cond_hidden: usize,
    /// Hidden layers of the conditioning network.
    pub cond_depth: usize,
    /// Features the conditioning network hands every block.
    pub features: usize,
    /// Soft clamp of every log-scale.
    pub clamp: f32,
    /// The hidden layers' activation, in the coupling and conditioning networks.
    pub activation: Activation,
}

impl FlowShape {
    /// Coordinates each block keeps (and feeds its network).
    pub fn split(&self) -> usize {
        self.dims / 2
    }

    /// Coordinates each block moves.
    pub fn moved(&self) -> usize {
        self.dims - self.split()
    }

    /// Layer widths of the conditioning network.
    pub fn cond_sizes(&self) -> Vec<usize> {
        let mut s = vec![self.conds];
        s.extend(std::iter::repeat_n(self.cond_hidden, self.cond_depth));
        s.push(self.features);
        s
    }

    /// Layer widths of each coupling network: kept coordinates and features in, a log-scale
    /// and a shift per moved coordinate out.
    pub fn coupling_sizes(&self) -> Vec<usize> {
        let mut s = vec![self.split() + self.features];
        s.extend(std::iter::repeat_n(self.hidden, self.depth));
        s.push(2 * self.moved());
        s
    }

    /// Weights and biases in all (as `f64`, so it never overflows).
    pub fn parameter_count(&self) -> f64 {
        let count = |sizes: Vec<usize>| sizes.windows(2).map(|w| (w[0] as f64 + 1.0) * w[1] as f64).sum::<f64>();
        count(self.cond_sizes()) + self.blocks as f64 * count(self.coupling_sizes())
    }

    /// Units whose activations a training step keeps per sample.
    pub fn units(&self) -> f64 {
        let sum = |sizes: Vec<usize>| sizes.iter().map(|&w| w as f64).sum::<f64>();
        sum(self.cond_sizes()) + self.blocks as f64 * (sum(self.coupling_sizes()) + 3.0 * self.dims as f64)
    }
}

/// One block: a fixed rotation, then an affine coupling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coupling {
    /// The rotation `Q` (`dims x dims`, row-major, orthogonal): the block starts from `u = Q h`.
    pub mix: Vec<f64>,
    /// `(a, features) → (raw log-scales, shifts)` of the moved coordinates.
    pub net: Mlp,
}

/// A conditional normalizing flow (see the module documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    /// Its shape.
    pub shape: FlowShape,
    /// The conditioning network `y → features`.
    pub cond: Mlp,
    /// The blocks, applied in order from `x` to `z`.
    pub blocks: Vec<Coupling>,
}

/// A random `d x d` rotation (row-major): the Q of a Gaussian matrix's QR factorisation with
/// the signs fixed, so it is uniform over the orthogonal group.
fn random_rotation<R: Rng + ?Sized>(d: usize, rng: &mut R) -> Vec<f64> {
    let g = nalgebra::DMatrix::<f64>::from_fn(d, d, |_, _| StandardNormal.sample(rng));
    let qr = g.qr();
    let (mut q, r) = (qr.q(), qr.r());
    for j in 0..d {
        if r[(j, j)] < 0.0 {
            q.column_mut(j).neg_mut();
        }
    }
    (0..d * d).map(|k| q[(k / d, k % d)]).collect()
}

impl Flow {
    /// A flow of `shape` with seeded random rotations and weights; every coupling's last layer
    /// starts at zero, so the untrained flow is the identity (`x` distributed as `z`).
    ///
    /// # Panics
    /// If a width or the depth is zero or `dims` is not in 2..=16 (a programming error: callers
    /// validate shapes first).
    pub fn new<R: Rng + ?Sized>(shape: FlowShape, rng: &mut R) -> Self {
        assert!(
            (2..=16).contains(&shape.dims) && shape.blocks >= 1 && shape.depth >= 1 && shape.clamp > 0.0,
            "bad flow shape {shape:?}"
        );
        let cond = Mlp::new(&shape.cond_sizes(), shape.activation, rng);
        let blocks = (0..shape.blocks)
            .map(|_| {
                let mix = random_rotation(shape.dims, rng);
                let mut net = Mlp::new(&shape.coupling_sizes(), shape.activation, rng);
                let last = net.layers.last_mut().expect("at least one layer");
                last.w.fill(0.0);
                last.b.fill(0.0);
                Coupling { mix, net }
            })
            .collect();
        Self { shape, cond, blocks }
    }

    /// True when every network is consistent, shaped as [`Flow::shape`] says, and every
    /// rotation is orthogonal.
    pub fn is_consistent(&self) -> bool {
        let s = &self.shape;
        let sizes = |net: &Mlp| -> Vec<usize> {
            std::iter::once(net.inputs()).chain(net.layers.iter().map(|l| l.outputs())).collect()
        };
        let orthogonal = |q: &[f64]| {
            q.len() == s.dims * s.dims
                && (0..s.dims).all(|i| {
                    (0..s.dims).all(|j| {
                        let dot: f64 = (0..s.dims).map(|k| q[i * s.dims + k] * q[j * s.dims + k]).sum();
                        (dot - f64::from(u8::from(i == j))).abs() < 1e-9
                    })
                })
        };
        s.dims >= 2
            && s.clamp.is_finite()
            && s.clamp > 0.0
            && self.blocks.len() == s.blocks
            && self.cond.is_consistent()
            && sizes(&self.cond) == s.cond_sizes()
            && self
                .blocks
                .iter()
                .all(|b| b.net.is_consistent() && sizes(&b.net) == s.coupling_sizes() && orthogonal(&b.mix))
    }

    /// The flow for one condition `y` (`conds` values), ready to sample.
    pub fn condition(&self, y: &[f32]) -> Conditioned {
        let features = self.cond.forward_one(y);
        let split = self.shape.split();
        let (trunks, heads) = self
            .blocks
            .iter()
            .map(|b| {
                let mut trunk = b.net.clone();
                let head = trunk.layers.pop().expect("a coupling has a hidden layer");
                let first = &mut trunk.layers[0];
                // W [a; c] + b = W_a a + (W_c c + b): the features become part of the bias.
                let folded = &first.b + first.w.columns(split, self.shape.features) * &features;
                first.w = first.w.columns(0, split).into_owned();
                first.b = folded;
                (trunk, head)
            })
            .unzip();
        Conditioned { shape: self.shape, mix: self.blocks.iter().map(|b| b.mix.clone()).collect(), trunks, heads }
    }

    /// `n` samples for condition `y` appended to `out` (`dims` values each).
    pub fn sample<R: Rng + ?Sized>(&self, y: &[f32], n: usize, rng: &mut R, out: &mut Vec<f64>) {
        let start = out.len();
        out.extend((0..n * self.shape.dims).map(|_| -> f64 { StandardNormal.sample(rng) }));
        self.condition(y).inverse(&mut out[start..], &mut FlowScratch::default());
    }
}

/// Reusable buffers of a [`Conditioned`] flow's batched passes.
#[derive(Debug, Clone, Default)]
pub struct FlowScratch {
    batch: BatchScratch,
    inputs: Vec<f32>,
    hidden: Vec<f32>,
    /// The last layer's outputs, sample by sample.
    head: Vec<f32>,
    /// Per moved coordinate, every sample's clamped log-scale (`n` values a row), then per
    /// moved coordinate every sample's shift.
    outputs: Vec<f32>,
    /// The log-scales' exponentials, laid out like their rows of `outputs`.
    factors: Vec<f32>,
}

/// A flow with one condition's features folded into its blocks (see [`Flow::condition`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Conditioned {
    shape: FlowShape,
    mix: Vec<Vec<f64>>,
    /// Each coupling network but its last layer, the features folded into the first.
    trunks: Vec<Mlp>,
    /// Each coupling network's last (linear) layer.
    heads: Vec<super::dense::Dense>,
}

impl Conditioned {
    /// Runs block `k`'s network on the kept coordinates of the `n` samples in `xs` (their
    /// first `split` values). Leaves, one row of `n` values per moved coordinate, the clamped
    /// log-scales and then the shifts in `scratch.outputs`, and the scales' exponentials in
    /// `scratch.factors`.
    ///
    fn coupling(&self, k: usize, xs: &[f64], scratch: &mut FlowScratch) {
        let (d, split, m) = (self.shape.dims, self.shape.split(), self.shape.moved());
        let n = xs.len() / d;
        let (trunk, head) = (&self.trunks[k], &self.heads[k]);
        scratch.inputs.clear();
        for x in xs.chunks_exact(d) {
            scratch.inputs.extend(x[..split].iter().map(|&v| v as f32));
        }
        let width = trunk.outputs();
        scratch.hidden.resize(n * width, 0.0);
        trunk.forward_batch(&scratch.inputs, &mut scratch.hidden, &mut scratch.batch);
        // The head's own product (a few rows of outputs), then each output row gathered, so
        // the clamp runs on whole vectors.
        scratch.head.resize(n * 2 * m, 0.0);
        head.forward_slices(&scratch.hidden, n, &mut scratch.head);
        scratch.outputs.resize(n * 2 * m, 0.0);
        for (j, out) in scratch.head.chunks_exact(2 * m).enumerate() {
            for (r, &v) in out.iter().enumerate() {
                scratch.outputs[r * n + j] = v;
            }
        }
        scratch.factors.resize(n * m, 0.0);
        // SAFETY: the two slices have the same length, `n · moved`.
        unsafe { clamp_exp(&mut scratch.outputs[..n * m], &mut scratch.factors, self.shape.clamp) };
    }

    /// `x → z` in place for the samples in `xs` (`dims` values each), adding each one's
    /// `log |det ∂z/∂x|` to `log_det` (one value per sample).
    ///
    /// # Panics
    /// If `xs` is not whole samples or `log_det` not one per sample.
    pub fn forward(&self, xs: &mut [f64], log_det: &mut [f64], scratch: &mut FlowScratch) {
        let (d, split, m) = (self.shape.dims, self.shape.split(), self.shape.moved());
        assert!(xs.len().is_multiple_of(d) && log_det.len() == xs.len() / d, "Conditioned::forward: lengths");
        for k in 0..self.trunks.len() {
            for x in xs.chunks_exact_mut(d) {
                rotate(&self.mix[k], x, false);
            }
            self.coupling(k, xs, scratch);
            let (n, FlowScratch { outputs, factors, .. }) = (log_det.len(), &*scratch);
            for (j, (x, ld)) in xs.chunks_exact_mut(d).zip(&mut *log_det).enumerate() {
                for i in 0..m {
                    let shift = f64::from(outputs[(m + i) * n + j]);
                    x[split + i] = x[split + i] * f64::from(factors[i * n + j]) + shift;
                    *ld += f64::from(outputs[i * n + j]);
                }
            }
        }
    }

    /// `z → x` in place for the samples in `xs` (`dims` values each): the inverse of
    /// [`Conditioned::forward`].
    ///
    /// # Panics
    /// If `xs` is not whole samples.
    pub fn inverse(&self, xs: &mut [f64], scratch: &mut FlowScratch) {
        let (d, split, m) = (self.shape.dims, self.shape.split(), self.shape.moved());
        assert!(xs.len().is_multiple_of(d), "Conditioned::inverse: lengths");
        for k in (0..self.trunks.len()).rev() {
            self.coupling(k, xs, scratch);
            let (n, FlowScratch { outputs, factors, .. }) = (xs.len() / d, &*scratch);
            for (j, x) in xs.chunks_exact_mut(d).enumerate() {
                for i in 0..m {
                    let shift = f64::from(outputs[(m + i) * n + j]);
                    x[split + i] = (x[split + i] - shift) / f64::from(factors[i * n + j]);
                }
                rotate(&self.mix[k], x, true);
            }
        }
    }

    /// `ln p(x | y)` of each sample in `xs` (`dims` values each).
    pub fn log_density(&self, xs: &[f64]) -> Vec<f64> {
        let d = self.shape.dims;
        let mut z = xs.to_vec();
        let mut log_det = vec![0.0; xs.len() / d];
        self.forward(&mut z, &mut log_det, &mut FlowScratch::default());
        z.chunks_exact(d)
            .zip(log_det)
            .map(|(z, ld)| -0.5 * z.iter().map(|v| v * v).sum::<f64>() - d as f64 * HALF_LN_TAU + ld)
            .collect()
    }
}

crate::simd::dispatch!(unsafe fn clamp_exp(s: &mut [f32], e: &mut [f32], clamp: f32) => generic clamp_exp_body);

/// `s ← clamp · tanh(s / clamp)` and `e ← exp(s)`, a vector at a time.
///
/// # Safety
/// The CPU runs `V`'s instruction set; `e` is as long as `s`.
#[inline(always)]
unsafe fn clamp_exp_body<V: Simd>(s: &mut [f32], e: &mut [f32], clamp: f32) {
    let mut i = 0;
    // SAFETY: loads and stores stay inside the equal-length slices; vector arithmetic only.
    unsafe {
        let (c, inv) = (V::splat(clamp), V::splat(1.0 / clamp));
        while i < s.len() {
            let n = V::LANES.min(s.len() - i);
            let v = c.mul(tanh(V::load_partial(s.as_ptr().add(i), n).mul(inv)));
            v.store_partial(s.as_mut_ptr().add(i), n);
            exp(v).store_partial(e.as_mut_ptr().add(i), n);
            i += n;
        }
    }
}

/// `x ← Q x` (or `Qᵀ x` when `transpose`) for a row-major rotation `q`.
fn rotate(q: &[f64], x: &mut [f64], transpose: bool) {
    let d = x.len();
    let mut out = [0.0; 16];
    for (i, o) in out[..d].iter_mut().enumerate() {
        *o = (0..d).map(|j| if transpose { q[j * d + i] } else { q[i * d + j] } * x[j]).sum();
    }
    x.copy_from_slice(&out[..d]);
}

/// The buffers and gradients of a flow's training run ([`Trainable`]).
#[derive(Debug, Clone)]
pub struct FlowWork {
    cond_scratch: Scratch,
    cond_grads: Gradients,
    features: DMatrix<f32>,
    d_features: DMatrix<f32>,
    /// The state entering each block, and `z` last.
    h: Vec<DMatrix<f32>>,
    /// The rotated state of each block.
    u: Vec<DMatrix<f32>>,
    /// Each block's network input `(a, features)`.
    inputs: Vec<DMatrix<f32>>,
    /// Each block's clamped log-scales.
    scales: Vec<DMatrix<f32>>,
    scratch: Vec<Scratch>,
    grads: Vec<Gradients>,
    d_out: DMatrix<f32>,
    d_inputs: DMatrix<f32>,
    g: DMatrix<f32>,
    du: DMatrix<f32>,
}

impl FlowWork {
    /// Buffers for `flow`.
    pub fn new(flow: &Flow) -> Self {
        let k = flow.blocks.len();
        let empty = || DMatrix::zeros(0, 0);
        Self {
            cond_scratch: Scratch::default(),
            cond_grads: flow.cond.zero_gradients(),
            features: empty(),
            d_features: empty(),
            h: vec![empty(); k + 1],
            u: vec![empty(); k],
            inputs: vec![empty(); k],
            scales: vec![empty(); k],
            scratch: vec![Scratch::default(); k],
            grads: flow.blocks.iter().map(|b| b.net.zero_gradients()).collect(),
            d_out: empty(),
            d_inputs: empty(),
            g: empty(),
            du: empty(),
        }
    }
}

/// `out ← Q x` (or `Qᵀ x`) column by column, `Q` row-major `f64`.
fn rotate_columns(q: &[f64], x: &DMatrix<f32>, out: &mut DMatrix<f32>, transpose: bool) {
    let d = x.nrows();
    for (xc, mut oc) in x.column_iter().zip(out.column_iter_mut()) {
        for i in 0..d {
            oc[i] = (0..d).map(|j| if transpose { q[j * d + i] } else { q[i * d + j] } as f32 * xc[j]).sum();
        }
    }
}

fn fit(m: &mut DMatrix<f32>, rows: usize, cols: usize) {
    if m.shape() != (rows, cols) {
        *m = DMatrix::zeros(rows, cols);
    }
}

impl Trainable for Flow {
    type Work = FlowWork;

    /// The mean negative log-likelihood of the samples `targets` (`dims x n`) under their
    /// conditions `inputs` (`conds x n`).
    fn loss_and_grads(&self, w: &mut FlowWork, inputs: &DMatrix<f32>, targets: &DMatrix<f32>) -> f32 {
        let s = self.shape;
        let (d, split, m, n) = (s.dims, s.split(), s.moved(), inputs.ncols());
        assert_eq!(targets.shape(), (d, n), "Flow: target shape");
        let feats = self.cond.forward(inputs, &mut w.cond_scratch);
        fit(&mut w.features, s.features, n);
        w.features.copy_from(feats);
        fit(&mut w.h[0], d, n);
        w.h[0].copy_from(targets);
        let mut log_det = vec![0f32; n];
        for (k, block) in self.blocks.iter().enumerate() {
            fit(&mut w.u[k], d, n);
            rotate_columns(&block.mix, &w.h[k], &mut w.u[k], false);
            fit(&mut w.inputs[k], split + s.features, n);
            w.inputs[k].rows_mut(0, split).copy_from(&w.u[k].rows(0, split));
            w.inputs[k].rows_mut(split, s.features).copy_from(&w.features);
            let out = block.net.forward(&w.inputs[k], &mut w.scratch[k]);
            fit(&mut w.scales[k], m, n);
            fit(&mut w.h[k + 1], d, n);
            let (u, scales, next) = (&w.u[k], &mut w.scales[k], &mut w.h[k + 1]);
            next.rows_mut(0, split).copy_from(&u.rows(0, split));
            for j in 0..n {
                for i in 0..m {
                    let sc = s.clamp * fast_tanh(out[(i, j)] / s.clamp);
                    scales[(i, j)] = sc;
                    next[(split + i, j)] = u[(split + i, j)] * fast_exp(sc) + out[(m + i, j)];
                    log_det[j] += sc;
                }
            }
        }
        let z = &w.h[s.blocks];
        let loss = (0..n).map(|j| f64::from(0.5 * z.column(j).norm_squared() - log_det[j])).sum::<f64>() / n as f64
            + d as f64 * HALF_LN_TAU;
        // Backward: dL/dz = z / n, and every log-scale carries -1/n from the determinant.
        let inv_n = 1.0 / n as f32;
        fit(&mut w.g, d, n);
        w.g.copy_from(z);
        w.g *= inv_n;
        fit(&mut w.d_features, s.features, n);
        w.d_features.fill(0.0);
        fit(&mut w.d_out, 2 * m, n);
        fit(&mut w.d_inputs, split + s.features, n);
        fit(&mut w.du, d, n);
        for (k, block) in self.blocks.iter().enumerate().rev() {
            for j in 0..n {
                for i in 0..m {
                    let sc = w.scales[k][(i, j)];
                    let e = fast_exp(sc);
                    let gb = w.g[(split + i, j)];
                    let d_scale = gb * w.u[k][(split + i, j)] * e - inv_n;
                    let r = sc / s.clamp;
                    w.d_out[(i, j)] = d_scale * (1.0 - r * r);
                    w.d_out[(m + i, j)] = gb;
                    w.du[(split + i, j)] = gb * e;
                }
            }
            block.net.backward_with_input(&w.inputs[k], &w.d_out, &mut w.scratch[k], &mut w.grads[k], &mut w.d_inputs);
            for j in 0..n {
                for i in 0..split {
                    w.du[(i, j)] = w.g[(i, j)] + w.d_inputs[(i, j)];
                }
            }
            w.d_features += w.d_inputs.rows(split, s.features);
            rotate_columns(&block.mix, &w.du, &mut w.g, true);
        }
        self.cond.backward(inputs, &w.d_features, &mut w.cond_scratch, &mut w.cond_grads);
        loss as f32
    }

    fn parameters_mut(&mut self) -> Vec<&mut [f32]> {
        let mut p = self.cond.parameters_mut();
        for b in &mut self.blocks {
            p.extend(b.net.parameters_mut());
        }
        p
    }

    fn gradients(w: &FlowWork) -> Vec<&[f32]> {
        let mut g = w.cond_grads.slices();
        for b in &w.grads {
            g.extend(b.slices());
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn shape(dims: usize) -> FlowShape {
        FlowShape {
            dims,
            conds: 2,
            blocks: 3,
            hidden: 7,
            depth: 2,
            cond_hidden: 5,
            cond_depth: 1,
            features: 3,
            clamp: 2.0,
            activation: Activation::Tanh,
        }
    }

    /// A flow whose couplings do something (the last layers random, not zero).
    fn busy(dims: usize, seed: u64) -> Flow {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut flow = Flow::new(shape(dims), &mut rng);
        for b in &mut flow.blocks {
            let last = b.net.layers.last_mut().unwrap();
            last.w.iter_mut().for_each(|v| *v = rng.random_range(-0.8..0.8));
            last.b.iter_mut().for_each(|v| *v = rng.random_range(-0.5..0.5));
        }
        flow
    }

    fn draws(rng: &mut ChaCha8Rng, n: usize) -> Vec<f64> {
        (0..n).map(|_| StandardNormal.sample(rng)).collect()
    }

    #[test]
    fn the_inverse_undoes_the_forward_map_to_rounding() {
        crate::simd::for_each_level(|level| {
            for dims in [2, 3, 4, 5] {
                let flow = busy(dims, dims as u64);
                assert!(flow.is_consistent());
                let c = flow.condition(&[0.3, -0.7]);
                let mut rng = ChaCha8Rng::seed_from_u64(9);
                let x0 = draws(&mut rng, 300 * dims);
                let mut x = x0.clone();
                let mut log_det = vec![0.0; 300];
                let mut scratch = FlowScratch::default();
                c.forward(&mut x, &mut log_det, &mut scratch);
                let moved = x.iter().zip(&x0).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                assert!(moved > 0.1, "the flow should move samples ({moved})");
                c.inverse(&mut x, &mut scratch);
                let err = x.iter().zip(&x0).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                assert!(err < 1e-6, "{level:?} dims {dims}: round trip off by {err}");
            }
        });
    }

    #[test]
    fn the_log_determinant_matches_finite_differences_of_the_map() {
        for dims in [2, 3, 4] {
            let flow = busy(dims, 40 + dims as u64);
            let c = flow.condition(&[-0.4, 0.9]);
            let mut rng = ChaCha8Rng::seed_from_u64(2);
            for _ in 0..5 {
                let x = draws(&mut rng, dims);
                let map = |x: &[f64]| {
                    let mut z = x.to_vec();
                    let mut ld = [0.0];
                    c.forward(&mut z, &mut ld, &mut FlowScratch::default());
                    (z, ld[0])
                };
                let (_, log_det) = map(&x);
                // The networks see f32 inputs: a step far above their rounding (1e-7) keeps the
                // differences meaningful.
                let h = 1e-3;
                let jac = nalgebra::DMatrix::from_fn(dims, dims, |i, j| {
                    let (mut up, mut down) = (x.clone(), x.clone());
                    up[j] += h;
                    down[j] -= h;
                    (map(&up).0[i] - map(&down).0[i]) / (2.0 * h)
                });
                let fd = jac.determinant().abs().ln();
                assert!((fd - log_det).abs() < 1e-3, "dims {dims}: log|det| {log_det} vs finite differences {fd}");
            }
        }
    }

    #[test]
    fn the_training_loss_is_the_mean_negative_log_density() {
        let flow = busy(4, 5);
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let n = 9;
        let y = DMatrix::from_fn(2, n, |_, _| rng.random_range(-1.0..1.0f32));
        let x = DMatrix::from_fn(4, n, |_, _| rng.random_range(-1.5..1.5f32));
        let loss = flow.loss_and_grads(&mut FlowWork::new(&flow), &y, &x);
        let mean: f64 = (0..n)
            .map(|j| {
                let c = flow.condition(&[y[(0, j)], y[(1, j)]]);
                let xs: Vec<f64> = x.column(j).iter().map(|&v| f64::from(v)).collect();
                -c.log_density(&xs)[0]
            })
            .sum::<f64>()
            / n as f64;
        assert!((f64::from(loss) - mean).abs() < 1e-4 * (1.0 + mean.abs()), "loss {loss} vs {mean}");
    }

    #[test]
    #[allow(clippy::needless_range_loop)] // parameters are perturbed in place by index
    fn every_gradient_matches_finite_differences_at_every_level() {
        crate::simd::for_each_level(|level| {
            for dims in [3, 4] {
                let mut flow = busy(dims, 70 + dims as u64);
                let mut rng = ChaCha8Rng::seed_from_u64(8);
                let n = 5;
                let y = DMatrix::from_fn(2, n, |_, _| rng.random_range(-1.0..1.0f32));
                let x = DMatrix::from_fn(dims, n, |_, _| rng.random_range(-1.5..1.5f32));
                let mut work = FlowWork::new(&flow);
                flow.loss_and_grads(&mut work, &y, &x);
                let analytic: Vec<Vec<f32>> = Flow::gradients(&work).iter().map(|g| g.to_vec()).collect();
                let h = 1e-3f32;
                for p in 0..analytic.len() {
                    for k in 0..analytic[p].len() {
                        let orig = flow.parameters_mut()[p][k];
                        let mut at = |v: f32| {
                            flow.parameters_mut()[p][k] = v;
                            f64::from(flow.loss_and_grads(&mut FlowWork::new(&flow), &y, &x))
                        };
                        let fd = (at(orig + h) - at(orig - h)) / (2.0 * f64::from(h));
                        flow.parameters_mut()[p][k] = orig;
                        let an = f64::from(analytic[p][k]);
                        let tol = 3e-3 * (1.0 + fd.abs().max(an.abs()));
                        assert!((fd - an).abs() < tol, "{level:?} dims {dims} param {p}[{k}]: {an} vs {fd}");
                    }
                }
            }
        });
    }

    #[test]
    fn an_untrained_flow_is_the_identity_and_samples_the_base() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let flow = Flow::new(shape(4), &mut rng);
        let mut out = Vec::new();
        flow.sample(&[0.1, 0.2], 4000, &mut rng, &mut out);
        assert_eq!(out.len(), 16_000);
        let var: f64 = out.iter().map(|v| v * v).sum::<f64>() / out.len() as f64;
        assert!((var - 1.0).abs() < 0.05, "{var}");
        let c = flow.condition(&[0.1, 0.2]);
        let ld = c.log_density(&[0.0; 4])[0];
        assert!((ld + 4.0 * HALF_LN_TAU).abs() < 1e-12, "{ld}");
    }
}
