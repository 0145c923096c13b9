//! The plants the randomization experiments draw and move: the ranges a plant is drawn from
//! ([`Ranges`]), the sets of test plants ([`PlantSet`]), and one move from rest at [`START`]
//! ([`landing`]), with the command that reaches a target on a given plant ([`command_reaching`]).
//! Shared by the open-loop comparison ([`super::randomization`]) and the feedback head
//! ([`super::feedback`]).

use crate::analytic::solve_branches;
use crate::arm::Arm;
use crate::kinematics::{ElbowMode, Mismatch, Point2, Pose, RealArm, TwoLinkArm};
use crate::plant::channel::{Channel, Randomized, RangeError, check_range};
use crate::plant::dynamics::Servo;
use crate::plant::{Camera, Plant, PlantConfig, RealChain};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Where every evaluation (and every data-collection move) starts from rest.
pub const START: Pose = Pose::new(0.0, std::f64::consts::FRAC_PI_2);

pub use crate::plant::channel::MAX_MISMATCH;

/// The largest flex or backlash a range may reach, radians: the plant's own bounds
/// ([`crate::plant::MAX_FLEX`], [`crate::plant::MAX_BACKLASH`], equal), which the degradation
/// channels use too.
pub const MAX_ANGLE: f64 = crate::plant::MAX_FLEX;

/// A randomized channel's ranges ([`crate::plant::channel::Row::randomized`]).
const fn randomized(channel: Channel) -> Randomized {
    channel.row().randomized.expect("a randomized channel")
}

/// Uniform ranges `[lo, hi]` of the channels a plant is drawn from: the channels whose row in
/// [`crate::plant::channel::ROWS`] has randomization ranges, in the order they are drawn
/// ([`Ranges::CHANNELS`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ranges {
    /// Size of the model mismatch as a multiple of [`Mismatch::DEFAULT`]; each of its four
    /// parts (two link-length errors, two joint offsets) gets its own size and a random sign.
    pub mismatch: [f64; 2],
    /// Flex: droop of the stretched-out arm, radians (see [`PlantConfig::flex`]).
    pub flex: [f64; 2],
    /// Friction loss of each joint, N m (see [`Servo::frictionloss`]).
    pub friction: [f64; 2],
    /// Backlash half-width, radians.
    pub backlash: [f64; 2],
}

impl Ranges {
    /// The randomized channels, in the order a plant draws them (and its fields stand in).
    pub const CHANNELS: [Channel; 4] = [Channel::Mismatch, Channel::Flex, Channel::Friction, Channel::Backlash];

    /// The randomized training ranges, from the table: mismatch up to 1.5 times the default gap,
    /// a droop up to 20 mrad, friction up to three times the SO-101 servo's friction loss,
    /// backlash up to 10 mrad.
    pub const TRAINING: Ranges = Ranges {
        mismatch: randomized(Channel::Mismatch).training,
        flex: randomized(Channel::Flex).training,
        friction: randomized(Channel::Friction).training,
        backlash: randomized(Channel::Backlash).training,
    };

    /// Plants outside the training ranges on every channel (up to twice as far again), from the
    /// table.
    pub const OUTSIDE: Ranges = Ranges {
        mismatch: randomized(Channel::Mismatch).outside,
        flex: randomized(Channel::Flex).outside,
        friction: randomized(Channel::Friction).outside,
        backlash: randomized(Channel::Backlash).outside,
    };

    /// Only the nominal plant.
    pub const NOMINAL: Ranges = Ranges { mismatch: [0.0; 2], flex: [0.0; 2], friction: [0.0; 2], backlash: [0.0; 2] };

    /// The range of a randomized channel (`None` for the others).
    pub fn span(&self, channel: Channel) -> Option<[f64; 2]> {
        let mut copy = *self;
        copy.span_mut(channel).copied()
    }

    /// The range of a randomized channel, mutably (`None` for the others).
    pub fn span_mut(&mut self, channel: Channel) -> Option<&mut [f64; 2]> {
        match channel {
            Channel::Mismatch => Some(&mut self.mismatch),
            Channel::Flex => Some(&mut self.flex),
            Channel::Friction => Some(&mut self.friction),
            Channel::Backlash => Some(&mut self.backlash),
            _ => None,
        }
    }

    /// Checks every range against its channel's limit ([`check_range`]), in [`Ranges::CHANNELS`]
    /// order; `set` names these ranges in the error (`randomized`, `outside`).
    pub(crate) fn check(&self, set: &'static str) -> Result<(), RangeError> {
        for channel in Self::CHANNELS {
            check_range(set, channel, self.span(channel).unwrap_or_default())?;
        }
        Ok(())
    }

    /// One plant drawn from these ranges (the camera as given, the seed from `rng`).
    pub fn draw(&self, arm: &TwoLinkArm, camera: Camera, rng: &mut ChaCha8Rng) -> PlantConfig {
        let d = Mismatch::DEFAULT;
        let mut part = |v: f64| v * pick(rng, self.mismatch) * if rng.random_bool(0.5) { 1.0 } else { -1.0 };
        let mismatch = Mismatch {
            length_error: [part(d.length_error[0]), part(d.length_error[1])],
            joint_offsets: Pose::new(part(d.joint_offsets.shoulder), part(d.joint_offsets.elbow)),
        };
        let real = RealArm::with_mismatch(arm, mismatch).unwrap_or_else(|_| RealArm::ideal(*arm));
        let ideal = PlantConfig::ideal(*arm);
        PlantConfig {
            real,
            flex: pick(rng, self.flex),
            servo: Servo { frictionloss: pick(rng, self.friction), ..ideal.servo },
            backlash: pick(rng, self.backlash),
            camera,
            seed: rng.random(),
            ..ideal
        }
    }

