//! A planar serial chain: an optional prismatic rail along `y` at the base, then revolute joints,
//! each followed by a link; forward kinematics, joint positions and the positional Jacobian; and
//! the prior over its coordinates.

use crate::kinematics::arm::{MAX_LENGTH, MAX_LENGTH_RATIO, MIN_LENGTH};
pub use crate::kinematics::serial::MAX_COORDS;
use crate::kinematics::serial::revolute_column;
use crate::kinematics::{JointLimits, Point2, SerialArm, TwoLinkArm};
use crate::stats::fmt_num;
use rand::{Rng, RngExt};
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

/// The longest rail travel accepted either way, metres.
pub const MAX_TRAVEL: f64 = 1e6;

/// Why a chain or its prior was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChainError {
    /// Fewer than one or more than [`MAX_COORDS`] coordinates.
    #[error("a chain needs 1 to {MAX_COORDS} joints (rail included), got {0}")]
    JointCount(usize),
    /// A link length was not a finite number in range.
    #[error("link length {index} must be a number from 1e-6 to 1e6 metres, got {}", fmt_num(*value))]
    BadLength {
        /// Which link, from 1.
        index: usize,
        /// The value given.
        value: f64,
    },
    /// The longest link is more than 1e4 times the shortest.
    #[error("the longest link may be at most 10000 times the shortest, got {} and {}", fmt_num(*longest), fmt_num(*shortest))]
    BadRatio {
        /// Longest length given.
        longest: f64,
        /// Shortest length given.
        shortest: f64,
    },
    /// The rail's travel was empty, reversed or not finite.
    #[error("the rail's travel must have min < max, both within ±1e6 m, got [{}, {}]", fmt_num(*min), fmt_num(*max))]
    BadTravel {
        /// Lower end given.
        min: f64,
        /// Upper end given.
        max: f64,
    },
    /// A joint range was refused.
    #[error(transparent)]
    Limits(#[from] crate::kinematics::ArmError),
    /// The prior does not fit the chain.
    #[error("{0}")]
    BadPrior(String),
    /// A two-link arm was asked of a chain that is not one.
    #[error("a two-link arm is a chain of exactly 2 revolute joints and no rail, got {links} joint(s){}", if *rail { " and a rail" } else { "" })]
    NotTwoLink {
        /// Revolute joints of the chain.
        links: usize,
        /// Whether it has a rail.
        rail: bool,
    },
}

/// The travel of the prismatic base rail, metres.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Travel {
    /// Lowest rail height.
    pub min: f64,
    /// Highest rail height.
    pub max: f64,
}

impl Travel {
    /// A travel `[min, max]`, checked.
    pub fn new(min: f64, max: f64) -> Result<Self, ChainError> {
        let ok = |v: f64| v.is_finite() && v.abs() <= MAX_TRAVEL;
        if !(ok(min) && ok(max) && min < max) {
            return Err(ChainError::BadTravel { min, max });
        }
        Ok(Self { min, max })
    }
}

/// One revolute joint and the link after it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// Length of the link, metres.
    pub length: f64,
    /// Range of the joint angle, radians, relative to the previous link.
    pub limits: JointLimits,
}

/// A planar serial chain, validated on construction.
///
/// The base sits at `(0, h)`, with `h` the rail height (0 without a rail); joint angles are
/// relative (the absolute angle of link `k` is `x_1 + ... + x_k` over the revolute joints), so
/// the tip is `(0, h) + sum_k l_k (cos θ_k, sin θ_k)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chain {
    /// Left out of JSON when there is none (JSON holds no `null`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rail: Option<Travel>,
    links: Vec<Link>,
}

impl Chain {
    /// A chain with an optional rail and these links.
    pub fn new(rail: Option<Travel>, links: Vec<Link>) -> Result<Self, ChainError> {
        let chain = Self { rail, links };
        chain.validate()?;
        Ok(chain)
    }

