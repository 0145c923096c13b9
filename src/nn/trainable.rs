//! What a training loop needs of a model, whatever its architecture: the loss of a minibatch
//! with the gradient of every parameter, and the parameters themselves in the same order.
//!
//! [`Mlp`] under a [`Loss`] (the squared-error nets and the mixture density networks) and the
//! conditional normalizing flow ([`super::flow::Flow`]) both implement it, so one fitter
//! (`crate::learned::train::Fitter`, Adam on a cosine schedule) trains every learned model of
//! the lab.

use super::loss::Loss;
use super::mlp::{Gradients, Mlp, Scratch};
use nalgebra::DMatrix;

/// A model a training loop can fit by gradient descent.
pub trait Trainable {
    /// The buffers and gradients of one training run (no allocation per step).
    type Work;

    /// The loss on a minibatch of `inputs` (one sample per column) and their `targets`; writes
    /// the gradient of every parameter into `work`.
    fn loss_and_grads(&self, work: &mut Self::Work, inputs: &DMatrix<f32>, targets: &DMatrix<f32>) -> f32;

    /// Every parameter, as slices in a fixed order.
    fn parameters_mut(&mut self) -> Vec<&mut [f32]>;

    /// The gradients of the last [`Trainable::loss_and_grads`], in the order of
    /// [`Trainable::parameters_mut`].
    fn gradients(work: &Self::Work) -> Vec<&[f32]>;
}

/// The training buffers of an [`Mlp`] under a loss.
pub struct MlpWork {
    /// The loss the network is fitted under.
    pub loss: Box<dyn Loss>,
    scratch: Scratch,
    grads: Gradients,
    d_out: DMatrix<f32>,
}

impl MlpWork {
    /// Buffers for `net` under `loss`.
    pub fn new(net: &Mlp, loss: Box<dyn Loss>) -> Self {
        Self { loss, scratch: Scratch::default(), grads: net.zero_gradients(), d_out: DMatrix::zeros(0, 0) }
    }
}

impl Trainable for Mlp {
    type Work = MlpWork;

    fn loss_and_grads(&self, work: &mut MlpWork, inputs: &DMatrix<f32>, targets: &DMatrix<f32>) -> f32 {
        if work.d_out.shape() != (self.outputs(), inputs.ncols()) {
            work.d_out = DMatrix::zeros(self.outputs(), inputs.ncols());
        }
        let out = self.forward(inputs, &mut work.scratch);
        let loss = work.loss.loss_and_grad(out, targets, &mut work.d_out);
        self.backward(inputs, &work.d_out, &mut work.scratch, &mut work.grads);
        loss
    }

    fn parameters_mut(&mut self) -> Vec<&mut [f32]> {
        Mlp::parameters_mut(self)
    }

    fn gradients(work: &MlpWork) -> Vec<&[f32]> {
        work.grads.slices()
    }
}
