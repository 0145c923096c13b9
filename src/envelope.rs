//! The safety envelope: the learned part proposes, the classical part disposes.
//!
//! A proposal is accepted only if it is finite, inside the joint limits, moves no joint more than
//! [`EnvelopeConfig::max_joint_step`] from the current pose, and its forward kinematics on the
//! nominal model lands within [`EnvelopeConfig::max_fk_miss`] of the target. Anything else falls
//! back to the classical solver, and the reason is returned so that every intervention is counted.

use crate::analytic::{AnalyticSolver, BranchChoice};
use crate::iterative::DlsSolver;
use crate::kinematics::{Point2, Pose, TwoLinkArm};
use crate::solver::{IkSolver, Solution, SolveStatus};
use serde::{Deserialize, Serialize};

/// Which classical solver takes over from a rejected proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fallback {
    /// Closed form, the branch nearest the current pose.
    Analytic,
    /// Damped least squares, warm-started from the current pose.
    Iterative,
}

/// Tuning of the envelope.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EnvelopeConfig {
    /// Largest accepted FK miss on the nominal model, metres.
    pub max_fk_miss: f64,
    /// Largest accepted change of any joint from the current pose, radians.
    pub max_joint_step: f64,
    /// Who answers instead of a rejected proposal.
    pub fallback: Fallback,
}

impl EnvelopeConfig {
    /// Defaults for `arm`: 1% of the reach, half a turn per step, analytic fallback.
    pub fn for_arm(arm: &TwoLinkArm) -> Self {
        Self { max_fk_miss: 0.01 * arm.reach(), max_joint_step: std::f64::consts::PI, fallback: Fallback::Analytic }
    }
}

/// Why a proposal was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Reason {
    /// A NaN or infinite angle.
    NonFinite,
    /// Outside the joint limits.
    JointLimit,
    /// Moves a joint further than the per-step limit.
    JointStep,
    /// Its tip misses the target by more than the tolerance.
    FkMiss,
}

impl Reason {
    /// Every reason, in the order checks run.
    pub const ALL: [Reason; 4] = [Reason::NonFinite, Reason::JointLimit, Reason::JointStep, Reason::FkMiss];

    /// A short label.
    pub fn label(self) -> &'static str {
        match self {
            Reason::NonFinite => "non-finite",
            Reason::JointLimit => "joint limit",
            Reason::JointStep => "joint step",
            Reason::FkMiss => "FK miss",
        }
    }
}

/// The envelope's decision on one proposal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vetted {
    /// What goes to the arm: the proposal, or the fallback's answer.
    pub solution: Solution,
    /// `None` when accepted; else why the fallback took over.
    pub intervention: Option<Reason>,
    /// FK miss of the proposal on the nominal model (infinite when non-finite).
    pub proposal_miss: f64,
}

/// Counts of decisions, by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct InterventionLog {
    /// Proposals accepted.
    pub accepted: u64,
    /// Rejections per [`Reason`], in [`Reason::ALL`] order.
    pub rejected: [u64; 4],
}

impl InterventionLog {
    /// Records one decision.
    pub fn record(&mut self, intervention: Option<Reason>) {
        match intervention {
            None => self.accepted += 1,
            Some(r) => self.rejected[Reason::ALL.iter().position(|&x| x == r).unwrap_or(0)] += 1,
        }
    }

    /// Total rejections.
    pub fn interventions(&self) -> u64 {
        self.rejected.iter().sum()
    }

    /// Rejections for one reason.
    pub fn count(&self, reason: Reason) -> u64 {
        self.rejected[Reason::ALL.iter().position(|&x| x == reason).unwrap_or(0)]
    }

    /// Adds another log's counts to this one.
    pub fn merge(&mut self, other: &InterventionLog) {
        self.accepted += other.accepted;
        for (a, b) in self.rejected.iter_mut().zip(other.rejected) {
            *a += b;
        }
    }
}

/// The envelope's checks and fallback for one arm, independent of who proposes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Envelope {
    /// The nominal arm every check runs on.
    pub arm: TwoLinkArm,
    /// Tuning.
    pub config: EnvelopeConfig,
}

impl Envelope {
    /// The classical answer used when a proposal is rejected.
    pub fn fallback(&self, target: Point2, seed: Pose) -> Solution {
        match self.config.fallback {
            Fallback::Analytic => AnalyticSolver::new(self.arm, BranchChoice::NearestToSeed).solve(target, seed),
            Fallback::Iterative => DlsSolver::new(self.arm).solve(target, seed),
        }
    }

