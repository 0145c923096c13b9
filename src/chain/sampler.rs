//! Exact samples of the posterior `p(x | y*)` of a chain's coordinates given a target `y*`.
//!
//! For a prior `p(x)` and the deterministic forward map `y = f(x)`, the posterior lives on the
//! solution manifold `M = f⁻¹(y*)` (of dimension `n - 2` for `n` coordinates) with density
//! `p(x) / sqrt(det(J Jᵀ))` there (the coarea formula). A *chart* of `M` picks two coordinates
//! `(a, b)` to solve and leaves the other `n - 2` free: draw the free ones from their prior
//! marginals, solve `a` and `b` in closed form (two branches, like the elbow of a two-link arm),
//! and each solution `x` is a draw whose density on `M` is
//! `g(free) |det J_ab(x)| / sqrt(det(J Jᵀ))`, with `J_ab` the Jacobian's columns of `a` and `b`.
//! Weighting by `p(x) / (g(free) |det J_ab(x)|) = p_a(x_a) p_b(x_b) / |det J_ab(x)|` (the prior
//! density of the solved pair times the inverse Jacobian factor) and resampling gives exact
//! samples, which is the sampler the issue describes with `(a, b)` the last two joints.
//!
//! One chart alone has weights without a bounded variance: `|det J_ab|` vanishes where the two
//! solved links line up, where the chart folds over `M`, and a few proposals near the fold take
//! most of the weight (an effective sample size of a few dozen in 200,000 on some targets). So
//! every pair of coordinates is a chart, each gets the same number of proposals, and a solution
//! is weighted by the balance heuristic of multiple importance sampling (Veach 1997):
//! `w(x) = p(x) / sum_c g_c(free_c) |det J_c(x)|
//!       = 1 / sum_c |det J_c(x)| / (p_{a_c}(x_{a_c}) p_{b_c}(x_{b_c}))`.
//! Its denominator vanishes only where *every* pair of Jacobian columns is parallel, a singular
//! configuration that a target off the workspace's boundary curves never reaches, so the weights
//! are bounded. Proposals are drawn in rounds until the effective sample size
//! `(sum w)² / sum w²` reaches the requested multiple of the samples wanted, then `n` samples
//! are drawn by systematic resampling (no particle repeats while every normalised weight is
//! below `1/n`) and shuffled.

use super::arm::{Chain, MAX_COORDS, Prior};
use crate::analytic::solve_branches;
use crate::arm::Arm;
use crate::kinematics::{Point2, TwoLinkArm};
use rand::{Rng, RngExt};

/// The exact posterior sampler for one arm.
#[derive(Debug, Clone)]
pub struct ExactSampler<'a> {
    chain: &'a Chain,
    prior: &'a Prior,
    /// The solved pairs, one per chart.
    charts: Vec<(usize, usize)>,
    /// Proposals per chart per round. Default 2,048.
    pub batch: usize,
    /// The effective sample size to reach, as a multiple of the samples drawn. Default 10.
    pub ess_factor: f64,
    /// Proposals at most (over every chart and round) before giving up on the ESS target.
    /// Default 4,194,304.
    pub max_proposals: usize,
}

/// Weighted solutions of one target: the importance-sampling pool before resampling.
#[derive(Debug, Clone, Default)]
pub struct Pool {
    /// Coordinates, `coords` per particle.
    pub x: Vec<f64>,
    /// Weight of each particle.
    pub w: Vec<f64>,
    /// Proposals drawn (free-coordinate draws over every chart).
    pub proposals: usize,
}

impl Pool {
    /// The effective sample size `(sum w)² / sum w²` (0 for an empty pool).
    pub fn ess(&self) -> f64 {
        let (s, s2) = self.w.iter().fold((0.0, 0.0), |(s, s2), &w| (s + w, s2 + w * w));
        if s2 > 0.0 { s * s / s2 } else { 0.0 }
    }
}

/// Posterior samples for one target.
#[derive(Debug, Clone, PartialEq)]
pub struct PosteriorSamples {
    /// Coordinates, `coords` per sample (empty when the target has no solution).
    pub x: Vec<f64>,
    /// Coordinates per sample.
    pub coords: usize,
    /// Effective sample size of the weighted pool they were resampled from.
    pub ess: f64,
    /// Proposals drawn.
    pub proposals: usize,
}

impl PosteriorSamples {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.x.len() / self.coords.max(1)
    }

    /// True when the target had no solution (no samples).
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }
}

