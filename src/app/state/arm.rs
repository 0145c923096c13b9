//! The arm: the nominal model every solver plans on, and the simulated real arm (the plant) with
//! the perturbation knobs the panel exposes.

use bevy::prelude::*;
use elbow::arm::Arm;
use elbow::plant::channel::{Channel, Perturbation};
use elbow::plant::dynamics::Servo;
use elbow::plant::{Camera, RealChain};
use elbow::{Mismatch, Plant, PlantConfig, Point2, Pose, RealArm, TwoLinkArm, solve_branches};
use std::collections::VecDeque;

/// Registers the nominal arm, the plant settings, the plant and its tip history.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Lab>()
        .init_resource::<Nominal>()
        .init_resource::<PlantSettings>()
        .init_resource::<Sim>()
        .init_resource::<TipHistory>();
}

/// The arm in force: one value for every arm of the lab ([`Arm`]). What applies to it is data
/// the arm answers: the two-link arm is a chain whose closed form ([`Arm::closed_form`]) carries
/// the analytic solver, its ghost branches and the heads built on it; a redundant chain
/// ([`Arm::methods`]) carries fans of answers, the exact posterior and self-motion. The plant,
/// the target, the reality-gap channels, training and the plots serve every arm alike. The
/// panel's arm buttons switch it live.
#[derive(Resource, Debug, Clone, PartialEq)]
pub(crate) struct Lab(pub(crate) Arm);

impl Default for Lab {
    /// The default two-link arm.
    fn default() -> Self {
        Self(Arm::two_link(TwoLinkArm::default()))
    }
}

impl Lab {
    /// The arm.
    pub(crate) fn arm(&self) -> &Arm {
        &self.0
    }

    /// The arm's closed form, when it has one (the two-link arm).
    pub(crate) fn closed_form(&self) -> Option<TwoLinkArm> {
        self.0.closed_form()
    }

    /// The arm, when its answers for a target form a manifold (a redundant chain).
    pub(crate) fn chain(&self) -> Option<&Arm> {
        (!self.0.methods().is_empty()).then_some(&self.0)
    }
}

/// Run condition: the arm in force has a closed form (its solvers are [`elbow::SolverId::TWO_LINK`]).
pub(crate) fn closed_form(lab: Res<Lab>) -> bool {
    lab.closed_form().is_some()
}

/// Run condition: the arm in force is a redundant chain (its solvers are [`elbow::SolverId::CHAIN`]).
pub(crate) fn manifold(lab: Res<Lab>) -> bool {
    lab.chain().is_some()
}

/// The two-link arm of the lab (`elbow --lengths` sets it): the nominal model the closed form's
/// solvers plan on while it is in force (the plant's real arm differs from it), and the arm the
/// two-link button returns to.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Nominal(pub(crate) TwoLinkArm);

/// Where the target starts on the default arm: a point where the two elbow branches are far
/// apart, so the average of them (the MSE head's answer) visibly misses.
pub(crate) const DEFAULT_TARGET: Point2 = Point2::new(1.0, 0.8);

/// Where the target starts on `arm`: [`DEFAULT_TARGET`]'s direction, at the same fraction of the
/// way from the inner rim to the reach as [`DEFAULT_TARGET`] on the default arm (so exactly
/// [`DEFAULT_TARGET`] there, and inside the annulus of any arm).
pub(crate) fn default_target(arm: &TwoLinkArm) -> Point2 {
    let d = DEFAULT_TARGET.norm();
    let default_reach = TwoLinkArm::default().reach();
    let radius = arm.inner_radius() + (arm.reach() - arm.inner_radius()) * d / default_reach;
    DEFAULT_TARGET * (radius / d)
}

/// Where the target starts on `arm`: [`default_target`] of its closed form, else the arm's demo
/// target ([`Arm::demo_target`]).
pub(crate) fn home_target(arm: &Arm) -> Point2 {
    arm.closed_form().map_or_else(|| arm.demo_target(), |two| default_target(&two))
}

