//! The arm as a value: every arm of the lab is one [`Arm`], from the registry of named arms
//! ([`ArmKind`]), from link lengths, or from a two-link arm ([`Arm::two_link`]). An arm is its
//! chain (an optional rail and revolute links with their limits), the prior its targets and
//! training data are drawn from, its body for the plant ([`Arm::real`]: masses, inertias, the
//! rail's servo) and its demo target; and it answers what applies to it, as data: a closed form
//! ([`Arm::closed_form`], the two-link arm's), the chain experiment's methods ([`Arm::methods`]),
//! whether it hangs under gravity ([`Arm::vertical`]).
//!
//! The named arms (the SO-101's joints and mass properties, from its MuJoCo model, in [`so101`]):
//!
//! - `2r`: today's two-link arm (unit links, joints free to turn): the default everywhere, with
//!   its closed form as the reference. Its targets have two isolated answers, not a manifold, so
//!   the chain experiment does not apply to it (the averaging experiment is its lesson).
//! - `3r`: three revolute joints with links 1.0, 0.8 and 0.6 m; the shoulder turns ±90° and the
//!   two outer joints ±150°; the prior is uniform inside those limits. The links shrink outwards
//!   so the wrist can circle the target: for a target at distance `r` the wrist sits anywhere
//!   on a circle of radius 0.6 m around it that the two inner links reach (0.2 to 1.8 m from the
//!   base), which is a whole circle for 0.8 <= r <= 1.2 and a long arc elsewhere; the limits cut
//!   that circle into arcs without shrinking it to a point. Measured on the 1,000 targets of
//!   `experiment chain --arm 3r` (drawn from the prior), the exact posterior spreads over more
//!   than 0.1 rad (root of the trace of its covariance) on every one, with a median of 1.9 rad: a
//!   genuine 1-D self-motion manifold per target, not a point.
//! - `rail3`: the benchmark arm of Ardizzone et al. 2019 and Kruse et al. 2021: a rail along
//!   `y` and three joints with links 0.5, 0.5 and 1.0 m, segment angles cumulative
//!   (`x2`, `x2 + x3`, `x2 + x3 + x4`), prior `N(0, diag(0.25, 0.5, 0.5, 0.5)^2)`. Its limits
//!   (rail ±1 m = 4 sigma, joints ±180° = 6.3 sigma) only bound the representation: the prior
//!   puts 6e-5 of its mass outside them.
//!
//! An arm can also come from three or more link lengths (joints limited as on `3r`: shoulder
//! ±90°, the others ±150°; uniform prior), or from any two-link arm (two lengths, its joint
//! limits; uniform prior), which is a chain of two links whose [`Arm::closed_form`] is that
//! two-link arm.

pub mod so101;
pub mod urdf;

use crate::chain::arm::{Chain, ChainError, Link, Marginal, Prior, Travel};
use crate::kinematics::{JointLimits, Point2, TwoLinkArm};
use crate::lineup::SolverId;
use serde::{Deserialize, Serialize};
use std::f64::consts::PI;

/// A named arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ArmKind {
    /// Today's two-link arm (the default).
    TwoR,
    /// Three revolute joints with limits: a 1-D self-motion manifold per target.
    ThreeR,
    /// The rail-and-three-joints benchmark arm of Ardizzone et al. 2019 / Kruse et al. 2021.
    Rail3,
    /// The SO-101 arm's three pitch joints in a vertical plane ([`so101`]).
    So101,
}

/// What a named arm is and what applies to it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArmSpec {
    /// The key on the command line (`rail3`).
    pub key: &'static str,
    /// A one-line description.
    pub about: &'static str,
    /// The chain experiment's methods that apply (empty: the experiment does not apply).
    pub methods: &'static [SolverId],
    /// The demo target of the benchmark's figures and timings and of the chain lab, metres.
    pub demo: [f64; 2],
}

/// The benchmark's demo target `y* = (1.5, 0)` of Kruse et al. 2021, for the arms it reaches.
const BENCHMARK_DEMO: [f64; 2] = [1.5, 0.0];

