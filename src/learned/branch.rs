//! Branch continuity: how a learned head that offers several answers (the MDN, one per elbow
//! branch) drives an arm that is already somewhere.
//!
//! Taking the heavier component, as an offline evaluation may, is wrong for a driver: the MDN's
//! two weights sit near one half almost everywhere, so the heavier one changes with millimetres
//! of target motion and the arm would swing to the other elbow and back. [`keep_branch`] answers
//! with the candidate on the current branch nearest the current pose, and changes branch only
//! when it must (the current branch leaves the joint limits, or the model no longer offers an
//! answer on it inside them) or when the weights cross by more than a hysteresis. Such a change
//! is reported as a [`BranchChange`], so a user sees it happen and why.

use crate::analytic::solve_branches;
use crate::kinematics::{ElbowMode, Point2, Pose, TwoLinkArm};
use serde::{Deserialize, Serialize};

/// One weighted candidate pose a head offers (an MDN component, or the single answer of other
/// heads).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Mixture weight in `[0, 1]`.
    pub weight: f32,
    /// The decoded pose.
    pub pose: Pose,
}

/// How far the other branch's weight must exceed the current one's before the driver changes
/// branch for the weights alone.
pub const HYSTERESIS: f32 = 0.25;

/// A change of elbow mode that moves some joint further than this, radians, is a branch
/// change; a smaller one is the arm passing through the straight elbow, where the branches meet.
pub const SWING: f64 = 0.5;

/// Why the driver changed elbow branch (the first that applies, in this order).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BranchChange {
    /// The current branch's answer for this target is outside the joint limits (or the target
    /// has none on this branch).
    JointLimit,
    /// The other branch's weight exceeds the current one's by more than [`HYSTERESIS`].
    WeightsCrossed {
        /// The weight of the nearest candidate, on the current branch.
        kept: f32,
        /// The weight of the candidate taken.
        taken: f32,
    },
    /// The current branch is admissible, but the model offers no answer on it here.
    NoCandidate,
    /// The current branch is admissible, but the model's answers on it are outside the joint
    /// limits (and another answer is inside).
    CandidateOutsideLimits,
}

impl BranchChange {
    /// One sentence for the panel.
    pub fn describe(&self) -> String {
        match *self {
            BranchChange::JointLimit => "the current elbow branch leaves the joint limits here".into(),
            BranchChange::WeightsCrossed { kept, taken } => format!(
                "the other branch's weight ({taken:.2}) passed the current one's ({kept:.2}) by more than {HYSTERESIS}"
            ),
            BranchChange::NoCandidate => "the model offers no answer on the current branch here".into(),
            BranchChange::CandidateOutsideLimits => {
                "the model's answer on the current branch is outside the joint limits here".into()
            }
        }
    }
}

/// The candidate a driver takes, and the branch change it makes, if any.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pick {
    /// The candidate taken.
    pub candidate: Candidate,
    /// Set when taking it changes the elbow branch.
    pub change: Option<BranchChange>,
}

/// Whether going from `from` to `to` changes elbow branch: the elbow mode differs and some joint
/// swings further than [`SWING`].
pub fn is_branch_change(from: Pose, to: Pose) -> bool {
    ElbowMode::of(from) != ElbowMode::of(to) && from.max_joint_distance(to) > SWING
}

