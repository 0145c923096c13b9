//! The arm itself: validated link lengths and joint limits, forward kinematics, the Jacobian,
//! and the mismatched "real" arm behind a nominal model.

use super::pose::{Point2, Pose, wrap_angle};
use super::serial::{SerialArm, revolute_column};
use nalgebra::Matrix2;
use serde::{Deserialize, Serialize};
use std::f64::consts::PI;

/// Why an arm description was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArmError {
    /// A link length was not a finite number in [`MIN_LENGTH`, `MAX_LENGTH`] metres.
    #[error("link length {name} must be a number from 1e-6 to 1e6 metres, got {}", crate::stats::fmt_num(*value))]
    BadLength {
        /// Which link (`l1` or `l2`).
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// The longer link is more than [`MAX_LENGTH_RATIO`] times the shorter one.
    #[error(
        "the longer link may be at most 10000 times the shorter one, got l1 = {}, l2 = {}",
        crate::stats::fmt_num(*l1),
        crate::stats::fmt_num(*l2)
    )]
    BadRatio {
        /// Upper-arm length given.
        l1: f64,
        /// Forearm length given.
        l2: f64,
    },
    /// A joint offset was not a finite number.
    #[error("joint offsets must be finite, got ({shoulder}, {elbow})")]
    BadOffset {
        /// Shoulder offset given.
        shoulder: f64,
        /// Elbow offset given.
        elbow: f64,
    },
    /// A joint range was empty, reversed, not finite, or reached past [`MAX_JOINT_ANGLE`].
    #[error(
        "joint range for {joint} must have min < max, both within ±720 degrees (±4π rad), got [{}, {}] rad",
        crate::stats::fmt_num(*min),
        crate::stats::fmt_num(*max)
    )]
    BadLimits {
        /// Which joint.
        joint: &'static str,
        /// Lower bound given.
        min: f64,
        /// Upper bound given.
        max: f64,
    },
}

/// The shortest link length accepted, metres.
pub const MIN_LENGTH: f64 = 1e-6;
/// The longest link length accepted, metres.
pub const MAX_LENGTH: f64 = 1e6;
/// The largest ratio of the longer link to the shorter one.
pub const MAX_LENGTH_RATIO: f64 = 1e4;
/// The largest joint-limit magnitude accepted, radians (two whole turns, 720 degrees).
pub const MAX_JOINT_ANGLE: f64 = 4.0 * PI;

/// The closed range of angles one joint may take, radians.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct JointLimits {
    /// Smallest allowed angle.
    pub min: f64,
    /// Largest allowed angle.
    pub max: f64,
}

impl JointLimits {
    /// No limit: a joint that turns all the way round.
    pub const FULL: JointLimits = JointLimits { min: -PI, max: PI };

    /// A range `[min, max]`, checked.
    pub fn new(min: f64, max: f64, joint: &'static str) -> Result<Self, ArmError> {
        let bounded = |v: f64| v.is_finite() && v.abs() <= MAX_JOINT_ANGLE * (1.0 + 1e-12);
        if !(bounded(min) && bounded(max) && min < max) {
            return Err(ArmError::BadLimits { joint, min, max });
        }
        Ok(Self { min, max })
    }

    /// True when the range covers a whole turn, so every angle is admissible.
    pub fn is_full_turn(&self) -> bool {
        self.max - self.min >= 2.0 * PI - 1e-12
    }

    /// The representative of `angle` (modulo a whole turn) that lies inside the range, if any.
    #[inline]
    pub fn fit(&self, angle: f64) -> Option<f64> {
        if angle >= self.min && angle <= self.max {
            return Some(angle);
        }
        if !angle.is_finite() {
            return None;
        }
        let tol = 1e-12;
        // Shift `angle` by whole turns to the first copy at or above `min`.
        let turns = ((self.min - tol - angle) / (2.0 * PI)).ceil();
        let candidate = angle + turns * 2.0 * PI;
        (candidate <= self.max + tol).then(|| candidate.clamp(self.min, self.max))
    }

    /// The admissible angle nearest to `angle` (on the circle, measured by wrapped distance).
    pub fn clamp(&self, angle: f64) -> f64 {
        if let Some(a) = self.fit(angle) {
            return a;
        }
        let to_min = wrap_angle(angle - self.min).abs();
        let to_max = wrap_angle(angle - self.max).abs();
        if to_min <= to_max { self.min } else { self.max }
    }
}

/// A planar two-link arm with link lengths and joint limits, validated on construction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TwoLinkArm {
    l1: f64,
    l2: f64,
    limits: [JointLimits; 2],
}

