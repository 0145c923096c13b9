//! Closed-form inverse kinematics: both elbow branches, honest about unreachable targets.
//!
//! For a target at radius `r`, the law of cosines gives `cos q2 = (r² - l1² - l2²) / (2 l1 l2)`;
//! the two signs of `sin q2` are the elbow-up and elbow-down branches. A target off the reachable
//! annulus is never silently clamped: the answer aims at the nearest reachable point and says by
//! how much it missed.

use crate::kinematics::{ElbowMode, Point2, Pose, TwoLinkArm, UnreachableReason, project_to_workspace, wrap_angle};
use crate::solver::{IkSolver, Solution, SolveStatus};
use serde::{Deserialize, Serialize};

/// Both closed-form branches for one target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Branches {
    /// Elbow-up pose (`q2 <= 0`).
    pub up: Pose,
    /// Elbow-down pose (`q2 >= 0`).
    pub down: Pose,
    /// The point both poses reach: the target itself, or the nearest reachable point.
    pub aimed: Point2,
    /// `None` when the target is reachable, else why not and by how much it is missed.
    pub unreachable: Option<(UnreachableReason, f64)>,
    /// Whether each branch (up, down) lies inside the joint limits.
    pub admissible: [bool; 2],
}

impl Branches {
    /// The pose of one branch.
    pub fn pose(&self, mode: ElbowMode) -> Pose {
        match mode {
            ElbowMode::Up => self.up,
            ElbowMode::Down => self.down,
        }
    }

    /// Whether one branch respects the joint limits.
    pub fn is_admissible(&self, mode: ElbowMode) -> bool {
        self.admissible[mode as usize]
    }

    /// The average of the two branches: what a squared-error fit to data holding both converges
    /// to. The shoulder takes the circular mean (the bisector, which points at the target), the
    /// elbow the plain mean of `q2 <= 0` and `q2 >= 0` (zero: a straight arm). For a reachable
    /// target off the rim it is *not* a solution: the tip lands on the outer rim.
    pub fn average(&self) -> Pose {
        // Each branch's elbow as the angle of its own sign (`-|q2|` up, `|q2|` down): at the
        // inner rim both are a half turn, which wraps to +pi for both, and the average must be
        // 0 (a folded arm pointing either way), not a quarter turn.
        let elbow = (-wrap_angle(self.up.elbow).abs() + wrap_angle(self.down.elbow).abs()) / 2.0;
        Pose::new(circular_mean(self.up.shoulder, self.down.shoulder), elbow)
    }
}

/// The mean direction of two angles (their bisector), wrapped into `(-pi, pi]`.
pub fn circular_mean(a: f64, b: f64) -> f64 {
    wrap_angle(a + wrap_angle(b - a) / 2.0)
}

/// `atan2(y, x)` by Cephes' method: reduce to `|t| <= tan(pi/8)`, then a rational minimax fit.
/// Within 2 ulp of libm over the whole plane (checked in the tests), at a third of its cost.
#[inline(always)]
pub fn atan2(y: f64, x: f64) -> f64 {
    use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};
    if !(x.is_finite() && y.is_finite()) || (x == 0.0 && y == 0.0) {
        return y.atan2(x);
    }
    let (ax, ay) = (x.abs(), y.abs());
    // atan(t) for t = ay / ax >= 0, computed without forming t when it would overflow.
    let (base, t, more) = if ay > 2.414_213_562_373_095 * ax {
        (FRAC_PI_2, -ax / ay, 6.123_233_995_736_766e-17)
    } else if ay > 0.66 * ax {
        (FRAC_PI_4, (ay - ax) / (ay + ax), 3.061_616_997_868_383e-17)
    } else {
        (0.0, ay / ax, 0.0)
    };
    let z = t * t;
    // Horner with fused multiply-adds: one rounding per step, the same result on every CPU
    // (hardware FMA where the dispatching caller enables it).
    let p = (-8.750_608_600_031_904e-1f64).mul_add(z, -1.615_753_718_733_365e1);
    let p = p.mul_add(z, -7.500_855_792_314_705e1);
    let p = p.mul_add(z, -1.228_866_684_490_136e2);
    let p = p.mul_add(z, -6.485_021_904_942_025e1);
    let q = z + 2.485_846_490_142_306e1;
    let q = q.mul_add(z, 1.650_270_098_316_988_5e2);
    let q = q.mul_add(z, 4.328_810_604_912_903e2);
    let q = q.mul_add(z, 4.853_903_996_359_137e2);
    let q = q.mul_add(z, 1.945_506_571_482_614e2);
    let a = base + (t * (z * p / q) + t + more);
    // Back to the quadrant of (x, y).
    let a = if x < 0.0 { PI - a } else { a };
    if y < 0.0 || (y == 0.0 && y.is_sign_negative()) { -a } else { a }
}

