//! The model: a multi-layer perceptron with forward and backward passes written by hand.

use super::activation::Activation;
use super::dense::Dense;
use super::kernels::{self, Epilogue, Gemm};
use nalgebra::{DMatrix, DVector};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// A stack of dense layers; hidden layers share one activation, the last is linear.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mlp {
    /// The layers, input side first.
    pub layers: Vec<Dense>,
}

/// Gradients of a loss with respect to every parameter of an [`Mlp`], laid out like its layers.
#[derive(Debug, Clone, PartialEq)]
pub struct Gradients {
    /// `dL/dW` per layer.
    pub w: Vec<DMatrix<f32>>,
    /// `dL/db` per layer.
    pub b: Vec<DVector<f32>>,
}

/// Reusable buffers for batched forward and backward passes (no allocation per step).
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    /// Output of each layer, `outputs x batch`.
    acts: Vec<DMatrix<f32>>,
    /// `dL/d(output)` of each layer, same shapes.
    deltas: Vec<DMatrix<f32>>,
}

/// Reusable buffers for [`Mlp::forward_batch`]: two activation buffers of one chunk of samples.
#[derive(Debug, Clone, Default)]
pub struct BatchScratch {
    ping: Vec<f32>,
    pong: Vec<f32>,
}

/// Samples per chunk of [`Mlp::forward_batch`]: every layer of a chunk runs while its
/// activations (`width x CHUNK` floats, 64 KiB at width 64) are still in L2.
pub const BATCH_CHUNK: usize = 256;

impl Mlp {
    /// A network with layer widths `sizes` (input first, output last), `hidden` activation on
    /// every layer but the last, and seeded random weights.
    ///
    /// # Panics
    /// If fewer than two sizes are given or any is zero (a programming error, not user input:
    /// callers validate widths first).
    pub fn new<R: Rng + ?Sized>(sizes: &[usize], hidden: Activation, rng: &mut R) -> Self {
        assert!(sizes.len() >= 2 && sizes.iter().all(|&s| s > 0), "bad layer sizes {sizes:?}");
        let last = sizes.len() - 2;
        let layers = sizes
            .windows(2)
            .enumerate()
            .map(|(i, w)| Dense::new(w[0], w[1], if i == last { Activation::Identity } else { hidden }, rng))
            .collect();
        Self { layers }
    }

    /// Number of inputs.
    pub fn inputs(&self) -> usize {
        self.layers[0].inputs()
    }

    /// Number of outputs.
    pub fn outputs(&self) -> usize {
        self.layers.last().map_or(0, Dense::outputs)
    }

    /// Total number of trainable parameters.
    pub fn parameter_count(&self) -> usize {
        self.layers.iter().map(|l| l.w.len() + l.b.len()).sum()
    }

    /// Multiply-accumulates per sample for one forward pass.
    pub fn macs_per_sample(&self) -> usize {
        self.layers.iter().map(|l| l.w.len()).sum()
    }

    /// True when the layer shapes chain and every parameter is finite.
    pub fn is_consistent(&self) -> bool {
        !self.layers.is_empty()
            && self.layers.windows(2).all(|w| w[0].outputs() == w[1].inputs())
            && self
                .layers
                .iter()
                .all(|l| l.b.len() == l.outputs() && l.w.iter().chain(l.b.iter()).all(|v| v.is_finite()))
    }

    /// Zero gradients shaped like this network.
    pub fn zero_gradients(&self) -> Gradients {
        Gradients {
            w: self.layers.iter().map(|l| DMatrix::zeros(l.outputs(), l.inputs())).collect(),
            b: self.layers.iter().map(|l| DVector::zeros(l.outputs())).collect(),
        }
    }

    fn fit_scratch(&self, scratch: &mut Scratch, batch: usize) {
        let fits = scratch.acts.len() == self.layers.len()
            && scratch.acts.iter().zip(&self.layers).all(|(a, l)| a.shape() == (l.outputs(), batch));
        if !fits {
            scratch.acts = self.layers.iter().map(|l| DMatrix::zeros(l.outputs(), batch)).collect();
            scratch.deltas = scratch.acts.clone();
        }
    }