/// Shoulder range of `3r` and of arms from lengths, radians (±90°).
pub const SHOULDER_LIMIT: f64 = PI / 2.0;
/// Range of the outer joints of `3r` and of arms from lengths, radians (±150°).
pub const OUTER_LIMIT: f64 = 5.0 * PI / 6.0;
/// Link lengths of `3r`, metres.
pub const THREE_R_LENGTHS: [f64; 3] = [1.0, 0.8, 0.6];
/// Link lengths of `rail3`, metres.
pub const RAIL3_LENGTHS: [f64; 3] = [0.5, 0.5, 1.0];
/// Prior standard deviations of `rail3`: rail (m), then the three joints (rad).
pub const RAIL3_SIGMAS: [f64; 4] = [0.25, 0.5, 0.5, 0.5];

impl ArmKind {
    /// Every named arm, default first.
    pub const ALL: [ArmKind; 4] = [ArmKind::TwoR, ArmKind::ThreeR, ArmKind::Rail3, ArmKind::So101];

    /// What this arm is.
    pub const fn spec(self) -> ArmSpec {
        const CHAIN_METHODS: &[SolverId] = &SolverId::CHAIN;
        match self {
            ArmKind::TwoR => ArmSpec {
                key: "2r",
                about: "two unit links, joints free to turn (the default; two answers per target)",
                methods: &[],
                demo: BENCHMARK_DEMO,
            },
            ArmKind::ThreeR => ArmSpec {
                key: "3r",
                about: "links 1.0, 0.8, 0.6 m, shoulder ±90°, outer joints ±150°, uniform prior",
                methods: CHAIN_METHODS,
                demo: BENCHMARK_DEMO,
            },
            ArmKind::Rail3 => ArmSpec {
                key: "rail3",
                about: "rail along y and links 0.5, 0.5, 1.0 m, prior N(0, diag(0.25, 0.5, 0.5, 0.5)^2) (Kruse et al. 2021)",
                methods: CHAIN_METHODS,
                demo: BENCHMARK_DEMO,
            },
            ArmKind::So101 => ArmSpec {
                key: "so101",
                about: "the SO-101's shoulder lift, elbow flex and wrist flex (links 116, 135, 160 mm, MuJoCo Menagerie's ranges), uniform prior",
                methods: CHAIN_METHODS,
                // Forward and a little up, near the gripper at Menagerie zero (0.32, 0.13).
                demo: [0.3, 0.1],
            },
        }
    }

    /// The key on the command line.
    pub const fn key(self) -> &'static str {
        self.spec().key
    }

    /// The arm as a chain with its prior.
    pub fn arm(self) -> Arm {
        let (chain, prior) = match self {
            ArmKind::TwoR => {
                let chain = Chain::from(TwoLinkArm::default());
                let prior = Prior::uniform(&chain);
                (chain, prior)
            }
            ArmKind::ThreeR => {
                let chain = limited_chain(&THREE_R_LENGTHS).expect("valid lengths");
                let prior = Prior::uniform(&chain);
                (chain, prior)
            }
            ArmKind::Rail3 => {
                let full = JointLimits::FULL;
                let links = RAIL3_LENGTHS.map(|length| Link { length, limits: full }).to_vec();
                let travel = Travel::new(-4.0 * RAIL3_SIGMAS[0], 4.0 * RAIL3_SIGMAS[0]).expect("valid travel");
                let chain = Chain::new(Some(travel), links).expect("valid chain");
                let marginals = RAIL3_SIGMAS.map(|sigma| Marginal::Gaussian { mean: 0.0, sigma }).to_vec();
                let prior = Prior::new(marginals, &chain).expect("valid prior");
                (chain, prior)
            }
            ArmKind::So101 => {
                let chain = so101::chain().expect("valid chain");
                let prior = Prior::uniform(&chain);
                (chain, prior)
            }
        };
        Arm { name: self.key().to_string(), kind: Some(self), chain, prior, body: None }
    }
}

/// Revolute joints with these lengths, the shoulder within ±90° and the others within ±150°.
fn limited_chain(lengths: &[f64]) -> Result<Chain, ChainError> {
    let links = lengths
        .iter()
        .enumerate()
        .map(|(i, &length)| {
            let half = if i == 0 { SHOULDER_LIMIT } else { OUTER_LIMIT };
            Link { length, limits: JointLimits { min: -half, max: half } }
        })
        .collect();
    Chain::new(None, links)
}

crate::keys::keyed!(ArmKind, "arm", aliases: [("two-link", ArmKind::TwoR)]);