    /// Revolute joints with these lengths and full-turn joints, no rail.
    pub fn from_lengths(lengths: &[f64]) -> Result<Self, ChainError> {
        Self::new(None, lengths.iter().map(|&length| Link { length, limits: JointLimits::FULL }).collect())
    }

    /// Checks the lengths, the ratio of the longest to the shortest, the ranges and the count
    /// (a chain read from a file is checked again here).
    pub fn validate(&self) -> Result<(), ChainError> {
        let n = self.coords();
        if self.links.is_empty() || n > MAX_COORDS {
            return Err(ChainError::JointCount(n));
        }
        for (i, l) in self.links.iter().enumerate() {
            if !(l.length.is_finite() && (MIN_LENGTH..=MAX_LENGTH).contains(&l.length)) {
                return Err(ChainError::BadLength { index: i + 1, value: l.length });
            }
            JointLimits::new(l.limits.min, l.limits.max, "a chain joint")?;
        }
        let longest = self.links.iter().map(|l| l.length).fold(0.0, f64::max);
        let shortest = self.links.iter().map(|l| l.length).fold(f64::INFINITY, f64::min);
        if longest > MAX_LENGTH_RATIO * shortest {
            return Err(ChainError::BadRatio { longest, shortest });
        }
        if let Some(t) = self.rail {
            Travel::new(t.min, t.max)?;
        }
        Ok(())
    }

    /// Number of coordinates: the rail (if any) and every revolute joint.
    pub fn coords(&self) -> usize {
        usize::from(self.rail.is_some()) + self.links.len()
    }

    /// The rail's travel, if the chain has a rail.
    pub fn rail(&self) -> Option<Travel> {
        self.rail
    }

    /// The revolute joints and their links, base first.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// Index of the first revolute joint in the coordinates (1 with a rail, 0 without).
    pub fn first_joint(&self) -> usize {
        usize::from(self.rail.is_some())
    }

    /// True when coordinate `i` is a joint angle (not the rail).
    pub fn is_angle(&self, i: usize) -> bool {
        i >= self.first_joint()
    }

    /// The range of coordinate `i` (metres for the rail, radians for a joint).
    pub fn range(&self, i: usize) -> (f64, f64) {
        match (self.rail, i) {
            (Some(t), 0) => (t.min, t.max),
            _ => {
                let l = self.links[i - self.first_joint()].limits;
                (l.min, l.max)
            }
        }
    }

    /// Sum of the link lengths: the farthest the tip gets from the base.
    pub fn reach(&self) -> f64 {
        self.links.iter().map(|l| l.length).sum()
    }

    /// The rail height of `x` (0 without a rail).
    #[inline]
    fn base(&self, x: &[f64]) -> Point2 {
        Point2::new(0.0, if self.rail.is_some() { x[0] } else { 0.0 })
    }

    /// The one forward walk: calls `visit(k, p)` with the position `p` of each revolute joint
    /// `k` (from 0, base first; joint `k` sits at the start of link `k`) and returns the tip.
    #[inline(always)]
    fn walk(&self, x: &[f64], mut visit: impl FnMut(usize, Point2)) -> Point2 {
        let mut p = self.base(x);
        let mut theta = 0.0;
        for (k, (l, &q)) in self.links.iter().zip(&x[self.first_joint()..]).enumerate() {
            visit(k, p);
            theta += q;
            let (s, c) = theta.sin_cos();
            p += Point2::new(c, s) * l.length;
        }
        p
    }

    /// Forward kinematics: the tip for coordinates `x` (`x.len() == self.coords()`).
    #[inline]
    pub fn tip(&self, x: &[f64]) -> Point2 {
        self.walk(x, |_, _| {})
    }

    /// The base, every joint and the tip, in order (`links + 1` points): what a drawing needs.
    pub fn points(&self, x: &[f64]) -> Vec<Point2> {
        let mut out = Vec::with_capacity(self.links.len() + 1);
        let tip = self.walk(x, |_, p| out.push(p));
        out.push(tip);
        out
    }