    /// Decides on `proposal` for `target`, the arm being at `seed`.
    pub fn review(&self, proposal: Solution, target: Point2, seed: Pose) -> Vetted {
        let pose = proposal.pose;
        let proposal_miss = if pose.is_finite() { self.arm.miss(pose, target) } else { f64::INFINITY };
        let seed = crate::solver::sane_seed(seed);
        let reason = if !pose.is_finite() {
            Some(Reason::NonFinite)
        } else if !self.arm.within_limits(pose) {
            Some(Reason::JointLimit)
        } else if pose.max_joint_distance(seed) > self.config.max_joint_step {
            Some(Reason::JointStep)
        } else if proposal_miss.is_nan() || proposal_miss > self.config.max_fk_miss {
            Some(Reason::FkMiss)
        } else {
            None
        };
        let solution = match reason {
            None => Solution { status: SolveStatus::Converged, residual: Some(proposal_miss), ..proposal },
            Some(_) => self.fallback(target, seed),
        };
        Vetted { solution, intervention: reason, proposal_miss }
    }
}

/// A learned (or any) solver wrapped in the envelope.
#[derive(Debug, Clone)]
pub struct SafetyEnvelope<S> {
    /// The proposer.
    pub inner: S,
    /// The nominal arm every check runs on.
    pub arm: TwoLinkArm,
    /// Tuning.
    pub config: EnvelopeConfig,
    name: String,
}

impl<S: IkSolver> SafetyEnvelope<S> {
    /// Wraps `inner` for `arm` with `config`.
    pub fn new(inner: S, arm: TwoLinkArm, config: EnvelopeConfig) -> Self {
        let name = format!("envelope({})", inner.name());
        Self { inner, arm, config, name }
    }

    fn checks(&self) -> Envelope {
        Envelope { arm: self.arm, config: self.config }
    }

    /// The classical answer used when a proposal is rejected.
    pub fn fallback(&self, target: Point2, seed: Pose) -> Solution {
        self.checks().fallback(target, seed)
    }

    /// Runs the proposer and decides.
    pub fn vet(&self, target: Point2, seed: Pose) -> Vetted {
        self.checks().review(self.inner.solve(target, seed), target, seed)
    }
}

impl<S: IkSolver> IkSolver for SafetyEnvelope<S> {
    fn name(&self) -> &str {
        &self.name
    }

    fn solve(&self, target: Point2, seed: Pose) -> Solution {
        self.vet(target, seed).solution
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinematics::JointLimits;

    /// A proposer that always answers the same pose.
    struct Fixed(Pose);

    impl IkSolver for Fixed {
        fn name(&self) -> &str {
            "fixed"
        }

        fn solve(&self, _: Point2, _: Pose) -> Solution {
            Solution { pose: self.0, status: SolveStatus::Unverified, residual: None, iterations: 0 }
        }
    }

    #[test]
    fn each_check_rejects_and_falls_back() {
        let arm = TwoLinkArm::default()
            .with_limits(JointLimits::FULL, JointLimits::new(-3.0, 3.0, "elbow").unwrap())
            .unwrap();
        let cfg = EnvelopeConfig { max_joint_step: 1.0, ..EnvelopeConfig::for_arm(&arm) };
        let target = Point2::new(1.0, 0.8);
        let seed = crate::solve_branches(&arm, target).down;
        let cases = [
            (Pose::new(f64::NAN, 0.0), Some(Reason::NonFinite)),
            (Pose::new(0.0, 3.1), Some(Reason::JointLimit)),
            (Pose::new(seed.shoulder + 1.5, seed.elbow), Some(Reason::JointStep)),
            (Pose::new(seed.shoulder + 0.2, seed.elbow), Some(Reason::FkMiss)),
            (seed, None),
        ];
        let mut log = InterventionLog::default();
        for (pose, want) in cases {
            let v = SafetyEnvelope::new(Fixed(pose), arm, cfg).vet(target, seed);
            assert_eq!(v.intervention, want, "{pose:?}");
            assert!(v.solution.pose.is_finite());
            assert!(arm.miss(v.solution.pose, target) < 1e-9);
            log.record(v.intervention);
        }
        assert_eq!(log.interventions(), 4);
        assert_eq!(log.accepted, 1);
        assert_eq!(log.count(Reason::FkMiss), 1);
    }

    #[test]
    fn unreachable_fallback_reports_failure() {
        let arm = TwoLinkArm::default();
        let env = SafetyEnvelope::new(Fixed(Pose::new(0.0, 0.0)), arm, EnvelopeConfig::for_arm(&arm));
        let v = env.vet(Point2::new(3.0, 0.0), Pose::default());
        assert_eq!(v.intervention, Some(Reason::FkMiss));
        assert!(v.solution.status.is_reported_failure());
        let dls = SafetyEnvelope::new(
            Fixed(Pose::new(0.0, 0.0)),
            arm,
            EnvelopeConfig { fallback: Fallback::Iterative, ..EnvelopeConfig::for_arm(&arm) },
        );
        assert!(dls.solve(Point2::new(0.0, -3.0), Pose::default()).status.is_reported_failure());
    }
}
