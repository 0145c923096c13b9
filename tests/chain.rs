//! Redundant chains through the public API: the named arms' kinematics against finite
//! differences, and the exact posterior sampler against brute-force rejection sampling.

use elbow::arm::{Arm, ArmKind};
use elbow::chain::{ExactSampler, Kernel, MAX_COORDS, mmd_unbiased};
use elbow::kinematics::Point2;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[test]
fn named_arms_fk_and_jacobian_match_finite_differences() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for kind in ArmKind::ALL {
        let arm = kind.arm();
        let n = arm.coords();
        let mut x = vec![0.0; n];
        for _ in 0..100 {
            arm.prior.sample(&mut rng, &mut x);
            let pts = arm.chain.points(&x);
            assert_eq!(pts.len(), arm.chain.links().len() + 1);
            assert!((pts[pts.len() - 1] - arm.chain.tip(&x)).norm() < 1e-14);
            for (k, w) in pts.windows(2).enumerate() {
                assert!(((w[1] - w[0]).norm() - arm.chain.links()[k].length).abs() < 1e-12, "{kind}");
            }
            let mut cols = [Point2::zeros(); MAX_COORDS];
            arm.chain.jacobian(&x, &mut cols);
            for i in 0..n {
                let h = 1e-6;
                let (mut up, mut down) = (x.clone(), x.clone());
                up[i] += h;
                down[i] -= h;
                let fd = (arm.chain.tip(&up) - arm.chain.tip(&down)) / (2.0 * h);
                assert!((fd - cols[i]).norm() < 1e-8, "{kind}, coordinate {i}: {fd} vs {}", cols[i]);
            }
        }
    }
}

#[test]
fn rail3_is_the_benchmark_arm() {
    // Ardizzone et al. 2019: the rail moves the base along y, segment angles are cumulative.
    let arm = ArmKind::Rail3.arm();
    let x = [0.2, 0.3, -0.5, 0.4];
    let (a, b, c) = (0.3f64, -0.2f64, 0.2f64);
    let want = Point2::new(0.5 * a.cos() + 0.5 * b.cos() + c.cos(), 0.2 + 0.5 * a.sin() + 0.5 * b.sin() + c.sin());
    assert!((arm.chain.tip(&x) - want).norm() < 1e-15);
    assert!((arm.chain.tip(&[0.0; 4]) - Point2::new(2.0, 0.0)).norm() < 1e-15);
}

/// Prior draws whose tip lands within `eps` of `target`, until `count` are accepted.
fn rejection(arm: &Arm, target: Point2, eps: f64, count: usize, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = arm.coords();
    let mut x = vec![0.0; n];
    let mut accepted = Vec::with_capacity(count * n);
    let mut draws = 0u64;
    while accepted.len() < count * n {
        arm.prior.sample(&mut rng, &mut x);
        draws += 1;
        assert!(draws < 200_000_000, "rejection sampling stalled at ({}, {})", target.x, target.y);
        if (arm.chain.tip(&x) - target).norm() < eps {
            accepted.extend_from_slice(&x);
        }
    }
    accepted
}

/// The exact sampler against brute-force rejection sampling (approximate Bayesian computation
/// with a 2 cm acceptance radius): the MMD between the two sets stays within the statistical
/// noise and the radius's own bias, while the same sampler with the Jacobian factor dropped
/// from its weights is told apart on the same targets.
#[test]
fn exact_sampler_matches_rejection_sampling() {
    let kernel = Kernel::default();
    let count = 3000;
    for (kind, target, threshold) in
        [(ArmKind::Rail3, Point2::new(1.312, -1.683), 0.0025), (ArmKind::ThreeR, Point2::new(0.974, -1.096), 0.002)]
    {
        let arm = kind.arm();
        let d = arm.coords();
        let brute = rejection(&arm, target, 0.02, count, 5);
        let sampler = ExactSampler::new(&arm);
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let exact = sampler.sample(target, count, &mut rng);
        assert!(exact.ess >= 10.0 * count as f64, "{kind}: ESS {}", exact.ess);
        let wrong = sampler.sample_without_jacobian(target, count, &mut rng);
        let good = mmd_unbiased(&brute, &exact.x, d, &kernel);
        let bad = mmd_unbiased(&brute, &wrong.x, d, &kernel);
        let at = format!("{kind} at ({}, {})", target.x, target.y);
        assert!(good < threshold, "{at}: MMD to rejection sampling {good} >= {threshold}");
        assert!(bad > threshold, "{at}: without the Jacobian, MMD {bad} <= {threshold}");
    }
}

#[test]
fn the_issues_one_chart_sampler_agrees_with_the_balanced_one() {
    // Solving only the last two joints (prior over the rest, weight = their prior density over
    // |det J|) is exact too, only noisier: at enough proposals the two agree.
    let arm = ArmKind::ThreeR.arm();
    let target = Point2::new(1.2, 0.4);
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let balanced = ExactSampler::new(&arm).sample(target, 2000, &mut rng);
    let one = ExactSampler::last_two_only(&arm).sample(target, 2000, &mut rng);
    let bound = 1.5e-3;
    let mmd = mmd_unbiased(&balanced.x, &one.x, 3, &Kernel::default());
    assert!(mmd.abs() < bound, "{mmd}");
    // The negative control: the same balanced sampler with its Jacobian factor dropped draws
    // from a wrong distribution over the same solution manifold, and the bound tells it apart.
    let wrong = ExactSampler::new(&arm).sample_without_jacobian(target, 2000, &mut rng);
    let off = mmd_unbiased(&wrong.x, &one.x, 3, &Kernel::default());
    assert!(off > bound, "without the Jacobian, MMD {off} <= {bound}");
}