/// The plant knobs the panel exposes (a view file holds them as they are). Every value is
/// clamped to its range before use.
#[derive(Resource, Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct PlantSettings {
    /// Encoder noise standard deviation, radians.
    pub(crate) noise_std: f64,
    /// Backlash half-width, radians.
    pub(crate) backlash: f64,
    /// Relative link length errors of the real arm.
    pub(crate) length_error: [f64; 2],
    /// Joint offsets of the real arm (shoulder, elbow), radians.
    pub(crate) joint_offset: [f64; 2],
    /// Coulomb friction loss of each joint, N m (the SO-101's servo has 0.052).
    pub(crate) frictionloss: f64,
    /// Link flex: the stretched-out arm's shoulder droop, radians.
    pub(crate) flex: f64,
    /// Control latency, milliseconds.
    pub(crate) latency_ms: f64,
    /// The camera's pixel noise (at 1 mm per pixel), pixels.
    pub(crate) camera_noise: f64,
    /// The camera's calibration offset, metres.
    pub(crate) camera_offset: [f64; 2],
    /// The camera's frame rate, frames per second (0: no camera).
    pub(crate) camera_fps: f64,
    /// A payload held at the tip (the gripper), kg.
    pub(crate) payload: f64,
    /// Every servo's position gain, N m/rad (the SO-101's STS3215 has 998.22).
    pub(crate) servo_kp: f64,
}

/// Slider ranges of the plant knobs: a reality-gap channel's slider ends where its row of the
/// channel table says ([`elbow::plant::channel::Row::slider`]).
pub(crate) mod range {
    use elbow::plant::channel::Channel;
    use std::ops::RangeInclusive;

    /// The end of `channel`'s slider, from its row.
    const fn end(channel: Channel) -> f64 {
        channel.row().slider.expect("a channel with a slider")
    }

    /// Encoder noise, radians.
    pub(crate) const NOISE: RangeInclusive<f64> = 0.0..=end(Channel::Encoder);
    /// Backlash half-width, radians.
    pub(crate) const BACKLASH: RangeInclusive<f64> = 0.0..=end(Channel::Backlash);
    /// Relative link length error.
    pub(crate) const LENGTH_ERROR: RangeInclusive<f64> = -0.2..=0.2;
    /// Joint offset, radians.
    pub(crate) const OFFSET: RangeInclusive<f64> = -0.2..=0.2;
    /// Friction loss, N m: up to about ten times the SO-101 servo's.
    pub(crate) const FRICTION: RangeInclusive<f64> = 0.0..=end(Channel::Friction);
    /// Flex (stretched-out shoulder droop), radians.
    pub(crate) const FLEX: RangeInclusive<f64> = 0.0..=end(Channel::Flex);
    /// Latency, milliseconds.
    pub(crate) const LATENCY: RangeInclusive<f64> = 0.0..=end(Channel::Latency);
    /// Camera pixel noise, pixels at 1 mm per pixel.
    pub(crate) const CAMERA_NOISE: RangeInclusive<f64> = 0.0..=end(Channel::CameraNoise);
    /// Camera calibration offset per axis, metres (either sign).
    pub(crate) const CAMERA_OFFSET: RangeInclusive<f64> = -end(Channel::CameraOffset)..=end(Channel::CameraOffset);
    /// The slowest camera frame the live sweep reaches, seconds per frame.
    pub(crate) const SLOWEST_FRAME: f64 = end(Channel::CameraPeriod);
    /// Camera frame rate, frames per second.
    pub(crate) const CAMERA_FPS: RangeInclusive<f64> = 0.0..=120.0;
    /// Payload at the tip, kg.
    pub(crate) const PAYLOAD: RangeInclusive<f64> = 0.0..=end(Channel::Payload);
    /// Servo position gain, N m/rad: from a hundredth of the STS3215's 998 to twice it.
    pub(crate) const SERVO_KP: RangeInclusive<f64> = 10.0..=2000.0;
}

