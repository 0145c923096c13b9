//! A fully connected layer `y = act(W x + b)` and its activations.

use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

use super::kernels::{self, Epilogue, Gemm};

/// Element-wise non-linearity after a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Activation {
    /// Hyperbolic tangent (a rational approximation accurate to about 1e-7).
    Tanh,
    /// Rectified linear unit.
    Relu,
    /// No non-linearity (the output layer).
    Identity,
}

impl std::str::FromStr for Activation {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "tanh" => Ok(Activation::Tanh),
            "relu" => Ok(Activation::Relu),
            "identity" | "linear" => Ok(Activation::Identity),
            _ => Err(format!("activation must be tanh, relu or identity, got `{s}`")),
        }
    }
}

/// `tanh` as a 13/6 rational function (the form Eigen uses): vectorisable and within ~1e-7 of
/// the true value, far cheaper than the libm call it replaces.
#[inline(always)]
pub fn fast_tanh(x: f32) -> f32 {
    const A1: f32 = 4.893_524_6e-3;
    const A3: f32 = 6.372_619_3e-4;
    const A5: f32 = 1.485_722_4e-5;
    const A7: f32 = 5.122_297e-8;
    const A9: f32 = -8.604_672e-11;
    const A11: f32 = 2.000_188e-13;
    const A13: f32 = -2.760_768_5e-16;
    const B0: f32 = 4.893_525e-3;
    const B2: f32 = 2.268_434_6e-3;
    const B4: f32 = 1.185_347_1e-4;
    const B6: f32 = 1.198_258_4e-6;
    let x = x.clamp(-7.905_311, 7.905_311);
    let x2 = x * x;
    let p = x * (A1 + x2 * (A3 + x2 * (A5 + x2 * (A7 + x2 * (A9 + x2 * (A11 + x2 * A13))))));
    let q = B0 + x2 * (B2 + x2 * (B4 + x2 * B6));
    p / q
}

impl Activation {
    /// Applies the activation in place.
    pub fn apply(self, z: &mut [f32]) {
        match self {
            Activation::Tanh => z.iter_mut().for_each(|v| *v = fast_tanh(*v)),
            Activation::Relu => z.iter_mut().for_each(|v| *v = v.max(0.0)),
            Activation::Identity => {}
        }
    }

    /// Multiplies `grad` in place by the derivative, given the activation's *output* `a`.
    pub fn backprop(self, a: &[f32], grad: &mut [f32]) {
        match self {
            Activation::Tanh => tanh_backprop(a, grad),
            Activation::Relu => grad.iter_mut().zip(a).for_each(|(g, &y)| {
                if y <= 0.0 {
                    *g = 0.0
                }
            }),
            Activation::Identity => {}
        }
    }
}

#[inline(always)]
fn tanh_backprop_body(a: &[f32], grad: &mut [f32]) {
    grad.iter_mut().zip(a).for_each(|(g, &y)| *g *= 1.0 - y * y);
}

crate::simd::dispatch!(fn tanh_backprop(a: &[f32], grad: &mut [f32]) => tanh_backprop_body);

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
            lda: m,
            b: x,
            b_k: 1,
            b_j: k,
            ldc: m,
            epilogue: Epilogue::BiasAct(self.b.as_slice(), self.activation),
        };
        kernels::gemm(&g, out);
    }

    /// `Wᵀ` (`inputs x outputs`, column-major) into `buf`, the vector operand of the input gradient.
    pub(crate) fn transpose_into(&self, buf: &mut Vec<f32>) {
        let (m, k) = self.w.shape();
        buf.clear();
        buf.resize(m * k, 0.0);
        let w = self.w.as_slice();
        for (i, col) in w.chunks_exact(m).enumerate() {
            for (r, &v) in col.iter().enumerate() {
                buf[i + r * k] = v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_tanh_matches_libm() {
        let mut worst = 0f32;
        for i in -20_000..=20_000 {
            let x = i as f32 * 1e-3;
            worst = worst.max((fast_tanh(x) - x.tanh()).abs());
        }
        assert!(worst < 2e-6, "{worst}");
        assert_eq!(fast_tanh(1e30), 1.0f32.min(fast_tanh(1e30)));
        assert!(fast_tanh(f32::INFINITY) <= 1.0 && fast_tanh(-f32::INFINITY) >= -1.0);
    }
}
