//! Classical solvers: the seed exercise, round trips, and robustness on any f64 input.

use elbow::analytic::solve_branches;
use elbow::{
    AnalyticSolver, BranchChoice, DlsSolver, ElbowMode, IkSolver, Point2, Pose, Region, SampleMode, SolveStatus,
    TwoLinkArm,
};
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The seed exercise's check, ported literally: target (1.0, 0.8), lengths (1, 1); both branches
/// reach the target within 1e-6, their average misses by more than 1e-2.
#[test]
fn seed_exercise() {
    let arm = TwoLinkArm::new(1.0, 1.0).unwrap();
    let target = Point2::new(1.0, 0.8);
    let b = solve_branches(&arm, target);
    let up_err = arm.miss(b.up, target);
    let down_err = arm.miss(b.down, target);
    let avg_err = arm.miss(b.average(), target);
    assert!(up_err < 1e-6, "elbow-up misses by {up_err}");
    assert!(down_err < 1e-6, "elbow-down misses by {down_err}");
    assert!(avg_err > 1e-2, "the average should miss, missed by {avg_err}");
}

#[test]
fn fk_of_ik_round_trips_on_10000_targets_for_both_branches() {
    for (l1, l2) in [(1.0, 1.0), (1.0, 0.5), (0.3, 1.2)] {
        let arm = TwoLinkArm::new(l1, l2).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        for mode in [SampleMode::UniformArea, SampleMode::JointSpace] {
            for t in arm.sample_targets(&mut rng, 10_000, mode, Region::Annulus) {
                let b = solve_branches(&arm, t);
                assert!(b.unreachable.is_none(), "{t:?} sampled but unreachable");
                for m in ElbowMode::BOTH {
                    let err = arm.miss(b.pose(m), t);
                    assert!(err < 1e-9, "{m:?} misses {t:?} by {err} on arm ({l1}, {l2})");
                }
            }
        }
    }
}

#[test]
fn reported_residuals_are_the_forward_kinematics_miss() {
    let arm = TwoLinkArm::new(1.0, 0.6).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut targets = arm.sample_targets(&mut rng, 2000, SampleMode::UniformArea, Region::Annulus);
    targets.extend([Point2::new(3.0, 1.0), Point2::new(0.1, -0.1), Point2::new(0.0, 0.0)]);
    for solver in all_solvers(arm) {
        for &t in &targets {
            let s = solver.solve(t, Pose::new(0.2, 0.4));
            let fk = textbook_miss(1.0, 0.6, s.pose, t);
            assert!((s.residual.unwrap() - fk).abs() < 1e-9, "{}: {t:?} {s:?} vs {fk}", solver.name());
        }
    }
}

/// The tip distance of `pose` from `target` on a two-link arm `(l1, l2)`, written out from the
/// textbook forward kinematics here rather than through the library, so a fault in the
/// library's kinematics cannot hide in both sides of a comparison.
fn textbook_miss(l1: f64, l2: f64, pose: Pose, target: Point2) -> f64 {
    let (a, b) = (pose.shoulder, pose.shoulder + pose.elbow);
    let (x, y) = (l1 * a.cos() + l2 * b.cos(), l1 * a.sin() + l2 * b.sin());
    (x - target.x).hypot(y - target.y)
}

#[test]
fn dls_converges_from_warm_starts() {
    let arm = TwoLinkArm::new(1.0, 0.8).unwrap();
    let dls = DlsSolver::new(arm);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut worst = 0;
    for t in arm.sample_targets(&mut rng, 2000, SampleMode::UniformArea, Region::Annulus) {
        let q = solve_branches(&arm, t).up;
        let s = dls.solve(t, q + Pose::new(0.05, -0.05));
        assert_eq!(s.status, SolveStatus::Converged, "{t:?}: {s:?}");
        worst = worst.max(s.iterations);
    }
    assert!(worst < 40, "worst warm start took {worst} iterations");
}

fn all_solvers(arm: TwoLinkArm) -> Vec<Box<dyn IkSolver<Joints = Pose>>> {
    vec![
        Box::new(AnalyticSolver::new(arm, BranchChoice::NearestToSeed)),
        Box::new(AnalyticSolver::new(arm, BranchChoice::Fixed(ElbowMode::Up))),
        Box::new(DlsSolver::new(arm)),
    ]
}

/// Any f64 at all: NaN, infinities, huge, tiny and denormal values, and ordinary ones.
fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::MAX),
        Just(f64::MIN),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        Just(-2.93e-309),
        Just(1e-200),
        Just(-0.0),
        Just(0.0),
        -1e300..1e300f64,
        -3.0..3.0f64,
        proptest::num::f64::ANY,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn no_solver_panics_or_returns_nan(x in any_f64(), y in any_f64(), s1 in any_f64(), s2 in any_f64()) {
        let arm = TwoLinkArm::new(1.0, 0.7).unwrap();
        for solver in all_solvers(arm) {
            let s = solver.solve(Point2::new(x, y), Pose::new(s1, s2));
            prop_assert!(s.pose.is_finite(), "{} gave {:?}", solver.name(), s);
            prop_assert!(s.residual.is_none_or(|r| !r.is_nan()), "{} residual NaN", solver.name());
            if let SolveStatus::Unreachable { missed_by, .. } = s.status {
                prop_assert!(!missed_by.is_nan());
            }
        }
    }

    #[test]
    fn unreachable_targets_are_always_reported(r in 0.0..10.0f64, bearing in -4.0..4.0f64) {
        let arm = TwoLinkArm::new(1.0, 0.6).unwrap();
        let t = Point2::new(r * bearing.cos(), r * bearing.sin());
        let reachable = (0.4 * (1.0 + 1e-9)..=1.6 * (1.0 - 1e-9)).contains(&r);
        let unreachable = !(0.4 * (1.0 - 1e-9)..=1.6 * (1.0 + 1e-9)).contains(&r);
        for solver in all_solvers(arm) {
            let s = solver.solve(t, Pose::new(0.3, 0.3));
            if unreachable {
                let is_unreachable = matches!(s.status, SolveStatus::Unreachable { .. });
                prop_assert!(is_unreachable, "{} did not report {:?}", solver.name(), t);
            }
            if reachable {
                let is_unreachable = matches!(s.status, SolveStatus::Unreachable { .. });
                prop_assert!(!is_unreachable, "{} called {:?} unreachable", solver.name(), t);
            }
        }
    }
}