/// The candidate for `target` a driver at `current` takes on `arm`: the nearest `current`
/// (least joint motion) of those on the current branch (no branch change from `current`, see
/// [`is_branch_change`]), unless another's weight exceeds it by more than `hysteresis`.
/// Candidates outside the joint limits are taken only when none is inside; non-finite ones
/// never. Only when no candidate is on the current branch is the nearest of all taken. `None`
/// when no candidate is finite.
///
/// Nearness alone is not the branch: after a far jump of the target, the other branch's answer
/// can be nearer the arm's pose than its own branch's, and taking it would change branch while
/// the model offers the current one.
pub fn keep_branch(
    arm: &TwoLinkArm,
    target: Point2,
    candidates: &[Candidate],
    current: Pose,
    hysteresis: f32,
) -> Option<Pick> {
    let finite = || candidates.iter().filter(|c| c.pose.is_finite() && c.weight.is_finite());
    let pool: Vec<Candidate> = if finite().any(|c| arm.within_limits(c.pose)) {
        finite().filter(|c| arm.within_limits(c.pose)).copied().collect()
    } else {
        finite().copied().collect()
    };
    let on_branch = |c: &&Candidate| !is_branch_change(current, c.pose);
    let distance = |a: &&Candidate, b: &&Candidate| {
        current.max_joint_distance(a.pose).total_cmp(&current.max_joint_distance(b.pose))
    };
    let nearest = *pool.iter().filter(on_branch).min_by(distance).or_else(|| pool.iter().min_by(distance))?;
    let heaviest = *pool.iter().max_by(|a, b| a.weight.total_cmp(&b.weight))?;
    let crossed = heaviest.weight > nearest.weight + hysteresis.max(0.0);
    let candidate = if crossed { heaviest } else { nearest };
    let change = is_branch_change(current, candidate.pose).then(|| {
        if !solve_branches(arm, target).is_admissible(ElbowMode::of(current)) {
            BranchChange::JointLimit
        } else if crossed {
            BranchChange::WeightsCrossed { kept: nearest.weight, taken: heaviest.weight }
        } else if finite().any(|c| !is_branch_change(current, c.pose)) {
            BranchChange::CandidateOutsideLimits
        } else {
            BranchChange::NoCandidate
        }
    });
    Some(Pick { candidate, change })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinematics::JointLimits;
    use std::f64::consts::PI;

    fn both(arm: &TwoLinkArm, t: Point2, w_up: f32) -> Vec<Candidate> {
        let b = solve_branches(arm, t);
        vec![Candidate { weight: w_up, pose: b.up }, Candidate { weight: 1.0 - w_up, pose: b.down }]
    }

    #[test]
    fn near_equal_weights_never_swing_the_arm_round_a_circle() {
        let arm = TwoLinkArm::default();
        let mut current = solve_branches(&arm, Point2::new(1.2, 0.0)).down;
        let (mut flips, mut heavier_flips) = (0, 0);
        let mut heavier = current;
        for k in 0..=720 {
            let a = k as f64 * PI / 360.0;
            let t = Point2::new(1.2 * a.cos(), 1.2 * a.sin());
            // Weights wobbling about one half, as a trained MDN's do.
            let w = 0.5 + 0.02 * ((k * 7919) % 13) as f32 / 13.0 - 0.01;
            let c = both(&arm, t, w);
            let pick = keep_branch(&arm, t, &c, current, HYSTERESIS).unwrap();
            flips += usize::from(pick.change.is_some() || is_branch_change(current, pick.candidate.pose));
            current = pick.candidate.pose;
            let h = if c[0].weight >= c[1].weight { c[0].pose } else { c[1].pose };
            heavier_flips += usize::from(is_branch_change(heavier, h));
            heavier = h;
        }
        assert_eq!(flips, 0, "the branch is kept all the way round");
        assert!(heavier_flips > 50, "the heavier component flips: {heavier_flips}");
    }

    #[test]
    fn a_branch_leaving_the_limits_forces_a_reported_change() {
        // The elbow may bend only one way beyond 0.5 rad the other.
        let arm =
            TwoLinkArm::default().with_limits(JointLimits::FULL, JointLimits::new(-0.5, PI, "elbow").unwrap()).unwrap();
        let far = Point2::new(1.97, 0.0);
        let near = Point2::new(0.6, 0.0);
        let b = solve_branches(&arm, far);
        let current = if b.up.elbow < 0.0 { b.up } else { b.down };
        assert!(arm.within_limits(current));
        let pick = keep_branch(&arm, near, &both(&arm, near, 0.5), current, HYSTERESIS).unwrap();
        assert_eq!(pick.change, Some(BranchChange::JointLimit));
        assert!(arm.within_limits(pick.candidate.pose));
    }

    #[test]
    fn a_far_jump_keeps_the_branch_when_the_model_offers_it() {
        // From elbow-down at (1.2, 0) to (-1.2, 0): the elbow-up answer there is nearer in joint
        // distance (2.6 rad against pi), but the model offers elbow-down too, at half the weight.
        let arm = TwoLinkArm::default();
        let (from, to) = (Point2::new(1.2, 0.0), Point2::new(-1.2, 0.0));
        let current = solve_branches(&arm, from).down;
        let b = solve_branches(&arm, to);
        assert!(current.max_joint_distance(b.up) < current.max_joint_distance(b.down), "the trap is set");
        for w_up in [0.5, 0.4, 0.6] {
            let pick = keep_branch(&arm, to, &both(&arm, to, w_up), current, HYSTERESIS).unwrap();
            assert_eq!(pick.candidate.pose, b.down, "weight {w_up} for elbow-up: the branch is kept");
            assert_eq!(pick.change, None);
        }
        // And back, from elbow-up.
        let pick = keep_branch(&arm, from, &both(&arm, from, 0.5), b.up, HYSTERESIS).unwrap();
        assert_eq!(pick.candidate.pose, solve_branches(&arm, from).up);
        assert_eq!(pick.change, None);
    }

    #[test]
    fn a_change_states_the_reason_that_applied() {
        let arm = TwoLinkArm::default();
        let (from, to) = (Point2::new(1.2, 0.0), Point2::new(-1.2, 0.0));
        let current = solve_branches(&arm, from).down;
        let b = solve_branches(&arm, to);
        // Only the other branch offered: no answer on the current one.
        let only_up = [Candidate { weight: 1.0, pose: b.up }];
        let pick = keep_branch(&arm, to, &only_up, current, HYSTERESIS).unwrap();
        assert_eq!(pick.change, Some(BranchChange::NoCandidate));
        // Both offered, the other far heavier: the weights, with the kept branch's own weight.
        let pick = keep_branch(&arm, to, &both(&arm, to, 0.9), current, HYSTERESIS).unwrap();
        match pick.change {
            Some(BranchChange::WeightsCrossed { kept, taken }) => {
                assert!((kept - 0.1).abs() < 1e-6 && (taken - 0.9).abs() < 1e-6, "{kept} {taken}");
            }
            other => panic!("{other:?}"),
        }
        // The current branch's answer outside the limits while the branch itself is admissible.
        let limited =
            TwoLinkArm::default().with_limits(JointLimits::FULL, JointLimits::new(-PI, 2.5, "elbow").unwrap()).unwrap();
        let off = Candidate { weight: 0.5, pose: Pose::new(b.down.shoulder, 2.9) };
        let c = [off, Candidate { weight: 0.5, pose: b.up }];
        assert!(solve_branches(&limited, to).is_admissible(ElbowMode::Down));
        let pick = keep_branch(&limited, to, &c, current, HYSTERESIS).unwrap();
        assert_eq!(pick.change, Some(BranchChange::CandidateOutsideLimits));
        assert!(pick.change.unwrap().describe().contains("outside the joint limits"));
    }

    #[test]
    fn weights_that_cross_by_more_than_the_hysteresis_change_branch() {
        let arm = TwoLinkArm::default();
        let t = Point2::new(0.8, 0.5);
        let b = solve_branches(&arm, t);
        let small = keep_branch(&arm, t, &both(&arm, t, 0.6), b.down, HYSTERESIS).unwrap();
        assert_eq!(small.candidate.pose, b.down, "0.6 against 0.4 is within the hysteresis");
        let big = keep_branch(&arm, t, &both(&arm, t, 0.9), b.down, HYSTERESIS).unwrap();
        assert_eq!(big.candidate.pose, b.up);
        assert!(matches!(big.change, Some(BranchChange::WeightsCrossed { .. })));
        assert!(big.change.unwrap().describe().contains("0.90"));
        // No finite candidate: nothing to take.
        let bad = [Candidate { weight: 1.0, pose: Pose::new(f64::NAN, 0.0) }];
        assert_eq!(keep_branch(&arm, t, &bad, b.down, HYSTERESIS), None);
    }
}
