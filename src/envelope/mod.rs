//! The safety envelope: the learned part proposes, the classical part disposes.
//!
//! Every check is analytic and runs on the nominal model; a rejected proposal falls back to the
//! classical solver, and the reason is returned so that every intervention is counted. What is
//! checked depends on what the head proposes ([`Fit`]):
//!
//! - a pose head (MSE, MDN, mode) proposes joint angles: the proposal must be finite, inside the
//!   joint limits (only when the arm has any), move no joint further than the joint-speed limit
//!   allows in one control period ([`EnvelopeConfig::max_joint_step`]), and its forward kinematics
//!   must land within [`EnvelopeConfig::max_fk_miss`] of the target;
//! - the residual hybrid proposes the analytic answer plus a learned correction, which is *meant*
//!   to miss on the nominal model (it corrects for the real arm), so an FK check on the nominal
//!   model would reject every proposal. Instead it gets a trust region: the target must be
//!   reachable and inside the region the correction was trained on, and the correction (the
//!   distance to the nearest analytic branch) at most [`EnvelopeConfig::max_correction`].
//!   Outside the trust region it falls back to the analytic answer.
//!
//! [`Envelope::active_checks`] lists the checks that can fire for an arm and a head, so a panel
//! shows only counters that can move.

mod chain;
mod config;
mod reason;

pub use chain::ChainEnvelope;
pub use config::{EnvelopeConfig, Fallback};
pub use reason::{InterventionLog, Reason};

use crate::analytic::{AnalyticSolver, BranchChoice, solve_branches};
use crate::iterative::DlsSolver;
use crate::kinematics::{Point2, Pose, Region, TwoLinkArm};
use crate::learned::HeadKind;
use crate::solver::{IkSolver, Solution, SolveStatus};
use serde::{Deserialize, Serialize};

/// What a head proposes, which decides what the envelope checks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Fit {
    /// Joint angles meant to reach the target on the nominal model: checked by FK.
    Pose,
    /// The analytic answer plus a learned correction for the real arm: checked by a trust
    /// region (reachable, inside `region`, a bounded correction).
    Correction {
        /// Where the correction was trained (outside it, the correction extrapolates).
        region: Region,
    },
}

impl Fit {
    /// The fit of `head`, trained on `region`.
    pub fn of(head: HeadKind, region: Region) -> Self {
        if head.fits_real_arm() { Fit::Correction { region } } else { Fit::Pose }
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

/// The envelope's checks and fallback for one arm, independent of who proposes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Envelope {
    /// The nominal arm every check runs on.
    pub arm: TwoLinkArm,
    /// Tuning.
    pub config: EnvelopeConfig,
}

impl Envelope {
    /// The checks that can fire for a proposer of `fit` on this arm, in the order they run: the joint-limit
    /// check only when a joint is limited, the joint-step check only when the step is below half
    /// a turn (a wrapped joint distance never exceeds it), the trust region for the residual
    /// hybrid and the FK check for the pose heads.
    pub fn active_checks(&self, fit: Fit) -> Vec<Reason> {
        let limited = self.arm.limits().iter().any(|l| !l.is_full_turn());
        let stepped = self.config.max_joint_step() < std::f64::consts::PI;
        let correction = matches!(fit, Fit::Correction { .. });
        Reason::ALL
            .into_iter()
            .filter(|r| match r {
                Reason::NonFinite => true,
                Reason::JointLimit => limited,
                Reason::JointStep => stepped,
                Reason::TrustRegion => correction,
                Reason::FkMiss => !correction,
            })
            .collect()
    }

    /// The classical answer used when a proposal is rejected.
    pub fn fallback(&self, target: Point2, seed: Pose) -> Solution {
        match self.config.fallback {
            Fallback::Analytic => AnalyticSolver::new(self.arm, BranchChoice::NearestToSeed).solve(target, seed),
            Fallback::Iterative => DlsSolver::new(self.arm).solve(target, seed),
        }
    }

    /// Decides on the pose `proposal` for `target`, the arm being at `seed`
    /// ([`Envelope::review_as`] with [`Fit::Pose`]).
    pub fn review(&self, proposal: Solution, target: Point2, seed: Pose) -> Vetted {
        self.review_as(Fit::Pose, proposal, target, seed)
    }

    /// True when a residual proposal lies inside the trust region: reachable target inside the
    /// trained region, correction at most [`EnvelopeConfig::max_correction`].
    fn in_trust_region(&self, region: Region, pose: Pose, target: Point2) -> bool {
        if !(self.arm.is_reachable(target) && region.contains_bearing(target)) {
            return false;
        }
        let b = solve_branches(&self.arm, target);
        let correction = pose.max_joint_distance(b.up).min(pose.max_joint_distance(b.down));
        b.unreachable.is_none() && correction <= self.config.max_correction
    }

