//! The simulated "real" arm that sits between a controller and the world.
//!
//! The arm moves by rigid-body dynamics ([`dynamics`]): each joint is driven by a position servo
//! that closes its own loop on its own encoder, as the SO-101's Feetech STS3215 servos,
//! Dynamixels and industrial drives do. The host sends *goals*; a goal reaches the servo
//! [`PlantConfig::latency_ms`] milliseconds after it is sent (the control latency). The servo's
//! torque, `kp (goal − q) − kv q̇` clamped to its limit, meets the links' inertia, the rotor's
//! armature, viscous damping, Coulomb friction that really sticks, gravity when the arm hangs in
//! a vertical plane, and backlash as real free play: a hinge of range ±[`PlantConfig::backlash`]
//! between each servo's output and its link. So the arm swings, rings, saturates, sags and stops
//! short. Every parameter comes from the SO-101's model in MuJoCo Menagerie, and the traces are
//! checked against MuJoCo itself (`tests/plant_vs_mujoco.rs`).
//!
//! Beyond the joints, the links flex (the arm droops under gravity by [`PlantConfig::flex`] at
//! full stretch, a static compliance of the links) and the real arm differs from the nominal model
//! ([`RealArm`]: other link lengths, joint offsets the encoders cannot see). The tip may hold a
//! payload ([`PlantConfig::payload`], a small ball on the last link), which the servos sag under
//! ([`static_sag`]).
//!
//! Two sensors watch it. The encoders read each servo's output shaft, with Gaussian noise: they
//! see where the servo stopped (friction's stop-short, gravity's sag) but neither the free play
//! beyond it, nor flex, nor the mismatch. An external [`Camera`] sees the tip itself, with pixel
//! noise, a calibration offset and a frame rate. Every random draw comes from the plant's own
//! seeded generators (one per sensor, so adding a camera leaves the encoder noise stream
//! unchanged). Time advances exactly as the caller asks, in sub-steps of at most [`SUBSTEP`]
//! seconds (the dynamics split one further for a servo too stiff for it), and a goal reaches the
//! servos at its own time within a sub-step, so a latency in milliseconds is exact whatever the
//! sub-step: the same goals at the same times give the same arm, bit for bit. Every quantity a user sets has a physical range
//! ([`PlantConfig::validate`]), within which the plant stays finite.

pub mod channel;
pub mod dynamics;
pub mod error;

pub use error::{PlantError, Quantity};

use std::collections::VecDeque;

use crate::chain::arm::Chain;
use crate::kinematics::serial::MAX_COORDS;
use crate::kinematics::{Mismatch, Point2, Pose, RealArm, TwoLinkArm};
use crate::rng::{Stream, rng};
use dynamics::{Dof, Inertia, MAX_DOF, Multibody, PLAY_ARMATURE, PLAY_DAMPING, Servo, State};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

pub use dynamics::SUBSTEP;

/// The longest step of the dynamics of a plant with free play (backlash), seconds: its
/// sub-steps are split into equal pieces no longer than this. Where a light, softly stopped play
/// hinge comes to rest decides how repeatable a landing is: stepped at 2.5 ms, the
/// randomization's Newton landings (`command_reaching`, to 0.1 mm) reached 3,854 of its 10,000
/// training targets on plants with free play and friction; 6,644 at 1 ms; 6,567 with the 2 ms
/// sub-step in two pieces of 1 ms (6,231 with 2.5 ms in two of 1.25 ms).
pub const PLAY_STEP: f64 = 1e-3;

/// How many equal pieces no longer than `longest` cover `span` seconds (the tolerance keeps a
/// span of exactly `longest` one piece despite rounding).
fn pieces(span: f64, longest: f64) -> f64 {
    (span / longest - 1e-9).ceil()
}

/// Two plant times this close count as one, seconds: a goal due within it of now arrives now
/// (sums of sub-steps and latencies round differently).
const ON_TIME: f64 = 1e-9;

/// The largest latency accepted, milliseconds (ten seconds).
pub const MAX_LATENCY_MS: f64 = 10_000.0;

/// The heaviest link accepted, kg.
pub const MAX_LINK_MASS: f64 = 1e3;

/// The lightest link accepted, kg (a milligram).
pub const MIN_LINK_MASS: f64 = 1e-6;

/// The heaviest payload accepted, kg (as the heaviest link).
pub const MAX_PAYLOAD: f64 = MAX_LINK_MASS;

/// The density of a payload, kg/m³ (water's): the plant holds it as a solid ball of this
/// density centred at the tip, 3.9 cm in radius at 250 g. Only its rotational inertia about
/// its centre depends on it, never the sag (mass and centre of mass alone). A ball rather than a
/// point: a point mass on links of a few milligrams leaves the stretched arm a motion with no
/// inertia (the tip still, the joints turning against each other), which no fixed step resolves;
/// the range test's corners left the finite range within 1.3 s.
pub const PAYLOAD_DENSITY: f64 = 1000.0;

/// The widest free play accepted, radians (an eighth of a turn).
pub const MAX_BACKLASH: f64 = std::f64::consts::FRAC_PI_4;

/// The largest flex accepted, radians (the stretched-out arm's droop, an eighth of a turn).
pub const MAX_FLEX: f64 = std::f64::consts::FRAC_PI_4;

/// The largest encoder noise accepted, radians.
pub const MAX_ENCODER_NOISE: f64 = std::f64::consts::PI;

/// Mass of each link of the two-link arm, kg: a 1 m carbon-fibre tube of about 20 mm weighs
/// about 50 g, light enough for the SO-101's servos to swing it.
pub const TWO_LINK_MASS: f64 = 0.05;

/// The arm counts as settled once every servo has turned slower than this, rad/s, for
/// [`SETTLE_WINDOW`] seconds (a residual ring of about 10 µrad).
pub const SETTLE_SPEED: f64 = 1e-3;
/// See [`SETTLE_SPEED`], seconds.
pub const SETTLE_WINDOW: f64 = 0.02;

/// The longest [`Plant::settle`] waits, seconds of plant time.
pub const SETTLE_TIMEOUT: f64 = 10.0;

/// An external camera that observes the tip.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Camera {
    /// Standard deviation of the tip's image position, pixels.
    pub pixel_noise: f64,
    /// Metres per pixel at the arm's plane.
    pub metres_per_pixel: f64,
    /// Calibration error: the camera reports every point shifted by this much, metres.
    pub offset: Point2,
    /// Frames per second (a frame holds between captures); 0 or less turns the camera off.
    pub fps: f64,
}

impl Default for Camera {
    /// A 1 mm-per-pixel camera at 30 frames per second with half a pixel of noise and a perfect
    /// calibration.
    fn default() -> Self {
        Self { pixel_noise: 0.5, metres_per_pixel: 1e-3, offset: Point2::zeros(), fps: 30.0 }
    }
}

impl Camera {
    /// No camera.
    pub const OFF: Camera =
        Camera { pixel_noise: 0.0, metres_per_pixel: 1e-3, offset: Point2::new(0.0, 0.0), fps: 0.0 };

    /// True when the camera takes frames.
    pub fn is_on(&self) -> bool {
        self.fps > 0.0
    }

    /// Standard deviation of a reported tip coordinate, metres.
    pub fn noise_metres(&self) -> f64 {
        self.pixel_noise * self.metres_per_pixel
    }

    /// Checks every field, naming the first bad one: pixel noise from 0 to [`MAX_PIXEL_NOISE`]
    /// pixels, metres per pixel from [`MIN_METRES_PER_PIXEL`] to [`MAX_METRES_PER_PIXEL`], an
    /// offset within ±[`MAX_CAMERA_OFFSET`] metres, and a frame rate of 0 (off) or from
    /// [`MIN_FPS`] to [`MAX_FPS`] per second.
    pub fn validate(&self) -> Result<(), PlantError> {
        Quantity::PixelNoise.check(self.pixel_noise, "pixels", [0.0, MAX_PIXEL_NOISE])?;
        Quantity::MetresPerPixel.check(self.metres_per_pixel, "m", [MIN_METRES_PER_PIXEL, MAX_METRES_PER_PIXEL])?;
        let within = |v: f64| v.is_finite() && (0.0..=MAX_CAMERA_OFFSET).contains(&v);
        if !(within(self.offset.x.abs()) && within(self.offset.y.abs())) {
            return Err(PlantError::CameraOffset {
                unit: "m",
                limit: MAX_CAMERA_OFFSET,
                got: [self.offset.x, self.offset.y],
            });
        }
        Quantity::FrameRate.check(self.fps, "frames/s", [MIN_FPS, MAX_FPS])
    }

    /// Every field made usable: a non-finite or negative value becomes 0 (a rate of 0 turns the
    /// camera off, and so does one slower than [`MIN_FPS`]; metres per pixel become at least
    /// [`MIN_METRES_PER_PIXEL`]), and each is capped at its largest accepted value, so a
    /// configuration that skipped [`Camera::validate`] can neither hang the frame schedule nor
    /// overflow the noise, and passes it.
    fn sanitized(mut self) -> Self {
        let clean = |v: f64, hi: f64| if v.is_finite() && v > 0.0 { v.min(hi) } else { 0.0 };
        self.pixel_noise = clean(self.pixel_noise, MAX_PIXEL_NOISE);
        self.metres_per_pixel = clean(self.metres_per_pixel, MAX_METRES_PER_PIXEL).max(MIN_METRES_PER_PIXEL);
        self.fps = clean(self.fps, MAX_FPS);
        if self.fps < MIN_FPS {
            self.fps = 0.0;
        }
        let offset = |v: f64| if v.is_finite() { v.clamp(-MAX_CAMERA_OFFSET, MAX_CAMERA_OFFSET) } else { 0.0 };
        self.offset = Point2::new(offset(self.offset.x), offset(self.offset.y));
        self
    }
}

