//! The bounds on training runs and on the networks a model file may hold, in one place below
//! both training ([`super::train`]) and model files ([`super::model`]).

/// The most minibatch updates one run may take.
pub const MAX_STEPS: usize = 10_000_000;
/// The most samples per minibatch.
pub const MAX_BATCH: usize = 65_536;
/// The widest hidden layer.
pub const MAX_HIDDEN: usize = 4096;
/// The most hidden layers.
pub const MAX_DEPTH: usize = 8;
/// The most MDN components.
pub const MAX_COMPONENTS: usize = 32;
/// The fewest and most training targets.
pub const DATA_SIZE_RANGE: (usize, usize) = (16, 10_000_000);
/// The largest MDN standard-deviation floor (in encoded units; `e^8`, the ceiling of a
/// component's spread, is about 2981).
pub const MAX_SIGMA_MIN: f32 = 1000.0;
/// The most memory a training run may be estimated to need, bytes (2 GiB).
pub const MAX_TRAIN_BYTES: f64 = 2.0 * 1024.0 * 1024.0 * 1024.0;
/// The most floating-point work a training run may be estimated to need (2e13 FLOP: about a
/// quarter of an hour on one core).
pub const MAX_TRAIN_FLOPS: f64 = 2e13;
