//! Damped least squares (Levenberg-Marquardt style) Jacobian IK: one solver, [`Dls`], for any
//! [`SerialArm`] (the two-link arm, any chain), and the two-link [`IkSolver`] on it,
//! [`DlsSolver`], warm-started from the current pose.
//!
//! Each iteration takes `dx = Jᵀ (J Jᵀ + λ² I)⁻¹ e` for the `2 x n` Jacobian `J`, with `e` the
//! tip error, scaled down so no coordinate moves more than [`Dls::max_step`], and clamped into
//! the ranges. A coordinate held at a bound that the step pushes further out drops out of the
//! Jacobian and the step is taken again over the others (an active set). `λ²` is a floor
//! ([`Dls::damping`]), plus an optional ramp near singularities ([`SingularityDamping`]: as the
//! manipulability falls below a threshold `λ` ramps up to a maximum, trading exactness for
//! bounded joint motion near the straight and folded arm), times a Levenberg-Marquardt trust
//! factor: a quarter after each step that lowered the error, four times after each that did
//! not, so the solver takes Newton-like steps far from singularities and short, safe ones near
//! them, and still converges quickly onto the rim (a singular solution). On a redundant chain
//! the minimum-norm step moves the start as little as it can, so the answer is the solution
//! nearest the start.

use crate::kinematics::{MAX_COORDS, Point2, Pose, SerialArm, TwoLinkArm, project_to_workspace};
use crate::solver::{IkSolver, Solution, SolveStatus, UnreachableReason, sane_seed};

/// Extra damping near singularities: `λ` ramps from 0 at manipulability `threshold` to
/// `max_damping` at an exact singularity, the manipulability being `sqrt(det(J Jᵀ)) / scale`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SingularityDamping {
    /// Manipulability below which damping ramps in.
    pub threshold: f64,
    /// Damping `λ` at an exact singularity, metres.
    pub max_damping: f64,
    /// What `sqrt(det(J Jᵀ))` is divided by (`l1 l2` for two links, which makes the
    /// manipulability `|sin q2|`).
    pub scale: f64,
}

impl SingularityDamping {
    /// The ramp's `λ²` at Jacobian columns `cols`.
    #[inline]
    fn damping_sq(&self, cols: &[Point2]) -> f64 {
        // det(J Jᵀ) by Cauchy-Binet: the sum of the squared 2x2 minors (exact for two columns,
        // where it is det(J)², and never negative).
        let mut gram = 0.0;
        for (i, a) in cols.iter().enumerate() {
            for b in &cols[i + 1..] {
                gram += (a.x * b.y - a.y * b.x).powi(2);
            }
        }
        let w = gram.sqrt() / self.scale;
        if w >= self.threshold {
            0.0
        } else {
            let ramp = 1.0 - w / self.threshold;
            (self.max_damping * ramp).powi(2)
        }
    }
}

/// Damped least squares on one arm, with its tuning.
#[derive(Debug, Clone, Copy)]
pub struct Dls<'a, K: SerialArm + ?Sized> {
    /// The arm it solves for.
    pub chain: &'a K,
    /// Converged once the tip is this close to the target, metres.
    pub tolerance: f64,
    /// Iterations per start.
    pub max_iterations: u32,
    /// Largest change of one coordinate per iteration (radians or metres).
    pub max_step: f64,
    /// Damping floor `λ`, metres (multiplied by the trust factor). Default 1e-3 x reach.
    pub damping: f64,
    /// Extra damping near singularities, if any.
    pub singular: Option<SingularityDamping>,
}

/// What one run (or a run with restarts) of the solver did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DlsOutcome {
    /// Iterations taken, over every start.
    pub iterations: u32,
    /// Starts used (1 without restarts).
    pub starts: u32,
    /// Tip error of the answer, metres.
    pub error: f64,
    /// True when the error is within the tolerance.
    pub converged: bool,
    /// True when a bound held a step back: a coordinate pinned by the active set, or clamped
    /// onto a bound, on an accepted step or the step that stalled.
    pub limited: bool,
}

impl<'a, K: SerialArm + ?Sized> Dls<'a, K> {
    /// A solver for `chain` with the chain tuning: tolerance 1e-6, 64 iterations, steps of at
    /// most 0.5, damping floor 1e-3 x reach, no singularity ramp.
    pub fn new(chain: &'a K) -> Self {
        Self {
            chain,
            tolerance: 1e-6,
            max_iterations: 64,
            max_step: 0.5,
            damping: 1e-3 * chain.reach(),
            singular: None,
        }
    }

