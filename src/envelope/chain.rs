//! The envelope on a redundant chain: the learned part proposes coordinates, the classical part
//! disposes. The checks are the two-link pose heads' ([`super::Envelope::verdict_as`] with
//! [`super::Fit::Pose`]) on the chain's nominal model: a finite proposal, every coordinate in its
//! range (angles modulo a turn, the rail as given), no joint turned further than the joint-step
//! limit allows from where the arm is (angles only: the rail's travel is in metres, which a
//! speed in rad/s does not bound), and a tip within [`EnvelopeConfig::max_fk_miss`] of the
//! target. A chain has no closed form, so a rejected proposal falls back to damped least
//! squares from where the arm is, which reports whether it converged.

use super::{EnvelopeConfig, Reason};
use crate::arm::Arm;
use crate::kinematics::Point2;
use crate::kinematics::serial::Coords;
use crate::solver::{IkSolver, Solution, SolveStatus};

/// The envelope's checks on one chain.
#[derive(Debug, Clone, Copy)]
pub struct ChainEnvelope<'a> {
    /// The nominal arm every check runs on.
    pub arm: &'a Arm,
    /// Tuning (its fallback is always damped least squares on a chain).
    pub config: EnvelopeConfig,
}

impl ChainEnvelope<'_> {
    /// The checks that can fire on this chain, in the order they run.
    pub fn active_checks(&self) -> Vec<Reason> {
        let chain = &self.arm.chain;
        let limited = (0..chain.coords()).any(|i| chain.is_bounded(i));
        let stepped = self.config.max_joint_step() < std::f64::consts::PI;
        Reason::ALL
            .into_iter()
            .filter(|r| match r {
                Reason::NonFinite | Reason::FkMiss => true,
                Reason::JointLimit => limited,
                Reason::JointStep => stepped,
                Reason::TrustRegion => false,
            })
            .collect()
    }

    /// Why the envelope would reject coordinates `x` for `target`, the arm being at `here`
    /// (`None`: accepted), and the proposal's FK miss on the nominal model (infinite when not
    /// finite).
    pub fn verdict(&self, x: &[f64], target: Point2, here: &[f64]) -> (Option<Reason>, f64) {
        let chain = &self.arm.chain;
        let d = chain.coords();
        if !x[..d].iter().all(|v| v.is_finite()) {
            return (Some(Reason::NonFinite), f64::INFINITY);
        }
        let miss = (chain.tip(&x[..d]) - target).norm();
        let mut fitted = x[..d].to_vec();
        let reason = if !chain.fit_angles(&mut fitted) {
            Some(Reason::JointLimit)
        } else if (0..d).filter(|&i| chain.is_angle(i)).any(|i| {
            // A joint free to turn takes the short way round; a limited one cannot.
            let turn = fitted[i] - here[i];
            let step = if chain.is_bounded(i) { turn.abs() } else { crate::kinematics::wrap_angle(turn).abs() };
            step > self.config.max_joint_step()
        }) {
            Some(Reason::JointStep)
        } else {
            (miss.is_nan() || miss > self.config.max_fk_miss).then_some(Reason::FkMiss)
        };
        (reason, miss)
    }

    /// Decides on `proposal` for `target`, the arm being at `here`: an accepted proposal counts
    /// as checked (converged, its residual the FK miss); a rejected one is replaced by
    /// `fallback`'s answer from `here`.
    pub fn review(
        &self,
        proposal: Solution<Coords>,
        target: Point2,
        here: Coords,
        fallback: &impl IkSolver<Joints = Coords>,
    ) -> (Solution<Coords>, Option<Reason>) {
        let (reason, miss) = self.verdict(&proposal.pose, target, &here);
        match reason {
            None => (Solution { status: SolveStatus::Converged, residual: Some(miss), ..proposal }, None),
            Some(r) => (fallback.solve(target, here), Some(r)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::ArmKind;
    use crate::kinematics::serial::padded;

    /// A fallback that always answers the same coordinates, converged.
    struct Fixed(Coords);

    impl IkSolver for Fixed {
        type Joints = Coords;

        fn name(&self) -> &str {
            "fixed"
        }

        fn solve(&self, _: Point2, _: Coords) -> Solution<Coords> {
            Solution { pose: self.0, status: SolveStatus::Converged, residual: Some(0.0), iterations: 1 }
        }
    }

    #[test]
    fn each_check_fires_on_what_it_guards_and_the_fallback_answers() {
        let arm = ArmKind::ThreeR.arm();
        let env = ChainEnvelope { arm: &arm, config: EnvelopeConfig::for_reach(arm.chain.reach()) };
        let here = padded(&[0.0, -1.2, 0.3]);
        let good = padded(&[0.1, -1.1, 0.2]);
        let target = arm.chain.tip(&good[..3]);
        let prop = |x: Coords| Solution { pose: x, status: SolveStatus::Unverified, residual: None, iterations: 0 };
        let fallback = Fixed(padded(&[9.0, 9.0, 9.0]));
        let (s, r) = env.review(prop(good), target, here, &fallback);
        assert_eq!((r, s.pose, s.status), (None, good, SolveStatus::Converged));
        let v = |x: &[f64], t: Point2| env.verdict(&padded(x), t, &here).0;
        assert_eq!(v(&[f64::NAN, 0.0, 0.0], target), Some(Reason::NonFinite));
        // The shoulder's range is ±90°, and no turn brings 2.0 rad into it.
        assert_eq!(v(&[2.0, 0.0, 0.0], target), Some(Reason::JointLimit));
        // A turn of the elbow by 2.65 rad (within its ±150°) in one control period is above
        // 2.5 rad/s x 1 s; a limited joint cannot take the short way round.
        assert_eq!(v(&[0.0, 1.45, 0.3], target), Some(Reason::JointStep));
        let across = env.verdict(&padded(&[0.0, 2.5, 0.3]), target, &padded(&[0.0, -2.5, 0.3])).0;
        assert_eq!(across, Some(Reason::JointStep), "5 rad the long way, not 1.3 rad through the stop");
        let far = Point2::new(target.x, target.y + 0.1);
        assert_eq!(v(&good[..3], far), Some(Reason::FkMiss));
        let (s, r) = env.review(prop(good), far, here, &fallback);
        assert_eq!((r, s.pose), (Some(Reason::FkMiss), fallback.0));
        assert_eq!(env.active_checks(), [Reason::NonFinite, Reason::JointLimit, Reason::JointStep, Reason::FkMiss]);
    }
}