/// The fastest camera accepted, frames per second.
pub const MAX_FPS: f64 = 1e4;
/// The slowest camera accepted, frames per second (a frame an hour).
pub const MIN_FPS: f64 = 1.0 / 3600.0;
/// The finest camera accepted, metres per pixel (a nanometre).
pub const MIN_METRES_PER_PIXEL: f64 = 1e-9;
/// The largest pixel noise accepted, pixels.
pub const MAX_PIXEL_NOISE: f64 = 1e6;
/// The coarsest camera accepted, metres per pixel.
pub const MAX_METRES_PER_PIXEL: f64 = 1e3;
/// The largest calibration offset accepted on each axis, metres.
pub const MAX_CAMERA_OFFSET: f64 = 1e3;

/// One camera frame: where the camera saw the tip, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    /// The tip as the camera reports it (noise and calibration offset included), metres.
    pub tip: Point2,
    /// Plant time of the capture, seconds.
    pub time: f64,
}

/// The physical arm apart from the gap channels: the servo of every joint, the links' masses and
/// the plane it moves in. What a user may set on the command line (`--kp`, `--link-mass`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Body {
    /// The servo of every joint (its friction loss is the friction channel's).
    pub servo: Servo,
    /// Mass of each link (uniform rods), kg.
    pub link_mass: [f64; 2],
    /// True when the arm hangs in a vertical plane (gravity along −y).
    pub gravity: bool,
}

impl Default for Body {
    /// The SO-101's servo without friction, 50 g links, a horizontal table.
    fn default() -> Self {
        Self { servo: frictionless_sts3215(), link_mass: two_link_masses(), gravity: false }
    }
}

impl Body {
    /// Checks the servo and the masses, naming the first bad quantity in its unit.
    pub fn validate(&self) -> Result<(), PlantError> {
        PlantConfig { servo: self.servo, link_mass: self.link_mass, ..PlantConfig::ideal(TwoLinkArm::default()) }
            .validate()
    }
}

/// Parameters of the simulated arm, every one in physical units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlantConfig {
    /// The true geometry and the joint offsets (the sim-to-real gap).
    pub real: RealArm,
    /// Backlash: half-width of the free play between each servo and its link, radians.
    pub backlash: f64,
    /// Standard deviation of the encoder noise, radians.
    pub noise_std: f64,
    /// Seed of the noise.
    pub seed: u64,
    /// The servo of every joint ([`Servo::STS3215`] by default); its friction loss is the
    /// friction channel.
    #[serde(default = "frictionless_sts3215")]
    pub servo: Servo,
    /// Mass of each link (uniform rods), kg.
    #[serde(default = "two_link_masses")]
    pub link_mass: [f64; 2],
    /// True when the arm hangs in a vertical plane (gravity along −y); false: a horizontal table.
    #[serde(default)]
    pub gravity: bool,
    /// Link flex: how far the shoulder droops, radians, with the arm stretched out horizontally
    /// (the worst case). Each joint and the link beyond it bend by the gravity torque of what lies
    /// beyond (uniform links), over a stiffness chosen so that the elbow droops as far as the
    /// shoulder in that pose. A static compliance of the links, beyond the encoders.
    #[serde(default)]
    pub flex: f64,
    /// Control latency: a goal reaches the servos this many milliseconds after it is sent.
    #[serde(default)]
    pub latency_ms: f64,
    /// The external camera ([`Camera::OFF`] for none).
    #[serde(default = "camera_off")]
    pub camera: Camera,
    /// A payload held at the tip, kg: a small solid ball centred at the end of the last link,
    /// added to that link's body ([`RealChain::with_payload`]) when the plant builds its
    /// dynamics.
    #[serde(default)]
    pub payload: f64,
}

fn camera_off() -> Camera {
    Camera::OFF
}

fn frictionless_sts3215() -> Servo {
    Servo { frictionloss: 0.0, ..Servo::STS3215 }
}

fn two_link_masses() -> [f64; 2] {
    [TWO_LINK_MASS; 2]
}

impl PlantConfig {
    /// The nominal arm on the SO-101's servos without friction, in a horizontal plane: no
    /// backlash, noise, flex, latency or mismatch, and no camera. It still has inertia: a goal
    /// takes time to reach.
    pub fn ideal(arm: TwoLinkArm) -> Self {
        Self {
            real: RealArm::ideal(arm),
            backlash: 0.0,
            noise_std: 0.0,
            seed: 0,
            servo: frictionless_sts3215(),
            link_mass: two_link_masses(),
            gravity: false,
            flex: 0.0,
            latency_ms: 0.0,
            camera: Camera::OFF,
            payload: 0.0,
        }
    }

    /// Checks every quantity a user sets, naming the first bad one in its unit: the servo
    /// ([`Servo::validate`]), link masses from [`MIN_LINK_MASS`] to [`MAX_LINK_MASS`] kg, backlash from 0 to
    /// [`MAX_BACKLASH`] rad, encoder noise from 0 to pi rad, flex from 0 to pi/4 rad, latency
    /// from 0 to [`MAX_LATENCY_MS`] ms, a payload from 0 to [`MAX_PAYLOAD`] kg, and the camera.
    pub fn validate(&self) -> Result<(), PlantError> {
        self.servo.validate()?;
        for (i, &m) in self.link_mass.iter().enumerate() {
            Quantity::LinkMass { link: i + 1 }.check(m, "kg", [MIN_LINK_MASS, MAX_LINK_MASS])?;
        }
        Quantity::Backlash.check(self.backlash, "rad", [0.0, MAX_BACKLASH])?;
        Quantity::EncoderNoise.check(self.noise_std, "rad", [0.0, MAX_ENCODER_NOISE])?;
        Quantity::Flex.check(self.flex, "rad", [0.0, MAX_FLEX])?;
        Quantity::Latency.check(self.latency_ms, "ms", [0.0, MAX_LATENCY_MS])?;
        Quantity::Payload.check(self.payload, "kg", [0.0, MAX_PAYLOAD])?;
        self.camera.validate()
    }

    /// The same configuration with every parameter made sane: each value outside its range (see
    /// [`PlantConfig::validate`]) is brought to the nearest one in range, a non-finite one to
    /// its nominal value ([`Servo::sanitized`] for the servo), and the camera's settings are
    /// cleaned likewise. The app calls this on
    /// whatever a slider or file gives; the CLI refuses bad values instead.
    pub fn sanitized(mut self) -> Self {
        let clean = |v: f64, hi: f64| if v.is_finite() && v > 0.0 { v.min(hi) } else { 0.0 };
        self.backlash = clean(self.backlash, MAX_BACKLASH);
        self.noise_std = clean(self.noise_std, MAX_ENCODER_NOISE);
        self.flex = clean(self.flex, MAX_FLEX);
        self.latency_ms = clean(self.latency_ms, MAX_LATENCY_MS);
        self.payload = clean(self.payload, MAX_PAYLOAD);
        self.servo = self.servo.sanitized();
        self.link_mass = self
            .link_mass
            .map(|m| if m.is_finite() && m > 0.0 { m.clamp(MIN_LINK_MASS, MAX_LINK_MASS) } else { TWO_LINK_MASS });
        self.camera = self.camera.sanitized();
        self
    }

    /// The same configuration on `body`'s servo (its friction loss kept as set here), masses and
    /// plane.
    pub fn with_body(self, body: &Body) -> Self {
        let servo = Servo { frictionloss: self.servo.frictionloss, ..body.servo };
        Self { servo, link_mass: body.link_mass, gravity: body.gravity, ..self }
    }

    /// The two-link arm these settings describe as the plant moves it: the real arm
    /// [`PlantConfig::real`] (its mismatch) with links of [`PlantConfig::link_mass`] kg, both as
    /// [`PlantConfig::sanitized`] makes them.
    pub fn two_link_real(&self) -> RealChain {
        let sane = self.sanitized();
        RealChain::two_link(&sane.real, sane.link_mass)
    }

    /// Latency, seconds.
    pub fn latency(&self) -> f64 {
        self.latency_ms * 1e-3
    }
}

/// Mass of a link per metre of its length, kg/m: the two-link arm's 1 m links weigh
/// [`TWO_LINK_MASS`] each, and a chain's links are the same tube.
pub const LINK_MASS_PER_METRE: f64 = TWO_LINK_MASS;

/// The servo of a rail's carriage, in N/m, N s/m, N and kg: a linear axis under position
/// control. Its gains are chosen, not taken from a datasheet: stiff enough that it follows a
/// moving goal about as closely as the joints' STS3215 servos do (a lag of `(kv + damping) / kp`
/// = 8.5 ms against their 3.3 ms, so a walk along the solution manifold keeps the tip on target),
/// damped (ratio 0.63 with the links), and at most 2 m/s (force limit over damping). A 0.2 m
/// step settles in 0.18 s (`tests/plant_vs_mujoco.rs`).
pub const RAIL_SERVO: Servo =
    Servo { kp: 20000.0, kv: 150.0, torque_limit: 40.0, damping: 20.0, armature: 0.5, frictionloss: 0.0 };

/// Mass of a rail's carriage, kg.
pub const RAIL_CARRIAGE_MASS: f64 = 0.3;

/// The arm a plant moves, as it truly is: the real chain (its link lengths and its rail), the
/// mass properties of each revolute link, and what no encoder sees, the offset of each
/// coordinate between what is commanded and where the link goes (radians; metres for a rail).
#[derive(Debug, Clone, PartialEq)]
pub struct RealChain {
    /// The true geometry and ranges.
    pub chain: Chain,
    /// Each revolute link's mass properties in its own frame (`x` along the link).
    pub bodies: Vec<Inertia>,
    /// Added to each commanded coordinate before it reaches the link (`chain.coords()` of them).
    pub offsets: Vec<f64>,
    /// The rail's servo, when the chain has a rail ([`RAIL_SERVO`] by default).
    pub rail_servo: Servo,
    /// The rail's carriage mass, kg ([`RAIL_CARRIAGE_MASS`] by default).
    pub carriage_mass: f64,
}

