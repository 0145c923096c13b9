//! Why the envelope rejects a proposal ([`Reason`]), and the running count of its decisions
//! ([`InterventionLog`]).

use serde::{Deserialize, Serialize};

/// Why a proposal was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Reason {
    /// A NaN or infinite angle.
    NonFinite,
    /// Outside the joint limits.
    JointLimit,
    /// Moves a joint further than the joint-speed limit allows in one control period.
    JointStep,
    /// Residual hybrid: the target is unreachable or outside the region the correction was
    /// trained on, or the correction is larger than the trust region allows.
    TrustRegion,
    /// Its tip misses the target by more than the tolerance.
    FkMiss,
}

impl Reason {
    /// The number of reasons.
    pub const COUNT: usize = 5;

    /// Every reason, in the order checks run.
    pub const ALL: [Reason; Self::COUNT] =
        [Reason::NonFinite, Reason::JointLimit, Reason::JointStep, Reason::TrustRegion, Reason::FkMiss];

    /// Position in [`Reason::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// A short label.
    pub fn label(self) -> &'static str {
        match self {
            Reason::NonFinite => "non-finite",
            Reason::JointLimit => "joint limit",
            Reason::JointStep => "joint step",
            Reason::TrustRegion => "trust region",
            Reason::FkMiss => "FK miss",
        }
    }

    /// A key for CSV columns and JSON (`joint-step`).
    pub fn key(self) -> &'static str {
        match self {
            Reason::NonFinite => "non-finite",
            Reason::JointLimit => "joint-limit",
            Reason::JointStep => "joint-step",
            Reason::TrustRegion => "trust-region",
            Reason::FkMiss => "fk-miss",
        }
    }
}

/// Counts of decisions, by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct InterventionLog {
    /// Proposals accepted.
    pub accepted: u64,
    /// Rejections per [`Reason`], in [`Reason::ALL`] order.
    pub rejected: [u64; Reason::COUNT],
}

impl InterventionLog {
    /// Records one decision.
    pub fn record(&mut self, intervention: Option<Reason>) {
        match intervention {
            None => self.accepted += 1,
            Some(r) => self.rejected[r.index()] += 1,
        }
    }

    /// Total rejections.
    pub fn interventions(&self) -> u64 {
        self.rejected.iter().sum()
    }

    /// Rejections for one reason.
    pub fn count(&self, reason: Reason) -> u64 {
        self.rejected[reason.index()]
    }

    /// Fraction of decisions that accepted the proposal (0 when there were none).
    pub fn acceptance(&self) -> f64 {
        let n = self.accepted + self.interventions();
        if n == 0 { 0.0 } else { self.accepted as f64 / n as f64 }
    }

    /// Adds another log's counts to this one.
    pub fn merge(&mut self, other: &InterventionLog) {
        self.accepted += other.accepted;
        for (a, b) in self.rejected.iter_mut().zip(other.rejected) {
            *a += b;
        }
    }
}
