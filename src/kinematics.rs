//! Planar two-link arm: construction, forward kinematics, the Jacobian and the reachable workspace.
//!
//! The base sits at the origin. The shoulder angle `q1` is measured from the +x axis, the elbow
//! angle `q2` from the upper arm, both counter-clockwise, in radians. A positive elbow angle puts the
//! elbow clockwise of the base-to-tip line ("elbow down" for a target in front of the arm), a
//! negative one counter-clockwise ("elbow up").

use nalgebra::{Matrix2, Vector2};
use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};
use std::f64::consts::PI;

/// A point or direction in the arm's plane, metres.
pub type Point2 = Vector2<f64>;

/// Relative slack used when deciding whether a radius lies on the annulus' boundary.
pub(crate) const REACH_EPS: f64 = 1e-12;

/// Wraps an angle into `(-pi, pi]`; non-finite input comes back unchanged.
#[inline]
pub fn wrap_angle(a: f64) -> f64 {
    // Fast paths for the common cases (already wrapped, or one turn out); fmod for the rest.
    if a > -PI && a <= PI {
        return a;
    }
    if a > PI && a <= 3.0 * PI {
        return a - 2.0 * PI;
    }
    if a > -3.0 * PI && a <= -PI {
        return a + 2.0 * PI;
    }
    if !a.is_finite() {
        return a;
    }
    let mut w = a.rem_euclid(2.0 * PI);
    if w > PI {
        w -= 2.0 * PI;
    }
    w
}

/// Joint angles of the arm, radians.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pose {
    /// Shoulder angle from the +x axis.
    pub shoulder: f64,
    /// Elbow angle relative to the upper arm.
    pub elbow: f64,
}

impl Pose {
    /// A pose from its two joint angles.
    pub const fn new(shoulder: f64, elbow: f64) -> Self {
        Self { shoulder, elbow }
    }

    /// The angles as a column vector `[q1, q2]`.
    pub fn to_vector(self) -> Vector2<f64> {
        Vector2::new(self.shoulder, self.elbow)
    }

    /// A pose from a column vector `[q1, q2]`.
    pub fn from_vector(v: Vector2<f64>) -> Self {
        Self::new(v.x, v.y)
    }

    /// Both angles wrapped into `(-pi, pi]`.
    pub fn wrapped(self) -> Self {
        Self::new(wrap_angle(self.shoulder), wrap_angle(self.elbow))
    }

    /// True when both angles are finite numbers.
    pub fn is_finite(self) -> bool {
        self.shoulder.is_finite() && self.elbow.is_finite()
    }

    /// Largest absolute per-joint difference, each wrapped to `(-pi, pi]`.
    #[inline]
    pub fn max_joint_distance(self, other: Pose) -> f64 {
        let d1 = wrap_angle(self.shoulder - other.shoulder).abs();
        let d2 = wrap_angle(self.elbow - other.elbow).abs();
        d1.max(d2)
    }
}

/// Which of the two closed-form branches a pose belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElbowMode {
    /// Elbow angle `<= 0`: the elbow sits counter-clockwise of the base-to-tip line.
    Up,
    /// Elbow angle `>= 0`: the elbow sits clockwise of the base-to-tip line.
    Down,
}

impl ElbowMode {
    /// Both modes, up first.
    pub const BOTH: [ElbowMode; 2] = [ElbowMode::Up, ElbowMode::Down];

    /// The sign this mode gives the elbow angle's sine.
    pub fn sign(self) -> f64 {
        match self {
            ElbowMode::Up => -1.0,
            ElbowMode::Down => 1.0,
        }
    }

    /// The mode a pose's elbow angle belongs to (a straight arm counts as down).
    pub fn of(pose: Pose) -> Self {
        if wrap_angle(pose.elbow) < 0.0 { ElbowMode::Up } else { ElbowMode::Down }
    }

    /// The other branch.
    pub fn flipped(self) -> Self {
        match self {
            ElbowMode::Up => ElbowMode::Down,
            ElbowMode::Down => ElbowMode::Up,
        }
    }
}