    /// Refines `x` in place towards `target` for at most `max_iterations` iterations; `x` is
    /// first clamped into the ranges (a non-finite coordinate becomes the middle of its range).
    #[inline]
    pub fn refine(&self, x: &mut [f64], target: Point2, max_iterations: u32) -> DlsOutcome {
        let chain = self.chain;
        let n = chain.coords();
        for (i, v) in x.iter_mut().enumerate().take(n) {
            if !v.is_finite() {
                let (lo, hi) = chain.range(i);
                *v = 0.5 * (lo + hi);
            }
        }
        chain.clamp(&mut x[..n]);
        let tol = if self.tolerance.is_finite() { self.tolerance.max(0.0) } else { 1e-6 };
        let max_step = if self.max_step.is_finite() && self.max_step > 0.0 { self.max_step } else { 0.5 };
        if !(target.x.is_finite() && target.y.is_finite()) {
            return DlsOutcome { iterations: 0, starts: 1, error: f64::INFINITY, converged: false, limited: false };
        }
        let mut cols = [Point2::zeros(); MAX_COORDS];
        let mut next = [0.0; MAX_COORDS];
        let mut err = target - chain.tip(&x[..n]);
        let mut norm = err.norm();
        let floor_sq = self.damping * self.damping;
        let mut trust = 1.0;
        let mut iterations = 0;
        let mut limited = false;
        while norm > tol && iterations < max_iterations {
            iterations += 1;
            chain.jacobian(&x[..n], &mut cols);
            let ramp_sq = self.singular.map_or(0.0, |s| s.damping_sq(&cols[..n]));
            let lambda_sq = (ramp_sq + floor_sq) * trust;
            // Active set: a coordinate held at a bound that the step pushes further out drops
            // out of the Jacobian, and the step is taken again over the others.
            let mut pinned = [false; MAX_COORDS];
            let mut held = false;
            let mut biggest;
            loop {
                biggest = step(&cols[..n], &pinned[..n], err, lambda_sq, &mut next[..n]);
                let mut more = false;
                for i in 0..n {
                    if pinned[i] || !chain.is_bounded(i) {
                        continue;
                    }
                    let (lo, hi) = chain.range(i);
                    if (x[i] <= lo && next[i] < 0.0) || (x[i] >= hi && next[i] > 0.0) {
                        pinned[i] = true;
                        more = true;
                    }
                }
                if !more {
                    break;
                }
                held = true;
            }
            if !biggest.is_finite() {
                break;
            }
            let scale = if biggest > max_step { max_step / biggest } else { 1.0 };
            // Bounded coordinates the step takes out of their range, one bit each.
            let mut outside = 0u32;
            for i in 0..n {
                next[i] = x[i] + scale * next[i];
                if chain.is_bounded(i) {
                    let (lo, hi) = chain.range(i);
                    if !(next[i] >= lo && next[i] <= hi) {
                        outside |= 1 << i;
                    }
                }
            }
            if chain.clamp(&mut next[..n]) && outside != 0 {
                // Clamped onto a bound, not merely wrapped by a whole turn into the range.
                held |= (0..n).any(|i| {
                    let (lo, hi) = chain.range(i);
                    outside & (1 << i) != 0 && (next[i] == lo || next[i] == hi)
                });
            }
            if next[..n].iter().zip(&x[..n]).all(|(a, b)| (a - b).abs() < 1e-15) {
                limited |= held;
                break; // stalled: against a limit, or at a saddle of the error
            }
            let next_err = target - chain.tip(&next[..n]);
            let next_norm = next_err.norm();
            if next_norm < norm {
                x[..n].copy_from_slice(&next[..n]);
                err = next_err;
                norm = next_norm;
                limited |= held;
                trust = (trust * 0.25).max(1e-9);
            } else {
                trust = (trust * 4.0).min(1e9);
            }
        }
        DlsOutcome { iterations, starts: 1, error: norm, converged: norm <= tol, limited }
    }
}