    /// Why the envelope would reject `pose` from a proposer of kind `fit` for `target`, the arm
    /// being at `seed` (`None`: accepted), and the proposal's FK miss on the nominal model. Runs
    /// the checks only, not the fallback.
    pub fn verdict_as(&self, fit: Fit, pose: Pose, target: Point2, seed: Pose) -> (Option<Reason>, f64) {
        let proposal_miss = if pose.is_finite() { self.arm.miss(pose, target) } else { f64::INFINITY };
        let seed = crate::solver::sane_seed(seed);
        let reason = if !pose.is_finite() {
            Some(Reason::NonFinite)
        } else if !self.arm.within_limits(pose) {
            Some(Reason::JointLimit)
        } else if pose.max_joint_distance(seed) > self.config.max_joint_step() {
            Some(Reason::JointStep)
        } else {
            match fit {
                Fit::Correction { region } => {
                    (!self.in_trust_region(region, pose, target)).then_some(Reason::TrustRegion)
                }
                Fit::Pose => {
                    (proposal_miss.is_nan() || proposal_miss > self.config.max_fk_miss).then_some(Reason::FkMiss)
                }
            }
        };
        (reason, proposal_miss)
    }

    /// Decides on `proposal` from a head of kind `fit` for `target`, the arm being at `seed`.
    pub fn review_as(&self, fit: Fit, proposal: Solution, target: Point2, seed: Pose) -> Vetted {
        let (reason, proposal_miss) = self.verdict_as(fit, proposal.pose, target, seed);
        let seed = crate::solver::sane_seed(seed);
        let solution = match (reason, fit) {
            (None, Fit::Pose) => Solution { status: SolveStatus::Converged, residual: Some(proposal_miss), ..proposal },
            // A correction is checked, not verified on the nominal model: it stays as it is.
            (None, Fit::Correction { .. }) => proposal,
            (Some(_), _) => self.fallback(target, seed),
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

impl<S: IkSolver<Joints = Pose>> SafetyEnvelope<S> {
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

impl<S: IkSolver<Joints = Pose>> IkSolver for SafetyEnvelope<S> {
    type Joints = Pose;

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
        type Joints = Pose;

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
        let cfg = EnvelopeConfig { control_period: 0.4, ..EnvelopeConfig::for_arm(&arm) };
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

    #[test]
    fn default_checks_can_fire_and_the_joint_step_check_does() {
        let arm = TwoLinkArm::default();
        let env = Envelope { arm, config: EnvelopeConfig::for_arm(&arm) };
        assert!(env.config.max_joint_step() < std::f64::consts::PI, "a wrapped distance can exceed the step");
        assert_eq!(env.active_checks(Fit::Pose), [Reason::NonFinite, Reason::JointStep, Reason::FkMiss]);
        assert_eq!(
            env.active_checks(Fit::of(HeadKind::Residual, Region::Annulus)),
            [Reason::NonFinite, Reason::JointStep, Reason::TrustRegion]
        );
        let limited = arm.with_limits(JointLimits::FULL, JointLimits::new(0.0, 3.0, "elbow").unwrap()).unwrap();
        let off = EnvelopeConfig { max_joint_speed: f64::INFINITY, ..EnvelopeConfig::for_arm(&arm) };
        let env2 = Envelope { arm: limited, config: off };
        assert_eq!(env2.active_checks(Fit::Pose), [Reason::NonFinite, Reason::JointLimit, Reason::FkMiss]);
        // Built to trigger: the arm is at one branch, the proposal is the other, half a turn away.
        let target = Point2::new(0.3, 0.2);
        let b = crate::solve_branches(&arm, target);
        let other = Solution { pose: b.up, status: SolveStatus::Unverified, residual: None, iterations: 0 };
        let v = env.review(other, target, b.down);
        assert!(b.up.max_joint_distance(b.down) > env.config.max_joint_step());
        assert_eq!(v.intervention, Some(Reason::JointStep));
        assert!(v.solution.pose.max_joint_distance(b.down) < 1e-9, "falls back to the nearest branch");
    }

    #[test]
    fn the_trust_region_accepts_small_corrections_and_falls_back_outside() {
        let arm = TwoLinkArm::default();
        let env = Envelope { arm, config: EnvelopeConfig::for_arm(&arm) };
        let fit = Fit::of(HeadKind::Residual, Region::Sector { from: -1.0, to: 1.0 });
        let target = Point2::new(1.2, 0.3);
        let b = crate::solve_branches(&arm, target);
        let with = |d: f64| Solution {
            pose: b.down + Pose::new(d, -d),
            status: SolveStatus::Unverified,
            residual: None,
            iterations: 0,
        };
        let small = env.review_as(fit, with(0.05), target, b.down);
        assert_eq!(small.intervention, None);
        assert_eq!(small.solution.pose, with(0.05).pose, "the correction goes through");
        assert!(env.review(with(0.05), target, b.down).intervention == Some(Reason::FkMiss), "FK would reject it");
        assert_eq!(env.review_as(fit, with(0.3), target, b.down).intervention, Some(Reason::TrustRegion));
        let behind = Point2::new(-1.2, 0.3);
        let bb = crate::solve_branches(&arm, behind);
        let p = Solution { pose: bb.down, status: SolveStatus::Unverified, residual: None, iterations: 0 };
        assert_eq!(
            env.review_as(fit, p, behind, bb.down).intervention,
            Some(Reason::TrustRegion),
            "outside the sector"
        );
        let far = env.review_as(fit, with(0.0), Point2::new(3.0, 0.0), b.down);
        assert_eq!(far.intervention, Some(Reason::TrustRegion));
        assert!(far.solution.status.is_reported_failure(), "the fallback reports the unreachable target");
    }
}