    /// The positional Jacobian `d tip / d x` at `x`, one column per coordinate written into
    /// `cols` (`cols.len() >= self.coords()`); returns the tip. The rail's column is `(0, 1)`;
    /// a revolute joint's is the tip's offset from that joint turned by a quarter turn.
    #[inline]
    pub fn jacobian(&self, x: &[f64], cols: &mut [Point2]) -> Point2 {
        let first = self.first_joint();
        // Joint positions first, then their offsets from the tip.
        let mut joints = [Point2::zeros(); MAX_COORDS];
        let tip = self.walk(x, |k, p| joints[k] = p);
        if first == 1 {
            cols[0] = Point2::new(0.0, 1.0);
        }
        for (col, joint) in cols[first..].iter_mut().zip(&joints[..self.links.len()]) {
            *col = revolute_column(tip - joint);
        }
        tip
    }

    /// True when coordinate `i` has a bound a step can run into: the rail, or a joint whose
    /// range is less than a whole turn.
    pub fn is_bounded(&self, i: usize) -> bool {
        match (self.rail, i) {
            (Some(_), 0) => true,
            _ => !self.links[i - self.first_joint()].limits.is_full_turn(),
        }
    }

    /// True when every coordinate lies in its range (angles as given, not modulo a turn).
    pub fn within_limits(&self, x: &[f64]) -> bool {
        (0..self.coords()).all(|i| {
            let (lo, hi) = self.range(i);
            x[i] >= lo && x[i] <= hi
        })
    }

    /// Moves every joint angle to its representative (modulo whole turns) inside its range,
    /// where one exists; returns false when some coordinate has none (it is left as it was).
    pub fn fit_angles(&self, x: &mut [f64]) -> bool {
        let mut ok = true;
        if let Some(t) = self.rail {
            ok &= x[0] >= t.min && x[0] <= t.max;
        }
        for (l, q) in self.links.iter().zip(&mut x[self.first_joint()..]) {
            match l.limits.fit(*q) {
                Some(a) => *q = a,
                None => ok = false,
            }
        }
        ok
    }

    /// Clamps `x` into the ranges: the rail to its travel, each angle to the admissible angle
    /// nearest on the circle. Returns true when anything moved.
    pub fn clamp(&self, x: &mut [f64]) -> bool {
        let mut moved = false;
        if let Some(t) = self.rail {
            let c = x[0].clamp(t.min, t.max);
            moved |= c != x[0];
            x[0] = c;
        }
        for (l, q) in self.links.iter().zip(&mut x[self.first_joint()..]) {
            let c = l.limits.clamp(*q);
            moved |= c != *q;
            *q = c;
        }
        moved
    }
}

/// The chain as a serial arm, for [`crate::iterative::Dls`].
impl SerialArm for Chain {
    #[inline]
    fn coords(&self) -> usize {
        Chain::coords(self)
    }

    #[inline]
    fn tip(&self, x: &[f64]) -> Point2 {
        Chain::tip(self, x)
    }

    #[inline]
    fn jacobian(&self, x: &[f64], cols: &mut [Point2]) -> Point2 {
        Chain::jacobian(self, x, cols)
    }

    #[inline]
    fn range(&self, i: usize) -> (f64, f64) {
        Chain::range(self, i)
    }

    #[inline]
    fn is_bounded(&self, i: usize) -> bool {
        Chain::is_bounded(self, i)
    }

    #[inline]
    fn clamp(&self, x: &mut [f64]) -> bool {
        Chain::clamp(self, x)
    }

    #[inline]
    fn reach(&self) -> f64 {
        Chain::reach(self)
    }
}

/// The two-link arm as a chain: no rail, two revolute joints with its lengths and limits.
impl From<TwoLinkArm> for Chain {
    fn from(arm: TwoLinkArm) -> Self {
        let [shoulder, elbow] = arm.limits();
        let links = vec![Link { length: arm.l1(), limits: shoulder }, Link { length: arm.l2(), limits: elbow }];
        Self { rail: None, links }
    }
}