/// Whether every length error the mismatch sliders allow makes a valid real arm of `nominal`
/// (links too close to the smallest or largest length the core accepts would not), with the
/// reason when not.
pub(crate) fn check_slider_room(nominal: &TwoLinkArm) -> Result<(), String> {
    slider_room(nominal).map_err(|e| format!("these --lengths leave no room for the app's link-length sliders: {e}"))
}

/// Why some setting of the link-length sliders (±20 % each) makes no valid real arm of `arm`,
/// if one does.
pub(crate) fn slider_room(arm: &TwoLinkArm) -> Result<(), String> {
    let (lo, hi) = (*range::LENGTH_ERROR.start(), *range::LENGTH_ERROR.end());
    for length_error in [[lo, lo], [lo, hi], [hi, lo], [hi, hi]] {
        RealArm::with_mismatch(arm, Mismatch { length_error, ..Mismatch::NONE })
            .map_err(|e| format!("at {:+.0} % and {:+.0} % ({e})", 100.0 * length_error[0], 100.0 * length_error[1]))?;
    }
    Ok(())
}

impl Default for PlantSettings {
    /// The core's default mismatch, so the residual head trains against the plant it drives.
    fn default() -> Self {
        let m = Mismatch::DEFAULT;
        Self {
            noise_std: 0.002,
            backlash: 0.0,
            length_error: m.length_error,
            joint_offset: [m.joint_offsets.shoulder, m.joint_offsets.elbow],
            frictionloss: 0.0,
            flex: 0.0,
            latency_ms: 0.0,
            camera_noise: Camera::default().pixel_noise,
            camera_offset: [0.0; 2],
            camera_fps: Camera::default().fps,
            payload: 0.0,
            servo_kp: Servo::STS3215.kp,
        }
    }
}

/// `v` clamped into `range`; non-finite values become 0 clamped into it.
fn clamp(v: f64, range: &std::ops::RangeInclusive<f64>) -> f64 {
    let v = if v.is_finite() { v } else { 0.0 };
    v.clamp(*range.start(), *range.end())
}

impl PlantSettings {
    /// No noise, backlash, friction, latency, mismatch or payload, on the STS3215's gain.
    pub(crate) const IDEAL: PlantSettings = PlantSettings {
        noise_std: 0.0,
        backlash: 0.0,
        length_error: [0.0; 2],
        joint_offset: [0.0; 2],
        frictionloss: 0.0,
        flex: 0.0,
        latency_ms: 0.0,
        camera_noise: 0.0,
        camera_offset: [0.0; 2],
        camera_fps: 30.0,
        payload: 0.0,
        servo_kp: Servo::STS3215.kp,
    };

    /// The value of `channel`'s knob, in the channel's unit (the camera offset's is the length
    /// of its two axes, the frame period the inverse of the frame rate): `None` for a channel
    /// without a knob here, and for the frame period while the camera is off.
    pub(crate) fn level(&self, channel: Channel) -> Option<f64> {
        Some(match channel {
            Channel::Encoder => self.noise_std,
            Channel::Backlash => self.backlash,
            Channel::Friction => self.frictionloss,
            Channel::Flex => self.flex,
            Channel::Latency => self.latency_ms,
            Channel::CameraNoise => self.camera_noise,
            Channel::CameraOffset => self.camera_offset[0].hypot(self.camera_offset[1]),
            Channel::CameraPeriod if self.camera_fps > 0.0 => (1.0 / self.camera_fps).min(range::SLOWEST_FRAME),
            Channel::Payload => self.payload,
            _ => return None,
        })
    }