    /// Forward pass of a batch `x` (`inputs x batch`); returns the output (`outputs x batch`).
    pub fn forward<'s>(&self, x: &DMatrix<f32>, scratch: &'s mut Scratch) -> &'s DMatrix<f32> {
        assert_eq!(x.nrows(), self.inputs(), "forward: input rows");
        self.fit_scratch(scratch, x.ncols());
        for (i, layer) in self.layers.iter().enumerate() {
            let (done, rest) = scratch.acts.split_at_mut(i);
            let input = if i == 0 { x } else { &done[i - 1] };
            layer.forward_slices(input.as_slice(), x.ncols(), rest[0].as_mut_slice());
        }
        scratch.acts.last().expect("at least one layer")
    }

    /// Backward pass after [`Mlp::forward`] on the same `x`: given `dL/d(output)`, writes every
    /// parameter gradient into `grads` (overwriting it).
    ///
    /// Per layer: `dW = delta · inputᵀ` and `db = Σ delta` straight from the column-major
    /// buffers, and `delta_below = act'(input) ⊙ (Wᵀ · delta)` with the activation derivative
    /// fused into the product's epilogue.
    pub fn backward(&self, x: &DMatrix<f32>, d_out: &DMatrix<f32>, scratch: &mut Scratch, grads: &mut Gradients) {
        self.backward_into(x, d_out, scratch, grads, None);
    }

    /// [`Mlp::backward`] that also writes `dL/dx` (`inputs x batch`) into `d_x`: what a network
    /// feeding this one (a normalizing flow's conditioning net, a coupling's own input) needs.
    pub fn backward_with_input(
        &self,
        x: &DMatrix<f32>,
        d_out: &DMatrix<f32>,
        scratch: &mut Scratch,
        grads: &mut Gradients,
        d_x: &mut DMatrix<f32>,
    ) {
        assert_eq!(d_x.shape(), x.shape(), "backward: d_x shape");
        self.backward_into(x, d_out, scratch, grads, Some(d_x.as_mut_slice()));
    }

    fn backward_into(
        &self,
        x: &DMatrix<f32>,
        d_out: &DMatrix<f32>,
        scratch: &mut Scratch,
        grads: &mut Gradients,
        mut d_x: Option<&mut [f32]>,
    ) {
        let n = self.layers.len();
        let batch = x.ncols();
        assert_eq!(d_out.shape(), (self.outputs(), batch), "backward: d_out shape");
        let Scratch { acts, deltas } = scratch;
        let top = &self.layers[n - 1];
        let top_is_linear = top.activation == Activation::Identity;
        if !top_is_linear {
            deltas[n - 1].copy_from(d_out);
            top.activation.backprop(acts[n - 1].as_slice(), deltas[n - 1].as_mut_slice());
        }
        for i in (0..n).rev() {
            let layer = &self.layers[i];
            let (out, inp) = (layer.outputs(), layer.inputs());
            let (lower, upper) = deltas.split_at_mut(i);
            let delta = if i == n - 1 && top_is_linear { d_out.as_slice() } else { upper[0].as_slice() };
            let input = if i == 0 { x.as_slice() } else { acts[i - 1].as_slice() };
            // dW = delta · inputᵀ: delta's columns are the vectors, the input is broadcast.
            let dw = Gemm {
                m: out,
                n: inp,
                k: batch,
                a: delta,
                a_i: 1,
                a_k: out,
                b: input,
                b_k: inp,
                b_j: 1,
                ldc: out,
                epilogue: Epilogue::Plain,
            };
            kernels::gemm(&dw, grads.w[i].as_mut_slice());
            kernels::row_sums(delta, out, grads.b[i].as_mut_slice());
            if i > 0 {
                // dL/d(input) = act'(input) ⊙ (Wᵀ · delta).
                let epilogue = Epilogue::ActGrad(input, self.layers[i - 1].activation);
                input_gradient(layer, delta, batch, epilogue, lower[i - 1].as_mut_slice());
            } else if let Some(d_x) = d_x.as_deref_mut() {
                // dL/dx = Wᵀ · delta: the network's input has no activation.
                input_gradient(layer, delta, batch, Epilogue::Plain, d_x);
            }
        }
    }

    /// Forward pass of one sample (one matrix-vector kernel per layer; allocates the result).
    pub fn forward_one(&self, x: &[f32]) -> DVector<f32> {
        let mut out = DVector::zeros(self.outputs());
        let widest = self.layers.iter().map(Dense::outputs).max().unwrap_or(0);
        if widest <= 256 {
            let (mut ping, mut pong) = ([0f32; 256], [0f32; 256]);
            self.forward_chunk(x, 1, out.as_mut_slice(), &mut ping, &mut pong);
        } else {
            let (mut ping, mut pong) = (vec![0f32; widest], vec![0f32; widest]);
            self.forward_chunk(x, 1, out.as_mut_slice(), &mut ping, &mut pong);
        }
        out
    }

    /// Runs every layer on `n` samples, through the two scratch buffers, into `out`.
    fn forward_chunk<'b>(
        &self,
        x: &[f32],
        n: usize,
        out: &mut [f32],
        mut ping: &'b mut [f32],
        mut pong: &'b mut [f32],
    ) {
        let last = self.layers.len() - 1;
        for (i, layer) in self.layers.iter().enumerate() {
            let dst: &mut [f32] = if i == last { &mut *out } else { &mut ping[..layer.outputs() * n] };
            let src: &[f32] = if i == 0 { x } else { &pong[..layer.inputs() * n] };
            layer.forward_slices(src, n, dst);
            std::mem::swap(&mut ping, &mut pong);
        }
    }

    /// Batched inference: `inputs` holds `n` samples column-major (sample `j`'s features at
    /// `inputs[j * self.inputs()..]`), `outputs` receives their `n` output columns the same way.
    /// Runs one fused GEMM per layer on chunks of [`BATCH_CHUNK`] samples, reusing `scratch`.
    /// The results equal [`Mlp::forward`] on the same samples bit for bit (a batch of one
    /// sample takes the matrix-vector path of [`Mlp::forward_one`], equal to rounding).
    ///
    /// # Panics
    /// If `inputs.len()` is not a multiple of the input width, or `outputs.len()` does not
    /// match.
    pub fn forward_batch(&self, inputs: &[f32], outputs: &mut [f32], scratch: &mut BatchScratch) {
        let (n_in, n_out) = (self.inputs(), self.outputs());
        assert!(inputs.len().is_multiple_of(n_in), "forward_batch: {} inputs of width {n_in}", inputs.len());
        let n = inputs.len() / n_in;
        assert_eq!(outputs.len(), n * n_out, "forward_batch: output length");
        // A last chunk of one sample joins the one before (a one-column product would take the
        // matrix-vector path, which rounds differently).
        let widest = self.layers.iter().map(Dense::outputs).max().unwrap_or(0) * (BATCH_CHUNK + 1);
        for buf in [&mut scratch.ping, &mut scratch.pong] {
            if buf.len() < widest {
                buf.resize(widest, 0.0);
            }
        }
        let mut start = 0;
        while start < n {
            let mut len = BATCH_CHUNK.min(n - start);
            if n - start == BATCH_CHUNK + 1 {
                len += 1;
            }
            let x = &inputs[start * n_in..(start + len) * n_in];
            let y = &mut outputs[start * n_out..(start + len) * n_out];
            self.forward_chunk(x, len, y, &mut scratch.ping, &mut scratch.pong);
            start += len;
        }
    }

    /// Mutable slices of every parameter, layer by layer (weights then bias).
    pub fn parameters_mut(&mut self) -> Vec<&mut [f32]> {
        self.layers.iter_mut().flat_map(|l| [l.w.as_mut_slice(), l.b.as_mut_slice()]).collect()
    }
}

