//! Damped-least-squares (Levenberg-Marquardt style) Jacobian IK, warm-started from the current pose.
//!
//! Each iteration takes `dq = Jᵀ (J Jᵀ + λ² I)⁻¹ e`, with `e` the tip error. Far from a singularity
//! `λ = 0` and the step is Newton's; as the manipulability `|det J| / (l1 l2) = |sin q2|` falls
//! below [`DlsSolver::singularity_threshold`], `λ` ramps up to [`DlsSolver::max_damping`], trading
//! exactness for bounded joint motion near the straight and folded arm.

use crate::kinematics::{Point2, Pose, TwoLinkArm, project_to_workspace};
use crate::solver::{IkSolver, Solution, SolveStatus, UnreachableReason, sane_seed};

/// Damped-least-squares solver with its tuning fields.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DlsSolver {
    /// The arm model it solves for.
    pub arm: TwoLinkArm,
    /// Stop once the tip is this close to the (nearest reachable) target, metres. Default 1e-9.
    pub tolerance: f64,
    /// Iteration budget. Default 64.
    pub max_iterations: u32,
    /// Damping `λ` at an exact singularity, metres. Default 0.05 × reach.
    pub max_damping: f64,
    /// Manipulability `|sin q2|` below which damping ramps in. Default 0.1.
    pub singularity_threshold: f64,
    /// Largest joint change per iteration, radians (the step is scaled down to it). Default 0.5.
    pub max_step: f64,
}

impl DlsSolver {
    /// A solver for `arm` with the default tuning.
    pub fn new(arm: TwoLinkArm) -> Self {
        Self {
            arm,
            tolerance: 1e-9,
            max_iterations: 64,
            max_damping: 0.05 * arm.reach(),
            singularity_threshold: 0.1,
            max_step: 0.5,
        }
    }

    /// The damping `λ²` for a pose with manipulability `w = |sin q2|`.
    fn damping_sq(&self, w: f64) -> f64 {
        if w >= self.singularity_threshold {
            0.0
        } else {
            let ramp = 1.0 - w / self.singularity_threshold;
            (self.max_damping * ramp).powi(2)
        }
    }
}

impl IkSolver for DlsSolver {
    fn name(&self) -> &str {
        "iterative (DLS)"
    }