/// A chain with its prior: a named arm, or one built from link lengths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arm {
    /// The arm's key, or `lengths L1,L2,...` for an arm from lengths.
    pub name: String,
    /// The named arm it is, if any (left out of JSON when none: JSON holds no `null`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ArmKind>,
    /// The kinematics.
    pub chain: Chain,
    /// The prior over its coordinates (test targets and training data are drawn from it).
    pub prior: Prior,
    /// The body of an arm read from a file ([`urdf`]); the named arms' and the others' come from
    /// [`Arm::real`] (left out of JSON when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Body>,
}

/// The body of an arm read from a file: each link's mass properties and whether it hangs in a
/// vertical plane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Body {
    /// Each revolute link's mass properties in its own frame (`x` along the link).
    pub bodies: Vec<crate::plant::dynamics::Inertia>,
    /// True when the chain's plane is vertical (gravity along its −y).
    pub vertical: bool,
}

/// The fewest link lengths that make an arm from lengths a redundant chain.
pub const MIN_CHAIN_LENGTHS: usize = 3;

impl Arm {
    /// An arm from three or more link lengths (metres): joints limited as on `3r`, uniform prior.
    pub fn from_lengths(lengths: &[f64]) -> Result<Self, ChainError> {
        if lengths.len() < MIN_CHAIN_LENGTHS {
            return Err(ChainError::BadPrior(format!(
                "an arm from lengths needs at least {MIN_CHAIN_LENGTHS} links (two lengths are the two-link arm), got {}",
                lengths.len()
            )));
        }
        let chain = limited_chain(lengths)?;
        let prior = Prior::uniform(&chain);
        let name = format!("lengths {}", lengths.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(","));
        Ok(Self { name, kind: None, chain, prior, body: None })
    }

    /// The two-link arm `arm` as a value: a chain of its two links with their limits, a uniform
    /// prior, named `2r` when it is the default arm (and then [`ArmKind::TwoR`]'s value), else
    /// after its lengths.
    pub fn two_link(arm: TwoLinkArm) -> Self {
        if arm == TwoLinkArm::default() {
            return ArmKind::TwoR.arm();
        }
        let chain = Chain::from(arm);
        let prior = Prior::uniform(&chain);
        Self { name: format!("lengths {},{}", arm.l1(), arm.l2()), kind: None, chain, prior, body: None }
    }

    /// The arm's closed form, when it has one: the two-link arm it is (no rail, two revolute
    /// links). The analytic solver, its fixed branches, the branch average and every two-link
    /// head are built on it.
    pub fn closed_form(&self) -> Option<TwoLinkArm> {
        TwoLinkArm::try_from(&self.chain).ok()
    }

