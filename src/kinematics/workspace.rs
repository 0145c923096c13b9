//! The reachable workspace: the annulus `|l1 - l2| <= r <= l1 + l2`, the regions and samplers
//! that draw targets from it, and the projection of any point onto it (with the reason and
//! distance when the point is off it).

use super::arm::TwoLinkArm;
use super::pose::{Point2, Pose};
use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};
use std::f64::consts::PI;

/// Relative slack used when deciding whether a radius lies on the annulus' boundary.
pub(crate) const REACH_EPS: f64 = 1e-12;

/// Why a target cannot be reached exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum UnreachableReason {
    /// Farther than `l1 + l2` from the base.
    BeyondReach,
    /// Closer than `|l1 - l2|` to the base.
    InsideHole,
    /// The base itself with `l1 == l2`: every shoulder angle reaches it, so no answer is unique.
    Degenerate,
    /// A coordinate was NaN or infinite.
    NonFinite,
}

impl std::fmt::Display for UnreachableReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UnreachableReason::BeyondReach => "beyond reach",
            UnreachableReason::InsideHole => "inside the hole",
            UnreachableReason::Degenerate => "degenerate (base with l1 = l2)",
            UnreachableReason::NonFinite => "non-finite target",
        })
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

/// The largest bearing magnitude a sector may be given with, degrees.
pub const MAX_SECTOR_BEARING_DEG: f64 = 360.0;

impl Region {
    /// A sector from `from_deg` to `to_deg` (degrees), checked: both bearings within ±360°,
    /// `from < to` and a width under 360°. The sector is taken modulo a turn: its start is
    /// moved to `[-180°, 180°)`, keeping its width (`sector:270,300` is `sector:-90,-60`).
    pub fn sector_deg(from_deg: f64, to_deg: f64) -> Result<Self, RegionError> {
        let max = MAX_SECTOR_BEARING_DEG;
        let within = |v: f64| v.is_finite() && v.abs() <= max;
        if !(within(from_deg) && within(to_deg)) {
            return Err(RegionError::Bearings { unit: "deg", limit: max, got: [from_deg, to_deg] });
        }
        let width = to_deg - from_deg;
        if !(width > 0.0 && width < 360.0) {
            return Err(RegionError::Width { unit: "deg", limit: 360.0, got: [from_deg, to_deg] });
        }
        let start = (from_deg + 180.0).rem_euclid(360.0) - 180.0;
        Ok(Region::Sector { from: start.to_radians(), to: (start + width).to_radians() })
    }

    /// Checks a region that did not come through [`Region::sector_deg`] (one read from a
    /// file): finite bearings within ±360° (2π), `from < to`, width under a turn.
    pub fn validate(&self) -> Result<(), RegionError> {
        match *self {
            Region::Annulus => Ok(()),
            Region::Sector { from, to } => {
                let tau = 2.0 * PI;
                let within = |v: f64| v.is_finite() && v.abs() <= tau * (1.0 + 1e-12);
                if within(from) && within(to) && from < to && to - from < tau {
                    Ok(())
                } else {
                    Err(RegionError::Sector { unit: "rad", limit: tau, got: [from, to] })
                }
            }
        }
    }

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
    type Err = RegionError;

    /// Parses `annulus` or `sector:FROM_DEG,TO_DEG` (see [`Region::sector_deg`] for the rules).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("annulus") {
            return Ok(Region::Annulus);
        }
        let rest = s.strip_prefix("sector:").ok_or_else(|| RegionError::Syntax { got: s.to_string() })?;
        let (a, b) = rest.split_once(',').ok_or_else(|| RegionError::NotAPair { got: rest.to_string() })?;
        let parse = |t: &str| {
            t.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| RegionError::NotANumber { got: t.to_string() })
        };
        Region::sector_deg(parse(a)?, parse(b)?)
    }
}

