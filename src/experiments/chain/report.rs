//! What a chain run returns: one row per method, each figure summarised over the targets.

use crate::chain::nets::NetConfig;
use crate::chain::{Kernel, Seeds};
use crate::learned::train::Rollback;
use crate::lineup::SolverId;
use crate::stats::{Summary, json_f64, json_numbers};
use serde::{Deserialize, Serialize};

/// One method's figures over the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodRow {
    /// The method.
    pub method: SolverId,
    /// Re-simulation error (mean squared tip distance to `y*`, m²), mean over targets.
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub resim_error: f64,
    /// Re-simulation error per target: mean, median and quartiles.
    pub resim: Summary,
    /// Posterior mismatch (unbiased MMD² against the exact posterior), mean over targets.
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub posterior_mmd: f64,
    /// Posterior mismatch per target: mean, median and quartiles.
    pub mmd: Summary,
    /// Share of samples within the tolerance of the target.
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub success_rate: f64,
    /// Share of samples outside the joint limits.
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub outside_limits: f64,
    /// Seconds per solution over the whole run (one core per target).
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub seconds_per_solution: f64,
    /// Seconds for 2,000 solutions of the demo target on one core (best of three).
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub seconds_per_2000: f64,
    /// DLS iterations per solution (DLS and hybrid).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "json_numbers", default)]
    pub iterations_per_solution: Option<f64>,
    /// Starts (seeds or prior draws) per solution (DLS and hybrid).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "json_numbers", default)]
    pub starts_per_solution: Option<f64>,
    /// Smallest effective sample size of the sampler's pools over the targets (exact only).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "json_numbers", default)]
    pub ess_min: Option<f64>,
    /// The exact-vs-exact posterior mismatch, mean over targets (exact only).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "json_numbers", default)]
    pub mmd_floor: Option<f64>,
}

/// What training one net of the run cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetBudget {
    /// The net's key (`mse`, `mdn`, `flow`).
    pub net: String,
    /// Its weights and biases.
    pub parameters: usize,
    /// Minibatch updates.
    pub steps: usize,
    /// Prior pairs per minibatch.
    pub batch: usize,
    /// Wall seconds of its training (the nets train side by side, a thread each); absent for
    /// nets loaded from a file.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "json_numbers", default)]
    pub seconds: Option<f64>,
    /// The divergence guard's roll-backs in its training (an empty list: none); absent for nets
    /// loaded from a file.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rollbacks: Option<Vec<Rollback>>,
}

/// The samples of each method at the demo target, for the figure.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Demo {
    /// The target.
    pub target: [f64; 2],
    /// Per method (and the exact reference under the key `exact`): samples, `coords` values each.
    pub samples: Vec<(SolverId, Vec<f64>)>,
}

/// What a chain run returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainReport {
    /// The arm's name.
    pub arm: String,
    /// Test targets.
    pub targets: usize,
    /// Samples per target and method.
    pub samples: usize,
    /// Success radius, metres.
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub tolerance: f64,
    /// The posterior-mismatch kernel.
    pub kernel: Kernel,
    /// The network settings.
    pub net: NetConfig,
    /// Where the hybrid's seeds came from.
    #[serde(default)]
    pub seeds: Seeds,
    /// What each net's training cost.
    pub budget: Vec<NetBudget>,
    /// One row per method.
    pub rows: Vec<MethodRow>,
    /// The exact-vs-exact posterior mismatch per target (the floor under every mismatch).
    pub mmd_floor: Summary,
    /// Effective sample size of the reference pools: smallest over targets and median.
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub ess_min: f64,
    /// Root of the trace of the exact posterior's covariance per target (how far the solution
    /// manifold spreads, in coordinate units).
    pub posterior_spread: Summary,
    /// Share of targets whose exact posterior spreads over more than 0.1 (a genuine manifold).
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub spread_over_tenth: f64,
    /// Training seconds (the nets train side by side).
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub train_seconds: f64,
    /// Evaluation seconds.
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub eval_seconds: f64,
    /// Samples at the demo target, for the figure (not in JSON).
    #[serde(skip)]
    pub demo: Demo,
}

impl ChainReport {
    /// The row of `method`, if it ran.
    pub fn row(&self, method: SolverId) -> Option<&MethodRow> {
        self.rows.iter().find(|r| r.method == method)
    }
}
