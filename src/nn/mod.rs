//! Small neural networks written with nalgebra: dense layers, activations, losses and Adam.
//!
//! The pieces are kept apart in the micrograd / nanoGPT manner: [`dense`] (a layer and its
//! activation), [`mlp`] (the model: a stack of layers with forward and backward by hand),
//! [`loss`] (squared error and the mixture-density negative log-likelihood) and [`adam`] (the
//! optimizer). Every gradient is checked against central finite differences in the tests.
//!
//! Batches are column-major `features x batch` matrices of `f32`, so each sample is one column
//! and every layer is one GEMM. The GEMMs run on [`kernels`]: register-tiled, runtime-dispatched
//! (AVX-512, AVX2+FMA or SSE2, see [`simd`]), with the bias, the activation and its derivative
//! fused into their epilogues. [`Mlp::forward_batch`] runs whole grids of targets the same way.

pub mod adam;
pub mod dense;
pub mod kernels;
pub mod loss;
pub mod mlp;

pub use adam::Adam;
pub use dense::{Activation, Dense};
pub use loss::{Loss, MdnComponent, MdnNll, Mse};
pub use mlp::{BATCH_CHUNK, BatchScratch, Gradients, Mlp, Scratch};