/// The law-of-cosines quantities one target's branches share.
struct Triangle {
    /// The point solved for: the target, or the nearest reachable point.
    aim: Point2,
    /// `None` when the target is reachable.
    unreachable: Option<(UnreachableReason, f64)>,
    /// `cos q2` and `|sin q2|`.
    c2: f64,
    s2: f64,
    /// `|q2|`.
    q2: f64,
    /// `|aim|²`, which is also `|(l1 + l2 c2, l2 s2)|²` by the law of cosines.
    r2: f64,
}

impl Triangle {
    #[inline(always)]
    fn new(arm: &TwoLinkArm, target: Point2) -> Option<Self> {
        let (l1, l2) = (arm.l1(), arm.l2());
        let (inner, outer) = (arm.inner_radius(), arm.reach());
        let r2 = target.x * target.x + target.y * target.y;
        // Fast path, no square root: comfortably inside the annulus. Targets near its edges, far
        // off or non-finite go through the careful projection.
        let margin = 4.0 * crate::kinematics::REACH_EPS;
        let (aim, r2, unreachable) =
            if r2 < outer * outer * (1.0 - margin) && r2 > inner * inner * (1.0 + margin) && r2 > 1e-200 {
                (target, r2, None)
            } else {
                let p = project_to_workspace(arm, target)?;
                (p.aimed, p.radius * p.radius, p.unreachable)
            };
        let c2 = ((r2 - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)).clamp(-1.0, 1.0);
        let s2 = (1.0 - c2 * c2).max(0.0).sqrt();
        Some(Self { aim, unreachable, c2, s2, q2: atan2(s2, c2), r2 })
    }

    /// One branch: its pose, whether it is inside the limits, and `[cos q1, sin q1, sin q2]`.
    #[inline(always)]
    fn branch(&self, arm: &TwoLinkArm, mode: ElbowMode) -> (Pose, bool, [f64; 3]) {
        let (l1, l2) = (arm.l1(), arm.l2());
        let s2 = mode.sign() * self.s2;
        // The tip is the vector (l1 + l2 c2, l2 s2) turned by q1; turning the aim point back by
        // that vector's angle gives q1 with a single atan2 (atan2 ignores the common scale).
        let (k1, k2) = (l1 + l2 * self.c2, l2 * s2);
        let a = self.aim;
        let (x, y) = (a.x * k1 + a.y * k2, a.y * k1 - a.x * k2);
        let q1 = atan2(y, x);
        // |(x, y)| = |aim| |k| = r²: its cosine and sine without a square root.
        let trig = if self.r2 > 1e-200 {
            let inv = 1.0 / self.r2;
            [x * inv, y * inv, s2]
        } else {
            [q1.cos(), q1.sin(), s2]
        };
        let pose = Pose::new(q1, mode.sign() * self.q2);
        let limits = arm.limits();
        match (limits[0].fit(pose.shoulder), limits[1].fit(pose.elbow)) {
            (Some(a), Some(b)) => (Pose::new(a, b), true, trig),
            _ => (pose, false, trig),
        }
    }
}

/// Both closed-form solutions for `target` on `arm`, with reachability and limit admissibility.
/// Inlined everywhere, so callers compiled for FMA (the atlas's rows) get its atan2 on hardware
/// FMA instead of a call per multiply-add.
#[inline(always)]
pub fn solve_branches(arm: &TwoLinkArm, target: Point2) -> Branches {
    let Some(tri) = Triangle::new(arm, target) else {
        let rest = Pose::new(0.0, 0.0);
        return Branches {
            up: rest,
            down: rest,
            aimed: arm.tip(rest),
            unreachable: Some((UnreachableReason::NonFinite, f64::INFINITY)),
            admissible: [arm.within_limits(rest); 2],
        };
    };
    let (up, up_ok, _) = tri.branch(arm, ElbowMode::Up);
    let (down, down_ok, _) = tri.branch(arm, ElbowMode::Down);
    Branches { up, down, aimed: tri.aim, unreachable: tri.unreachable, admissible: [up_ok, down_ok] }
}

/// Which branch the analytic solver answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BranchChoice {
    /// Always this branch.
    Fixed(ElbowMode),
    /// The admissible branch nearest the seed pose (the least joint motion).
    NearestToSeed,
}