    /// These knobs with each channel of `levels` (in the channel table's units) set where a knob
    /// holds it ([`PlantSettings::level`]'s inverse): the camera offset along x, a camera period
    /// above 0 as its frame rate (0 leaves the rate), the mismatch as that multiple of the core's
    /// default mismatch (0: none).
    pub(crate) fn with_levels(mut self, levels: &Perturbation) -> Self {
        for channel in Channel::ALL {
            let v = levels[channel];
            match channel {
                Channel::Encoder => self.noise_std = v,
                Channel::Backlash => self.backlash = v,
                Channel::Friction => self.frictionloss = v,
                Channel::Flex => self.flex = v,
                Channel::Latency => self.latency_ms = v,
                Channel::CameraNoise => self.camera_noise = v,
                Channel::CameraOffset => self.camera_offset = [v, 0.0],
                Channel::CameraPeriod if v > 0.0 => self.camera_fps = 1.0 / v,
                Channel::Payload => self.payload = v,
                Channel::Mismatch => {
                    let m = if v == 0.0 { Mismatch::NONE } else { Perturbation::scaled(Mismatch::DEFAULT, v) };
                    self.length_error = m.length_error;
                    self.joint_offset = [m.joint_offsets.shoulder, m.joint_offsets.elbow];
                }
                _ => {}
            }
        }
        self
    }

    /// Every knob clamped into its range.
    pub(crate) fn sanitized(&self) -> Self {
        Self {
            noise_std: clamp(self.noise_std, &range::NOISE),
            backlash: clamp(self.backlash, &range::BACKLASH),
            length_error: self.length_error.map(|e| clamp(e, &range::LENGTH_ERROR)),
            joint_offset: self.joint_offset.map(|o| clamp(o, &range::OFFSET)),
            frictionloss: clamp(self.frictionloss, &range::FRICTION),
            flex: clamp(self.flex, &range::FLEX),
            latency_ms: clamp(self.latency_ms, &range::LATENCY),
            camera_noise: clamp(self.camera_noise, &range::CAMERA_NOISE),
            camera_offset: self.camera_offset.map(|o| clamp(o, &range::CAMERA_OFFSET)),
            camera_fps: clamp(self.camera_fps, &range::CAMERA_FPS),
            payload: clamp(self.payload, &range::PAYLOAD),
            // A gain that is no number is the STS3215's, not the softest servo.
            servo_kp: if self.servo_kp.is_finite() {
                clamp(self.servo_kp, &range::SERVO_KP)
            } else {
                Servo::STS3215.kp
            },
        }
    }

    /// The camera these settings describe (1 mm per pixel).
    pub(crate) fn camera(&self) -> Camera {
        let s = self.sanitized();
        Camera {
            pixel_noise: s.camera_noise,
            metres_per_pixel: 1e-3,
            offset: Point2::new(s.camera_offset[0], s.camera_offset[1]),
            fps: s.camera_fps,
        }
    }

    /// The mismatch these settings describe.
    pub(crate) fn mismatch(&self) -> Mismatch {
        let s = self.sanitized();
        Mismatch { length_error: s.length_error, joint_offsets: Pose::new(s.joint_offset[0], s.joint_offset[1]) }
    }

    /// The real arm these settings describe for `nominal`. Every setting the sliders allow makes
    /// a valid real arm for a nominal arm that passed [`check_slider_room`], which the app checks
    /// before it opens, so the nominal arm never stands in for a mismatched one.
    pub(crate) fn real_arm(&self, nominal: &TwoLinkArm) -> RealArm {
        self.mismatch().real_arm(nominal)
    }

    /// The plant configuration for `nominal`.
    pub(crate) fn config(&self, nominal: &TwoLinkArm) -> PlantConfig {
        let s = self.sanitized();
        let ideal = PlantConfig::ideal(*nominal);
        PlantConfig {
            real: self.real_arm(nominal),
            backlash: s.backlash,
            noise_std: s.noise_std,
            servo: Servo { frictionloss: s.frictionloss, kp: s.servo_kp, ..ideal.servo },
            flex: s.flex,
            latency_ms: s.latency_ms,
            camera: s.camera(),
            payload: s.payload,
            seed: 7,
            ..ideal
        }
    }
}