impl std::fmt::Display for TwoLinkArm {
    /// The arm as the command line takes it: `--lengths L1,L2`, and `--elbow-limits MIN,MAX`
    /// (degrees) when the elbow is limited.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--lengths {},{}", self.l1, self.l2)?;
        let elbow = self.limits[1];
        if elbow != JointLimits::FULL {
            write!(f, " --elbow-limits {},{}", elbow.min.to_degrees(), elbow.max.to_degrees())?;
        }
        Ok(())
    }
}

impl Default for TwoLinkArm {
    /// Unit links, joints free to turn all the way round.
    fn default() -> Self {
        Self { l1: 1.0, l2: 1.0, limits: [JointLimits::FULL; 2] }
    }
}

impl TwoLinkArm {
    /// An arm with the given link lengths and unlimited joints.
    ///
    /// Each length must lie in [`MIN_LENGTH`]..=[`MAX_LENGTH`] metres and the longer link may be
    /// at most [`MAX_LENGTH_RATIO`] times the shorter: outside that, the law of cosines loses
    /// every significant digit (or overflows) and the answers would be silently wrong.
    pub fn new(l1: f64, l2: f64) -> Result<Self, ArmError> {
        for (name, value) in [("l1", l1), ("l2", l2)] {
            if !(value.is_finite() && (MIN_LENGTH..=MAX_LENGTH).contains(&value)) {
                return Err(ArmError::BadLength { name, value });
            }
        }
        if l1.max(l2) > MAX_LENGTH_RATIO * l1.min(l2) {
            return Err(ArmError::BadRatio { l1, l2 });
        }
        Ok(Self { l1, l2, limits: [JointLimits::FULL; 2] })
    }

    /// Checks an arm that did not come through [`TwoLinkArm::new`] (one read from a file):
    /// the same length, ratio and joint-limit rules.
    pub fn validate(&self) -> Result<(), ArmError> {
        let arm = TwoLinkArm::new(self.l1, self.l2)?;
        arm.with_limits(self.limits[0], self.limits[1]).map(|_| ())
    }

    /// The same arm with joint limits `[shoulder, elbow]`.
    pub fn with_limits(mut self, shoulder: JointLimits, elbow: JointLimits) -> Result<Self, ArmError> {
        self.limits = [
            JointLimits::new(shoulder.min, shoulder.max, "shoulder")?,
            JointLimits::new(elbow.min, elbow.max, "elbow")?,
        ];
        Ok(self)
    }

    /// Upper-arm length.
    pub fn l1(&self) -> f64 {
        self.l1
    }

    /// Forearm length.
    pub fn l2(&self) -> f64 {
        self.l2
    }

    /// Joint limits, shoulder then elbow.
    pub fn limits(&self) -> [JointLimits; 2] {
        self.limits
    }

    /// Total reach `l1 + l2`.
    pub fn reach(&self) -> f64 {
        self.l1 + self.l2
    }

    /// Radius of the unreachable hole `|l1 - l2|`.
    pub fn inner_radius(&self) -> f64 {
        (self.l1 - self.l2).abs()
    }

    /// The curves that bound the tips the arm reaches inside its joint ranges, each a polyline
    /// of `n + 1` points: where the arm is straight or folded with its elbow inside its range
    /// (both joints free: the outer and the inner circle), and, for a joint that does not turn
    /// all the way round, each end of its range held while the other joint sweeps its own. The
    /// boundary of the reachable set lies on these curves.
    pub fn outline(&self, n: usize) -> Vec<Vec<Point2>> {
        let n = n.max(1);
        let [shoulder, elbow] = self.limits;
        let sweep = |r: JointLimits| (0..=n).map(move |i| r.min + (r.max - r.min) * i as f64 / n as f64);
        let mut curves: Vec<Vec<Point2>> = Vec::new();
        // Straight (elbow 0) and folded (elbow π; a point when the links are equal).
        for folded in [0.0, PI] {
            if let Some(e) = elbow.fit(folded).or_else(|| elbow.fit(-folded))
                && (folded == 0.0 || self.inner_radius() > 1e-12)
            {
                curves.push(sweep(shoulder).map(|s| self.tip(Pose::new(s, e))).collect());
            }
        }
        if !shoulder.is_full_turn() {
            for s in [shoulder.min, shoulder.max] {
                curves.push(sweep(elbow).map(|e| self.tip(Pose::new(s, e))).collect());
            }
        }
        if !elbow.is_full_turn() {
            for e in [elbow.min, elbow.max] {
                curves.push(sweep(shoulder).map(|s| self.tip(Pose::new(s, e))).collect());
            }
        }
        curves
    }