/// The closed-form solver as an [`IkSolver`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnalyticSolver {
    /// The arm model it solves for.
    pub arm: TwoLinkArm,
    /// Which branch it answers with.
    pub branch: BranchChoice,
}

impl AnalyticSolver {
    /// A solver for `arm` answering with `branch`.
    pub fn new(arm: TwoLinkArm, branch: BranchChoice) -> Self {
        Self { arm, branch }
    }
}

impl IkSolver for AnalyticSolver {
    type Joints = Pose;

    fn name(&self) -> &str {
        match self.branch {
            BranchChoice::Fixed(ElbowMode::Up) => "analytic (up)",
            BranchChoice::Fixed(ElbowMode::Down) => "analytic (down)",
            BranchChoice::NearestToSeed => "analytic",
        }
    }

    fn solve(&self, target: Point2, seed: Pose) -> Solution {
        analytic_solve(self, target, seed)
    }
}

crate::simd::dispatch!(fn analytic_solve(solver: &AnalyticSolver, target: Point2, seed: Pose) -> Solution => analytic_solve_body);

/// [`AnalyticSolver::solve`], inlined into each instruction-set variant.
#[inline(always)]
fn analytic_solve_body(solver: &AnalyticSolver, target: Point2, seed: Pose) -> Solution {
    let Some(tri) = Triangle::new(&solver.arm, target) else {
        let status = SolveStatus::Unreachable { reason: UnreachableReason::NonFinite, missed_by: f64::INFINITY };
        return Solution { pose: Pose::default(), status, residual: Some(f64::INFINITY), iterations: 0 };
    };
    let (pose, admissible, trig) = match solver.branch {
        BranchChoice::Fixed(mode) => tri.branch(&solver.arm, mode),
        BranchChoice::NearestToSeed => {
            let seed = crate::solver::sane_seed(seed);
            let up = tri.branch(&solver.arm, ElbowMode::Up);
            let down = tri.branch(&solver.arm, ElbowMode::Down);
            let cost = |b: &(Pose, bool, [f64; 3])| (!b.1, b.0.max_joint_distance(seed));
            if cost(&up) <= cost(&down) { up } else { down }
        }
    };
    let (l1, l2) = (solver.arm.l1(), solver.arm.l2());
    if !admissible {
        let pose = solver.arm.clamp_to_limits(pose);
        let residual = solver.arm.miss(pose, target);
        return Solution { pose, status: SolveStatus::LimitViolated, residual: Some(residual), iterations: 0 };
    }
    // Forward kinematics of the answer, from the cosines and sines its angles were taken of.
    let [c1, s1, s2] = trig;
    let (c12, s12) = (c1 * tri.c2 - s1 * s2, s1 * tri.c2 + c1 * s2);
    let tip = Point2::new(l1 * c1 + l2 * c12, l1 * s1 + l2 * s12);
    let residual = (tip - target).norm();
    let status = match tri.unreachable {
        Some((reason, missed_by)) => SolveStatus::Unreachable { reason, missed_by },
        None => SolveStatus::Converged,
    };
    Solution { pose, status, residual: Some(residual), iterations: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinematics::JointLimits;
    use std::f64::consts::PI;

    #[test]
    fn seed_exercise_both_branches_reach_average_misses() {
        // The seed exercise: lengths (1, 1), target (1.0, 0.8).
        let arm = TwoLinkArm::new(1.0, 1.0).unwrap();
        let target = Point2::new(1.0, 0.8);
        let b = solve_branches(&arm, target);
        assert!(b.unreachable.is_none());
        for mode in ElbowMode::BOTH {
            assert!(arm.miss(b.pose(mode), target) < 1e-6);
        }
        assert!(arm.miss(b.average(), target) > 1e-2);
        assert!(b.up.elbow < 0.0 && b.down.elbow > 0.0);
    }

    #[test]
    fn unreachable_targets_are_reported_with_the_nearest_point() {
        let arm = TwoLinkArm::new(1.0, 0.5).unwrap();
        let far = solve_branches(&arm, Point2::new(3.0, 0.0));
        assert_eq!(far.unreachable, Some((UnreachableReason::BeyondReach, 1.5)));
        assert!((arm.tip(far.up) - Point2::new(1.5, 0.0)).norm() < 1e-9);
        let hole = solve_branches(&arm, Point2::new(0.0, 0.2));
        let (reason, miss) = hole.unreachable.unwrap();
        assert_eq!(reason, UnreachableReason::InsideHole);
        assert!((miss - 0.3).abs() < 1e-12);
        assert!((arm.tip(hole.down) - Point2::new(0.0, 0.5)).norm() < 1e-9);
        let equal = TwoLinkArm::new(1.0, 1.0).unwrap();
        let base = solve_branches(&equal, Point2::zeros());
        assert_eq!(base.unreachable.map(|u| u.0), Some(UnreachableReason::Degenerate));
        assert!(arm.tip(base.up).norm() < 1.0);
        let nan = solve_branches(&arm, Point2::new(f64::NAN, 1.0));
        assert_eq!(nan.unreachable.map(|u| u.0), Some(UnreachableReason::NonFinite));
        assert!(nan.up.is_finite());
        let solver = AnalyticSolver::new(arm, BranchChoice::NearestToSeed);
        let s = solver.solve(Point2::new(0.0, 9.0), Pose::default());
        assert!(matches!(s.status, SolveStatus::Unreachable { reason: UnreachableReason::BeyondReach, .. }));
        assert!(s.status.is_reported_failure());
    }

    #[test]
    fn joint_limits_filter_branches() {
        let arm = TwoLinkArm::new(1.0, 1.0)
            .unwrap()
            .with_limits(JointLimits::FULL, JointLimits::new(0.0, PI, "elbow").unwrap())
            .unwrap();
        let b = solve_branches(&arm, Point2::new(1.0, 0.8));
        assert_eq!(b.admissible, [false, true]);
        let up_only = AnalyticSolver::new(arm, BranchChoice::Fixed(ElbowMode::Up));
        let s = up_only.solve(Point2::new(1.0, 0.8), Pose::default());
        assert_eq!(s.status, SolveStatus::LimitViolated);
        assert!(arm.within_limits(s.pose));
        let nearest = AnalyticSolver::new(arm, BranchChoice::NearestToSeed);
        let s = nearest.solve(Point2::new(1.0, 0.8), Pose::new(0.0, -1.0));
        assert_eq!(s.status, SolveStatus::Converged);
        assert!(s.pose.elbow > 0.0);
    }

    #[test]
    fn nearest_branch_follows_the_seed() {
        let arm = TwoLinkArm::default();
        let solver = AnalyticSolver::new(arm, BranchChoice::NearestToSeed);
        let t = Point2::new(0.5, 1.2);
        let up = solver.solve(t, Pose::new(2.0, -1.0));
        let down = solver.solve(t, Pose::new(0.5, 1.0));
        assert!(up.pose.elbow < 0.0 && down.pose.elbow > 0.0);
        assert!(up.residual.unwrap() < 1e-12 && down.residual.unwrap() < 1e-12);
    }

    #[test]
    fn fast_atan2_matches_libm() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut worst = 0f64;
        for i in 0..200_000 {
            let scale = 10f64.powi(rng.random_range(-30..30));
            let (y, x) = if i < 8 {
                [
                    (0.0, 1.0),
                    (0.0, -1.0),
                    (1.0, 0.0),
                    (-1.0, 0.0),
                    (1.0, 1.0),
                    (-1.0, -1.0),
                    (1e-300, -1.0),
                    (-0.0, -1.0),
                ][i]
            } else {
                (rng.random_range(-1.0..1.0) * scale, rng.random_range(-1.0..1.0))
            };
            let (fast, libm) = (atan2(y, x), y.atan2(x));
            let ulps = (fast - libm).abs() / (libm.abs().max(1e-300) * f64::EPSILON);
            worst = worst.max(if fast == libm { 0.0 } else { ulps });
        }
        assert!(worst <= 2.0, "worst error {worst} ulp");
        assert!(atan2(f64::NAN, 1.0).is_nan() && atan2(0.0, 0.0) == 0.0);
    }

    #[test]
    fn average_at_the_inner_rim_is_a_straight_elbow_average() {
        let arm = TwoLinkArm::new(1.0, 0.5).unwrap();
        let b = solve_branches(&arm, Point2::new(0.5, 0.0));
        assert!(b.unreachable.is_none());
        assert!(b.average().elbow.abs() < 1e-9, "{:?}", b.average());
        let b = solve_branches(&arm, Point2::new(1.2, 0.3));
        assert!((b.average().elbow - (b.up.elbow + b.down.elbow) / 2.0).abs() < 1e-12);
    }

    #[test]
    fn huge_elbow_limits_are_refused_so_limits_never_lie() {
        assert!(JointLimits::new(1e20_f64.to_radians(), 2e20_f64.to_radians(), "elbow").is_err());
    }

    #[test]
    fn circular_mean_straddles_the_wrap() {
        assert!((circular_mean(PI - 0.1, -PI + 0.1).abs() - PI).abs() < 1e-12);
        assert!((circular_mean(0.2, 0.4) - 0.3).abs() < 1e-12);
    }
}
