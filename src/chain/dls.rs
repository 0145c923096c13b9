//! Damped least squares for any chain, and restarts from random prior draws.
//!
//! The solver is the one of [`crate::iterative`] ([`Dls`]), which the two-link
//! [`crate::DlsSolver`] runs too; on a chain it has no singularity ramp and a tolerance of
//! 1e-6 m (the chain tuning of [`Dls::new`]). This module adds restarts: from random starts,
//! or from prior draws, until one converges.

use super::arm::{Chain, MAX_COORDS, Prior};
use crate::iterative::Dls;
pub use crate::iterative::DlsOutcome;
use crate::kinematics::Point2;
use rand::Rng;

/// Damped least squares on one chain.
pub type ChainDls<'a> = Dls<'a, Chain>;

impl Dls<'_, Chain> {
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
        let mut total = DlsOutcome { iterations: 0, starts: 0, error: f64::INFINITY, converged: false, limited: false };
        for _ in 0..max_starts.max(1) {
            start(rng, &mut x[..n]);
            let out = self.refine(x, target, self.max_iterations);
            total.iterations += out.iterations;
            total.starts += 1;
            if out.error < total.error {
                total.error = out.error;
                total.converged = out.converged;
                total.limited = out.limited;
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
    use crate::arm::ArmKind;
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
                assert!(((arm.chain.tip(&x) - target).norm() - out.error).abs() < 1e-12, "{kind}: {out:?}");
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
        crate::iterative::step(&cols[..4], &[false; 4], target - arm.chain.tip(&start), 0.0, &mut dx);
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