    /// Positions of the base, the elbow joint and the tip.
    pub fn joints(&self, pose: Pose) -> [Point2; 3] {
        let (s1, c1) = pose.shoulder.sin_cos();
        let (s12, c12) = (pose.shoulder + pose.elbow).sin_cos();
        let elbow = Point2::new(self.l1 * c1, self.l1 * s1);
        let tip = elbow + Point2::new(self.l2 * c12, self.l2 * s12);
        [Point2::zeros(), elbow, tip]
    }

    /// Forward kinematics: the tip position.
    pub fn tip(&self, pose: Pose) -> Point2 {
        self.joints(pose)[2]
    }

    /// How far the tip of `pose` lands from `target`, metres (the FK miss).
    pub fn miss(&self, pose: Pose, target: Point2) -> f64 {
        (self.tip(pose) - target).norm()
    }

    /// The 2x2 Jacobian `d tip / d [q1, q2]`, from the same walk as [`TwoLinkArm::joints`].
    pub fn jacobian(&self, pose: Pose) -> Matrix2<f64> {
        let [base, elbow, tip] = self.joints(pose);
        Matrix2::from_columns(&[revolute_column(tip - base), revolute_column(tip - elbow)])
    }

    /// True when the pose lies inside both joint ranges (modulo whole turns).
    pub fn within_limits(&self, pose: Pose) -> bool {
        self.limits[0].fit(pose.shoulder).is_some() && self.limits[1].fit(pose.elbow).is_some()
    }

    /// The pose with each angle replaced by its admissible representative, or clamped to the
    /// nearest bound when it has none.
    pub fn clamp_to_limits(&self, pose: Pose) -> Pose {
        Pose::new(self.limits[0].clamp(pose.shoulder), self.limits[1].clamp(pose.elbow))
    }
}

/// The two-link arm as a serial arm: coordinates `[shoulder, elbow]`.
impl SerialArm for TwoLinkArm {
    #[inline]
    fn coords(&self) -> usize {
        2
    }

    #[inline]
    fn tip(&self, x: &[f64]) -> Point2 {
        TwoLinkArm::tip(self, Pose::new(x[0], x[1]))
    }

    #[inline]
    fn jacobian(&self, x: &[f64], cols: &mut [Point2]) -> Point2 {
        let [base, elbow, tip] = self.joints(Pose::new(x[0], x[1]));
        cols[0] = revolute_column(tip - base);
        cols[1] = revolute_column(tip - elbow);
        tip
    }

    #[inline]
    fn range(&self, i: usize) -> (f64, f64) {
        (self.limits[i].min, self.limits[i].max)
    }

    #[inline]
    fn is_bounded(&self, i: usize) -> bool {
        !self.limits[i].is_full_turn()
    }

    #[inline]
    fn clamp(&self, x: &mut [f64]) -> bool {
        let mut moved = false;
        for (q, l) in x.iter_mut().zip(&self.limits) {
            let c = l.clamp(*q);
            moved |= c != *q;
            *q = c;
        }
        moved
    }

    #[inline]
    fn reach(&self) -> f64 {
        TwoLinkArm::reach(self)
    }
}

/// The "real" arm behind a nominal model: other link lengths and joint encoder offsets.
///
/// Commanding angles `q` puts the real links at `q + joint_offsets`; the sim-to-real gap is the
/// difference between this arm and the nominal model the controller believes in.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RealArm {
    /// The true geometry (and limits) of the arm.
    pub arm: TwoLinkArm,
    /// Added to every commanded angle before it reaches the links, radians.
    pub joint_offsets: Pose,
}

impl RealArm {
    /// A real arm identical to the nominal one.
    pub fn ideal(arm: TwoLinkArm) -> Self {
        Self { arm, joint_offsets: Pose::default() }
    }

    /// `nominal` with its link lengths scaled by `1 + length_error` and the joints offset.
    pub fn mismatched(nominal: &TwoLinkArm, length_error: [f64; 2], joint_offsets: Pose) -> Result<Self, ArmError> {
        if !joint_offsets.is_finite() {
            return Err(ArmError::BadOffset { shoulder: joint_offsets.shoulder, elbow: joint_offsets.elbow });
        }
        let arm = TwoLinkArm::new(nominal.l1 * (1.0 + length_error[0]), nominal.l2 * (1.0 + length_error[1]))?
            .with_limits(nominal.limits[0], nominal.limits[1])?;
        Ok(Self { arm, joint_offsets })
    }

    /// `nominal` departing from its model by `mismatch`.
    pub fn with_mismatch(nominal: &TwoLinkArm, mismatch: Mismatch) -> Result<Self, ArmError> {
        Self::mismatched(nominal, mismatch.length_error, mismatch.joint_offsets)
    }