/// The two closed-form solutions of a chart: the coordinates of its solved pair, per branch.
type PairSolutions = [Option<(f64, f64)>; 2];

impl<'a> ExactSampler<'a> {
    /// A sampler for `arm` with every pair of coordinates as a chart.
    pub fn new(arm: &'a Arm) -> Self {
        let n = arm.chain.coords();
        let charts = (0..n).flat_map(|a| (a + 1..n).map(move |b| (a, b))).collect();
        Self { chain: &arm.chain, prior: &arm.prior, charts, batch: 2048, ess_factor: 10.0, max_proposals: 1 << 22 }
    }

    /// The sampler of the description: only the last two joints are solved (one chart),
    /// weighted by their prior density over `|det J|`. Unbiased, but its weights have no
    /// bounded variance (see the module documentation); kept as the reference the tests
    /// compare the balanced sampler with.
    pub fn last_two_only(arm: &'a Arm) -> Self {
        let n = arm.chain.coords();
        Self { charts: vec![(n - 2, n - 1)], ..Self::new(arm) }
    }

    /// The solved pairs, one per chart.
    pub fn charts(&self) -> &[(usize, usize)] {
        &self.charts
    }

    /// Solves the pair `(a, b)` (`a < b`) for `target` with the other coordinates of `x` fixed.
    fn solve_pair(&self, x: &mut [f64], (a, b): (usize, usize), target: Point2) -> PairSolutions {
        let chain = self.chain;
        let rail = chain.rail().is_some();
        x[a] = 0.0;
        x[b] = 0.0;
        // With both solved coordinates at zero: where joint `b` (or the rail's joint `a`) sits,
        // and the offsets that the pair then turns or shifts.
        let pts = chain.points(x);
        let first = chain.first_joint();
        let tip0 = pts[pts.len() - 1];
        let pb = pts[b - first];
        let w2 = tip0 - pb;
        let l2 = w2.norm();
        if l2 < 1e-12 {
            return [None, None];
        }
        let arg2 = w2.y.atan2(w2.x);
        if rail && a == 0 {
            // tip = (0, r) + pb + R(q_b) w2: the horizontal fixes the link's direction (two
            // ways), the vertical then fixes the rail.
            let c = (target.x - pb.x) / l2;
            if !(-1.0..=1.0).contains(&c) {
                return [None, None];
            }
            let phi = c.acos();
            return [phi, -phi].map(|phi| Some((target.y - pb.y - l2 * phi.sin(), phi - arg2)));
        }
        // Two revolute joints: tip = pa + R(q_a) (w1 + R(q_b) w2), the two-link arm with links
        // |w1| and |w2| whose shoulder angle is q_a + arg1 and elbow angle q_b + arg2 - arg1:
        // the closed form of [`crate::analytic`] solves it. A pair the two-link arm refuses (a
        // virtual link under 1e-6 m, or under 1e-4 of the other) is skipped: such pairs fill a
        // set of prior mass near zero, where this chart's `|det J_ab| <= |w1| |w2|` nearly
        // vanishes anyway.
        let pa = pts[a - first];
        let w1 = pb - pa;
        let Ok(pair) = TwoLinkArm::new(w1.norm(), l2) else {
            return [None, None];
        };
        let branches = solve_branches(&pair, target - pa);
        if branches.unreachable.is_some() {
            return [None, None];
        }
        let arg1 = w1.y.atan2(w1.x);
        [branches.down, branches.up].map(|p| Some((p.shoulder - arg1, p.elbow + arg1 - arg2)))
    }

    /// The balance-heuristic weight of a solution `x` (see the module documentation); `with_jacobian`
    /// false drops the Jacobian factor (only for showing that the tests catch it).
    fn weight(&self, x: &[f64], cols: &mut [Point2], with_jacobian: bool) -> f64 {
        self.chain.jacobian(x, cols);
        // Each coordinate's prior density once (every chart pairs two of them).
        let mut density = [0.0; MAX_COORDS];
        for (i, p) in density[..x.len()].iter_mut().enumerate() {
            *p = self.prior.density(i, x[i]);
        }
        let mut denom = 0.0;
        for &(a, b) in &self.charts {
            let det = if with_jacobian { (cols[a].x * cols[b].y - cols[a].y * cols[b].x).abs() } else { 1.0 };
            denom += det / (density[a] * density[b]);
        }
        if denom.is_finite() && denom > 0.0 { 1.0 / denom } else { 0.0 }
    }

