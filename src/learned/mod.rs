//! Learned inverse kinematics: data, the four heads, training and evaluation.
//!
//! - [`data`]: reachable targets paired with both elbow solutions (or with corrections for the
//!   residual head), and the angle encodings.
//! - [`model`]: [`LearnedModel`] behind the [`LearnedIk`] trait (MSE, MDN, mode-conditioned and
//!   residual heads), [`LearnedSolver`] to use one as an [`crate::IkSolver`], model files.
//! - [`train`]: the minibatch loop and held-out evaluation.

pub mod data;
pub mod model;
pub mod train;

pub use data::{AngleEncoding, DataConfig, Dataset, Sample};
pub use model::{Candidate, HeadKind, LearnedIk, LearnedModel, LearnedSolver, ModeChoice, ModelError, Prediction};
pub use train::{
    DEFAULT_JOINT_OFFSETS, DEFAULT_LENGTH_ERROR, TrainConfig, TrainError, Trainer, default_real_arm, evaluate,
    fk_misses, held_out_targets,
};