/// `epilogue(Wᵀ · delta)` of `layer` for `batch` samples into `out` (`inputs x batch`), reading
/// `W` transposed: the gradient with respect to the layer's input.
fn input_gradient(layer: &Dense, delta: &[f32], batch: usize, epilogue: Epilogue<'_>, out: &mut [f32]) {
    let (o, i) = (layer.outputs(), layer.inputs());
    let g = Gemm {
        m: i,
        n: batch,
        k: o,
        a: layer.w.as_slice(),
        a_i: o,
        a_k: 1,
        b: delta,
        b_k: 1,
        b_j: o,
        ldc: i,
        epilogue,
    };
    kernels::gemm(&g, out);
}

impl Gradients {
    /// Slices of every gradient in the order of [`Mlp::parameters_mut`].
    pub fn slices(&self) -> Vec<&[f32]> {
        self.w.iter().zip(&self.b).flat_map(|(w, b)| [w.as_slice(), b.as_slice()]).collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn batch(rng: &mut ChaCha8Rng, rows: usize, cols: usize) -> DMatrix<f32> {
        DMatrix::from_fn(rows, cols, |_, _| rng.random_range(-1.0..1.0))
    }

    use rand::RngExt;

    #[test]
    fn single_sample_forward_matches_batch() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let net = Mlp::new(&[2, 16, 16, 5], Activation::Tanh, &mut rng);
        let x = batch(&mut rng, 2, 9);
        let mut scratch = Scratch::default();
        let out = net.forward(&x, &mut scratch).clone();
        for j in 0..9 {
            let one = net.forward_one(x.column(j).as_slice());
            assert!((one - out.column(j)).amax() < 1e-5);
        }
        assert_eq!(net.parameter_count(), 2 * 16 + 16 + 16 * 16 + 16 + 16 * 5 + 5);
        assert!(net.is_consistent());
    }