    /// One plant of the chain `arm` drawn from these ranges (the camera as given, the seed from
    /// `rng`), as [`Ranges::draw`] draws the two-link arm's: every revolute link `k` gets its own
    /// length error and joint offset, each a random sign times a size drawn from the mismatch
    /// range times [`Mismatch::DEFAULT`]'s first part (the upper arm's, for `k = 0`) or its second
    /// (the forearm's, for every later link); the lengths' first, base first, then the offsets;
    /// then flex, friction, backlash and the seed. A rail is left as modelled. The arm's body is
    /// [`Arm::real`]'s, in a vertical plane when [`Arm::vertical`]; a mismatch that makes no
    /// valid chain leaves the arm as modelled.
    pub fn draw_chain(&self, arm: &Arm, camera: Camera, rng: &mut ChaCha8Rng) -> ChainPlant {
        let d = Mismatch::DEFAULT;
        let links = arm.chain.links().len();
        let mut part = |v: f64| v * pick(rng, self.mismatch) * if rng.random_bool(0.5) { 1.0 } else { -1.0 };
        let lengths: Vec<f64> = (0..links).map(|k| part(d.length_error[k.min(1)])).collect();
        let offsets: Vec<f64> =
            (0..links).map(|k| part(if k == 0 { d.joint_offsets.shoulder } else { d.joint_offsets.elbow })).collect();
        let model = arm.real();
        let real = model.mismatched(|k| lengths[k], |k| offsets[k]).unwrap_or(model);
        let ideal = PlantConfig::ideal(TwoLinkArm::default());
        let cfg = PlantConfig {
            gravity: arm.vertical(),
            flex: pick(rng, self.flex),
            servo: Servo { frictionloss: pick(rng, self.friction), ..ideal.servo },
            backlash: pick(rng, self.backlash),
            camera,
            seed: rng.random(),
            ..ideal
        };
        ChainPlant { real, cfg }
    }
}

/// A uniform draw from `[lo, hi]` (`lo` when the range is a point).
fn pick(rng: &mut ChaCha8Rng, [lo, hi]: [f64; 2]) -> f64 {
    if hi > lo { rng.random_range(lo..=hi) } else { lo }
}

/// A chain's plant: the arm as it truly is and the channels it moves under (the configuration's
/// two-link fields, `real` and `link_mass`, unused).
#[derive(Debug, Clone, PartialEq)]
pub struct ChainPlant {
    /// The real chain: its mismatched lengths, joint offsets and bodies.
    pub real: RealChain,
    /// Servo (friction), backlash, flex, gravity, camera and seed.
    pub cfg: PlantConfig,
}

impl ChainPlant {
    /// Where the tip comes to rest when `command` is sent from rest at `start` (the arm's
    /// coordinates): the chains' [`landing`].
    pub fn landing(&self, start: &[f64], command: &[f64]) -> Plant {
        let mut plant = Plant::new(self.real.clone(), self.cfg, start);
        plant.command(command);
        plant.settle();
        plant
    }
}

/// Which plants a row was measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlantSet {
    /// The nominal plant (the simulator itself).
    Nominal,
    /// Plants drawn from the randomized training ranges.
    Inside,
    /// Plants drawn from ranges beyond them.
    Outside,
}

/// Where the tip of `plant` comes to rest when `command` is sent from rest at [`START`].
pub fn landing(cfg: &PlantConfig, command: Pose) -> Plant {
    let mut plant = Plant::new(cfg.two_link_real(), *cfg, &START.coords());
    plant.command(&command.coords());
    plant.settle();
    plant
}

/// The most Newton steps [`command_reaching`] takes, each one landing ([`landing`]).
pub const REACH_STEPS: usize = 12;

/// The command that brings the tip of `cfg`'s plant onto `target` from [`START`] on the `mode`
/// branch: Newton steps on the true tip, from the nominal closed-form answer. `None` when the
/// steps do not reach it within 0.1 mm (near the rim, or a branch the drawn plant lacks).
pub fn command_reaching(arm: &TwoLinkArm, cfg: &PlantConfig, target: Point2, mode: ElbowMode) -> Option<Pose> {
    let mut q = solve_branches(arm, target).pose(mode);
    for _ in 0..REACH_STEPS {
        let miss = target - landing(cfg, q).tip();
        if miss.norm() < 1e-4 {
            return Some(q);
        }
        let step = arm.jacobian(q).try_inverse()? * miss;
        q = Pose::new(q.shoulder + step.x.clamp(-0.2, 0.2), q.elbow + step.y.clamp(-0.2, 0.2));
        if !q.is_finite() {
            return None;
        }
    }
    None
}

/// The first `n` of `targets` that lie clear of the workspace's rims by 15 % of the reach, so
/// that every drawn plant (whose links may be up to 18 % longer or shorter) reaches them and a
/// miss is the pipeline's, not the geometry's.
pub(crate) fn clear_of_the_rim(arm: &TwoLinkArm, targets: Vec<Point2>, n: usize) -> Vec<Point2> {
    let margin = 0.15 * arm.reach();
    targets
        .into_iter()
        .filter(|t| t.norm() > arm.inner_radius() + margin && t.norm() < arm.reach() - margin)
        .take(n)
        .collect()
}

/// A gap under this (metres) is too small to judge whether randomization closes it.
const SMALLEST_GAP: f64 = 1e-3;

/// Whether randomization at least halved a gap of `before` metres to `after` (the rule of every
/// "closes the gap" claim); `None` when the gap was too small to judge.
pub(crate) fn gap_halved(before: f64, after: f64) -> Option<bool> {
    (before >= SMALLEST_GAP).then_some(after <= 0.5 * before)
}