impl RealChain {
    /// `chain` as modelled, its links uniform rods of [`LINK_MASS_PER_METRE`].
    pub fn rods(chain: Chain) -> Self {
        let bodies = chain.links().iter().map(|l| Inertia::rod(LINK_MASS_PER_METRE * l.length, l.length)).collect();
        let offsets = vec![0.0; chain.coords()];
        Self { chain, bodies, offsets, rail_servo: RAIL_SERVO, carriage_mass: RAIL_CARRIAGE_MASS }
    }

    /// The two-link arm `real` with links of `link_mass` kg (uniform rods).
    pub fn two_link(real: &RealArm, link_mass: [f64; 2]) -> Self {
        let arm = &real.arm;
        let bodies = vec![Inertia::rod(link_mass[0], arm.l1()), Inertia::rod(link_mass[1], arm.l2())];
        let offsets = vec![real.joint_offsets.shoulder, real.joint_offsets.elbow];
        Self { chain: Chain::from(*arm), bodies, offsets, rail_servo: RAIL_SERVO, carriage_mass: RAIL_CARRIAGE_MASS }
    }

    /// This arm departing from its model: revolute link `k`'s length scaled by
    /// `1 + length_error(k)` (its body scaled with it) and joint `k` offset by `offset(k)`
    /// radians, where `k` counts the revolute joints from the base. `Err` when a length leaves the
    /// range a chain accepts.
    pub fn mismatched(
        &self,
        length_error: impl Fn(usize) -> f64,
        offset: impl Fn(usize) -> f64,
    ) -> Result<Self, crate::chain::arm::ChainError> {
        let first = self.chain.first_joint();
        let mut links = self.chain.links().to_vec();
        let mut bodies = self.bodies.clone();
        let mut offsets = self.offsets.clone();
        for (k, (link, body)) in links.iter_mut().zip(&mut bodies).enumerate() {
            let scale = 1.0 + length_error(k);
            link.length *= scale;
            body.com = body.com.map(|c| c * scale);
            body.inertia *= scale * scale;
            offsets[first + k] += offset(k);
        }
        let chain = Chain::new(self.chain.rail(), links)?;
        Ok(Self { chain, bodies, offsets, ..self.clone() })
    }
}

impl RealChain {
    /// This arm holding a payload of `kg` at its tip: a solid ball of [`PAYLOAD_DENSITY`]
    /// centred on the far end of the last revolute link, `(length, 0)` in that link's frame,
    /// added to its body ([`Inertia::ball`], [`Inertia::with_part`]: mass, centre of mass and
    /// inertia). A payload of 0 (or less, or not finite), or a chain without links, is this arm.
    pub fn with_payload(&self, kg: f64) -> Self {
        let mut out = self.clone();
        if let (Some(link), Some(body)) = (self.chain.links().last(), out.bodies.last_mut()) {
            *body = body.with_part(Inertia::ball(kg, PAYLOAD_DENSITY, [link.length, 0.0]));
        }
        out
    }

    /// This arm departing from its model by `mismatch`, the two-link gap spread over a chain: the
    /// first revolute link takes the upper arm's length error and the shoulder's offset, every
    /// later one the forearm's and the elbow's (a rail keeps its travel). The two-link arm's
    /// real chain is exactly [`RealChain::two_link`] of [`RealArm::with_mismatch`]. `Err` when a
    /// length leaves the range a chain accepts.
    pub fn with_mismatch(&self, mismatch: &Mismatch) -> Result<Self, crate::chain::arm::ChainError> {
        let pick = |v: [f64; 2]| move |k: usize| if k == 0 { v[0] } else { v[1] };
        let offsets = [mismatch.joint_offsets.shoulder, mismatch.joint_offsets.elbow];
        self.mismatched(pick(mismatch.length_error), pick(offsets))
    }
}

/// The rigid-body model of `real` under `cfg`: on its servo (the rail, if any, on its own servo
/// with its carriage), with free play of ±backlash rad behind each revolute servo, holding its
/// payload at the tip, in a vertical plane when gravity is on; and the index of each
/// coordinate's servo joint.
fn chain_model(real: &RealChain, cfg: &PlantConfig) -> (Multibody, Vec<usize>) {
    let (servo, backlash, gravity) = (&cfg.servo, cfg.backlash, cfg.gravity);
    let loaded;
    let real = if cfg.payload > 0.0 {
        loaded = real.with_payload(cfg.payload);
        &loaded
    } else {
        real
    };
    let lengths: Vec<f64> = real.chain.links().iter().map(|l| l.length).collect();
    let first = real.chain.first_joint();
    let (model, mut servos) = serial_model(&lengths, &real.bodies, &real.offsets[first..], servo, backlash, gravity);
    if first == 0 {
        return (model, servos);
    }
    let rail = real.rail_servo;
    let carriage = Dof {
        slide: true,
        at: 0.0,
        offset: real.offsets[0],
        body: Inertia { mass: real.carriage_mass, com: [0.0, 0.0], inertia: 0.0 },
        armature: rail.armature,
        damping: rail.damping,
        frictionloss: rail.frictionloss,
        actuator: Some((rail.kp, rail.kv, rail.torque_limit)),
        range: None,
    };
    let dofs: Vec<Dof> = std::iter::once(carriage).chain(model.dofs().iter().copied()).collect();
    servos.iter_mut().for_each(|k| *k += 1);
    servos.insert(0, 0);
    (Multibody::new(dofs, model.gravity), servos)
}

/// A serial arm of links `lengths` with mass properties `bodies`, each joint's zero at `offsets`,
/// every joint on `servo`, with free play of ±`backlash` rad behind each servo (none at 0), in a
/// vertical plane when `gravity`; and the index of each servo hinge.
pub fn serial_model(
    lengths: &[f64],
    bodies: &[Inertia],
    offsets: &[f64],
    servo: &Servo,
    backlash: f64,
    gravity: bool,
) -> (Multibody, Vec<usize>) {
    let mut dofs = Vec::with_capacity(2 * lengths.len());
    let mut servos = Vec::with_capacity(lengths.len());
    let play = backlash > 0.0;
    for k in 0..lengths.len() {
        servos.push(dofs.len());
        let at = if k == 0 { 0.0 } else { lengths[k - 1] };
        dofs.push(Dof {
            slide: false,
            at,
            offset: offsets[k],
            body: if play { Inertia::NONE } else { bodies[k] },
            armature: servo.armature,
            damping: servo.damping,
            frictionloss: servo.frictionloss,
            actuator: Some((servo.kp, servo.kv, servo.torque_limit)),
            range: None,
        });
        if play {
            dofs.push(Dof {
                slide: false,
                at: 0.0,
                offset: 0.0,
                body: bodies[k],
                armature: PLAY_ARMATURE,
                damping: PLAY_DAMPING,
                frictionloss: 0.0,
                actuator: None,
                range: Some((-backlash, backlash)),
            });
        }
    }
    (Multibody::new(dofs, if gravity { dynamics::GRAVITY } else { 0.0 }), servos)
}

pub use crate::kinematics::serial::Coords;

use crate::kinematics::serial::padded;

/// The simulated arm's state: any planar chain (the two-link arm is one), its rail too.
#[derive(Debug, Clone)]
pub struct Plant {
    cfg: PlantConfig,
    /// The arm as it truly is.
    real: RealChain,
    model: Multibody,
    /// The model's joint of each coordinate's servo.
    servos: Vec<usize>,
    state: State,
    goals: [f64; MAX_DOF],
    noise: Option<Normal<f64>>,
    rng: ChaCha8Rng,
    camera_rng: ChaCha8Rng,
    /// Goals sent but not yet at the servos, oldest first, with the plant time each arrives.
    pending: VecDeque<(f64, Coords)>,
    /// Plant time, seconds.
    time: f64,
    /// How long every servo has turned slower than [`SETTLE_SPEED`], seconds.
    quiet: f64,
    /// True when the last sub-step left the arm held still by friction (nothing changes until a
    /// goal does).
    resting: bool,
    next_frame: f64,
    frame: Option<Frame>,
    /// A camera at least as fast as the sub-steps owes a frame of the current sub-step: taken
    /// when [`Plant::step`] or [`Plant::settle`] returns (nothing can look in between), not at
    /// every sub-step.
    frame_owed: bool,
}

/// The first frame time after `now` on the schedule `next, next + period, ...`, in one step
/// (a loop adding `period` would never end once `period` is below the float spacing of `now`),
/// and always later than `now`.
fn next_frame_time(next: f64, now: f64, period: f64) -> f64 {
    if !(period.is_finite() && period > 0.0 && next.is_finite() && now.is_finite()) {
        return f64::INFINITY;
    }
    let due = if next > now { next } else { next + (((now - next) / period).floor() + 1.0) * period };
    if due > now { due } else { now.next_up() }
}

impl Plant {
    /// A plant of the arm `real` (any chain: the two-link arm's is
    /// [`PlantConfig::two_link_real`]) at rest at coordinates `x` (non-finite ones at 0) with its
    /// goals there (under gravity it then sags), under the channels of `cfg`: its servo, backlash,
    /// encoder noise, gravity, flex, latency, camera and payload (`cfg.real` and `cfg.link_mass` describe
    /// a two-link arm's mismatch and masses for [`PlantConfig::two_link_real`]; the plant moves
    /// `real`). A rail, if any, runs on `real.rail_servo` and reads exactly (a linear scale):
    /// noise, friction and free play act on the revolute joints.
    pub fn new(real: RealChain, cfg: PlantConfig, x: &[f64]) -> Self {
        let cfg = cfg.sanitized();
        let x: Vec<f64> = x.iter().map(|v| if v.is_finite() { *v } else { 0.0 }).collect();
        let (model, servos) = chain_model(&real, &cfg);
        let mut plant = Self {
            cfg,
            real,
            model,
            servos,
            state: State::at_rest(&[]),
            goals: [0.0; MAX_DOF],
            noise: None,
            rng: rng(cfg.seed, Stream::Plant, 0),
            camera_rng: rng(cfg.seed, Stream::Camera, 0),
            pending: VecDeque::new(),
            time: 0.0,
            quiet: 0.0,
            resting: false,
            next_frame: 0.0,
            frame: None,
            frame_owed: false,
        };
        for (&k, &v) in plant.servos.iter().zip(&x) {
            plant.state.q[k] = v;
        }
        plant.goals = plant.state.q;
        plant.set_config(cfg);
        plant.capture_due_frame();
        plant.pay_frame();
        plant
    }