    /// One round: `batch` proposals per chart, their solutions and weights appended to `pool`.
    fn round<R: Rng + ?Sized>(&self, target: Point2, rng: &mut R, pool: &mut Pool, with_jacobian: bool) {
        let n = self.chain.coords();
        let mut x = [0.0; MAX_COORDS];
        let mut cols = [Point2::zeros(); MAX_COORDS];
        for &(a, b) in &self.charts {
            'proposal: for _ in 0..self.batch {
                for i in (0..n).filter(|&i| i != a && i != b) {
                    x[i] = self.prior.propose(i, rng);
                    if self.prior.density(i, x[i]) == 0.0 {
                        continue 'proposal; // outside the range: no posterior mass
                    }
                }
                for (qa, qb) in self.solve_pair(&mut x[..n], (a, b), target).into_iter().flatten() {
                    x[a] = qa;
                    x[b] = qb;
                    if !self.chain.fit_angles(&mut x[..n]) {
                        continue;
                    }
                    let w = self.weight(&x[..n], &mut cols, with_jacobian);
                    if w > 0.0 {
                        pool.x.extend_from_slice(&x[..n]);
                        pool.w.push(w);
                    }
                }
            }
        }
        pool.proposals += self.batch * self.charts.len();
    }

    /// Draws rounds of proposals until the pool's effective sample size reaches `ess` or
    /// [`ExactSampler::max_proposals`] are spent (at least one round).
    pub fn pool<R: Rng + ?Sized>(&self, target: Point2, ess: f64, rng: &mut R) -> Pool {
        self.pool_with(target, ess, rng, true)
    }

    fn pool_with<R: Rng + ?Sized>(&self, target: Point2, ess: f64, rng: &mut R, with_jacobian: bool) -> Pool {
        let mut pool = Pool::default();
        if !(target.x.is_finite() && target.y.is_finite()) {
            return pool;
        }
        let (mut s, mut s2, mut seen) = (0.0, 0.0, 0);
        loop {
            self.round(target, rng, &mut pool, with_jacobian);
            for &w in &pool.w[seen..] {
                s += w;
                s2 += w * w;
            }
            seen = pool.w.len();
            let reached = s2 > 0.0 && s * s / s2 >= ess;
            // With nothing free (a two-joint chain) every proposal gives the same two answers.
            let exhausted = self.chain.coords() <= 2;
            // A target without a single solution after a few rounds is off the workspace.
            let hopeless = pool.w.is_empty() && pool.proposals >= 8 * self.batch * self.charts.len();
            if reached || hopeless || exhausted || pool.proposals + self.batch * self.charts.len() > self.max_proposals
            {
                return pool;
            }
        }
    }

    /// `n` exact posterior samples for `target`, resampled from a pool whose effective sample
    /// size is at least [`ExactSampler::ess_factor`] times `n` (unless the proposal budget ran
    /// out first: the returned ESS says).
    pub fn sample<R: Rng + ?Sized>(&self, target: Point2, n: usize, rng: &mut R) -> PosteriorSamples {
        self.sample_with(target, n, rng, true)
    }

    /// [`ExactSampler::sample`] with the Jacobian factor dropped from the weights: wrong on
    /// purpose, for the test that shows the rejection-sampling check catches the mistake.
    #[doc(hidden)]
    pub fn sample_without_jacobian<R: Rng + ?Sized>(&self, target: Point2, n: usize, rng: &mut R) -> PosteriorSamples {
        self.sample_with(target, n, rng, false)
    }

    fn sample_with<R: Rng + ?Sized>(&self, target: Point2, n: usize, rng: &mut R, jac: bool) -> PosteriorSamples {
        let coords = self.chain.coords();
        let pool = self.pool_with(target, self.ess_factor * n as f64, rng, jac);
        let ess = pool.ess();
        let x = resample(&pool, coords, n, rng);
        PosteriorSamples { x, coords, ess, proposals: pool.proposals }
    }
}