    fn weight_bits(net: &Mlp) -> Vec<u32> {
        net.layers.iter().flat_map(|l| l.w.iter().chain(l.b.iter()).map(|v| v.to_bits())).collect()
    }

    #[test]
    fn training_is_bit_for_bit_deterministic_for_a_fixed_seed() {
        use crate::learned::{HeadKind, TrainConfig, Trainer};
        for head in [HeadKind::Mdn, HeadKind::Mse] {
            let cfg = TrainConfig { head, steps: 150, data_size: 2000, ..TrainConfig::default() };
            let (mut a, mut b) = (Trainer::new(cfg).unwrap(), Trainer::new(cfg).unwrap());
            for _ in 0..cfg.steps {
                assert_eq!(a.step().unwrap().to_bits(), b.step().unwrap().to_bits());
            }
            assert_eq!(weight_bits(&a.model().net), weight_bits(&b.model().net), "{head}");
            let other = TrainConfig { seed: 1, ..cfg };
            let mut c = Trainer::new(other).unwrap();
            c.run(|_, _| {}).unwrap();
            assert_ne!(weight_bits(&a.model().net), weight_bits(&c.model().net));
        }
    }

    #[test]
    fn batched_inference_matches_forward() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let net = Mlp::new(&[3, 64, 64, 14], Activation::Tanh, &mut rng);
        // Two and a bit chunks, so every path (whole chunks, a short one) runs.
        let n = 2 * BATCH_CHUNK + 37;
        let n1 = BATCH_CHUNK + 1; // a chunk and one sample: no one-column chunk
        let x = batch(&mut rng, 3, n);
        let mut scratch = Scratch::default();
        let want = net.forward(&x, &mut scratch).clone();
        let mut out = vec![f32::NAN; 14 * n];
        let mut bs = BatchScratch::default();
        net.forward_batch(x.as_slice(), &mut out, &mut bs);
        let first_diff = out.iter().zip(want.iter()).position(|(a, b)| a.to_bits() != b.to_bits());
        assert!(
            first_diff.is_none(),
            "first difference at {first_diff:?}: {:?}",
            first_diff.map(|i| (out[i], want[i]))
        );
        // The scratch is reused, and a different batch size works with it.
        net.forward_batch(&x.as_slice()[..3 * 5], &mut out[..14 * 5], &mut bs);
        assert!(out[..14 * 5] == want.as_slice()[..14 * 5]);
        let mut out1 = vec![0f32; 14 * n1];
        net.forward_batch(&x.as_slice()[..3 * n1], &mut out1, &mut bs);
        assert!(out1[..] == want.as_slice()[..14 * n1]);
        for j in [0, 100, n - 1] {
            let one = net.forward_one(x.column(j).as_slice());
            assert!((one - want.column(j)).amax() < 1e-5);
        }
    }
}