/// Why a region was refused: its text, its bearings (in `unit`, against `limit`) or their order.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RegionError {
    /// Neither `annulus` nor `sector:...`.
    #[error("region must be `annulus` or `sector:FROM,TO` (degrees), got `{got}`")]
    Syntax {
        /// The text given.
        got: String,
    },
    /// A sector without its two bearings.
    #[error("sector needs two bearings `FROM,TO` in degrees, got `{got}`")]
    NotAPair {
        /// The text after `sector:`.
        got: String,
    },
    /// A bearing that is not a finite number.
    #[error("`{got}` is not a finite number of degrees")]
    NotANumber {
        /// The bearing's text.
        got: String,
    },
    /// A bearing beyond `±limit`.
    #[error(
        "sector bearings must be numbers of degrees within ±{limit}, got {},{}",
        crate::stats::fmt_num(got[0]),
        crate::stats::fmt_num(got[1])
    )]
    Bearings {
        /// The bearings' unit, degrees.
        unit: &'static str,
        /// The largest bearing accepted, either way ([`MAX_SECTOR_BEARING_DEG`]).
        limit: f64,
        /// The bearings given, from and to.
        got: [f64; 2],
    },
    /// Bearings out of order, or a sector of a whole turn or more.
    #[error(
        "sector needs FROM < TO and a width under {limit} degrees (use `annulus` for the whole turn), got {},{}",
        got[0],
        got[1]
    )]
    Width {
        /// The bearings' unit, degrees.
        unit: &'static str,
        /// The width a sector must stay under, a turn.
        limit: f64,
        /// The bearings given, from and to.
        got: [f64; 2],
    },
    /// A sector read from a file (radians) with a bearing beyond a turn either way, its
    /// bearings out of order or a width of a turn or more.
    #[error("sector [{}, {}] rad needs finite bearings within ±2π, from < to, and a width under 2π", got[0], got[1])]
    Sector {
        /// The bearings' unit, radians.
        unit: &'static str,
        /// The largest bearing and the width a sector must stay under, a turn (2π).
        limit: f64,
        /// The bearings given, from and to.
        got: [f64; 2],
    },
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

impl TwoLinkArm {
    /// True when `r` lies in `[|l1-l2|, l1+l2]` (with a relative slack of 1e-12).
    pub fn radius_reachable(&self, r: f64) -> bool {
        let slack = REACH_EPS * self.reach();
        r.is_finite() && r >= self.inner_radius() - slack && r <= self.reach() + slack
    }

    /// True when the point lies in the reachable annulus.
    pub fn is_reachable(&self, p: Point2) -> bool {
        self.radius_reachable(p.x.hypot(p.y))
    }