/// The chain as a two-link arm, when it is one: no rail and exactly two revolute joints.
impl TryFrom<&Chain> for TwoLinkArm {
    type Error = ChainError;

    fn try_from(chain: &Chain) -> Result<Self, ChainError> {
        match (chain.rail, chain.links.as_slice()) {
            (None, [upper, fore]) => {
                Ok(TwoLinkArm::new(upper.length, fore.length)?.with_limits(upper.limits, fore.limits)?)
            }
            _ => Err(ChainError::NotTwoLink { links: chain.links.len(), rail: chain.rail.is_some() }),
        }
    }
}

/// The prior of one coordinate, inside its range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Marginal {
    /// A Gaussian, truncated to the coordinate's range.
    Gaussian {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        sigma: f64,
    },
    /// Uniform over the coordinate's range.
    Uniform,
}

/// A prior over a chain's coordinates: independent marginals, each inside its coordinate's range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prior {
    marginals: Vec<Marginal>,
    ranges: Vec<(f64, f64)>,
}

/// Tries at drawing a Gaussian coordinate inside its range before the draw is clamped (only a
/// range far narrower than the Gaussian gets near it).
const MAX_TRUNCATION_TRIES: usize = 64;

impl Prior {
    /// A prior with these marginals for `chain`'s coordinates, checked.
    pub fn new(marginals: Vec<Marginal>, chain: &Chain) -> Result<Self, ChainError> {
        if marginals.len() != chain.coords() {
            return Err(ChainError::BadPrior(format!(
                "the prior has {} marginals for {} coordinates",
                marginals.len(),
                chain.coords()
            )));
        }
        let ranges: Vec<(f64, f64)> = (0..chain.coords()).map(|i| chain.range(i)).collect();
        for (i, (m, &(lo, hi))) in marginals.iter().zip(&ranges).enumerate() {
            if let Marginal::Gaussian { mean, sigma } = *m
                && !(mean.is_finite() && sigma.is_finite() && sigma > 0.0 && mean >= lo && mean <= hi)
            {
                return Err(ChainError::BadPrior(format!(
                    "coordinate {i}: a Gaussian prior needs a finite mean inside [{lo}, {hi}] and a sigma > 0, got mean {mean}, sigma {sigma}"
                )));
            }
        }
        Ok(Self { marginals, ranges })
    }

    /// Uniform over every coordinate's range.
    pub fn uniform(chain: &Chain) -> Self {
        Self::new(vec![Marginal::Uniform; chain.coords()], chain).expect("uniform fits any chain")
    }

    /// The marginals, one per coordinate.
    pub fn marginals(&self) -> &[Marginal] {
        &self.marginals
    }

    /// The density of coordinate `i`'s marginal at `v`, up to the truncation constant of a
    /// Gaussian (which a ratio of densities of the same coordinate never needs): 0 outside the range.
    #[inline]
    pub fn density(&self, i: usize, v: f64) -> f64 {
        let (lo, hi) = self.ranges[i];
        if !(v >= lo && v <= hi) {
            return 0.0;
        }
        match self.marginals[i] {
            Marginal::Gaussian { mean, sigma } => {
                let z = (v - mean) / sigma;
                (-0.5 * z * z).exp() / (sigma * (2.0 * std::f64::consts::PI).sqrt())
            }
            Marginal::Uniform => 1.0 / (hi - lo),
        }
    }

    /// A draw of coordinate `i` from its untruncated marginal (a Gaussian may land outside the
    /// range, where [`Prior::density`] is 0): the proposal of the exact sampler, whose density
    /// inside the range is exactly [`Prior::density`].
    #[inline]
    pub fn propose<R: Rng + ?Sized>(&self, i: usize, rng: &mut R) -> f64 {
        let (lo, hi) = self.ranges[i];
        match self.marginals[i] {
            Marginal::Gaussian { mean, sigma } => {
                let z: f64 = StandardNormal.sample(rng);
                mean + sigma * z
            }
            Marginal::Uniform => lo + (hi - lo) * rng.random::<f64>(),
        }
    }

