//! What damped least squares needs of an arm, whatever its joints: [`SerialArm`], implemented
//! by the two-link arm ([`super::TwoLinkArm`]) and by any chain ([`crate::chain::Chain`]), so one
//! solver ([`crate::iterative::Dls`]) serves both.

use super::pose::Point2;

/// The most coordinates (rail and joints together) an arm may have: enough for any planar
/// lesson, small enough that every hot loop keeps its coordinates in a stack array.
pub const MAX_COORDS: usize = 12;

/// Coordinates of an arm, base first (a rail's height in metres, then joint angles), padded
/// with zeros to [`MAX_COORDS`]: a chain's joint vector as one `Copy` value (a plant's state,
/// a chain solver's answer).
pub type Coords = [f64; MAX_COORDS];

/// `x` padded to [`Coords`] (at most [`MAX_COORDS`] of it).
pub fn padded(x: &[f64]) -> Coords {
    let mut out = [0.0; MAX_COORDS];
    let n = x.len().min(MAX_COORDS);
    out[..n].copy_from_slice(&x[..n]);
    out
}

/// A planar serial arm seen through its coordinates `x` (`x.len() == self.coords()`): forward
/// kinematics, the positional Jacobian, and the range of each coordinate.
pub trait SerialArm {
    /// Number of coordinates, at most [`MAX_COORDS`].
    fn coords(&self) -> usize;

    /// Forward kinematics: the tip for coordinates `x`.
    fn tip(&self, x: &[f64]) -> Point2;

    /// The positional Jacobian `d tip / d x` at `x`, one column per coordinate written into
    /// `cols` (`cols.len() >= self.coords()`); returns the tip.
    fn jacobian(&self, x: &[f64], cols: &mut [Point2]) -> Point2;

    /// The range of coordinate `i` (metres for a rail, radians for a joint).
    fn range(&self, i: usize) -> (f64, f64);

    /// True when coordinate `i` has a bound a step can run into: a rail, or a joint whose range
    /// is less than a whole turn.
    fn is_bounded(&self, i: usize) -> bool;

    /// Clamps `x` into the ranges (each angle to the admissible angle nearest on the circle).
    /// Returns true when anything moved.
    fn clamp(&self, x: &mut [f64]) -> bool;

    /// Sum of the link lengths: the farthest the tip gets from the base.
    fn reach(&self) -> f64;
}

/// The Jacobian column of a revolute joint: the tip's offset `d` from the joint turned by a
/// quarter turn.
#[inline(always)]
pub(crate) fn revolute_column(d: Point2) -> Point2 {
    Point2::new(-d.y, d.x)
}