/// Why an arm description was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArmError {
    /// A link length was zero, negative, or not a finite number.
    #[error("link length {name} must be a finite number > 0, got {value}")]
    BadLength {
        /// Which link (`l1` or `l2`).
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A joint offset was not a finite number.
    #[error("joint offsets must be finite, got ({shoulder}, {elbow})")]
    BadOffset {
        /// Shoulder offset given.
        shoulder: f64,
        /// Elbow offset given.
        elbow: f64,
    },
    /// A joint range was empty, reversed or not finite.
    #[error("joint range for {joint} must be finite with min < max, got [{min}, {max}]")]
    BadLimits {
        /// Which joint.
        joint: &'static str,
        /// Lower bound given.
        min: f64,
        /// Upper bound given.
        max: f64,
    },
}

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
        if !(min.is_finite() && max.is_finite() && min < max) {
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

/// Which part of the workspace a sampler draws targets from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Region {
    /// The whole reachable annulus.
    Annulus,
    /// The part of the annulus whose bearing lies in `[from, to]` (radians, `from < to`).
    Sector {
        /// Start bearing.
        from: f64,
        /// End bearing.
        to: f64,
    },
}

impl Region {
    /// True when the bearing of `p` lies inside the region (radius is not checked).
    pub fn contains_bearing(&self, p: Point2) -> bool {
        match *self {
            Region::Annulus => true,
            Region::Sector { from, to } => {
                let b = p.y.atan2(p.x);
                // Accept the bearing or its copies one turn away, so sectors may cross +-pi.
                [b - 2.0 * PI, b, b + 2.0 * PI].iter().any(|&a| a >= from && a <= to)
            }
        }
    }
}

impl std::str::FromStr for Region {
    type Err = String;

    /// Parses `annulus` or `sector:FROM_DEG,TO_DEG` (degrees, `FROM < TO`, span at most 360).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("annulus") {
            return Ok(Region::Annulus);
        }
        let rest = s
            .strip_prefix("sector:")
            .ok_or_else(|| format!("region must be `annulus` or `sector:FROM,TO` (degrees), got `{s}`"))?;
        let (a, b) = rest
            .split_once(',')
            .ok_or_else(|| format!("sector needs two bearings `FROM,TO` in degrees, got `{rest}`"))?;
        let parse = |t: &str| {
            t.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("`{t}` is not a finite number of degrees"))
        };
        let (from, to) = (parse(a)?, parse(b)?);
        if !(from < to && to - from <= 360.0) {
            return Err(format!("sector needs FROM < TO and a span of at most 360 degrees, got {from},{to}"));
        }
        Ok(Region::Sector { from: from.to_radians(), to: to.to_radians() })
    }
}

impl std::fmt::Display for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Region::Annulus => write!(f, "annulus"),
            Region::Sector { from, to } => write!(f, "sector:{},{}", from.to_degrees(), to.to_degrees()),
        }
    }
}

/// How a sampler spreads its targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SampleMode {
    /// Uniform over the area of the region.
    UniformArea,
    /// Uniform over joint space (inside the limits), mapped through forward kinematics.
    /// Denser near the base and rim, like data logged from a moving robot.
    JointSpace,
}

/// A planar two-link arm with link lengths and joint limits, validated on construction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TwoLinkArm {
    l1: f64,
    l2: f64,
    limits: [JointLimits; 2],
}

impl Default for TwoLinkArm {
    /// Unit links, joints free to turn all the way round.
    fn default() -> Self {
        Self { l1: 1.0, l2: 1.0, limits: [JointLimits::FULL; 2] }
    }
}

