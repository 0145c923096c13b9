//! Small neural networks written with nalgebra: dense layers, activations, losses and Adam.
//!
//! The pieces are kept apart in the micrograd / nanoGPT manner: [`activation`] (the
//! non-linearities), [`dense`] (a layer), [`mlp`] (the model: a stack of layers with forward and
//! backward by hand), [`loss`] (squared error and the mixture-density negative log-likelihood),
//! [`full_mdn`] (the same with full-covariance components) and [`adam`] (the optimizer). Every gradient is checked against central finite differences in
//! the tests, at every SIMD level the CPU has.
//!
//! Batches are column-major `features x batch` matrices of `f32`, so each sample is one column
//! and every layer is one GEMM. The GEMMs run on [`kernels`]: register-tiled, runtime-dispatched
//! (AVX-512, AVX2+FMA or scalar, see [`crate::simd`]), with the bias, the activation and its
//! derivative fused into their epilogues. [`Mlp::forward_batch`] runs whole grids of targets the
//! same way.
//!
//! Modules import downwards only: `simd` ← `activation` ← `kernels` ← `dense` ← `mlp` ← `adam`,
//! and `simd` ← `loss` ← `full_mdn`.

pub mod activation;
pub mod adam;
pub mod dense;
pub mod flow;
pub mod full_mdn;
#[cfg(test)]
pub(crate) mod gradcheck;
pub mod kernels;
pub mod loss;
pub mod mlp;
pub mod trainable;

pub use activation::Activation;
pub use adam::Adam;
pub use dense::Dense;
pub use flow::{Flow, FlowShape, FlowWork};
pub use full_mdn::{FullComponent, FullMdn};
pub use loss::{Loss, MdnComponent, MdnNll, MixtureLayout, Mse};
pub use mlp::{BATCH_CHUNK, BatchScratch, Gradients, Mlp, Scratch};
pub use trainable::{MlpWork, Trainable};