    /// The configuration in force.
    pub fn config(&self) -> &PlantConfig {
        &self.cfg
    }

    /// The arm as it truly is, without the payload its configuration holds
    /// ([`PlantConfig::payload`]; [`RealChain::with_payload`] adds it).
    pub fn real(&self) -> &RealChain {
        &self.real
    }

    /// Number of coordinates (servos).
    pub fn dim(&self) -> usize {
        self.servos.len()
    }

    /// Changes the parameters, keeping the servos where they are, their speeds, the goals and
    /// the noise streams. The free play, when its width changes, starts again centred. The real
    /// arm stays ([`Plant::set_real`] changes it).
    pub fn set_config(&mut self, cfg: PlantConfig) {
        let cfg = cfg.sanitized();
        self.noise = (cfg.noise_std > 0.0).then(|| Normal::new(0.0, cfg.noise_std).expect("finite std"));
        if cfg.camera != self.cfg.camera {
            self.frame = None;
            self.next_frame = self.time();
        }
        let changed = cfg != self.cfg;
        self.cfg = cfg;
        if changed {
            self.rebuild(self.real.clone());
        }
    }

    /// Makes `real` the true arm (a mismatch, other masses), keeping the servos, speeds, goals
    /// and streams. `real` must have this plant's coordinates; one that does not is ignored.
    pub fn set_real(&mut self, real: RealChain) {
        if real.chain.coords() == self.dim() && real != self.real {
            self.rebuild(real);
        }
    }

    /// The model for `real` and the configuration in force, carrying the servo states over.
    fn rebuild(&mut self, real: RealChain) {
        let (model, servos) = chain_model(&real, &self.cfg);
        if servos != self.servos || model.len() != self.model.len() {
            let old = self.state;
            let mut state = State::at_rest(&[]);
            let mut goals = [0.0; MAX_DOF];
            for (new, &was) in servos.iter().zip(&self.servos) {
                state.q[*new] = old.q[was];
                state.v[*new] = old.v[was];
                goals[*new] = self.goals[was];
            }
            self.state = state;
            self.goals = goals;
            self.servos = servos;
        }
        self.model = model;
        self.real = real;
        self.resting = false;
    }

    /// Sends a goal, one value per coordinate; one with a non-finite value or of the wrong
    /// length is ignored (the previous goal stays). It reaches the servos
    /// [`PlantConfig::latency_ms`] after now.
    pub fn command(&mut self, x: &[f64]) {
        if x.len() == self.dim() && x.iter().all(|v| v.is_finite()) {
            let due = self.time() + self.cfg.latency();
            // A goal sent later never arrives earlier: one sent after a shorter latency was set
            // replaces those still waiting to arrive after it.
            while self.pending.back().is_some_and(|&(d, _)| d >= due) {
                self.pending.pop_back();
            }
            self.pending.push_back((due, padded(x)));
        }
    }

    /// `values` (one per joint of the model) at each coordinate's servo joint.
    fn at_servos(&self, values: &[f64; MAX_DOF]) -> Coords {
        let mut out = [0.0; MAX_COORDS];
        for (o, &k) in out.iter_mut().zip(&self.servos) {
            *o = values[k];
        }
        out
    }

    /// The goal at the servos (the newest one out of the delay line), per coordinate.
    pub fn commanded(&self) -> Coords {
        self.at_servos(&self.goals)
    }

    /// Goals still in the delay line.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Every goal whose time has come reaches the servos; a joint that turns freely takes it on
    /// its own side of the circle, so that a goal across ±π turns the short way.
    fn deliver_due(&mut self) {
        let now = self.time();
        while let Some(&(due, x)) = self.pending.front() {
            if due > now + ON_TIME {
                break;
            }
            self.pending.pop_front();
            for (i, &k) in self.servos.iter().enumerate() {
                let q = self.state.q[k];
                self.goals[k] =
                    if self.real.chain.is_bounded(i) { x[i] } else { q + crate::kinematics::wrap_angle(x[i] - q) };
            }
            self.resting = false;
        }
    }

    /// One sub-step of `h` seconds (at most [`SUBSTEP`]). A goal due within it reaches the
    /// servos at its own time: the dynamics step to it, take the goal and go on.
    fn substep(&mut self, h: f64) {
        let mut left = h;
        loop {
            self.deliver_due();
            let now = self.time;
            let due = self.pending.front().map(|&(due, _)| due - now).filter(|&part| part < left - ON_TIME);
            let part = due.unwrap_or(left);
            // At rest under friction the step would change nothing, bit for bit: skip the dynamics.
            if !self.resting && part > 0.0 {
                // A plant with free play steps its dynamics in pieces of at most PLAY_STEP.
                let play = self.model.len() > self.servos.len();
                let pieces = if play { pieces(part, PLAY_STEP).max(1.0) } else { 1.0 };
                for _ in 0..pieces as usize {
                    let info = self.model.step(&mut self.state, &self.goals, part / pieces);
                    self.resting = info.at_rest;
                    if self.resting {
                        break;
                    }
                }
            }
            self.time += part;
            left -= part;
            if due.is_none() {
                break;
            }
        }
        let fastest = self.servos.iter().map(|&k| self.state.v[k].abs()).fold(0.0, f64::max);
        self.quiet = if fastest < SETTLE_SPEED { self.quiet + h } else { 0.0 };
        self.capture_due_frame();
    }

    /// Advances the plant by exactly `dt` seconds (negative or non-finite: not at all; at most
    /// [`SETTLE_TIMEOUT`] in one call), in equal sub-steps of at most [`SUBSTEP`].
    pub fn step(&mut self, dt: f64) {
        let dt = if dt.is_finite() { dt.clamp(0.0, SETTLE_TIMEOUT) } else { 0.0 };
        let n = pieces(dt, SUBSTEP).max(0.0);
        for _ in 0..n as u64 {
            self.substep(dt / n);
        }
        self.pay_frame();
    }

    /// True when every servo has turned slower than [`SETTLE_SPEED`] for [`SETTLE_WINDOW`], or
    /// friction holds the arm still.
    pub fn is_settled(&self) -> bool {
        self.resting || self.quiet >= SETTLE_WINDOW - ON_TIME
    }

    /// Runs until every goal in flight has arrived and the arm has settled
    /// ([`Plant::is_settled`]), at most [`SETTLE_TIMEOUT`] seconds (the camera keeps its own
    /// schedule meanwhile). Returns the time it took, seconds.
    pub fn settle(&mut self) -> f64 {
        self.settle_watched(|_| {})
    }

    /// [`Plant::settle`], calling `watch` with the plant after every sub-step (a replay's trace).
    pub fn settle_watched(&mut self, mut watch: impl FnMut(&Plant)) -> f64 {
        let start = self.time;
        let most = (SETTLE_TIMEOUT / SUBSTEP).round() as u64;
        for _ in 0..most {
            self.substep(SUBSTEP);
            watch(self);
            if self.pending.is_empty() && self.is_settled() {
                break;
            }
        }
        self.pay_frame();
        self.time - start
    }

    fn capture_due_frame(&mut self) {
        let cam = self.cfg.camera;
        let now = self.time();
        if !cam.is_on() || now < self.next_frame - ON_TIME {
            return;
        }
        if cam.fps * SUBSTEP >= 1.0 {
            self.frame_owed = true;
            return;
        }
        self.take_frame();
    }

    /// The camera's frame of the tip as it is now.
    fn take_frame(&mut self) {
        let cam = self.cfg.camera;
        let now = self.time();
        let sd = cam.noise_metres();
        let tip = self.tip();
        let noise = match Normal::new(0.0, sd) {
            Ok(n) if sd > 0.0 => Point2::new(n.sample(&mut self.camera_rng), n.sample(&mut self.camera_rng)),
            _ => Point2::zeros(),
        };
        self.frame = Some(Frame { tip: tip + cam.offset + noise, time: now });
        self.next_frame = next_frame_time(self.next_frame, now, 1.0 / cam.fps);
    }

    /// Takes the frame a continuous camera owes (see `frame_owed`).
    fn pay_frame(&mut self) {
        if self.frame_owed {
            self.frame_owed = false;
            self.take_frame();
        }
    }

    /// What the encoders read: each servo's output (in the command frame), the joints' with
    /// Gaussian noise (a rail's linear scale reads exactly).
    pub fn measure(&mut self) -> Coords {
        let mut x = self.link();
        if let Some(n) = &self.noise {
            let joints = self.real.chain.first_joint()..self.dim();
            for v in &mut x[joints] {
                *v += n.sample(&mut self.rng);
            }
        }
        x
    }

    /// The camera's latest frame of the tip (`None` without a camera).
    pub fn camera(&self) -> Option<Frame> {
        self.frame
    }

    /// Each servo's output per coordinate in the command frame, without noise (what a perfect
    /// encoder would read).
    pub fn link(&self) -> Coords {
        self.at_servos(&self.state.q)
    }

    /// Each servo's speed, rad/s (m/s for a rail).
    pub fn speeds(&self) -> Coords {
        self.at_servos(&self.state.v)
    }