    /// Draws one reachable target inside `region`.
    ///
    /// Joint-space sampling rejects poses whose tip falls outside the region; a sector that the
    /// joint limits cannot reach falls back to uniform-area sampling after 10,000 rejections.
    pub fn sample_target<R: Rng + ?Sized>(&self, rng: &mut R, mode: SampleMode, region: Region) -> Point2 {
        if mode == SampleMode::JointSpace {
            for _ in 0..10_000 {
                let q1 = rng.random_range(self.limits()[0].min..=self.limits()[0].max);
                let q2 = rng.random_range(self.limits()[1].min..=self.limits()[1].max);
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

/// Where a target lies relative to the reachable annulus.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Projection {
    /// The target itself when reachable, else the nearest reachable point.
    pub aimed: Point2,
    /// Distance of `aimed` from the base.
    pub radius: f64,
    /// Unit vector from the base towards the target (+x for the base itself).
    pub direction: Point2,
    /// `None` when reachable, else why not and by how much it is missed.
    pub unreachable: Option<(UnreachableReason, f64)>,
}

/// `sqrt(x² + y²)`, directly where it cannot overflow or underflow, by `hypot` elsewhere.
#[inline]
fn norm(x: f64, y: f64) -> f64 {
    let m = x.abs().max(y.abs());
    if m < 1e150 && m > 1e-150 { (x * x + y * y).sqrt() } else { x.hypot(y) }
}

/// Projects a finite target onto the reachable annulus (never clamps silently: see `unreachable`).
/// Returns `None` for a non-finite target.
pub fn project_to_workspace(arm: &TwoLinkArm, target: Point2) -> Option<Projection> {
    if !(target.x.is_finite() && target.y.is_finite()) {
        return None;
    }
    let r = norm(target.x, target.y);
    let direction = if r > 0.0 && r.is_finite() {
        target / r
    } else if r > 0.0 {
        // Coordinates so large that the radius overflows: the bearing still tells the direction.
        let b = target.y.atan2(target.x);
        Point2::new(b.cos(), b.sin())
    } else {
        Point2::new(1.0, 0.0)
    };
    let (inner, outer) = (arm.inner_radius(), arm.reach());
    let degenerate_tol = 1e-12 * outer;
    let (radius, unreachable) = if r > outer * (1.0 + REACH_EPS) {
        (outer, Some((UnreachableReason::BeyondReach, r - outer)))
    } else if r < inner * (1.0 - REACH_EPS) {
        (inner, Some((UnreachableReason::InsideHole, inner - r)))
    } else if r <= degenerate_tol && inner <= degenerate_tol {
        (0.0, Some((UnreachableReason::Degenerate, r)))
    } else {
        return Some(Projection { aimed: target, radius: r.clamp(inner, outer), direction, unreachable: None });
    };
    Some(Projection { aimed: direction * radius, radius, direction, unreachable })
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

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
    fn a_refused_region_carries_its_bearings_unit_and_limit() {
        let e = "sector:-400,1e-5".parse::<Region>().unwrap_err();
        assert_eq!(e, RegionError::Bearings { unit: "deg", limit: 360.0, got: [-400.0, 1e-5] });
        assert_eq!(e.to_string(), "sector bearings must be numbers of degrees within ±360, got -400,1e-5");
        let e = Region::sector_deg(90.0, -90.0).unwrap_err();
        assert_eq!(e, RegionError::Width { unit: "deg", limit: 360.0, got: [90.0, -90.0] });
        assert_eq!(
            e.to_string(),
            "sector needs FROM < TO and a width under 360 degrees (use `annulus` for the whole turn), got 90,-90"
        );
        let e = Region::Sector { from: 1.0, to: 0.5 }.validate().unwrap_err();
        assert_eq!(e, RegionError::Sector { unit: "rad", limit: 2.0 * PI, got: [1.0, 0.5] });
        assert_eq!(
            e.to_string(),
            "sector [1, 0.5] rad needs finite bearings within ±2π, from < to, and a width under 2π"
        );
        let e = "sector:1,x".parse::<Region>().unwrap_err();
        assert_eq!(e.to_string(), "`x` is not a finite number of degrees");
        assert_eq!(
            "blob".parse::<Region>().unwrap_err().to_string(),
            "region must be `annulus` or `sector:FROM,TO` (degrees), got `blob`"
        );
        assert_eq!(
            "sector:5".parse::<Region>().unwrap_err().to_string(),
            "sector needs two bearings `FROM,TO` in degrees, got `5`"
        );
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
        for bad in ["sector:720,800", "sector:0,360", "sector:-400,0", "sector:10,10"] {
            let e = bad.parse::<Region>().unwrap_err().to_string();
            assert!(e.contains("360"), "{bad}: {e}");
        }
        let Region::Sector { from, to } = "sector:270,300".parse::<Region>().unwrap() else { panic!() };
        assert_relative_eq!(from, -PI / 2.0, epsilon = 1e-12);
        assert_relative_eq!(to, -PI / 3.0, epsilon = 1e-12);
        let wide: Region = "sector:-360,-1".parse().unwrap();
        assert!(wide.validate().is_ok());
        for b in [-3.0f64, -1.0, 0.0, 1.0, 3.0] {
            let p = Point2::new(b.cos(), b.sin());
            assert!(wide.contains_bearing(p), "{b}");
        }
        assert!(Region::Sector { from: 12.0, to: 14.0 }.validate().is_err());
        assert!(Region::Sector { from: f64::NAN, to: 1.0 }.validate().is_err());
        assert!(Region::Sector { from: 1.0, to: 0.0 }.validate().is_err());
    }
}
