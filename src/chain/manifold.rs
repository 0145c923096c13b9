//! Self-motion: moving a redundant chain along the solution manifold of a target, so its shape
//! changes while the tip stays put.
//!
//! The manifold `f(x) = y*` has the null space of the Jacobian as its tangent. A walk takes
//! small steps along the tangent direction nearest the previous one (so it does not turn back),
//! and after each step pulls the tip back onto the target with damped least squares (a
//! predictor-corrector continuation). It stops early at a coordinate's bound.

use super::arm::{Chain, MAX_COORDS};
use crate::iterative::Dls;
use crate::kinematics::Point2;

/// Largest step along the manifold, in coordinate units (radians; metres for a rail).
pub const STEP: f64 = 0.02;

/// Where a walk ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Walk {
    /// Distance travelled along the manifold, in coordinate units (signed as asked).
    pub travelled: f64,
    /// Tip error at the end, metres.
    pub tip_error: f64,
    /// True when a bound (or a singular configuration) stopped the walk before the distance.
    pub stopped: bool,
}

/// The unit tangent of the manifold at `x` nearest `prefer` (its projection onto the null
/// space of the Jacobian, normalised), or `None` where that projection vanishes.
pub fn tangent(chain: &Chain, x: &[f64], prefer: &[f64], out: &mut [f64]) -> Option<()> {
    let n = chain.coords();
    let mut cols = [Point2::zeros(); MAX_COORDS];
    chain.jacobian(x, &mut cols);
    // P v = v - Jᵀ (J Jᵀ)⁻¹ J v, with J Jᵀ the 2x2 Gram matrix of the Jacobian's rows.
    let (mut a, mut b, mut c) = (0.0, 0.0, 0.0);
    let (mut jx, mut jy) = (0.0, 0.0);
    for (col, &v) in cols[..n].iter().zip(prefer) {
        a += col.x * col.x;
        b += col.x * col.y;
        c += col.y * col.y;
        jx += col.x * v;
        jy += col.y * v;
    }
    let det = a * c - b * b;
    if det.is_nan() || det.abs() <= 1e-12 * (a * c).max(1e-300) {
        return None;
    }
    let (u, w) = ((c * jx - b * jy) / det, (a * jy - b * jx) / det);
    let mut norm = 0.0;
    for i in 0..n {
        out[i] = prefer[i] - (cols[i].x * u + cols[i].y * w);
        norm += out[i] * out[i];
    }
    let norm = norm.sqrt();
    if norm.is_nan() || norm <= 1e-9 {
        return None;
    }
    out[..n].iter_mut().for_each(|v| *v /= norm);
    Some(())
}

/// Walks `x` (on or near the manifold of `target`) a signed `distance` along the manifold, in
/// place. The direction at the start is the tangent nearest the last coordinate's axis (the
/// wrist turning forward), flipped for a negative distance, so the same distance from the same
/// start always lands on the same configuration.
pub fn walk(chain: &Chain, x: &mut [f64], target: Point2, distance: f64) -> Walk {
    let n = chain.coords();
    let dls = Dls { tolerance: 1e-10, ..Dls::new(chain) };
    let mut end = Walk { travelled: 0.0, tip_error: f64::INFINITY, stopped: false };
    if !(distance.is_finite() && target.x.is_finite() && target.y.is_finite()) {
        end.stopped = true;
        end.tip_error = (chain.tip(&x[..n]) - target).norm();
        return end;
    }
    dls.refine(x, target, 32);
    let mut dir = [0.0; MAX_COORDS];
    let mut prefer = [0.0; MAX_COORDS];
    prefer[n - 1] = distance.signum();
    let mut left = distance.abs();
    let mut next = [0.0; MAX_COORDS];
    while left > 0.0 {
        if tangent(chain, &x[..n], &prefer[..n], &mut dir).is_none() {
            end.stopped = true;
            break;
        }
        let h = left.min(STEP);
        for i in 0..n {
            next[i] = x[i] + h * dir[i];
        }
        // A joint that turns freely wraps into its range; a bound stops the walk.
        if !chain.fit_angles(&mut next[..n]) || !chain.within_limits(&next[..n]) {
            end.stopped = true;
            break;
        }
        dls.refine(&mut next, target, 16);
        if !chain.fit_angles(&mut next[..n])
            || !chain.within_limits(&next[..n])
            || (chain.tip(&next[..n]) - target).norm() > 1e-6
        {
            end.stopped = true;
            break;
        }
        x[..n].copy_from_slice(&next[..n]);
        prefer[..n].copy_from_slice(&dir[..n]);
        left -= h;
        end.travelled += h;
    }
    end.travelled *= distance.signum();
    end.tip_error = (chain.tip(&x[..n]) - target).norm();
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::ArmKind;

    #[test]
    fn walking_changes_the_shape_and_keeps_the_tip() {
        for (kind, start) in [(ArmKind::ThreeR, &[0.3, 0.6, -0.4][..]), (ArmKind::Rail3, &[0.1, 0.3, 0.4, -0.5][..])] {
            let arm = kind.arm();
            let target = arm.chain.tip(start);
            for distance in [0.5, -0.5] {
                let mut x = start.to_vec();
                let w = walk(&arm.chain, &mut x, target, distance);
                assert!(w.tip_error < 1e-6, "{kind}: {w:?}");
                assert!((w.travelled - distance).abs() < 1e-9, "{kind}: {w:?}");
                let moved: f64 = x.iter().zip(start).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
                assert!(moved > 0.3, "{kind}: moved {moved}");
            }
            // Opposite walks go opposite ways.
            let (mut a, mut b) = (start.to_vec(), start.to_vec());
            walk(&arm.chain, &mut a, target, 0.2);
            walk(&arm.chain, &mut b, target, -0.2);
            let dot: f64 = (0..start.len()).map(|i| (a[i] - start[i]) * (b[i] - start[i])).sum();
            assert!(dot < 0.0, "{kind}");
        }
    }

    #[test]
    fn a_walk_stops_at_a_bound_and_on_hostile_input() {
        let arm = ArmKind::ThreeR.arm();
        // A target near the shoulder's bound: the limits cut its manifold into an arc, so a
        // long walk ends on a bound one way or the other (a closed loop would never stop).
        let start = [1.45, 2.4, 0.3];
        let target = arm.chain.tip(&start);
        let mut stops = 0;
        for distance in [100.0, -100.0] {
            let mut x = start;
            let w = walk(&arm.chain, &mut x, target, distance);
            assert!(w.tip_error < 1e-6 && arm.chain.within_limits(&x), "{w:?}");
            stops += usize::from(w.stopped && w.travelled.abs() < 100.0);
        }
        assert!(stops >= 1);
        let mut x = start;
        assert!(walk(&arm.chain, &mut x, target, f64::NAN).stopped);
        assert!(walk(&arm.chain, &mut x, Point2::new(f64::NAN, 0.0), 0.1).stopped);
    }
}