    /// Plant time, seconds.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// The real links' coordinates in the real chain's terms: the servos', the free play, the
    /// offsets and the droop.
    pub fn actual(&self) -> Coords {
        let dofs = self.model.dofs();
        let mut rigid = [0.0; MAX_COORDS];
        for (i, &k) in self.servos.iter().enumerate() {
            // The play hinge, when there is one, follows its servo hinge.
            let play = if dofs.get(k + 1).is_some_and(|d| d.actuator.is_none()) { self.state.q[k + 1] } else { 0.0 };
            rigid[i] = self.state.q[k] + play + self.real.offsets[i];
        }
        let first = self.real.chain.first_joint();
        let n = self.dim();
        if self.cfg.flex == 0.0 {
            return rigid;
        }
        let lengths: Vec<f64> = self.real.chain.links().iter().map(|l| l.length).collect();
        // The droop depends on the drooped pose: a few fixed-point steps (a contraction for any
        // flex up to pi/4).
        let mut x = rigid;
        let mut sag = [0.0; MAX_COORDS];
        for _ in 0..4 {
            chain_droop(self.cfg.flex, &lengths, &x[first..n], &mut sag[..n - first]);
            for i in first..n {
                x[i] = rigid[i] + sag[i - first];
            }
        }
        x
    }

    /// Where the real tip is.
    pub fn tip(&self) -> Point2 {
        self.real.chain.tip(&self.actual()[..self.dim()])
    }

    /// Base, elbow and tip of the real two-link arm, for drawing.
    pub fn joints(&self) -> [Point2; 3] {
        let p = self.points();
        [p[0], p[1], p[p.len() - 1]]
    }

    /// The real arm's base (on its rail), every joint and the tip, for drawing.
    pub fn points(&self) -> Vec<Point2> {
        self.real.chain.points(&self.actual()[..self.dim()])
    }
}

/// How far each joint of the two-link arm droops (see [`chain_droop`]), radians, in pose `q`
/// with links `l1` and `l2`.
pub fn droop(flex: f64, l1: f64, l2: f64, q: Pose) -> Pose {
    let mut out = [0.0; 2];
    chain_droop(flex, &[l1, l2], &[q.shoulder, q.elbow], &mut out);
    Pose::new(out[0], out[1])
}

/// How far each revolute joint of a chain of `lengths` droops, radians, into `out`, for a
/// `flex` setting (see [`PlantConfig::flex`]) with the joints at relative angles `q` (the first
/// from +x).
///
/// Gravity pulls along −y on uniform links of equal mass per metre. Joint `k` carries every
/// link beyond it: the torque is `Σ_{j≥k} l_j (x_j − x_k)` up to the common factor (mass per
/// metre · g), with `x_j` the middle of link `j` and `x_k` the joint, measured along `x`. Each
/// torque over its joint's stiffness gives the droop, the stiffness chosen so that every joint
/// droops by `flex` with the chain stretched out along +x.
pub fn chain_droop(flex: f64, lengths: &[f64], q: &[f64], out: &mut [f64]) {
    out.iter_mut().for_each(|o| *o = 0.0);
    if flex == 0.0 {
        return;
    }
    let n = lengths.len().min(q.len()).min(out.len()).min(MAX_COORDS);
    // Each joint's x, and each link's middle's x, in the pose and stretched out.
    let (mut joint, mut middle) = ([0.0; MAX_COORDS], [0.0; MAX_COORDS]);
    let (mut joint_flat, mut middle_flat) = ([0.0; MAX_COORDS], [0.0; MAX_COORDS]);
    let (mut at, mut at_flat, mut theta) = (0.0, 0.0, 0.0);
    for k in 0..n {
        theta += q[k];
        let c = theta.cos();
        joint[k] = at;
        joint_flat[k] = at_flat;
        middle[k] = at + lengths[k] / 2.0 * c;
        middle_flat[k] = at_flat + lengths[k] / 2.0;
        at += lengths[k] * c;
        at_flat += lengths[k];
    }
    for k in 0..n {
        let (mut torque, mut flat) = (0.0, 0.0);
        for j in k..n {
            torque += lengths[j] * (middle[j] - joint[k]);
            flat += lengths[j] * (middle_flat[j] - joint_flat[k]);
        }
        out[k] = -flex * torque / flat;
    }
}