impl PlantSettings {
    /// The plant these settings describe for `arm`: its real body (the closed form's arm under
    /// the mismatch with [`PlantConfig::link_mass`] links; a chain's own body with the mismatch
    /// spread over its links, [`RealChain::with_mismatch`], an arm the sliders cannot make
    /// staying as modelled) and the channels (the payload and the servos' gain among them, from
    /// [`PlantSettings::config`]), with gravity on for an arm in a vertical plane.
    pub(crate) fn plant(&self, arm: &Arm) -> (RealChain, PlantConfig) {
        let two_link = arm.closed_form();
        let cfg = PlantConfig { gravity: arm.vertical(), ..self.config(&two_link.unwrap_or_default()) };
        let real = match two_link {
            Some(_) => cfg.two_link_real(),
            None => {
                let model = arm.real();
                model.with_mismatch(&self.mismatch()).unwrap_or(model)
            }
        };
        (real, cfg)
    }
}

/// The longest frame a plant catches up on, seconds: real time runs in the plant's sub-steps
/// down to 2 frames a second; a longer stall (a window dragged, a laptop waking) is
/// not made up.
pub(crate) const MAX_FRAME_SECS: f64 = 0.5;

/// The simulated arm in force (the core's one plant, for every arm) and its latest encoder
/// reading (where every solver starts from).
#[derive(Resource, Debug, Clone)]
pub(crate) struct Sim {
    /// The simulated arm.
    pub(crate) plant: Plant,
    /// What the encoders read at the end of the last frame, coordinate by coordinate.
    pub(crate) read: Vec<f64>,
}

impl Sim {
    /// The plant of `arm` under `settings`, at rest at `x`.
    pub(crate) fn new(arm: &Arm, settings: &PlantSettings, x: &[f64]) -> Self {
        let (real, cfg) = settings.plant(arm);
        let plant = Plant::new(real, cfg, x);
        let mut sim = Self { read: Vec::new(), plant };
        sim.read_encoders(&sim.plant.link());
        sim
    }

    /// Takes `reading` (the plant's coordinates) as what the encoders read.
    pub(crate) fn read_encoders(&mut self, reading: &[f64]) {
        let d = self.plant.dim();
        self.read.clear();
        self.read.extend_from_slice(&reading[..d]);
    }

    /// The reading as a two-link pose, where the closed form's solvers start from (on an arm
    /// with a closed form: two coordinates).
    pub(crate) fn measured(&self) -> Pose {
        Pose::of(&self.read)
    }

    /// Where the real tip is.
    pub(crate) fn tip(&self) -> Point2 {
        self.plant.tip()
    }
}

impl FromWorld for Sim {
    /// The plant for the world's arm and settings: on the two-link arm resting on the elbow-down
    /// answer for its default target, on a chain at the centre of its prior.
    fn from_world(world: &mut World) -> Self {
        let lab = world.get_resource::<Lab>().cloned().unwrap_or_default();
        let settings = world.get_resource::<PlantSettings>().copied().unwrap_or_default();
        Sim::new(&lab.0, &settings, &rest_pose(&lab.0))
    }
}

/// Where the plant of `arm` rests when the lab opens on it: the closed form's elbow-down answer
/// for its default target, or the centre of a chain's prior.
pub(crate) fn rest_pose(arm: &Arm) -> Vec<f64> {
    match arm.closed_form() {
        Some(two) => solve_branches(&two, default_target(&two)).down.coords().to_vec(),
        None => arm.prior_center(),
    }
}

/// Seconds of tip error kept for the plot.
pub(crate) const HISTORY_SECS: f64 = 15.0;

/// Rolling `[time s, plant tip error m]` samples over the last [`HISTORY_SECS`].
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct TipHistory(pub(crate) VecDeque<[f64; 2]>);
