//! Damped least squares for any chain, and restarts from random prior draws.
//!
//! The step is the one of [`crate::iterative`] for the two-link arm, for a `2 x n` Jacobian:
//! `dx = Jᵀ (J Jᵀ + λ² I)⁻¹ e`, with `e` the tip error, scaled down so no coordinate moves more
//! than [`ChainDls::max_step`], and clamped into the joint ranges. `λ²` follows a
//! Levenberg-Marquardt trust factor: a quarter after each step that lowered the error, four
//! times after each that did not, so the solver takes Newton-like steps far from singularities
//! and short, safe ones near them. On a redundant chain the minimum-norm step moves the start
//! as little as it can, so the answer is the solution nearest the start, not a random one.

use super::arm::{Chain, MAX_COORDS, Prior};
use crate::kinematics::Point2;
use rand::Rng;

/// Damped least squares on one chain, with its tuning.
#[derive(Debug, Clone, Copy)]
pub struct ChainDls<'a> {
    /// The chain it solves for.
    pub chain: &'a Chain,
    /// Converged once the tip is this close to the target, metres. Default 1e-6.
    pub tolerance: f64,
    /// Iterations per start. Default 64.
    pub max_iterations: u32,
    /// Largest change of one coordinate per iteration (radians or metres). Default 0.5.
    pub max_step: f64,
    /// Damping floor `λ`, metres (multiplied by the trust factor). Default 1e-3 x reach.
    pub damping: f64,
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
}

impl<'a> ChainDls<'a> {
    /// A solver for `chain` with the default tuning.
    pub fn new(chain: &'a Chain) -> Self {
        Self { chain, tolerance: 1e-6, max_iterations: 64, max_step: 0.5, damping: 1e-3 * chain.reach() }
    }

    /// Refines `x` in place towards `target` for at most `max_iterations` iterations; `x` is
    /// first clamped into the ranges (a non-finite coordinate becomes the middle of its range).
    pub fn refine(&self, x: &mut [f64], target: Point2, max_iterations: u32) -> DlsOutcome {
        let chain = self.chain;
        let n = chain.coords();
        for (i, v) in x.iter_mut().enumerate().take(n) {
            if !v.is_finite() {
                let (lo, hi) = chain.range(i);
                *v = 0.5 * (lo + hi);
            }
        }
        chain.clamp(x);
        let tol = if self.tolerance.is_finite() { self.tolerance.max(0.0) } else { 1e-6 };
        if !(target.x.is_finite() && target.y.is_finite()) {
            return DlsOutcome { iterations: 0, starts: 1, error: f64::INFINITY, converged: false };
        }
        let mut cols = [Point2::zeros(); MAX_COORDS];
        let mut next = [0.0; MAX_COORDS];
        let mut err = target - chain.tip(x);
        let mut norm = err.norm();
        let floor_sq = self.damping * self.damping;
        let mut trust = 1.0;
        let mut iterations = 0;
        while norm > tol && iterations < max_iterations {
            iterations += 1;
            chain.jacobian(x, &mut cols);
            // Active set: a coordinate held at a limit that the step pushes further out drops
            // out of the Jacobian, and the step is taken again over the others.
            let mut pinned = [false; MAX_COORDS];
            let mut biggest;
            loop {
                biggest = self.step(&cols[..n], &pinned[..n], err, floor_sq * trust, &mut next[..n]);
                let mut more = false;
                for i in 0..n {
                    let (lo, hi) = chain.range(i);
                    let bounded = !chain.is_angle(i) || hi - lo < 2.0 * std::f64::consts::PI - 1e-12;
                    if !pinned[i] && bounded && ((x[i] <= lo && next[i] < 0.0) || (x[i] >= hi && next[i] > 0.0)) {
                        pinned[i] = true;
                        more = true;
                    }
                }
                if !more {
                    break;
                }
            }
            if !biggest.is_finite() {
                break;
            }
            let scale = if biggest > self.max_step { self.max_step / biggest } else { 1.0 };
            for i in 0..n {
                next[i] = x[i] + scale * next[i];
            }
            chain.clamp(&mut next[..n]);
            if next[..n].iter().zip(&x[..n]).all(|(a, b)| (a - b).abs() < 1e-15) {
                break; // stalled: against a limit, or at a saddle of the error
            }
            let next_err = target - chain.tip(&next[..n]);
            let next_norm = next_err.norm();
            if next_norm < norm {
                x[..n].copy_from_slice(&next[..n]);
                err = next_err;
                norm = next_norm;
                trust = (trust * 0.25).max(1e-9);
            } else {
                trust = (trust * 4.0).min(1e9);
            }
        }
        DlsOutcome { iterations, starts: 1, error: norm, converged: norm <= tol }
    }

