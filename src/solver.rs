//! The one interface every IK solver implements, on every arm, and the result it returns.
//!
//! Analytic, iterative, learned and enveloped solvers all answer [`IkSolver::solve`] with a
//! [`Solution`], so the app and the experiments can treat them alike. A solver works in its arm's
//! joint vector ([`IkSolver::Joints`]): a [`Pose`] on the two-link arm, the padded coordinates
//! [`Coords`](crate::kinematics::serial::Coords) of a chain (base first; the arm says how many
//! count), so one trait serves every arm and the type keeps a chain's answer out of a two-link
//! pipeline.

pub use crate::kinematics::UnreachableReason;
use crate::kinematics::{Point2, Pose};
use serde::{Deserialize, Serialize};

/// What a solver says of its own answer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum SolveStatus {
    /// The pose reaches the target within the solver's tolerance and respects the joint limits.
    Converged,
    /// The target is not reachable; the pose reaches the nearest reachable point instead.
    Unreachable {
        /// Why not.
        reason: UnreachableReason,
        /// Distance from the target to the nearest reachable point (infinite for non-finite targets).
        missed_by: f64,
    },
    /// The iteration budget ran out before the tolerance was met.
    NotConverged,
    /// The only poses that reach the target break a joint limit; the pose is clamped into them.
    LimitViolated,
    /// A learned proposal that nothing has checked: the network claims success by construction.
    Unverified,
}

impl SolveStatus {
    /// True when the solver itself admits it did not reach the target.
    pub fn is_reported_failure(&self) -> bool {
        matches!(self, SolveStatus::Unreachable { .. } | SolveStatus::NotConverged | SolveStatus::LimitViolated)
    }

    /// A short label for tables and the panel.
    pub fn label(&self) -> &'static str {
        match self {
            SolveStatus::Converged => "converged",
            SolveStatus::Unreachable { .. } => "unreachable",
            SolveStatus::NotConverged => "not converged",
            SolveStatus::LimitViolated => "limit violated",
            SolveStatus::Unverified => "unverified",
        }
    }
}

/// A solver's answer, in its arm's joint vector `J` (a [`Pose`] unless said otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Solution<J = Pose> {
    /// The joint coordinates to command (the two-link arm's joint angles); always finite.
    pub pose: J,
    /// What the solver says of the pose.
    pub status: SolveStatus,
    /// Tip miss the solver measured on its own model, metres (`None` when it does not check).
    pub residual: Option<f64>,
    /// Iterations used (0 for closed-form and learned solvers).
    pub iterations: u32,
}

impl<J> Solution<J> {
    /// True when the solver reached the target within its tolerance (status `Converged`).
    pub fn converged(&self) -> bool {
        self.status == SolveStatus::Converged
    }
}

/// An inverse-kinematics solver for one arm model.
pub trait IkSolver {
    /// The arm's joint vector: [`Pose`] on the two-link arm, padded
    /// [`Coords`](crate::kinematics::serial::Coords) on a chain.
    type Joints: Copy;

    /// A short name for tables and legends.
    fn name(&self) -> &str;

    /// Solves for `target`, starting from (or near) `seed`, the coordinates the arm is in now.
    /// Never panics and never returns non-finite coordinates, whatever the input.
    fn solve(&self, target: Point2, seed: Self::Joints) -> Solution<Self::Joints>;
}

impl<S: IkSolver + ?Sized> IkSolver for Box<S> {
    type Joints = S::Joints;

    fn name(&self) -> &str {
        (**self).name()
    }

    fn solve(&self, target: Point2, seed: S::Joints) -> Solution<S::Joints> {
        (**self).solve(target, seed)
    }
}

impl<S: IkSolver + ?Sized> IkSolver for &S {
    type Joints = S::Joints;

    fn name(&self) -> &str {
        (**self).name()
    }

    fn solve(&self, target: Point2, seed: S::Joints) -> Solution<S::Joints> {
        (**self).solve(target, seed)
    }
}

/// A finite stand-in for a non-finite seed pose.
#[inline]
pub(crate) fn sane_seed(seed: Pose) -> Pose {
    Pose::new(
        if seed.shoulder.is_finite() { seed.shoulder } else { 0.0 },
        if seed.elbow.is_finite() { seed.elbow } else { 0.0 },
    )
}