/// How far the real tip of `real` gives way when its servos hold the coordinates `x` under
/// `cfg` (gravity as `cfg` says, its payload at the tip, free play included), metres: the plant
/// starts at rest at `x` with its goals there, runs for a second and settles
/// ([`Plant::settle`]); the result is where its tip ends up less where it started (`y` below 0:
/// a drop). Nothing moves it with gravity off.
pub fn static_sag(real: RealChain, cfg: PlantConfig, x: &[f64]) -> Point2 {
    let mut plant = Plant::new(real, cfg, x);
    let held = plant.tip();
    plant.step(1.0);
    plant.settle();
    plant.tip() - held
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A two-link plant of `cfg` at rest in `pose`.
    fn plant(cfg: PlantConfig, pose: Pose) -> Plant {
        Plant::new(cfg.two_link_real(), cfg, &pose.coords())
    }

    #[test]
    fn a_mismatch_on_a_chain_is_the_two_link_gap_spread_over_its_links() {
        // On the two-link arm it is the two-link real arm, to rounding.
        let arm = TwoLinkArm::new(1.0, 0.7).unwrap();
        let m = Mismatch::DEFAULT;
        let spread = RealChain::two_link(&RealArm::ideal(arm), [1.0, 0.6]).with_mismatch(&m).unwrap();
        let direct = RealChain::two_link(&RealArm::with_mismatch(&arm, m).unwrap(), [1.0, 0.6]);
        assert_eq!(spread.offsets, direct.offsets);
        for (a, b) in spread.chain.links().iter().zip(direct.chain.links()) {
            assert!((a.length - b.length).abs() < 1e-12, "{a:?} {b:?}");
        }
        for (a, b) in spread.bodies.iter().zip(&direct.bodies) {
            assert!((a.inertia - b.inertia).abs() < 1e-12 && (a.com[0] - b.com[0]).abs() < 1e-12, "{a:?} {b:?}");
        }
        // On a rail chain: the rail keeps its travel and offset, the first link takes the upper
        // arm's error, every later one the forearm's.
        use crate::chain::arm::{Link, Travel};
        let links =
            [0.5, 0.5, 1.0].map(|length| Link { length, limits: crate::kinematics::JointLimits::FULL }).to_vec();
        let travel = Some(Travel::new(-1.0, 1.0).unwrap());
        let rail = RealChain::rods(Chain::new(travel, links).unwrap()).with_mismatch(&m).unwrap();
        let lengths: Vec<f64> = rail.chain.links().iter().map(|l| l.length).collect();
        assert_eq!(lengths, [0.5 * 1.06, 0.5 * 0.96, 1.0 * 0.96]);
        assert_eq!(rail.offsets, [0.0, 0.03, -0.05, -0.05]);
        assert_eq!(rail.chain.rail(), travel);
        let broken = Mismatch { length_error: [-1.5, 0.0], ..m };
        assert!(RealChain::rods(Chain::from_lengths(&[1.0, 1.0, 1.0]).unwrap()).with_mismatch(&broken).is_err());
    }

    fn settled(cfg: PlantConfig, from: Pose, goal: Pose) -> Plant {
        let mut p = plant(cfg, from);
        p.command(&goal.coords());
        p.settle();
        p
    }

    #[test]
    fn a_goal_is_reached_in_time_not_at_once() {
        let arm = TwoLinkArm::default();
        let goal = Pose::new(0.5, 1.0);
        let mut p = plant(PlantConfig::ideal(arm), Pose::default());
        p.command(&goal.coords());
        p.step(0.02);
        assert!(Pose::of(&p.link()).max_joint_distance(goal) > 0.3, "inertia: 20 ms in it has barely moved");
        let took = p.settle();
        assert!(took > 0.2 && took < 3.0, "{took}");
        assert!((p.tip() - arm.tip(goal)).norm() < 1e-4, "{}", (p.tip() - arm.tip(goal)).norm());
    }

    #[test]
    fn stepping_in_pieces_is_stepping_at_once() {
        let cfg = PlantConfig { noise_std: 0.01, seed: 4, ..PlantConfig::ideal(TwoLinkArm::default()) };
        let (mut a, mut b) = (plant(cfg, Pose::default()), plant(cfg, Pose::default()));
        a.command(&Pose::new(1.0, -0.5).coords());
        b.command(&Pose::new(1.0, -0.5).coords());
        // 0.25 s at once is 125 sub-steps of 2 ms, the same as 125 calls of one sub-step.
        a.step(0.25);
        for _ in 0..(0.25 / SUBSTEP).round() as usize {
            b.step(SUBSTEP);
        }
        assert_eq!(Pose::of(&a.link()), Pose::of(&b.link()));
        assert_eq!(a.time(), b.time());
        assert_eq!(Pose::of(&a.measure()), Pose::of(&b.measure()));
    }

    #[test]
    fn friction_stops_short_and_holds_bit_for_bit() {
        let servo = Servo { frictionloss: 0.5, ..Servo::STS3215 };
        let cfg = PlantConfig { servo, ..PlantConfig::ideal(TwoLinkArm::default()) };
        let goal = Pose::new(0.3, 1.0);
        let mut p = settled(cfg, Pose::new(0.0, 1.0), goal);
        let short = Pose::of(&p.link()).max_joint_distance(goal);
        assert!(short <= servo.frictionloss / servo.kp * 1.0001, "at most loss / kp short: {short}");
        assert!(short > 0.05 * servo.frictionloss / servo.kp, "and really short: {short}");
        let (before, time) = (Pose::of(&p.link()), p.time());
        p.step(1.0);
        assert_eq!(Pose::of(&p.link()), before, "stuck: no creep");
        assert!(p.time() > time);
        // Without friction it gets there.
        let free = settled(PlantConfig::ideal(TwoLinkArm::default()), Pose::new(0.0, 1.0), goal);
        assert!(Pose::of(&free.link()).max_joint_distance(goal) < 1e-4 * short.max(1e-3) * 1e3);
    }

    #[test]
    fn gravity_sags_by_its_torque_over_the_gain_and_the_encoders_see_it() {
        let cfg = PlantConfig { gravity: true, ..PlantConfig::ideal(TwoLinkArm::default()) };
        let mut p = plant(cfg, Pose::default());
        p.settle();
        let m = TWO_LINK_MASS * dynamics::GRAVITY;
        let (kp, q) = (Servo::STS3215.kp, Pose::of(&p.measure()));
        // Stretched out: the shoulder holds both rods, the elbow the outer one (small angles).
        assert!((q.shoulder + m * 2.0 / kp).abs() < 0.1 * m * 2.0 / kp, "{q:?}");
        assert!(q.elbow < 0.0 && p.tip().y < 0.0, "the tip sags: {q:?}");
        let off = PlantConfig::ideal(TwoLinkArm::default());
        let mut flat = plant(off, Pose::default());
        flat.settle();
        assert_eq!(Pose::of(&flat.measure()), Pose::default(), "in a horizontal plane nothing sags");
    }

    #[test]
    fn backlash_is_free_play_the_encoders_cannot_see() {
        let arm = TwoLinkArm::default();
        let b = 0.02;
        // Hanging in a vertical plane, stretched out: each link rests on its stop, below.
        let cfg = PlantConfig { backlash: b, gravity: true, ..PlantConfig::ideal(arm) };
        let mut p = plant(cfg, Pose::default());
        p.settle();
        // Settled is what the encoders see: the links may still be falling through their play.
        p.step(0.5);
        let seen = arm.tip(Pose::of(&p.measure()));
        let drop = seen.y - p.tip().y;
        // The shoulder's play drops the tip by about 2 b, the elbow's by b more.
        assert!((drop - 3.0 * b).abs() < 0.2 * b, "{drop}");
        let actual = Pose::of(&p.actual());
        assert!((actual.shoulder - Pose::of(&p.link()).shoulder + b).abs() < 1e-3, "{actual:?}");
        // On a table the link is left wherever the move put it, within the play.
        let flat =
            settled(PlantConfig { backlash: b, ..PlantConfig::ideal(arm) }, Pose::default(), Pose::new(0.6, 0.4));
        let gap = Pose::of(&flat.actual()) - Pose::of(&flat.link());
        assert!(gap.shoulder.abs() <= b + 1e-6 && gap.elbow.abs() <= b + 1e-6, "{gap:?}");
    }

    #[test]
    fn latency_delays_goals_by_milliseconds() {
        let cfg = PlantConfig { latency_ms: 30.0, ..PlantConfig::ideal(TwoLinkArm::default()) };
        let mut p = plant(cfg, Pose::default());
        p.command(&Pose::new(0.4, 0.0).coords());
        p.step(0.029);
        assert_eq!(Pose::of(&p.link()), Pose::default(), "still in the delay line");
        assert_eq!((p.in_flight(), Pose::of(&p.commanded())), (1, Pose::default()));
        p.step(0.003);
        assert_eq!(Pose::of(&p.commanded()), Pose::new(0.4, 0.0));
        assert!(Pose::of(&p.link()).shoulder > 0.0, "moving");
        p.settle();
        assert!((Pose::of(&p.link()).shoulder - 0.4).abs() < 1e-4);
    }

    #[test]
    fn a_goal_arrives_at_its_own_time_within_a_sub_step() {
        // 3.7 ms of latency on a 2 ms sub-step: the goal arrives 1.7 ms into the second
        // sub-step, exactly as one sent then without latency (the same pieces, bit for bit), and
        // not as one arriving on the sub-steps' grid.
        let ideal = PlantConfig::ideal(TwoLinkArm::default());
        let goal = Pose::new(0.4, 0.0).coords();
        let mut late = plant(PlantConfig { latency_ms: 3.7, ..ideal }, Pose::default());
        late.command(&goal);
        late.step(2.0 * SUBSTEP);
        late.step(0.05);
        let mut sent = plant(ideal, Pose::default());
        sent.step(SUBSTEP);
        sent.step(3.7e-3 - SUBSTEP);
        sent.command(&goal);
        sent.step(2.0 * SUBSTEP - 3.7e-3);
        sent.step(0.05);
        assert_eq!((late.link(), late.speeds()), (sent.link(), sent.speeds()));
        assert!((late.time() - sent.time()).abs() < 1e-15, "{} s, {} s", late.time(), sent.time());
        let mut grid = plant(PlantConfig { latency_ms: 2.0 * SUBSTEP * 1e3, ..ideal }, Pose::default());
        grid.command(&goal);
        grid.step(2.0 * SUBSTEP + 0.05);
        assert_ne!(grid.link(), late.link());
    }

    #[test]
    fn a_swing_caught_by_friction_at_its_turn_goes_on() {
        // Friction (ten times the STS3215's) can stop a hinge at the turn of its swing, in the
        // one step where its speed crosses zero, while the servo still pulls harder than
        // friction holds: the arm must not count as at rest there (nor freeze), but swing on to
        // within the stick band of its goal.
        let servo = Servo { frictionloss: 0.52, ..Servo::STS3215 };
        let cfg = PlantConfig { servo, ..PlantConfig::ideal(TwoLinkArm::default()) };
        let band = servo.frictionloss / servo.kp;
        let mut caught = 0;
        for k in 0..200 {
            let mut p = plant(cfg, Pose::default());
            p.command(&Pose::new(0.05 + 1e-3 * k as f64, 0.0).coords());
            p.settle();
            let off = (Pose::of(&p.link()).shoulder - Pose::of(&p.commanded()).shoulder).abs();
            assert!(off <= 1.01 * band, "goal {k}: stopped {off} rad short, past the stick band {band}");
            caught += usize::from(p.resting);
        }
        assert!(caught > 0, "friction held none of the moves");
    }

    #[test]
    fn a_far_goal_is_a_swing_no_faster_than_the_servos_no_load_speed() {
        let cfg = PlantConfig::ideal(TwoLinkArm::default());
        let limit = cfg.servo.no_load_speed();
        assert!((4.5..5.2).contains(&limit), "the STS3215 turns at about 4.7-4.9 rad/s: {limit}");
        let mut p = plant(cfg, Pose::new(0.0, -1.5));
        p.command(&Pose::new(0.0, 1.5).coords());
        let (mut fastest, mut t) = (0.0f64, 0.0);
        while (Pose::of(&p.link()).elbow - 1.5).abs() > 0.01 && t < 5.0 {
            p.step(0.001);
            t += 0.001;
            fastest = fastest.max(Pose::of(&p.speeds()).elbow.abs());
        }
        assert!(fastest <= 1.001 * limit && fastest > 0.9 * limit, "{fastest} rad/s against {limit}");
        assert!(t >= 3.0 / limit, "3 rad take at least {} s: {t}", 3.0 / limit);
    }

    #[test]
    fn flex_droops_most_stretched_out_and_the_encoders_cannot_see_it() {
        let arm = TwoLinkArm::default();
        let cfg = PlantConfig { flex: 0.02, ..PlantConfig::ideal(arm) };
        let sag = |pose: Pose| {
            let mut p = plant(cfg, pose);
            p.settle();
            let seen = arm.tip(Pose::of(&p.measure()));
            assert_eq!(Pose::of(&p.measure()), pose, "the encoders read the joint, not the bent link");
            (p.tip() - seen).norm()
        };
        let stretched = sag(Pose::new(0.0, 0.0));
        let up = sag(Pose::new(std::f64::consts::FRAC_PI_2, 0.0));
        let folded = sag(Pose::new(0.0, 2.5));
        let want = 0.02 * (arm.l1() + 2.0 * arm.l2());
        assert!((stretched - want).abs() < 0.1 * want, "{stretched} vs {want}");
        assert!(up < 1e-3 * stretched, "pointing up nothing bends: {up}");
        assert!(folded < stretched && folded > up, "folded in between: {folded}");
    }

    #[test]
    fn mismatch_moves_the_real_tip_and_bad_input_is_ignored() {
        let arm = TwoLinkArm::default();
        let real = RealArm::mismatched(&arm, [0.1, 0.0], Pose::new(0.0, 0.0)).unwrap();
        let mut p = plant(PlantConfig { real, ..PlantConfig::ideal(arm) }, Pose::default());
        assert!((p.tip().x - 2.1).abs() < 1e-12);
        p.command(&Pose::new(f64::NAN, 0.0).coords());
        p.set_config(PlantConfig { backlash: f64::NAN, noise_std: -1.0, latency_ms: f64::INFINITY, ..*p.config() });
        p.settle();
        p.step(f64::NAN);
        assert!(p.tip().x.is_finite() && p.config().backlash == 0.0 && p.config().noise_std == 0.0);
        assert_eq!(p.config().latency_ms, 0.0);
    }

    #[test]
    fn validation_names_the_quantity_and_its_unit() {
        let ok = PlantConfig::ideal(TwoLinkArm::default());
        assert!(ok.validate().is_ok());
        let servo = |change: fn(&mut Servo)| {
            let mut s = ok.servo;
            change(&mut s);
            PlantConfig { servo: s, ..ok }
        };
        let camera = |camera: Camera| PlantConfig { camera, ..ok };
        let cases = [
            (PlantConfig { link_mass: [-1.0, 0.05], ..ok }, "link 1 mass"),
            (PlantConfig { link_mass: [0.05, 1e-300], ..ok }, "link 2 mass must be a number from 1e-6 to 1e3 kg"),
            (servo(|s| s.kp = 0.0), "kp"),
            (servo(|s| s.kp = 1e-300), "kp must be a number from 1e-3 to 1e6 N m/rad"),
            (servo(|s| s.torque_limit = 1e-300), "torque limit must be a number from 1e-3 to 1e6 N m"),
            (servo(|s| s.armature = 0.0), "armature must be a number from 1e-6 to 1e3 kg m^2"),
            (servo(|s| s.armature = 1e300), "armature"),
            (servo(|s| s.damping = 1e300), "damping must be a number from 0 to 1e6 N m s/rad"),
            // Combinations beyond what the plant's step resolves in MAX_SPLIT sub-steps.
            (servo(|s| (s.kp, s.armature) = (1e6, 1e-5)), "sqrt(kp / armature), is 3.162e5 rad/s, above the 1e5 rad/s"),
            (servo(|s| s.kv = 1e4), "kv / armature, is 3.571e5 1/s, above the 5e4 1/s"),
            (servo(|s| (s.kp, s.torque_limit) = (1e6, 1e6)), "is 3.571e7 rad/s^2, above the 1e6 rad/s^2"),
            (PlantConfig { latency_ms: f64::NAN, ..ok }, "latency"),
            (PlantConfig { latency_ms: 3.15e10, ..ok }, "ms"),
            (PlantConfig { backlash: 3.2, ..ok }, "backlash"),
            (camera(Camera { fps: 1e-300, ..Camera::default() }), "frame rate must be 0 (off) or a number from 1/3600"),
            (camera(Camera { metres_per_pixel: 1e-300, ..Camera::default() }), "metres per pixel"),
        ];
        for (cfg, words) in cases {
            let e = cfg.validate().unwrap_err().to_string();
            assert!(e.contains(words), "{words:?} not in: {e}");
            assert!(cfg.sanitized().validate().is_ok(), "sanitized, it is accepted: {:?}", cfg.sanitized());
        }
        // Issue 48's servo is accepted, and the sanitized STS3215 is itself.
        assert!(servo(|s| (s.kp, s.torque_limit) = (1e6, 1e4)).validate().is_ok());
        assert_eq!(ok.sanitized(), ok);
    }

    #[test]
    fn a_refusal_carries_the_quantity_its_unit_limits_and_value() {
        let ok = PlantConfig::ideal(TwoLinkArm::default());
        let e = PlantConfig { link_mass: [0.05, 2e3], ..ok }.validate().unwrap_err();
        let want = PlantError::OutOfRange {
            quantity: Quantity::LinkMass { link: 2 },
            unit: "kg",
            limits: [MIN_LINK_MASS, MAX_LINK_MASS],
            got: 2e3,
        };
        assert_eq!(e, want);
        assert_eq!(e.to_string(), "link 2 mass must be a number from 1e-6 to 1e3 kg, got 2000");
        let e = PlantConfig { servo: Servo { kp: 1e-300, ..ok.servo }, ..ok }.validate().unwrap_err();
        assert_eq!((e.quantity(), e.unit(), e.limits()), (Quantity::Kp, "N m/rad", [1e-3, 1e6]));
        assert_eq!(e.to_string(), "the servo's kp must be a number from 1e-3 to 1e6 N m/rad, got 1e-300");
        let e = PlantConfig { servo: Servo { kv: 1e4, ..ok.servo }, ..ok }.validate().unwrap_err();
        assert_eq!((e.quantity(), e.unit(), e.limits()), (Quantity::VelocityRate, "1/s", [0.0, 5e4]));
        let e = PlantConfig { latency_ms: f64::NAN, ..ok }.validate().unwrap_err();
        assert_eq!((e.quantity(), e.unit(), e.limits()), (Quantity::Latency, "ms", [0.0, MAX_LATENCY_MS]));
        assert_eq!(e.to_string(), "the latency must be a number from 0 to 10000 ms, got NaN");
        let camera = |camera: Camera| PlantConfig { camera, ..ok }.validate().unwrap_err();
        let e = camera(Camera { offset: Point2::new(0.5, -2e3), ..Camera::default() });
        assert_eq!(e, PlantError::CameraOffset { unit: "m", limit: MAX_CAMERA_OFFSET, got: [0.5, -2e3] });
        assert_eq!(e.to_string(), "the camera's offset must lie within ±1000 m on each axis, got (0.5, -2000)");
        assert_eq!((e.quantity(), e.limits()), (Quantity::CameraOffset, [-1e3, 1e3]));
        let e = camera(Camera { fps: 2e4, ..Camera::default() });
        assert_eq!((e.quantity(), e.unit(), e.limits()), (Quantity::FrameRate, "frames/s", [MIN_FPS, MAX_FPS]));
        assert_eq!(
            e.to_string(),
            "the camera's frame rate must be 0 (off) or a number from 1/3600 (a frame an hour) to 1e4 per second, got 20000"
        );
        assert!(PlantConfig { camera: Camera::OFF, ..ok }.validate().is_ok(), "a frame rate of 0 is the camera off");
    }

    /// The corners of what [`PlantConfig::validate`] accepts, under gravity: the weakest and the
    /// stiffest kp on the lightest armature its natural frequency allows (and the stiffest on
    /// the armature that lets its torque reach the limit), the weakest and the strongest torque
    /// its top acceleration allows, no kv and the most its armature allows, no damping and the
    /// most, the lightest and heaviest links (and the heaviest payload), no free play and the
    /// widest.
    fn corners() -> Vec<PlantConfig> {
        use dynamics::{MAX_ACCELERATION, MAX_GAIN, MAX_NATURAL_FREQUENCY, MAX_VELOCITY_RATE, MIN_ARMATURE, MIN_GAIN};
        // A hair inside each limit, so that rounding keeps the corner accepted.
        let inside = 1.0 - 1e-9;
        let mut servos = Vec::new();
        let lightest = (MAX_GAIN / MAX_NATURAL_FREQUENCY.powi(2) / inside).max(MIN_ARMATURE);
        for (kp, armature) in [(MIN_GAIN, MIN_ARMATURE), (MAX_GAIN, lightest), (MAX_GAIN, 1.0)] {
            let strongest = if std::f64::consts::PI * kp / armature <= MAX_ACCELERATION {
                MAX_GAIN
            } else {
                (MAX_ACCELERATION * armature * inside).min(MAX_GAIN)
            };
            for torque_limit in [MIN_GAIN, strongest] {
                for kv in [0.0, (MAX_VELOCITY_RATE * armature * inside).min(MAX_GAIN)] {
                    for damping in [0.0, MAX_GAIN] {
                        servos.push(Servo { kp, kv, torque_limit, damping, armature, frictionloss: 0.0 });
                    }
                }
            }
        }
        let mut out = Vec::new();
        for servo in servos {
            // The heaviest payload on the lightest links: a point mass that is all the arm.
            for (mass, payload) in [(MIN_LINK_MASS, 0.0), (MAX_LINK_MASS, 0.0), (MIN_LINK_MASS, MAX_PAYLOAD)] {
                for backlash in [0.0, MAX_BACKLASH] {
                    let arm = TwoLinkArm::default();
                    out.push(PlantConfig {
                        servo,
                        link_mass: [mass; 2],
                        backlash,
                        payload,
                        gravity: true,
                        ..PlantConfig::ideal(arm)
                    });
                }
            }
        }
        out
    }

    /// Runs `cfg` from rest through three far goals, `steps` sub-steps each, asserting that the
    /// tip and the speeds stay finite.
    fn stays_finite(cfg: PlantConfig, steps: usize) {
        assert!(cfg.validate().is_ok(), "{cfg:?}: {:?}", cfg.validate());
        assert_eq!(cfg.sanitized(), cfg, "accepted values are left as they are");
        let mut p = plant(cfg, Pose::new(0.0, 1.5));
        for goal in [Pose::new(3.0, -3.0), Pose::new(-3.0, 3.0), Pose::new(0.5, 1.5)] {
            p.command(&goal.coords());
            for _ in 0..steps {
                p.step(SUBSTEP);
                let (tip, v) = (p.tip(), Pose::of(&p.speeds()));
                assert!(tip.x.is_finite() && tip.y.is_finite() && v.is_finite(), "{cfg:?} at {} s", p.time());
            }
        }
    }

    #[test]
    fn the_corners_of_the_accepted_range_stay_finite() {
        for cfg in corners() {
            stays_finite(cfg, 300);
        }
    }

    #[test]
    fn the_stiffest_servos_accepted_stay_finite() {
        // Issue 48's servo, the same at the top acceleration on the STS3215's armature, and a
        // stiff industrial drive: each crosses its 0.01 rad linear band at hundreds of rad/s.
        // The unsplit 1 ms step (before splitting) left the finite range on the first within 2.4 s.
        let issue = Servo { kp: dynamics::MAX_GAIN, torque_limit: 1e4, frictionloss: 0.0, ..Servo::STS3215 };
        let top = Servo { torque_limit: dynamics::MAX_ACCELERATION * issue.armature * (1.0 - 1e-9), ..issue };
        for servo in [issue, top, Servo { kv: 400.0, ..issue }, Servo { kv: 400.0, ..top }] {
            for (gravity, backlash) in [(false, 0.0), (true, 0.0), (false, MAX_BACKLASH)] {
                let cfg = PlantConfig { servo, gravity, backlash, ..PlantConfig::ideal(TwoLinkArm::default()) };
                stays_finite(cfg, 1000);
            }
        }
    }

    #[test]
    fn the_camera_sees_what_the_encoders_cannot() {
        let arm = TwoLinkArm::default();
        let real = RealArm::with_mismatch(&arm, crate::kinematics::Mismatch::DEFAULT).unwrap();
        let camera = Camera { pixel_noise: 0.5, metres_per_pixel: 1e-3, offset: Point2::new(0.002, 0.0), fps: 10.0 };
        let cfg = PlantConfig { real, flex: 0.02, camera, seed: 3, ..PlantConfig::ideal(arm) };
        let mut p = plant(cfg, Pose::new(0.3, 0.6));
        p.settle();
        let truth = p.tip();
        let by_encoders = (arm.tip(Pose::of(&p.measure())) - truth).norm();
        let frame = p.camera().expect("a frame");
        let by_camera = (frame.tip - truth).norm();
        assert!(by_encoders > 0.05, "flex and mismatch hide from the encoders: {by_encoders}");
        assert!(by_camera < 0.002 + 4.0 * 0.5e-3, "the camera sees the tip: {by_camera}");
        let mut times = Vec::new();
        for _ in 0..50 {
            p.step(0.01);
            times.push(p.camera().unwrap().time);
        }
        times.dedup();
        assert!((5..=6).contains(&times.len()), "10 fps for half a second: {times:?}");
        let mut blind = plant(PlantConfig { camera: Camera::OFF, ..cfg }, Pose::default());
        blind.step(0.1);
        assert!(blind.camera().is_none());
    }

    #[test]
    fn a_camera_faster_than_the_clock_neither_hangs_nor_panics() {
        let arm = TwoLinkArm::default();
        for camera in [
            Camera { fps: 1e300, ..Camera::default() },
            Camera { pixel_noise: 1e300, metres_per_pixel: 1e300, ..Camera::default() },
            Camera { pixel_noise: f64::MAX, metres_per_pixel: f64::MAX, fps: f64::MAX, ..Camera::default() },
        ] {
            assert!(camera.validate().is_err(), "{camera:?}");
            let mut p = plant(PlantConfig { camera, ..PlantConfig::ideal(arm) }, Pose::new(0.3, 0.6));
            for _ in 0..100 {
                p.step(1e-3);
            }
            p.settle();
            let f = p.camera().expect("a frame");
            assert!(f.tip.x.is_finite() && f.tip.y.is_finite() && f.time.is_finite(), "{camera:?}: {f:?}");
        }
        assert_eq!(next_frame_time(0.0, 1e6, 1e-13), 1e6f64.next_up());
        assert_eq!(next_frame_time(0.0, 1.0, 0.3), 1.2);
        assert_eq!(next_frame_time(2.0, 1.0, 0.3), 2.0);
        assert_eq!(next_frame_time(0.0, 1.0, 0.0), f64::INFINITY);
    }

    #[test]
    fn old_files_load_with_the_new_channels_at_their_defaults() {
        let mut json = serde_json::to_value(PlantConfig::ideal(TwoLinkArm::default())).unwrap();
        for key in ["servo", "link_mass", "gravity", "flex", "latency_ms", "camera", "payload"] {
            json.as_object_mut().unwrap().remove(key);
        }
        // Fields of the kinematic plant (a lag, a stiction band, latency in ticks) are ignored.
        json["lag"] = 0.06.into();
        json["latency"] = 3.into();
        let old: PlantConfig = serde_json::from_value(json).unwrap();
        assert_eq!(old, PlantConfig::ideal(TwoLinkArm::default()));
    }

    #[test]
    fn the_real_arm_changes_by_set_real_alone() {
        let arm = TwoLinkArm::default();
        let cfg = everything(arm);
        let ideal = RealChain::two_link(&RealArm::ideal(arm), cfg.link_mass);
        let mut p = Plant::new(ideal.clone(), cfg, &[0.3, 0.9]);
        // `cfg.real` holds the default mismatch; the plant moves the arm it was given, through
        // any change of its settings.
        p.set_config(PlantConfig { backlash: 0.03, ..cfg });
        assert_eq!(p.real(), &ideal);
        p.set_real(cfg.two_link_real());
        assert_eq!(p.real(), &cfg.two_link_real());
        assert_ne!(p.real(), &ideal);
        // A real arm with other coordinates is ignored.
        p.set_real(RealChain::rods(Chain::from_lengths(&[1.0, 1.0, 1.0]).unwrap()));
        assert_eq!(p.real(), &cfg.two_link_real());
    }

    /// Every channel on at once, with gravity.
    fn everything(arm: TwoLinkArm) -> PlantConfig {
        PlantConfig {
            real: Mismatch::DEFAULT.real_arm(&arm),
            backlash: 0.02,
            noise_std: 0.003,
            seed: 11,
            servo: Servo { frictionloss: 0.1, ..Servo::STS3215 },
            gravity: true,
            flex: 0.04,
            latency_ms: 60.0,
            camera: Camera { pixel_noise: 2.0, offset: Point2::new(0.01, 0.0), ..Camera::default() },
            ..PlantConfig::ideal(arm)
        }
    }

    #[test]
    fn a_chain_on_a_rail_feels_the_channels_on_its_joints_and_reads_its_rail_exactly() {
        // rail3's kinematics: a rail of ±1 m and links 0.5, 0.5 and 1.0 m turning freely.
        let travel = crate::chain::Travel::new(-1.0, 1.0).unwrap();
        let links =
            [0.5, 0.5, 1.0].map(|length| crate::chain::Link { length, limits: crate::kinematics::JointLimits::FULL });
        let chain = Chain::new(Some(travel), links.to_vec()).unwrap();
        let x = [0.2, 0.3, -0.4, 0.5];
        let settle = |cfg: PlantConfig| {
            let mut p = Plant::new(RealChain::rods(chain.clone()), cfg, &x);
            p.command(&x);
            p.settle();
            p
        };
        let ideal = PlantConfig::ideal(TwoLinkArm::default());
        let rigid = settle(ideal);
        assert!((rigid.tip() - chain.tip(&x)).norm() < 1e-9, "an ideal plant ends where the model says");
        // Flex: each joint droops with the links beyond it; the rail does not bend.
        let drooped = settle(PlantConfig { flex: 0.05, ..ideal });
        let sag = drooped.actual();
        assert_eq!(sag[0], x[0]);
        assert!((1..4).all(|i| sag[i] < x[i]), "{sag:?}");
        assert!(drooped.tip().y < rigid.tip().y - 0.01, "the tip sags: {} vs {}", drooped.tip().y, rigid.tip().y);
        // Encoder noise on the joints only: a linear scale reads the rail exactly.
        let mut noisy = settle(PlantConfig { noise_std: 0.01, ..ideal });
        let read = noisy.measure();
        assert_eq!(read[0], noisy.link()[0]);
        assert!((1..4).all(|i| read[i] != noisy.link()[i]));
        // Latency: a goal arrives after it, in plant time.
        let mut late = Plant::new(RealChain::rods(chain.clone()), PlantConfig { latency_ms: 100.0, ..ideal }, &x);
        late.command(&[0.4, 0.3, -0.4, 0.5]);
        late.step(0.099);
        assert_eq!(late.commanded()[0], x[0], "not yet");
        late.step(0.002);
        assert_eq!(late.commanded()[0], 0.4, "arrived");
        // Gravity: the rail's servo holds the carriage and links short by their weight over its gain.
        let hung = settle(PlantConfig { gravity: true, ..ideal });
        let weight = (RAIL_CARRIAGE_MASS + LINK_MASS_PER_METRE * chain.reach()) * dynamics::GRAVITY;
        assert!((x[0] - hung.link()[0] - weight / RAIL_SERVO.kp).abs() < 1e-6, "{}", hung.link()[0]);
        // A goal of the wrong length or with a NaN is ignored.
        let mut p = settle(ideal);
        p.command(&[0.0; 3]);
        p.command(&[f64::NAN, 0.0, 0.0, 0.0]);
        assert_eq!(p.in_flight(), 0);
    }

    #[test]
    fn a_payload_is_a_ball_at_the_tip_in_the_dynamics() {
        // Two rods of 1.0 and 0.7 m; 0.3 kg at the tip adds the textbook terms of a point mass
        // there to the mass matrix and the gravity torques, and the ball's own inertia
        // (2/5 m r², r = 4.15 cm of water) to the last link's turning; nothing else.
        let (l1, l2, m) = (1.0, 0.7, 0.3);
        let r = (3.0 * m / (4.0 * std::f64::consts::PI * PAYLOAD_DENSITY)).cbrt();
        assert!((r - 0.0415).abs() < 1e-4, "{r}");
        let own = 0.4 * m * r * r;
        let bare = RealChain::rods(Chain::from_lengths(&[l1, l2]).unwrap());
        let loaded = bare.with_payload(m);
        assert_eq!(loaded.bodies[0], bare.bodies[0], "only the last link carries it");
        let (b, l) = (loaded.bodies[1], bare.bodies[1]);
        assert!((b.mass - l.mass - m).abs() < 1e-15, "{b:?}");
        assert!((b.com[0] - (l.mass * l.com[0] + m * l2) / b.mass).abs() < 1e-15, "{b:?}");
        assert!((b.about_origin() - l.about_origin() - m * l2 * l2 - own).abs() < 1e-12, "{b:?}");
        let model =
            |r: &RealChain| serial_model(&[l1, l2], &r.bodies, &[0.0, 0.0], &frictionless_sts3215(), 0.0, true).0;
        let (with, without) = (model(&loaded), model(&bare));
        for q in [[0.3f64, 0.0], [0.3, 0.7], [-1.0, 2.0], [2.5, -1.3]] {
            let (c2, a1, a12) = (q[1].cos(), q[0].cos(), (q[0] + q[1]).cos());
            let extra = [
                [m * (l1 * l1 + l2 * l2 + 2.0 * l1 * l2 * c2) + own, m * (l2 * l2 + l1 * l2 * c2) + own],
                [m * (l2 * l2 + l1 * l2 * c2) + own, m * l2 * l2 + own],
            ];
            let (mw, mo) = (with.mass_matrix(&q), without.mass_matrix(&q));
            for i in 0..2 {
                for j in 0..2 {
                    assert!((mw[i][j] - mo[i][j] - extra[i][j]).abs() < 1e-12, "{q:?} M[{i}][{j}]");
                }
            }
            let gravity = [m * dynamics::GRAVITY * (l1 * a1 + l2 * a12), m * dynamics::GRAVITY * l2 * a12];
            let (gw, go) = (with.bias(&q, &[0.0; 2]), without.bias(&q, &[0.0; 2]));
            for i in 0..2 {
                assert!(
                    (gw[i] - go[i] - gravity[i]).abs() < 1e-12,
                    "{q:?} g[{i}]: {} vs {}",
                    gw[i] - go[i],
                    gravity[i]
                );
            }
        }
        // Nothing, or nonsense, adds nothing.
        for kg in [0.0, -1.0, f64::NAN] {
            assert_eq!(bare.with_payload(kg), bare);
        }
    }
}