    /// The damped step `Jᵀ (J Jᵀ + λ² I)⁻¹ e` over the coordinates not `pinned`, into `dx`;
    /// returns its largest magnitude (NaN when the system is singular).
    fn step(&self, cols: &[Point2], pinned: &[bool], err: Point2, lambda_sq: f64, dx: &mut [f64]) -> f64 {
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

    /// Solves for `target` from random starts: each start is `start(rng, x)`, refined for
    /// [`ChainDls::max_iterations`]; stops at the first converged answer or after `max_starts`
    /// starts, leaving the best answer in `x`.
    pub fn with_restarts<R: Rng + ?Sized>(
        &self,
        x: &mut [f64],
        target: Point2,
        max_starts: u32,
        rng: &mut R,
        mut start: impl FnMut(&mut R, &mut [f64]),
    ) -> DlsOutcome {
        let n = self.chain.coords();
        let mut best = [0.0; MAX_COORDS];
        let mut total = DlsOutcome { iterations: 0, starts: 0, error: f64::INFINITY, converged: false };
        for _ in 0..max_starts.max(1) {
            start(rng, &mut x[..n]);
            let out = self.refine(x, target, self.max_iterations);
            total.iterations += out.iterations;
            total.starts += 1;
            if out.error < total.error {
                total.error = out.error;
                total.converged = out.converged;
                best[..n].copy_from_slice(&x[..n]);
            }
            if out.converged {
                return total;
            }
        }
        x[..n].copy_from_slice(&best[..n]);
        total
    }

    /// [`ChainDls::with_restarts`] with every start drawn from `prior`.
    pub fn from_prior<R: Rng + ?Sized>(
        &self,
        x: &mut [f64],
        target: Point2,
        prior: &Prior,
        max_starts: u32,
        rng: &mut R,
    ) -> DlsOutcome {
        self.with_restarts(x, target, max_starts, rng, |rng, x| prior.sample(rng, x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::ArmKind;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn converges_on_reachable_targets_from_prior_starts() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for kind in [ArmKind::ThreeR, ArmKind::Rail3, ArmKind::TwoR] {
            let arm = kind.arm();
            let dls = ChainDls::new(&arm.chain);
            let mut x = vec![0.0; arm.coords()];
            let mut converged = 0;
            for _ in 0..200 {
                arm.prior.sample(&mut rng, &mut x);
                let target = arm.chain.tip(&x);
                let out = dls.from_prior(&mut x, target, &arm.prior, 8, &mut rng);
                assert!(arm.chain.within_limits(&x), "{kind}: {x:?}");
                assert!((arm.chain.tip(&x) - target).norm() - out.error < 1e-12);
                converged += usize::from(out.converged);
            }
            assert!(converged >= 199, "{kind}: {converged} of 200");
        }
    }

    #[test]
    fn minimum_norm_steps_keep_the_nearest_solution() {
        let arm = ArmKind::Rail3.arm();
        let dls = ChainDls::new(&arm.chain);
        let start = [0.1, 0.2, -0.3, 0.4];
        let target = arm.chain.tip(&start) + Point2::new(0.01, -0.01);
        let mut x = start;
        let out = dls.refine(&mut x, target, 64);
        assert!(out.converged && out.iterations <= 6, "{out:?}");
        let moved: f64 = x.iter().zip(&start).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
        // The least-norm change that moves the tip by the error, to first order: Jᵀ (J Jᵀ)⁻¹ e.
        let mut cols = [Point2::zeros(); MAX_COORDS];
        arm.chain.jacobian(&start, &mut cols);
        let mut dx = [0.0; 4];
        dls.step(&cols[..4], &[false; 4], target - arm.chain.tip(&start), 0.0, &mut dx);
        let least = dx.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!((moved - least).abs() < 0.1 * least, "moved {moved}, least-norm {least}");
    }

    #[test]
    fn unreachable_and_hostile_targets_end_cleanly() {
        let arm = ArmKind::ThreeR.arm();
        let dls = ChainDls::new(&arm.chain);
        let mut x = [f64::NAN, 0.0, f64::INFINITY];
        let out = dls.refine(&mut x, Point2::new(10.0, 0.0), 64);
        assert!(!out.converged && (out.error - 7.6).abs() < 1e-6, "{out:?}");
        assert!(x.iter().all(|v| v.is_finite()) && arm.chain.within_limits(&x));
        let out = dls.refine(&mut x, Point2::new(f64::NAN, 0.0), 64);
        assert!(!out.converged && out.iterations == 0);
    }
}