impl TwoLinkArm {
    /// An arm with the given link lengths and unlimited joints.
    pub fn new(l1: f64, l2: f64) -> Result<Self, ArmError> {
        for (name, value) in [("l1", l1), ("l2", l2)] {
            if !(value.is_finite() && value > 0.0) {
                return Err(ArmError::BadLength { name, value });
            }
        }
        Ok(Self { l1, l2, limits: [JointLimits::FULL; 2] })
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

    /// The 2x2 Jacobian `d tip / d [q1, q2]`.
    pub fn jacobian(&self, pose: Pose) -> Matrix2<f64> {
        let (s1, c1) = pose.shoulder.sin_cos();
        let (s12, c12) = (pose.shoulder + pose.elbow).sin_cos();
        Matrix2::new(-self.l1 * s1 - self.l2 * s12, -self.l2 * s12, self.l1 * c1 + self.l2 * c12, self.l2 * c12)
    }

    /// True when `r` lies in `[|l1-l2|, l1+l2]` (with a relative slack of 1e-12).
    pub fn radius_reachable(&self, r: f64) -> bool {
        let slack = REACH_EPS * self.reach();
        r.is_finite() && r >= self.inner_radius() - slack && r <= self.reach() + slack
    }

    /// True when the point lies in the reachable annulus.
    pub fn is_reachable(&self, p: Point2) -> bool {
        self.radius_reachable(p.x.hypot(p.y))
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

    /// Draws one reachable target inside `region`.
    ///
    /// Joint-space sampling rejects poses whose tip falls outside the region; a sector that the
    /// joint limits cannot reach falls back to uniform-area sampling after 10,000 rejections.
    pub fn sample_target<R: Rng + ?Sized>(&self, rng: &mut R, mode: SampleMode, region: Region) -> Point2 {
        if mode == SampleMode::JointSpace {
            for _ in 0..10_000 {
                let q1 = rng.random_range(self.limits[0].min..=self.limits[0].max);
                let q2 = rng.random_range(self.limits[1].min..=self.limits[1].max);
                let p = self.tip(Pose::new(q1, q2));
                if region.contains_bearing(p) {
                    return p;
                }
            }
        }
        let (from, to) = match region {
            Region::Annulus => (-PI, PI),
            Region::Sector { from, to } => (from, to),
        };
        let (r0, r1) = (self.inner_radius(), self.reach());
        let r = rng.random_range(r0 * r0..=r1 * r1).sqrt();
        let bearing = rng.random_range(from..=to);
        Point2::new(r * bearing.cos(), r * bearing.sin())
    }

    /// Draws `n` reachable targets; see [`TwoLinkArm::sample_target`].
    pub fn sample_targets<R: Rng + ?Sized>(
        &self,
        rng: &mut R,
        n: usize,
        mode: SampleMode,
        region: Region,
    ) -> Vec<Point2> {
        (0..n).map(|_| self.sample_target(rng, mode, region)).collect()
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

    /// Where the tip really goes when `commanded` is sent.
    pub fn tip(&self, commanded: Pose) -> Point2 {
        self.arm.tip(self.actual(commanded))
    }

    /// The link angles that result from a command.
    pub fn actual(&self, commanded: Pose) -> Pose {
        Pose::new(commanded.shoulder + self.joint_offsets.shoulder, commanded.elbow + self.joint_offsets.elbow)
    }

    /// The command that puts the real links at `actual`.
    pub fn command_for(&self, actual: Pose) -> Pose {
        Pose::new(actual.shoulder - self.joint_offsets.shoulder, actual.elbow - self.joint_offsets.elbow).wrapped()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;
    use rand::SeedableRng;
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
    fn annulus_and_sampler() {
        let arm = TwoLinkArm::new(1.0, 0.4).unwrap();
        assert!(arm.is_reachable(Point2::new(1.4, 0.0)));
        assert!(arm.is_reachable(Point2::new(0.0, -0.6)));
        assert!(!arm.is_reachable(Point2::new(0.3, 0.0)));
        assert!(!arm.is_reachable(Point2::new(1.5, 0.0)));
        assert!(!arm.is_reachable(Point2::new(f64::NAN, 0.0)));
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let region = Region::Sector { from: 0.0, to: PI / 2.0 };
        for mode in [SampleMode::UniformArea, SampleMode::JointSpace] {
            let pts = arm.sample_targets(&mut rng, 2000, mode, region);
            assert!(pts.iter().all(|&p| arm.is_reachable(p) && region.contains_bearing(p)));
        }
        // Uniform in area: half the points lie beyond the radius that halves the annulus' area.
        let pts = arm.sample_targets(&mut rng, 20_000, SampleMode::UniformArea, Region::Annulus);
        let r_half = ((0.6f64.powi(2) + 1.4f64.powi(2)) / 2.0).sqrt();
        let outside = pts.iter().filter(|p| p.norm() > r_half).count() as f64 / pts.len() as f64;
        assert!((outside - 0.5).abs() < 0.02, "{outside}");
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

    #[test]
    fn region_parsing() {
        assert_eq!("annulus".parse::<Region>().unwrap(), Region::Annulus);
        let Region::Sector { from, to } = "sector:-90,90".parse::<Region>().unwrap() else { panic!() };
        assert_relative_eq!(from, -PI / 2.0);
        assert_relative_eq!(to, PI / 2.0);
        assert!("sector:90,-90".parse::<Region>().is_err());
        assert!("sector:nan,3".parse::<Region>().is_err());
        assert!("blob".parse::<Region>().is_err());
        let s: Region = "sector:170,190".parse().unwrap();
        assert!(s.contains_bearing(Point2::new(-1.0, -0.01)));
        assert!(!s.contains_bearing(Point2::new(1.0, 0.0)));
    }
}