    fn solve(&self, target: Point2, seed: Pose) -> Solution {
        let seed = self.arm.clamp_to_limits(sane_seed(seed));
        let Some(projection) = project_to_workspace(&self.arm, target) else {
            let status = SolveStatus::Unreachable { reason: UnreachableReason::NonFinite, missed_by: f64::INFINITY };
            return Solution { pose: seed, status, residual: Some(f64::INFINITY), iterations: 0 };
        };
        let aim = projection.aimed;
        let tol = if self.tolerance.is_finite() { self.tolerance.max(0.0) } else { 1e-9 };
        let max_step = if self.max_step.is_finite() && self.max_step > 0.0 { self.max_step } else { 0.5 };
        let (l1, l2) = (self.arm.l1(), self.arm.l2());
        let mut q = seed;
        let mut clamped = false;
        let mut iterations = 0;
        let mut err = aim - self.arm.tip(q);
        let mut err_norm = err.norm();
        // Levenberg-Marquardt trust: scales the singularity damping down after each step that
        // lowered the error and up after each that did not, so the solver still converges
        // quickly onto the rim (a singular solution) yet never leaps near one.
        let mut trust = 1.0;
        while err_norm > tol && iterations < self.max_iterations {
            iterations += 1;
            let j = self.arm.jacobian(q);
            let w = (j.determinant() / (l1 * l2)).abs();
            let floor_sq = (1e-3 * self.arm.reach()).powi(2);
            let lambda_sq = (self.damping_sq(w) + floor_sq) * trust;
            // dq = Jᵀ (J Jᵀ + λ² I)⁻¹ e, with the 2x2 inverse written out.
            let a = j * j.transpose();
            let (a00, a01, a11) = (a[(0, 0)] + lambda_sq, a[(0, 1)], a[(1, 1)] + lambda_sq);
            let det = a00 * a11 - a01 * a01;
            if !(det.is_finite() && det.abs() > 1e-300) {
                break;
            }
            let y = Point2::new(a11 * err.x - a01 * err.y, a00 * err.y - a01 * err.x) / det;
            let mut dq = j.transpose() * y;
            let step = dq.amax();
            if !step.is_finite() {
                break;
            }
            if step > max_step {
                dq *= max_step / step;
            }
            let next = Pose::from_vector(q.to_vector() + dq);
            let limited = self.arm.clamp_to_limits(next);
            if limited.max_joint_distance(q) < 1e-15 {
                clamped |= limited != next;
                break; // stalled: against a joint limit, or at a saddle of the error
            }
            let next_err = aim - self.arm.tip(limited);
            let next_norm = next_err.norm();
            if next_norm < err_norm {
                clamped |= limited != next;
                q = limited;
                err = next_err;
                err_norm = next_norm;
                trust = (trust * 0.25).max(1e-9);
            } else {
                trust = (trust * 4.0).min(1e9);
            }
        }
        let q = q.wrapped();
        let q = self.arm.clamp_to_limits(q);
        let residual_to_aim = (aim - self.arm.tip(q)).norm();
        let status = match projection.unreachable {
            Some((reason, missed_by)) => SolveStatus::Unreachable { reason, missed_by },
            None if residual_to_aim <= tol.max(1e-12) => SolveStatus::Converged,
            None if clamped => SolveStatus::LimitViolated,
            None => SolveStatus::NotConverged,
        };
        let residual = (target - self.arm.tip(q)).norm();
        Solution { pose: q, status, residual: Some(residual), iterations }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinematics::{ElbowMode, JointLimits};
    use std::f64::consts::PI;

    #[test]
    fn converges_from_a_warm_start_in_few_iterations() {
        let arm = TwoLinkArm::new(1.0, 0.7).unwrap();
        let solver = DlsSolver::new(arm);
        let target = arm.tip(Pose::new(0.4, 1.1));
        let s = solver.solve(target, Pose::new(0.45, 1.05));
        assert!(s.converged());
        assert!(s.residual.unwrap() < 1e-9);
        assert!(s.iterations <= 6, "{}", s.iterations);
    }

    #[test]
    fn keeps_the_seed_branch() {
        let solver = DlsSolver::new(TwoLinkArm::default());
        let target = Point2::new(1.0, 0.8);
        let up = solver.solve(target, Pose::new(1.2, -1.0));
        let down = solver.solve(target, Pose::new(0.0, 1.0));
        assert_eq!(ElbowMode::of(up.pose), ElbowMode::Up);
        assert_eq!(ElbowMode::of(down.pose), ElbowMode::Down);
    }

    #[test]
    fn escapes_the_straight_arm_singularity() {
        let solver = DlsSolver::new(TwoLinkArm::default());
        let s = solver.solve(Point2::new(0.3, 1.1), Pose::new(0.0, 0.0));
        assert_eq!(s.status, SolveStatus::Converged, "{s:?}");
    }

    #[test]
    fn reports_unreachable_and_non_convergence() {
        let solver = DlsSolver::new(TwoLinkArm::default());
        let s = solver.solve(Point2::new(5.0, 0.0), Pose::new(0.3, 0.3));
        assert!(matches!(s.status, SolveStatus::Unreachable { reason: UnreachableReason::BeyondReach, .. }));
        assert!((s.residual.unwrap() - 3.0).abs() < 1e-6, "{s:?}");
        let starved = DlsSolver { max_iterations: 1, ..solver };
        let s = starved.solve(Point2::new(-1.0, -0.5), Pose::new(0.3, 0.3));
        assert_eq!(s.status, SolveStatus::NotConverged);
        assert_eq!(s.iterations, 1);
    }

    #[test]
    fn reports_limit_violation() {
        let arm = TwoLinkArm::default()
            .with_limits(JointLimits::new(-PI / 4.0, PI / 4.0, "shoulder").unwrap(), JointLimits::FULL)
            .unwrap();
        let s = DlsSolver::new(arm).solve(Point2::new(-1.5, 0.0), Pose::new(0.1, 0.3));
        assert_eq!(s.status, SolveStatus::LimitViolated, "{s:?}");
        assert!(arm.within_limits(s.pose));
    }
}
