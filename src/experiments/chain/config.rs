//! What defines a chain run ([`ChainConfig`]) and the bounds a configuration must respect
//! before any work starts.

use crate::arm::Arm;
use crate::chain::nets::{NetConfig, NetKind};
use crate::chain::{Kernel, SolveSettings};
use crate::experiments::ExperimentError;
use crate::lineup::SolverId;
use serde::{Deserialize, Serialize};

/// The most test targets one run may take.
pub const MAX_TARGETS: usize = 100_000;
/// The most samples per target.
pub const MAX_SAMPLES: usize = 20_000;
/// The widest success radius accepted, metres.
pub const MAX_TOLERANCE: f64 = 1.0;
/// The most kernel evaluations the posterior-mismatch sums of one run may need (about a
/// minute on one core).
pub const MAX_KERNEL_PAIRS: f64 = 3e10;

/// Everything that defines a chain run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainConfig {
    /// The arm (a named chain or one from lengths).
    pub arm: Arm,
    /// The methods to run, in table order.
    pub methods: Vec<SolverId>,
    /// Test targets, each `f(x)` of a prior draw.
    pub targets: usize,
    /// Samples per target and method.
    pub samples: usize,
    /// Network settings of the squared-error and mixture nets.
    pub net: NetConfig,
    /// Success radius, metres.
    pub tolerance: f64,
    /// How DLS, the hybrid and the exact sampler run (flattened: the JSON keeps its keys).
    #[serde(flatten)]
    pub solve: SolveSettings,
    /// The posterior-mismatch kernel.
    pub kernel: Kernel,
    /// Seed of targets, training and sampling.
    pub seed: u64,
}

impl ChainConfig {
    /// The default run on `arm`.
    pub fn new(arm: Arm) -> Self {
        Self {
            methods: arm.methods().to_vec(),
            arm,
            targets: 1000,
            samples: 500,
            net: NetConfig::default(),
            tolerance: 1e-3,
            solve: SolveSettings::default(),
            kernel: Kernel::default(),
            seed: 0,
        }
    }

    /// Checks every setting before any work.
    pub fn validate(&self) -> Result<(), ExperimentError> {
        let bad = |s: String| Err(ExperimentError::Invalid(s));
        let allowed = self.arm.methods();
        if allowed.is_empty() {
            return bad(format!(
                "the chain experiment needs a redundant chain; arm {} has isolated answers (use {} or --lengths with three or more values)",
                self.arm.name,
                Arm::experiment_arms()
            ));
        }
        if let Some(m) = self.methods.iter().find(|m| !allowed.contains(m)) {
            return bad(format!("method {m} does not apply to arm {}", self.arm.name));
        }
        if self.methods.is_empty() {
            return bad("give at least one method".into());
        }
        self.arm.chain.validate().map_err(|e| ExperimentError::Invalid(e.to_string()))?;
        if !(1..=MAX_TARGETS).contains(&self.targets) {
            return bad(format!("targets must be a whole number from 1 to {MAX_TARGETS}, got {}", self.targets));
        }
        if !(2..=MAX_SAMPLES).contains(&self.samples) {
            return bad(format!("samples must be a whole number from 2 to {MAX_SAMPLES}, got {}", self.samples));
        }
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !(positive(self.tolerance) && self.tolerance <= MAX_TOLERANCE) {
            let got = crate::stats::fmt_num(self.tolerance);
            return bad(format!("tolerance must be a number in (0, {MAX_TOLERANCE}] metres, got {got}"));
        }
        self.solve.validate(self.tolerance)?;
        let k = &self.kernel.widths;
        if k.is_empty() || k.len() > 8 || !k.iter().all(|&h| positive(h) && h <= 1e3) {
            return bad("the kernel needs 1 to 8 widths, each a number in (0, 1000]".into());
        }
        let pairs = self.kernel_pairs();
        if pairs > MAX_KERNEL_PAIRS {
            return bad(format!(
                "this run would need about {pairs:.1e} kernel evaluations (the limit is {MAX_KERNEL_PAIRS:.0e}); use fewer targets or samples"
            ));
        }
        for kind in self.nets() {
            self.net.validate(kind, self.arm.coords())?;
        }
        Ok(())
    }

    /// The nets the run's methods need (the hybrid's by its seed source), in [`NetKind::ALL`]
    /// order.
    pub fn nets(&self) -> Vec<NetKind> {
        NetKind::ALL.into_iter().filter(|&k| self.methods.iter().any(|&m| net_of(self, m) == Some(k))).collect()
    }

    /// The settings of the iterative methods and the exact sampler.
    pub fn solve_settings(&self) -> SolveSettings {
        self.solve
    }

    /// Kernel evaluations of the posterior-mismatch sums: per target, the reference set against
    /// itself and every method against itself and the reference.
    pub fn kernel_pairs(&self) -> f64 {
        let n = self.samples as f64;
        self.targets as f64 * (0.5 * n * n + self.methods.len() as f64 * 1.5 * n * n)
    }
}

/// Which net a method of the run needs ([`crate::chain::solve::net_needed`], with the run's
/// seed source).
pub(super) fn net_of(cfg: &ChainConfig, m: SolverId) -> Option<NetKind> {
    crate::chain::solve::net_needed(m, cfg.solve.seeds)
}
