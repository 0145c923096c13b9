//! Learned inverse kinematics: data, the four heads, training and evaluation.
//!
//! - [`head`]: the heads' one identity, [`HeadKind`], and what each one is ([`HeadSpec`]).
//! - [`data`]: reachable targets paired with both elbow solutions (or with corrections for the
//!   residual head), and the angle encodings.
//! - [`model`]: [`LearnedModel`] behind the [`LearnedIk`] trait (MSE, MDN, mode-conditioned and
//!   residual heads), [`LearnedSolver`] to use one as an [`crate::IkSolver`], the checks of a
//!   network read from a file.
//! - [`file`](mod@file): model files, one format for every arm ([`ModelFile`]: a two-link arm's heads or a
//!   chain's nets), version 2, reading version 1 too.
//! - [`branch`]: branch continuity, how a head with several answers drives an arm that is
//!   already on one elbow branch.
//! - [`batch`]: many targets through a head at once (one GEMM per layer).
//! - [`limits`]: the bounds on training runs and on the networks a model may hold.
//! - [`train`]: the minibatch loop.
//! - [`eval`]: held-out targets, FK misses, and a whole train-then-evaluate run.

pub mod batch;
pub mod branch;
pub mod data;
pub mod eval;
pub mod file;
pub mod head;
pub mod limits;
pub mod model;
pub mod train;

pub use batch::PredictScratch;
pub use data::{AngleEncoding, DataConfig, Dataset, Sample};
pub use eval::{
    MAX_EVAL_TARGETS, TrainReport, check_eval_targets, evaluate, fk_misses, held_out_targets, train_and_evaluate,
};
pub use file::{MAX_MODEL_FILE_BYTES, ModelError, ModelFile};
pub use head::{HeadKind, HeadSpec, Output, TrainedOn};
pub use limits::{MAX_STEPS, MAX_TRAIN_BYTES, MAX_TRAIN_FLOPS};
pub use model::{BatchAnswer, Candidate, FieldError, LearnedIk, LearnedModel, LearnedSolver, ModeChoice, Prediction};
pub use train::{DIVERGED_LOSS, TrainConfig, TrainError, Trainer};