/// The damped step `Jᵀ (J Jᵀ + λ² I)⁻¹ e` over the coordinates not `pinned`, into `dx`;
/// returns its largest magnitude (NaN when the system is singular).
#[inline]
pub(crate) fn step(cols: &[Point2], pinned: &[bool], err: Point2, lambda_sq: f64, dx: &mut [f64]) -> f64 {
    let (mut a00, mut a01, mut a11) = (lambda_sq, 0.0, lambda_sq);
    for (c, _) in cols.iter().zip(pinned).filter(|(_, p)| !**p) {
        a00 += c.x * c.x;
        a01 += c.x * c.y;
        a11 += c.y * c.y;
    }
    let det = a00 * a11 - a01 * a01;
    if !(det.is_finite() && det > 1e-300) {
        return f64::NAN;
    }
    let y = Point2::new(a11 * err.x - a01 * err.y, a00 * err.y - a01 * err.x) / det;
    let mut biggest = 0.0f64;
    for ((d, c), &p) in dx.iter_mut().zip(cols).zip(pinned) {
        *d = if p { 0.0 } else { c.dot(&y) };
        biggest = biggest.max(d.abs());
    }
    biggest
}

/// The two-link [`IkSolver`]: [`Dls`] on the arm, aimed at the nearest reachable point,
/// warm-started from the current pose, with damping that ramps in as the manipulability
/// `|det J| / (l1 l2) = |sin q2|` falls below [`DlsSolver::singularity_threshold`].
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

    /// The chain solver this one runs.
    fn dls(&self, tolerance: f64) -> Dls<'_, TwoLinkArm> {
        let singular = SingularityDamping {
            threshold: self.singularity_threshold,
            max_damping: self.max_damping,
            scale: self.arm.l1() * self.arm.l2(),
        };
        Dls {
            chain: &self.arm,
            tolerance,
            max_iterations: self.max_iterations,
            max_step: self.max_step,
            damping: 1e-3 * self.arm.reach(),
            singular: Some(singular),
        }
    }
}

impl IkSolver for DlsSolver {
    type Joints = Pose;

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
        let mut x = [seed.shoulder, seed.elbow];
        let out = self.dls(tol).refine(&mut x, aim, self.max_iterations);
        let q = self.arm.clamp_to_limits(Pose::new(x[0], x[1]).wrapped());
        let residual_to_aim = (aim - self.arm.tip(q)).norm();
        let status = match projection.unreachable {
            Some((reason, missed_by)) => SolveStatus::Unreachable { reason, missed_by },
            None if residual_to_aim <= tol.max(1e-12) => SolveStatus::Converged,
            None if out.limited => SolveStatus::LimitViolated,
            None => SolveStatus::NotConverged,
        };
        let residual = (target - self.arm.tip(q)).norm();
        Solution { pose: q, status, residual: Some(residual), iterations: out.iterations }
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
    fn the_two_link_solver_is_the_chain_solver_on_the_two_joint_chain() {
        use crate::chain::Chain;
        let elbow = JointLimits::new(0.2, 2.5, "elbow").unwrap();
        let limited = TwoLinkArm::new(1.0, 0.6).unwrap().with_limits(JointLimits::FULL, elbow).unwrap();
        let mut held = 0;
        for arm in [TwoLinkArm::default(), limited] {
            let solver = DlsSolver::new(arm);
            let chain = Chain::from(arm);
            let d = solver.dls(solver.tolerance);
            let on_chain = Dls {
                chain: &chain,
                tolerance: d.tolerance,
                max_iterations: d.max_iterations,
                max_step: d.max_step,
                damping: d.damping,
                singular: d.singular,
            };
            for (target, seed) in [
                (Point2::new(1.0, 0.8), [0.0, 0.3]),
                (Point2::new(0.3, 1.1), [0.0, 0.0]),
                (Point2::new(-1.2, -0.4), [2.0, 1.5]),
                (Point2::new(1.55, 0.1), [-0.3, 2.4]),
                (Point2::new(1.599, 0.0), [0.0, 1.0]),
            ] {
                let (mut a, mut b) = (seed, seed);
                let on_arm = solver.dls(solver.tolerance).refine(&mut a, target, 64);
                let on_chain = on_chain.refine(&mut b, target, 64);
                assert_eq!(on_arm.iterations, on_chain.iterations, "{target}");
                assert_eq!((on_arm.converged, on_arm.limited), (on_chain.converged, on_chain.limited));
                assert!((a[0] - b[0]).abs() < 1e-12 && (a[1] - b[1]).abs() < 1e-12, "{a:?} vs {b:?}");
                held += usize::from(on_arm.limited);
            }
        }
        assert!(held >= 1, "no case ran into the elbow's limits");
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