/// `n` particles of `pool` by systematic resampling over a random order of the pool, shuffled
/// (empty for an empty pool).
///
/// Over the pool's own order (chart by chart) the picks would be stratified, more evenly spread
/// than independent draws, which biases the unbiased MMD between two exact sets below zero; over
/// a random order they are as good as independent, and no particle is picked twice unless its
/// normalised weight exceeds `1/n`.
pub fn resample<R: Rng + ?Sized>(pool: &Pool, coords: usize, n: usize, rng: &mut R) -> Vec<f64> {
    let total: f64 = pool.w.iter().sum();
    if pool.w.is_empty() || total.is_nan() || total <= 0.0 || n == 0 {
        return Vec::new();
    }
    let mut order: Vec<usize> = (0..pool.w.len()).collect();
    shuffle(&mut order, rng);
    let step = total / n as f64;
    let mut u = rng.random::<f64>() * step;
    let mut picked: Vec<usize> = Vec::with_capacity(n);
    let mut cum = 0.0;
    for &i in &order {
        cum += pool.w[i];
        while picked.len() < n && u < cum {
            picked.push(i);
            u += step;
        }
    }
    // Rounding can leave the last pick or two short of the end: they go to the last particle
    // with weight.
    let last = order.iter().rev().copied().find(|&i| pool.w[i] > 0.0).unwrap_or(0);
    picked.resize(n, last);
    shuffle(&mut picked, rng);
    picked.iter().flat_map(|&i| pool.x[i * coords..(i + 1) * coords].iter().copied()).collect()
}

/// The spread of a set of points `x` (`d` values each, such as a posterior's samples): the root
/// of the trace of their covariance, in the coordinates' units (0 for fewer than two points).
pub fn spread(x: &[f64], d: usize) -> f64 {
    let n = (x.len() / d.max(1)) as f64;
    if n < 2.0 {
        return 0.0;
    }
    (0..d)
        .map(|k| {
            let mean = x.iter().skip(k).step_by(d).sum::<f64>() / n;
            x.iter().skip(k).step_by(d).map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)
        })
        .sum::<f64>()
        .sqrt()
}

/// Fisher-Yates.
fn shuffle<T, R: Rng + ?Sized>(v: &mut [T], rng: &mut R) {
    for i in (1..v.len()).rev() {
        let k = rng.random_range(0..=i);
        v.swap(i, k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::ArmKind;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn every_solution_reaches_the_target_inside_the_limits() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for kind in [ArmKind::Rail3, ArmKind::ThreeR] {
            let arm = kind.arm();
            let sampler = ExactSampler::new(&arm);
            assert_eq!(sampler.charts().len(), arm.coords() * (arm.coords() - 1) / 2);
            let mut x = vec![0.0; arm.coords()];
            for _ in 0..20 {
                arm.prior.sample(&mut rng, &mut x);
                let target = arm.chain.tip(&x);
                let pool = ExactSampler { batch: 256, ..sampler.clone() }.pool(target, 0.0, &mut rng);
                assert!(!pool.w.is_empty(), "{kind}: no solution for {target}");
                for p in pool.x.chunks(arm.coords()) {
                    assert!((arm.chain.tip(p) - target).norm() < 1e-9, "{kind}: {p:?}");
                    assert!(arm.chain.within_limits(p), "{kind}: {p:?}");
                }
            }
        }
    }

    #[test]
    fn reaches_the_requested_effective_sample_size() {
        let arm = ArmKind::Rail3.arm();
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let s = ExactSampler::new(&arm).sample(Point2::new(1.5, 0.0), 200, &mut rng);
        assert_eq!(s.len(), 200);
        assert!(s.ess >= 2000.0, "{}", s.ess);
        let off = ExactSampler::new(&arm).sample(Point2::new(5.0, 0.0), 10, &mut rng);
        assert!(off.is_empty() && off.ess == 0.0);
    }

    #[test]
    fn a_two_joint_chain_has_two_answers_in_one_round() {
        let arm = ArmKind::TwoR.arm();
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let s = ExactSampler::new(&arm).sample(Point2::new(1.0, 0.8), 100, &mut rng);
        assert_eq!(s.proposals, 2048);
        let up = s.x.chunks(2).filter(|x| x[1] < 0.0).count();
        assert!(s.x.chunks(2).all(|x| (arm.chain.tip(x) - Point2::new(1.0, 0.8)).norm() < 1e-9));
        assert!((40..=60).contains(&up), "{up} of 100 elbow-up");
    }

    #[test]
    fn systematic_resampling_keeps_the_weights() {
        let pool = Pool { x: vec![0.0, 1.0, 2.0], w: vec![1.0, 0.0, 3.0], proposals: 3 };
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let r = resample(&pool, 1, 400, &mut rng);
        assert_eq!(r.iter().filter(|&&v| v == 0.0).count(), 100);
        assert_eq!(r.iter().filter(|&&v| v == 2.0).count(), 300);
        assert!(resample(&Pool::default(), 1, 10, &mut rng).is_empty());
    }
}
