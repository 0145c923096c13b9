//! Redundant chains, benchmarked the way the learned-IK literature does it (Kruse et al. 2021):
//! on test targets `y* = f(x)` with `x` drawn from the arm's prior, every method draws a fixed
//! number of samples per target, and each is scored by
//!
//! - re-simulation error: the mean squared distance from `FK(sample)` to `y*`;
//! - posterior mismatch: the unbiased `MMD²` between its samples and the exact posterior's
//!   ([`crate::chain::mmd`], a sum of inverse multiquadratic kernels), beside the floor that two
//!   independent exact sets give;
//! - success rate: the share of samples within [`ChainConfig::tolerance`] (1 mm) of `y*`;
//! - the share of samples outside the joint limits;
//! - time: per solution over the whole run, and for 2,000 solutions of one target on one core.
//!
//! Per-target figures are summarised by mean, median and interquartile range, since errors
//! concentrate on rare targets. The methods: `mse` (one answer: the averaging trap on a
//! manifold), `mdn` (sampled), `dls` (damped least squares from prior starts, restarting until
//! converged), `hybrid` (MDN samples as seeds, a few DLS iterations, then more seeds and, only if
//! every seed fails, prior starts) and `exact` ([`ExactSampler`](crate::chain::ExactSampler)).
//!
//! - [`config`]: what defines a run and the bounds on its work;
//! - [`report`]: what a run returns (per-method rows of [`Summary`](crate::stats::Summary)s);
//! - `run`: training, evaluation target by target, and the timed demo.

pub mod config;
pub mod report;
mod run;

pub use config::{ChainConfig, MAX_KERNEL_PAIRS, MAX_SAMPLES, MAX_TARGETS, MAX_TOLERANCE};
pub use report::{ChainReport, Demo, MethodRow, NetBudget};
pub use run::{Progress, TIMED_SOLUTIONS, TrainedNets, chain, chain_observed, evaluate, train_nets};
