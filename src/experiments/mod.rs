//! Reproducible experiments: each takes a plain configuration and returns a report; the command
//! line (`elbow experiment ...`) only parses, calls and prints.
//!
//! - [`averaging`](mod@averaging): exercise 1, the averaging trap (MSE vs branch average vs MDN).
//! - [`bishop`](mod@bishop): Bishop 1994's two-link set-up, the RMS tip error of our MSE net and
//!   MDN beside the report's.
//! - [`chain`](mod@chain): redundant chains benchmarked as Kruse et al. 2021 do (re-simulation
//!   error, posterior mismatch against an exact sampler, success, limits, time) for MSE, MDN,
//!   DLS, the MDN-seeded hybrid and the exact sampler.
//! - [`degradation`](mod@degradation): the gap to reality: every solver under each perturbation
//!   channel, honest vs silent failures, the exercise protocol beside the closed-loop plant.
//! - [`feedback_chain`](mod@feedback_chain): the feedback head and the calibrating baseline on a
//!   redundant chain (rail3, 3r, the SO-101), in the randomization experiment.
//! - [`per_move`](mod@per_move): two per-move error series judged move by move, with the
//!   crossovers named ("the head is lower on moves 2-3, calibration from move 4").
//! - [`randomization`](mod@randomization): domain randomization trained and tested on plants
//!   inside and outside its ranges.
//! - [`tracking`](mod@tracking): every pipeline tracks a figure eight on the physical plant at set
//!   speeds and latencies, on any arm (the two-link arm's line-up or a chain's); whether latency
//!   costs error in proportion to speed x delay.

pub mod averaging;
pub mod bishop;
pub mod chain;
pub mod degradation;
pub mod feedback;
pub mod feedback_chain;
pub mod per_move;
pub mod plants;
pub mod randomization;
pub mod tracking;

pub use averaging::{AveragingConfig, AveragingReport, GivenNets, averaging, averaging_with};
pub use bishop::{BishopConfig, BishopReport, bishop1994};
pub use chain::{ChainConfig, ChainReport, chain};
pub use degradation::{
    DegradationConfig, DegradationReport, Split, degradation, degradation_with, degradation_with_nets,
    degradation_with_nets_observed,
};
pub use tracking::{TrackingConfig, TrackingReport, tracking};

/// The simulated plant time a run asks for, worked out before any work starts: the one measure
/// of the plant experiments' work limits ([`degradation`](mod@degradation), [`tracking`](mod@tracking),
/// [`randomization`](mod@randomization)). Plant time, not wall time: it does not depend on the
/// machine, and the plant simulates it in sub-steps of [`SUBSTEP`](crate::plant::SUBSTEP)
/// whatever the settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PlantTime {
    /// Seconds of plant time: exact, or an upper bound (`bound`) where each move counts at its
    /// settle timeout ([`SETTLE_TIMEOUT`](crate::plant::SETTLE_TIMEOUT)), the most it can take.
    pub seconds: f64,
    /// Whether `seconds` is an upper bound ("up to") rather than exact.
    pub bound: bool,
    /// What makes it up, in words (`10 pipelines x 37 settings x 480 targets x 1 move of at
    /// most 10 s`).
    pub parts: String,
}

impl PlantTime {
    /// Refuses a run above `limit` seconds of plant time in one sentence: the quantity, its unit,
    /// what makes it up, the limit and `advice` (what to lower).
    pub fn check(&self, limit: f64, advice: &str) -> Result<(), String> {
        if self.seconds <= limit {
            return Ok(());
        }
        let num = crate::stats::fmt_num;
        Err(format!(
            "this run would simulate {}{} s of plant time ({}), above the limit of {} s; {advice}",
            if self.bound { "up to " } else { "" },
            num(self.seconds),
            self.parts,
            num(limit)
        ))
    }
}

/// Why an experiment could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExperimentError {
    /// A setting was out of range.
    #[error("{0}")]
    Invalid(String),
    /// A quantity of the plant (its servo, masses, gap channels or camera) was out of its range.
    #[error(transparent)]
    Plant(#[from] crate::plant::PlantError),
    /// A setting of the chain solvers was out of its range.
    #[error(transparent)]
    Solve(#[from] crate::chain::solve::SettingsError),
    /// A randomization range was out of its channel's limit.
    #[error(transparent)]
    Range(#[from] crate::plant::channel::RangeError),
    /// A degradation configuration was refused before any work started.
    #[error(transparent)]
    Config(#[from] degradation::ConfigError),
    /// The arm or its mismatch was refused.
    #[error(transparent)]
    Arm(#[from] crate::kinematics::ArmError),
    /// A head could not be trained.
    #[error(transparent)]
    Train(#[from] crate::learned::TrainError),
    /// The caller asked the run to stop (Ctrl-C in the command line); nothing was written.
    #[error("interrupted; nothing was written")]
    Cancelled,
    /// A number the run measures left the finite range (the simulated arm's tip, say): the run
    /// stops, names the cell, and reports nothing rather than a NaN.
    #[error("{0}")]
    NonFinite(String),
}

impl ExperimentError {
    /// A training error of a run the caller can stop: the stop it asked for becomes
    /// [`ExperimentError::Cancelled`], anything else stays a training error.
    pub fn of_training(e: crate::learned::TrainError) -> Self {
        match e {
            crate::learned::TrainError::Cancelled { .. } => ExperimentError::Cancelled,
            e => e.into(),
        }
    }
}