    /// Where the tip really goes when `commanded` is sent.
    pub fn tip(&self, commanded: Pose) -> Point2 {
        self.arm.tip(self.actual(commanded))
    }

    /// How far the real tip lands from `target` when `commanded` is sent, metres.
    pub fn miss(&self, commanded: Pose, target: Point2) -> f64 {
        (self.tip(commanded) - target).norm()
    }

    /// The link angles that result from a command.
    pub fn actual(&self, commanded: Pose) -> Pose {
        commanded + self.joint_offsets
    }

    /// The command that puts the real links at `actual`.
    pub fn command_for(&self, actual: Pose) -> Pose {
        (actual - self.joint_offsets).wrapped()
    }
}

/// How a real arm departs from its nominal model: relative link-length errors and joint
/// offsets. [`Mismatch::DEFAULT`] is the one sim-to-real gap the app, the command line and the
/// experiments all start from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    /// Relative link-length errors `[upper arm, forearm]` (0.06: 6 % long).
    pub length_error: [f64; 2],
    /// Added to every commanded angle before it reaches the links, radians.
    pub joint_offsets: Pose,
}

impl Mismatch {
    /// The default gap: upper arm 6 % long, forearm 4 % short, joints offset by +0.03 rad
    /// (shoulder) and -0.05 rad (elbow).
    pub const DEFAULT: Mismatch = Mismatch { length_error: [0.06, -0.04], joint_offsets: Pose::new(0.03, -0.05) };

    /// No gap: the real arm is the nominal one.
    pub const NONE: Mismatch = Mismatch { length_error: [0.0, 0.0], joint_offsets: Pose::new(0.0, 0.0) };

    /// The real arm this mismatch makes of `nominal`, or the nominal arm itself when the
    /// mismatch is not a valid one (non-finite, or a link length of zero or less).
    pub fn real_arm(&self, nominal: &TwoLinkArm) -> RealArm {
        RealArm::with_mismatch(nominal, *self).unwrap_or(RealArm::ideal(*nominal))
    }
}

impl Default for Mismatch {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    /// Both joints free: the outline is the outer and the inner circle, whole.
    #[test]
    fn a_free_arm_is_outlined_by_its_two_circles() {
        let arm = TwoLinkArm::new(1.0, 0.6).unwrap();
        let curves = arm.outline(64);
        assert_eq!(curves.len(), 2);
        for (curve, r) in curves.iter().zip([1.6, 0.4]) {
            assert!(curve.iter().all(|p| (p.norm() - r).abs() < 1e-12), "a circle of radius {r}");
            assert!((curve[0] - curve[64]).norm() < 1e-12, "closed");
        }
        assert_eq!(TwoLinkArm::new(1.0, 1.0).unwrap().outline(8).len(), 1, "equal links: no hole");
    }

    /// With joint ranges, the outline is where the reachable set ends: wherever two neighbouring
    /// targets of a grid differ in whether an admissible pose reaches them, an outline curve
    /// passes between them.
    #[test]
    fn a_limited_arm_is_outlined_where_its_reachable_set_ends() {
        let limits = (JointLimits::new(0.3, 1.2, "shoulder").unwrap(), JointLimits::new(-1.5, 2.0, "elbow").unwrap());
        let arm = TwoLinkArm::new(0.8, 0.3).unwrap().with_limits(limits.0, limits.1).unwrap();
        let points: Vec<Point2> = arm.outline(2000).into_iter().flatten().collect();
        let reached = |p: Point2| {
            let b = crate::analytic::solve_branches(&arm, p);
            b.unreachable.is_none() && b.admissible.iter().any(|&ok| ok)
        };
        let step = 0.02;
        let (mut crossings, mut seen) = (0, 0);
        for i in 0..60 {
            for j in 0..60 {
                let p = Point2::new(-0.1 + i as f64 * step, -0.1 + j as f64 * step);
                for q in [p + Point2::new(step, 0.0), p + Point2::new(0.0, step)] {
                    if reached(p) != reached(q) {
                        crossings += 1;
                        let mid = 0.5 * (p + q);
                        seen += usize::from(points.iter().any(|c| (c - mid).norm() < step));
                    }
                }
            }
        }
        assert!(crossings > 50, "the grid crosses the boundary: {crossings}");
        assert_eq!(seen, crossings, "every crossing of the reachable set's edge lies on the outline");
    }

