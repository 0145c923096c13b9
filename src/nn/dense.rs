//! A fully connected layer `y = act(W x + b)`.

use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

pub use super::activation::Activation;
use super::kernels::{self, Epilogue, Gemm};

/// One dense layer: weights `W` (`out x in`), bias `b` (`out`) and its activation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dense {
    /// Weight matrix, `outputs x inputs`.
    pub w: DMatrix<f32>,
    /// Bias vector, `outputs`.
    pub b: DVector<f32>,
    /// Non-linearity after the affine map.
    pub activation: Activation,
}

impl Dense {
    /// A layer with Xavier/He-style Gaussian weights (std `gain / sqrt(inputs)`) and zero bias.
    pub fn new<R: Rng + ?Sized>(inputs: usize, outputs: usize, activation: Activation, rng: &mut R) -> Self {
        let gain = match activation {
            Activation::Relu => 2f32.sqrt(),
            Activation::Tanh | Activation::Identity => 1.0,
        };
        let normal = Normal::new(0.0, gain / (inputs as f32).sqrt()).expect("finite std");
        let w = DMatrix::from_fn(outputs, inputs, |_, _| normal.sample(rng));
        Self { w, b: DVector::zeros(outputs), activation }
    }

    /// Number of inputs.
    pub fn inputs(&self) -> usize {
        self.w.ncols()
    }

    /// Number of outputs.
    pub fn outputs(&self) -> usize {
        self.w.nrows()
    }

    /// `out = act(W x + b)` for a whole batch; `out` must be `outputs x batch`.
    pub fn forward_into(&self, x: &DMatrix<f32>, out: &mut DMatrix<f32>) {
        assert_eq!(out.shape(), (self.outputs(), x.ncols()), "forward_into output shape");
        self.forward_slices(x.as_slice(), x.ncols(), out.as_mut_slice());
    }

    /// `out = act(W x + b)` for `n` column-major samples in `x` (`inputs x n`), fused into one
    /// kernel pass (bias and activation applied in registers); `out` is `outputs x n`.
    ///
    /// # Panics
    /// If the slice lengths do not match `n` (a programming error).
    pub fn forward_slices(&self, x: &[f32], n: usize, out: &mut [f32]) {
        assert!(x.len() == self.inputs() * n && out.len() == self.outputs() * n, "forward_slices lengths");
        let (m, k) = self.w.shape();
        let g = Gemm {
            m,
            n,
            k,
            a: self.w.as_slice(),
            a_i: 1,
            a_k: m,
            b: x,
            b_k: 1,
            b_j: k,
            ldc: m,
            epilogue: Epilogue::BiasAct(self.b.as_slice(), self.activation),
        };
        kernels::gemm(&g, out);
    }
}
