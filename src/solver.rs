//! The one interface every IK solver implements, and the result it returns.
//!
//! Analytic, iterative, learned and enveloped solvers all answer [`IkSolver::solve`] with a
//! [`Solution`], so the app and the experiments can treat them alike.

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

/// A solver's answer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Solution {
    /// The joint angles to command; always finite.
    pub pose: Pose,
    /// What the solver says of the pose.
    pub status: SolveStatus,
    /// Tip miss the solver measured on its own model, metres (`None` when it does not check).
    pub residual: Option<f64>,
    /// Iterations used (0 for closed-form and learned solvers).
    pub iterations: u32,
}

impl Solution {
    /// True when the solver reached the target within its tolerance (status `Converged`).
    pub fn converged(&self) -> bool {
        self.status == SolveStatus::Converged
    }
}

/// An inverse-kinematics solver for one arm model.
pub trait IkSolver {
    /// A short name for tables and legends.
    fn name(&self) -> &str;

    /// Solves for `target`, starting from (or near) `seed`, the pose the arm is in now.
    /// Never panics and never returns a non-finite pose, whatever the input.
    fn solve(&self, target: Point2, seed: Pose) -> Solution;
}

impl<S: IkSolver + ?Sized> IkSolver for Box<S> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn solve(&self, target: Point2, seed: Pose) -> Solution {
        (**self).solve(target, seed)
    }
}

impl<S: IkSolver + ?Sized> IkSolver for &S {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn solve(&self, target: Point2, seed: Pose) -> Solution {
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