    /// A draw of all coordinates from the prior (Gaussians truncated to their ranges) into `x`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R, x: &mut [f64]) {
        for (i, v) in x.iter_mut().enumerate().take(self.marginals.len()) {
            let (lo, hi) = self.ranges[i];
            let mut d = self.propose(i, rng);
            let mut tries = 1;
            while !(d >= lo && d <= hi) && tries < MAX_TRUNCATION_TRIES {
                d = self.propose(i, rng);
                tries += 1;
            }
            *v = d.clamp(lo, hi);
        }
    }

    /// A typical location of coordinate `i` (the Gaussian's mean, the middle of a uniform range).
    pub fn center(&self, i: usize) -> f64 {
        match self.marginals[i] {
            Marginal::Gaussian { mean, .. } => mean,
            Marginal::Uniform => 0.5 * (self.ranges[i].0 + self.ranges[i].1),
        }
    }

    /// A typical spread of coordinate `i` (the Gaussian's sigma, a uniform range's standard
    /// deviation): the scale networks standardise their outputs by.
    pub fn scale(&self, i: usize) -> f64 {
        match self.marginals[i] {
            Marginal::Gaussian { sigma, .. } => sigma,
            Marginal::Uniform => (self.ranges[i].1 - self.ranges[i].0) / 12f64.sqrt(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn rail3() -> Chain {
        let full = JointLimits::FULL;
        let links = [0.5, 0.5, 1.0].map(|length| Link { length, limits: full }).to_vec();
        Chain::new(Some(Travel::new(-1.0, 1.0).unwrap()), links).unwrap()
    }

    #[test]
    fn tip_follows_the_cumulative_angles() {
        let c = rail3();
        let x = [0.3, 0.2, -0.4, 0.9];
        let (a, b, d) = (0.2f64, -0.2f64, 0.7f64);
        let want = Point2::new(0.5 * a.cos() + 0.5 * b.cos() + d.cos(), 0.3 + 0.5 * a.sin() + 0.5 * b.sin() + d.sin());
        assert!((c.tip(&x) - want).norm() < 1e-15);
        let pts = c.points(&x);
        assert_eq!(pts.len(), 4);
        assert_eq!(pts[0], Point2::new(0.0, 0.3));
        assert!((pts[3] - want).norm() < 1e-15);
    }

    #[test]
    fn jacobian_matches_finite_differences() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for chain in [rail3(), Chain::from_lengths(&[1.0, 0.8, 0.6]).unwrap(), Chain::from_lengths(&[0.3; 7]).unwrap()]
        {
            let prior = Prior::uniform(&chain);
            let n = chain.coords();
            for _ in 0..50 {
                let mut x = vec![0.0; n];
                prior.sample(&mut rng, &mut x);
                let mut cols = [Point2::zeros(); MAX_COORDS];
                let tip = chain.jacobian(&x, &mut cols);
                assert!((tip - chain.tip(&x)).norm() < 1e-14);
                for i in 0..n {
                    let h = 1e-6;
                    let (mut up, mut down) = (x.clone(), x.clone());
                    up[i] += h;
                    down[i] -= h;
                    let fd = (chain.tip(&up) - chain.tip(&down)) / (2.0 * h);
                    assert!((fd - cols[i]).norm() < 1e-8, "coordinate {i}: {fd} vs {}", cols[i]);
                }
            }
        }
    }

    #[test]
    fn two_link_arms_convert_both_ways_and_agree_on_kinematics() {
        use crate::kinematics::Pose;
        let limited = TwoLinkArm::new(0.8, 1.3)
            .unwrap()
            .with_limits(JointLimits::new(-1.0, 2.0, "shoulder").unwrap(), JointLimits::new(0.0, 3.0, "elbow").unwrap())
            .unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for arm in [TwoLinkArm::default(), limited] {
            let chain = Chain::from(arm);
            assert_eq!((chain.coords(), chain.rail()), (2, None));
            assert_eq!(TwoLinkArm::try_from(&chain), Ok(arm));
            assert_eq!(chain.range(1), (arm.limits()[1].min, arm.limits()[1].max));
            for _ in 0..200 {
                let x = [rng.random_range(-4.0..4.0), rng.random_range(-4.0..4.0)];
                let pose = Pose::new(x[0], x[1]);
                assert!((chain.tip(&x) - arm.tip(pose)).norm() < 1e-12);
                for (p, q) in chain.points(&x).iter().zip(arm.joints(pose)) {
                    assert!((p - q).norm() < 1e-12, "{p} vs {q}");
                }
                let mut cols = [Point2::zeros(); MAX_COORDS];
                chain.jacobian(&x, &mut cols);
                let j = arm.jacobian(pose);
                for (i, col) in cols[..2].iter().enumerate() {
                    assert!((col - j.column(i)).norm() < 1e-12, "column {i}: {col} vs {}", j.column(i));
                }
            }
        }
        let three = Chain::from_lengths(&[1.0, 0.8, 0.6]).unwrap();
        assert_eq!(TwoLinkArm::try_from(&three), Err(ChainError::NotTwoLink { links: 3, rail: false }));
        let railed =
            Chain::new(Some(Travel::new(-1.0, 1.0).unwrap()), Chain::from(TwoLinkArm::default()).links).unwrap();
        let err = TwoLinkArm::try_from(&railed).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a two-link arm is a chain of exactly 2 revolute joints and no rail, got 2 joint(s) and a rail"
        );
    }

    #[test]
    fn bad_chains_are_refused() {
        assert!(matches!(Chain::from_lengths(&[]), Err(ChainError::JointCount(0))));
        assert!(matches!(Chain::from_lengths(&[1.0; 13]), Err(ChainError::JointCount(13))));
        assert!(matches!(Chain::from_lengths(&[1.0, -1.0, 1.0]), Err(ChainError::BadLength { index: 2, .. })));
        assert!(matches!(Chain::from_lengths(&[1.0, f64::NAN]), Err(ChainError::BadLength { .. })));
        assert!(matches!(Chain::from_lengths(&[1.0, 1e-5, 1.0]), Err(ChainError::BadRatio { .. })));
        assert!(Travel::new(1.0, -1.0).is_err() && Travel::new(0.0, f64::INFINITY).is_err());
        let c = Chain::from_lengths(&[1.0, 1.0, 1.0]).unwrap();
        assert!(Prior::new(vec![Marginal::Uniform; 2], &c).is_err());
        let bad = Marginal::Gaussian { mean: 0.0, sigma: 0.0 };
        assert!(Prior::new(vec![bad, Marginal::Uniform, Marginal::Uniform], &c).is_err());
    }

    #[test]
    fn limits_fit_clamp_and_the_prior_stay_inside() {
        let limits = JointLimits::new(-2.0, 2.0, "j").unwrap();
        let c = Chain::new(None, vec![Link { length: 1.0, limits }; 3]).unwrap();
        let mut x = [2.5 - 2.0 * std::f64::consts::PI, 0.1, 3.0];
        assert!(!c.within_limits(&x));
        assert!(!c.fit_angles(&mut x), "3 rad has no representative in [-2, 2]");
        let mut y = [1.0 - 2.0 * std::f64::consts::PI, 0.1, -0.5];
        assert!(c.fit_angles(&mut y) && (y[0] - 1.0).abs() < 1e-12);
        assert!(c.clamp(&mut x) && c.within_limits(&x));
        let prior = Prior::new(vec![Marginal::Gaussian { mean: 0.0, sigma: 3.0 }; 3], &c).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for _ in 0..1000 {
            prior.sample(&mut rng, &mut x);
            assert!(c.within_limits(&x));
        }
        assert_eq!(prior.density(0, 2.5), 0.0);
        assert!((Prior::uniform(&c).density(1, 0.3) - 0.25).abs() < 1e-15);
    }
}