    /// The chain experiment's methods that apply to this arm.
    pub fn methods(&self) -> &'static [SolverId] {
        match self.kind {
            Some(k) => k.spec().methods,
            // Two links have two isolated answers per target, not a manifold.
            None if self.closed_form().is_some() => &[],
            None => &SolverId::CHAIN,
        }
    }

    /// Every solver that answers on this arm, in its tables' order: the closed form's line-up
    /// ([`SolverId::TWO_LINK`]) where the arm has one, else a chain's ([`SolverId::CHAIN`]).
    pub fn solvers(&self) -> &'static [SolverId] {
        if self.closed_form().is_some() { &SolverId::TWO_LINK } else { &SolverId::CHAIN }
    }

    /// Number of coordinates.
    pub fn coords(&self) -> usize {
        self.chain.coords()
    }

    /// The centre of the prior, coordinate by coordinate: a pose to start from.
    pub fn prior_center(&self) -> Vec<f64> {
        (0..self.coords()).map(|i| self.prior.center(i)).collect()
    }

    /// The demo target of the figures, timings and chain lab: the named arm's, else the
    /// benchmark's `(1.5, 0)` scaled to this chain (5/8 of its reach, where 3r's lies).
    pub fn demo_target(&self) -> Point2 {
        match self.kind {
            Some(k) => Point2::new(k.spec().demo[0], k.spec().demo[1]),
            None => Point2::new(0.625 * self.chain.reach(), 0.0),
        }
    }

    /// The arm as the plant builds it: the SO-101's links with their measured mass properties,
    /// an arm from a file's with its own ([`Arm::body`]), any other chain's as uniform rods
    /// ([`crate::plant::RealChain::rods`]).
    pub fn real(&self) -> crate::plant::RealChain {
        let mut real = crate::plant::RealChain::rods(self.chain.clone());
        if self.kind == Some(ArmKind::So101) {
            real.bodies = so101::BODIES.to_vec();
        }
        if let Some(body) = &self.body {
            real.bodies = body.bodies.clone();
        }
        real
    }

    /// True when the arm hangs in a vertical plane (the SO-101's pitch joints, or an arm from a
    /// file whose plane is vertical): its plant has gravity on. The others lie on a table.
    pub fn vertical(&self) -> bool {
        self.kind == Some(ArmKind::So101) || self.body.as_ref().is_some_and(|b| b.vertical)
    }

    /// The farthest the tip gets from the origin: the reach, plus the rail's travel.
    pub fn extent(&self) -> f64 {
        let rail = self.chain.rail().map_or(0.0, |t| t.min.abs().max(t.max.abs()));
        self.chain.reach() + rail
    }

    /// The named arms the chain experiment applies to, for messages (`3r, rail3`).
    pub fn experiment_arms() -> String {
        let keys: Vec<&str> = ArmKind::ALL.iter().filter(|k| !k.spec().methods.is_empty()).map(|k| k.key()).collect();
        keys.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_arms_parse_and_build() {
        for k in ArmKind::ALL {
            assert_eq!(k.key().parse::<ArmKind>().unwrap(), k);
            let arm = k.arm();
            arm.chain.validate().unwrap();
            assert_eq!(arm.prior.marginals().len(), arm.coords());
        }
        assert_eq!("RAIL3".parse::<ArmKind>().unwrap(), ArmKind::Rail3);
        let e = "4r".parse::<ArmKind>().unwrap_err();
        assert!(e.contains("2r, 3r, rail3, so101") && e.contains("`4r`"), "{e}");
        assert_eq!(ArmKind::Rail3.arm().coords(), 4);
        assert!(ArmKind::TwoR.arm().methods().is_empty());
        assert_eq!(Arm::experiment_arms(), "3r, rail3, so101");
    }

    #[test]
    fn every_arms_demo_target_is_within_its_reach() {
        for k in ArmKind::ALL {
            let arm = k.arm();
            let t = arm.demo_target();
            assert!(t.norm() < 0.9 * arm.extent() && t.norm() > 0.0, "{}: {t:?}", k.key());
        }
        let a = Arm::from_lengths(&[1.0, 0.8, 0.6]).unwrap();
        assert_eq!(a.demo_target(), Point2::new(1.5, 0.0), "as 3r's");
    }

    #[test]
    fn arms_from_lengths_need_three_good_lengths() {
        let a = Arm::from_lengths(&[1.0, 0.5, 0.5, 0.25]).unwrap();
        assert_eq!(a.coords(), 4);
        assert_eq!(a.methods(), &SolverId::CHAIN);
        assert_eq!(a.solvers(), &SolverId::CHAIN);
        assert!(Arm::from_lengths(&[1.0, 1.0]).unwrap_err().to_string().contains("at least 3"));
        assert!(Arm::from_lengths(&[1.0, 0.0, 1.0]).is_err());
    }

    #[test]
    fn a_two_link_arm_is_a_chain_with_a_closed_form() {
        assert_eq!(Arm::two_link(TwoLinkArm::default()), ArmKind::TwoR.arm());
        assert_eq!(ArmKind::TwoR.arm().closed_form(), Some(TwoLinkArm::default()));
        let limited = TwoLinkArm::new(1.0, 0.5)
            .unwrap()
            .with_limits(JointLimits::FULL, JointLimits { min: -2.0, max: 2.5 })
            .unwrap();
        let arm = Arm::two_link(limited);
        assert_eq!(arm.closed_form(), Some(limited));
        assert_eq!((arm.name.as_str(), arm.kind, arm.coords()), ("lengths 1,0.5", None, 2));
        assert!(arm.methods().is_empty(), "two isolated answers: the chain experiment does not apply");
        assert_eq!(arm.solvers(), &SolverId::TWO_LINK);
        for k in [ArmKind::ThreeR, ArmKind::Rail3, ArmKind::So101] {
            assert_eq!(k.arm().closed_form(), None, "{}", k.key());
        }
        assert_eq!(Arm::from_lengths(&[1.0, 1.0, 1.0]).unwrap().closed_form(), None);
    }
}
