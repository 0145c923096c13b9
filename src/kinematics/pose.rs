//! Joint space: a [`Pose`] (two joint angles, with the arithmetic controllers need), angle
//! wrapping, and the two elbow branches ([`ElbowMode`]).

use nalgebra::Vector2;
use serde::{Deserialize, Serialize};
use std::f64::consts::PI;
use std::ops::{Add, Mul, Neg, Sub};

/// A point or direction in the arm's plane, metres.
pub type Point2 = Vector2<f64>;

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
///
/// Poses add, subtract, negate and scale joint by joint (`a + b`, `a - b`, `-a`, `a * k`); the
/// results are not wrapped ([`Pose::wrapped`] and [`Pose::wrapped_difference`] do that).
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

    /// The pose of a joint vector's first two coordinates (a plant's, for instance; missing ones
    /// read 0).
    pub fn of(x: &[f64]) -> Self {
        Self::new(x.first().copied().unwrap_or(0.0), x.get(1).copied().unwrap_or(0.0))
    }

    /// The pose as a joint vector, shoulder first: what a plant is commanded with.
    pub const fn coords(self) -> [f64; 2] {
        [self.shoulder, self.elbow]
    }

    /// The angles as a column vector `[q1, q2]`.
    pub fn to_vector(self) -> Vector2<f64> {
        Vector2::new(self.shoulder, self.elbow)
    }

    /// A pose from a column vector `[q1, q2]`.
    pub fn from_vector(v: Vector2<f64>) -> Self {
        Self::new(v.x, v.y)
    }

    /// `f` applied to each joint angle.
    pub fn map(self, f: impl Fn(f64) -> f64) -> Self {
        Self::new(f(self.shoulder), f(self.elbow))
    }

    /// Both angles wrapped into `(-pi, pi]`.
    pub fn wrapped(self) -> Self {
        self.map(wrap_angle)
    }

    /// `self - other` with each joint's difference wrapped into `(-pi, pi]`: the shortest turn
    /// from `other` to `self`.
    pub fn wrapped_difference(self, other: Pose) -> Self {
        (self - other).wrapped()
    }

    /// True when both angles are finite numbers.
    pub fn is_finite(self) -> bool {
        self.shoulder.is_finite() && self.elbow.is_finite()
    }

    /// The larger absolute angle of the two joints.
    pub fn max_abs(self) -> f64 {
        self.shoulder.abs().max(self.elbow.abs())
    }

    /// Largest absolute per-joint difference, each wrapped to `(-pi, pi]`.
    #[inline]
    pub fn max_joint_distance(self, other: Pose) -> f64 {
        let d1 = wrap_angle(self.shoulder - other.shoulder).abs();
        let d2 = wrap_angle(self.elbow - other.elbow).abs();
        d1.max(d2)
    }
}

impl Add for Pose {
    type Output = Pose;

    fn add(self, rhs: Pose) -> Pose {
        Pose::new(self.shoulder + rhs.shoulder, self.elbow + rhs.elbow)
    }
}

impl Sub for Pose {
    type Output = Pose;

    fn sub(self, rhs: Pose) -> Pose {
        Pose::new(self.shoulder - rhs.shoulder, self.elbow - rhs.elbow)
    }
}

impl Neg for Pose {
    type Output = Pose;

    fn neg(self) -> Pose {
        Pose::new(-self.shoulder, -self.elbow)
    }
}

impl Mul<f64> for Pose {
    type Output = Pose;

    fn mul(self, k: f64) -> Pose {
        Pose::new(self.shoulder * k, self.elbow * k)
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

crate::keys::keyed!(ElbowMode, "elbow mode");

impl ElbowMode {
    /// Both modes, up first.
    pub const BOTH: [ElbowMode; 2] = [ElbowMode::Up, ElbowMode::Down];

    /// Both modes, for the key table ([`ElbowMode::BOTH`]).
    pub const ALL: [ElbowMode; 2] = Self::BOTH;

    /// The key on the command line: `up` or `down`.
    pub const fn key(self) -> &'static str {
        match self {
            ElbowMode::Up => "up",
            ElbowMode::Down => "down",
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pose_arithmetic_is_joint_by_joint() {
        let (a, b) = (Pose::new(1.0, -2.0), Pose::new(0.5, 0.25));
        assert_eq!(a + b, Pose::new(1.5, -1.75));
        assert_eq!(a - b, Pose::new(0.5, -2.25));
        assert_eq!(-a, Pose::new(-1.0, 2.0));
        assert_eq!(a * 2.0, Pose::new(2.0, -4.0));
        assert_eq!(a.max_abs(), 2.0);
        let d = Pose::new(3.0, 0.0).wrapped_difference(Pose::new(-3.0, 0.0));
        assert!((d.shoulder - (6.0 - 2.0 * PI)).abs() < 1e-12 && d.elbow == 0.0);
    }

    #[test]
    fn wrap_angle_lands_in_the_half_open_turn() {
        for a in [-10.0, -PI, -3.0, 0.0, PI, 3.5, 7.0, 1e6] {
            let w = wrap_angle(a);
            assert!(w > -PI && w <= PI, "{a} -> {w}");
            assert!(((a - w) / (2.0 * PI) - ((a - w) / (2.0 * PI)).round()).abs() < 1e-6);
        }
        assert!(wrap_angle(f64::NAN).is_nan());
    }
}