    use super::*;
    use approx::assert_relative_eq;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn construction_rejects_bad_lengths_and_limits() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(TwoLinkArm::new(bad, 1.0), Err(ArmError::BadLength { name: "l1", .. })));
            assert!(matches!(TwoLinkArm::new(1.0, bad), Err(ArmError::BadLength { name: "l2", .. })));
        }
        let arm = TwoLinkArm::new(1.0, 0.5).unwrap();
        let empty = JointLimits { min: 1.0, max: 1.0 };
        assert!(matches!(
            arm.with_limits(empty, JointLimits::FULL),
            Err(ArmError::BadLimits { joint: "shoulder", .. })
        ));
        let nan = JointLimits { min: f64::NAN, max: 1.0 };
        assert!(matches!(arm.with_limits(JointLimits::FULL, nan), Err(ArmError::BadLimits { joint: "elbow", .. })));
        assert!(matches!(
            RealArm::mismatched(&arm, [0.0, 0.0], Pose::new(f64::NAN, 0.0)),
            Err(ArmError::BadOffset { .. })
        ));
        assert!(RealArm::mismatched(&arm, [f64::INFINITY, 0.0], Pose::default()).is_err());
        let msg = TwoLinkArm::new(-2.0, 1.0).unwrap_err().to_string();
        assert!(msg.contains("l1") && msg.contains("-2"), "{msg}");
        for bad in [1e155, 1e308, 1.3e154, 1e-162, 1e-7, 2e6] {
            assert!(matches!(TwoLinkArm::new(bad, bad), Err(ArmError::BadLength { .. })), "{bad}");
        }
        assert!(TwoLinkArm::new(1e-6, 1e-6).is_ok() && TwoLinkArm::new(1e6, 1e6).is_ok());
        assert!(matches!(TwoLinkArm::new(1.0, 1e-5), Err(ArmError::BadRatio { .. })));
        assert!(TwoLinkArm::new(1.0, 1e-4).is_ok());
        let msg = TwoLinkArm::new(1e155, 1.0).unwrap_err().to_string();
        assert!(msg.contains("1e-6 to 1e6"), "{msg}");
        assert!(JointLimits::new(1e20, 2e20, "elbow").is_err());
        assert!(JointLimits::new(-4.0 * PI, 4.0 * PI, "elbow").is_ok());
        assert!(JointLimits::new(-4.0 * PI - 0.01, 0.0, "elbow").is_err());
        let forged = TwoLinkArm { l1: f64::NAN, ..TwoLinkArm::default() };
        assert!(forged.validate().is_err() && TwoLinkArm::default().validate().is_ok());
        let forged = TwoLinkArm { limits: [JointLimits { min: 1e20, max: 2e20 }; 2], ..TwoLinkArm::default() };
        assert!(forged.validate().is_err());
    }

    #[test]
    fn forward_kinematics_of_known_poses() {
        let arm = TwoLinkArm::new(1.0, 0.5).unwrap();
        assert_relative_eq!(arm.tip(Pose::new(0.0, 0.0)), Point2::new(1.5, 0.0), epsilon = 1e-12);
        assert_relative_eq!(arm.tip(Pose::new(PI / 2.0, -PI / 2.0)), Point2::new(0.5, 1.0), epsilon = 1e-12);
        let [base, elbow, _] = arm.joints(Pose::new(PI, 0.3));
        assert_eq!(base, Point2::zeros());
        assert_relative_eq!(elbow, Point2::new(-1.0, 0.0), epsilon = 1e-12);
    }

    #[test]
    fn jacobian_matches_finite_differences() {
        let arm = TwoLinkArm::new(0.8, 1.3).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..200 {
            let q = Pose::new(rng.random_range(-PI..PI), rng.random_range(-PI..PI));
            let j = arm.jacobian(q);
            let h = 1e-6;
            for col in 0..2 {
                let mut qp = q.to_vector();
                let mut qm = q.to_vector();
                qp[col] += h;
                qm[col] -= h;
                let fd = (arm.tip(Pose::from_vector(qp)) - arm.tip(Pose::from_vector(qm))) / (2.0 * h);
                assert_relative_eq!(j.column(col).into_owned(), fd, epsilon = 1e-8);
            }
        }
    }

    #[test]
    fn limits_fit_modulo_turns() {
        let lim = JointLimits::new(0.0, 3.0 * PI / 2.0, "elbow").unwrap();
        assert_relative_eq!(lim.fit(-PI / 2.0).unwrap(), 3.0 * PI / 2.0, epsilon = 1e-12);
        assert!(lim.fit(-0.1).is_none());
        assert_eq!(lim.clamp(-0.1), 0.0);
        assert!(JointLimits::FULL.fit(PI).is_some());
        assert!(JointLimits::FULL.fit(-PI).is_some());
    }
}
