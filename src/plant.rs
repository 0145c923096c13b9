//! The simulated "real" arm that sits between a controller and the world.
//!
//! A command waits [`PlantConfig::latency`] ticks in a delay line (the control latency), passes
//! through a first-order lag (the motors), then Coulomb friction with stiction at each joint
//! (the position servo stops short of its command, and small changes of the command do not move
//! a stuck joint), then joint backlash (a dead zone: the link only moves once the motor has taken
//! up the play), then link flex (the arm, in a vertical plane, droops under gravity) and the
//! model mismatch of [`RealArm`] (other link lengths, joint offsets the encoders cannot see).
//!
//! Two sensors watch it. The encoders read the link side of each joint, with Gaussian noise: they
//! see friction and backlash, but neither flex (it bends the links beyond the encoders) nor the
//! mismatch. An external [`Camera`] sees the tip itself, with pixel noise, a calibration offset
//! and a frame rate. Every random draw comes from the plant's own seeded generators (one per
//! sensor, so adding a camera leaves the encoder noise stream unchanged).

use std::collections::VecDeque;

use crate::kinematics::{Point2, Pose, RealArm, TwoLinkArm};
use crate::rng::{Stream, rng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

/// Default stiction band, radians: the SO-101 arm's joint friction loss over its servo's
/// position gain (`frictionloss` 0.052 N·m and `kp` 17.8 N·m/rad for the STS3215 servo in
/// TheRobotStudio's and Open Duck Mini's MuJoCo models): 0.052 / 17.8 ≈ 2.9 mrad.
pub const SO101_STICTION_BAND: f64 = 0.052 / 17.8;

/// Coulomb (sliding) friction as a share of static friction, the ratio assumed for every joint
/// (a typical value for geared hobby servos; MuJoCo's `frictionloss` itself makes no distinction).
pub const KINETIC_TO_STATIC: f64 = 0.75;

/// Most ticks a command may wait in the delay line.
pub const MAX_LATENCY: u32 = 1_000;

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
    /// pixels, metres per pixel in `(0, `[`MAX_METRES_PER_PIXEL`]`]`, an offset within
    /// ±[`MAX_CAMERA_OFFSET`] metres, and a frame rate from 0 (off) to [`MAX_FPS`].
    pub fn validate(&self) -> Result<(), String> {
        let within = |v: f64, lo: f64, hi: f64| v.is_finite() && v >= lo && v <= hi;
        if !within(self.pixel_noise, 0.0, MAX_PIXEL_NOISE) {
            return Err(format!(
                "the camera's pixel noise must be a number from 0 to {MAX_PIXEL_NOISE:e} pixels, got {}",
                self.pixel_noise
            ));
        }
        if !(within(self.metres_per_pixel, 0.0, MAX_METRES_PER_PIXEL) && self.metres_per_pixel > 0.0) {
            return Err(format!(
                "the camera's metres per pixel must be a number in (0, {MAX_METRES_PER_PIXEL}], got {}",
                self.metres_per_pixel
            ));
        }
        if !(within(self.offset.x.abs(), 0.0, MAX_CAMERA_OFFSET) && within(self.offset.y.abs(), 0.0, MAX_CAMERA_OFFSET))
        {
            return Err(format!(
                "the camera's offset must lie within ±{MAX_CAMERA_OFFSET} m on each axis, got ({}, {})",
                self.offset.x, self.offset.y
            ));
        }
        if !within(self.fps, 0.0, MAX_FPS) {
            return Err(format!(
                "the camera's frame rate must be a number from 0 (off) to {MAX_FPS:e} per second, got {}",
                self.fps
            ));
        }
        Ok(())
    }

    /// Every field made usable: a non-finite or negative value becomes 0 (a rate of 0 turns the
    /// camera off), and each is capped at its largest accepted value, so a configuration that
    /// skipped [`Camera::validate`] can neither hang the frame schedule nor overflow the noise.
    fn sanitized(mut self) -> Self {
        let clean = |v: f64, hi: f64| if v.is_finite() && v > 0.0 { v.min(hi) } else { 0.0 };
        self.pixel_noise = clean(self.pixel_noise, MAX_PIXEL_NOISE);
        self.metres_per_pixel = clean(self.metres_per_pixel, MAX_METRES_PER_PIXEL);
        self.fps = clean(self.fps, MAX_FPS);
        let offset = |v: f64| if v.is_finite() { v.clamp(-MAX_CAMERA_OFFSET, MAX_CAMERA_OFFSET) } else { 0.0 };
        self.offset = Point2::new(offset(self.offset.x), offset(self.offset.y));
        self
    }
}

/// The fastest camera accepted, frames per second.
pub const MAX_FPS: f64 = 1e4;
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

/// Parameters of the simulated arm.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlantConfig {
    /// The true geometry and the joint offsets (the sim-to-real gap).
    pub real: RealArm,
    /// Backlash: half-width of each joint's dead zone, radians. The link stays put until the
    /// motor has moved this far past it.
    pub backlash: f64,
    /// Motor time constant, seconds (0: the motor reaches each command at once).
    pub lag: f64,
    /// Standard deviation of the encoder noise, radians.
    pub noise_std: f64,
    /// Seed of the noise.
    pub seed: u64,
    /// Stiction band of each joint, radians: static friction over the servo's position gain. A
    /// joint at rest moves only once its command is more than this far away, and then stops
    /// [`KINETIC_TO_STATIC`] times this short of it. [`SO101_STICTION_BAND`] is a real arm's.
    #[serde(default)]
    pub friction: f64,
    /// Link flex: how far the shoulder droops, radians, with the arm stretched out horizontally
    /// (the worst case). The arm hangs in a vertical plane; each joint and the link beyond it
    /// bend by the gravity torque of what lies beyond (uniform links), over a stiffness chosen so
    /// that the elbow droops as far as the shoulder in that pose.
    #[serde(default)]
    pub flex: f64,
    /// Control latency: a command takes effect this many ticks (calls of [`Plant::step`] or
    /// [`Plant::settle`]) after it is sent.
    #[serde(default)]
    pub latency: u32,
    /// The external camera ([`Camera::OFF`] for none).
    #[serde(default = "camera_off")]
    pub camera: Camera,
}

fn camera_off() -> Camera {
    Camera::OFF
}

impl PlantConfig {
    /// A perfect plant: the nominal arm, no backlash, lag, noise, friction, flex or latency, and
    /// no camera.
    pub fn ideal(arm: TwoLinkArm) -> Self {
        Self {
            real: RealArm::ideal(arm),
            backlash: 0.0,
            lag: 0.0,
            noise_std: 0.0,
            seed: 0,
            friction: 0.0,
            flex: 0.0,
            latency: 0,
            camera: Camera::OFF,
        }
    }

    /// The same configuration with every parameter made sane: negative or non-finite backlash,
    /// lag, noise, friction and flex become 0, the latency is capped at [`MAX_LATENCY`] and the
    /// camera's settings are cleaned likewise.
    pub fn sanitized(mut self) -> Self {
        let clean = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
        self.backlash = clean(self.backlash);
        self.lag = clean(self.lag);
        self.noise_std = clean(self.noise_std);
        self.friction = clean(self.friction);
        // A droop past an eighth of a turn (pi/4) is no longer a small bend.
        self.flex = clean(self.flex).min(std::f64::consts::FRAC_PI_4);
        self.latency = self.latency.min(MAX_LATENCY);
        self.camera = self.camera.sanitized();
        self
    }
}

/// The simulated arm's state.
#[derive(Debug, Clone)]
pub struct Plant {
    cfg: PlantConfig,
    noise: Option<Normal<f64>>,
    rng: ChaCha8Rng,
    camera_rng: ChaCha8Rng,
    /// Commands sent but not yet in force, oldest first, with the tick each comes into force.
    pending: VecDeque<(u64, Pose)>,
    /// Ticks begun so far.
    ticks: u64,
    command: Pose,
    /// The motors' setpoint after the lag.
    motor: Pose,
    /// The joint (servo output) after friction.
    joint: Pose,
    /// The link side of each joint, after backlash (what the encoders read).
    link: Pose,
    time: f64,
    next_frame: f64,
    frame: Option<Frame>,
}

/// The backlash (play) operator on one joint: the link follows the motor only once the gap
/// exceeds `half_width`, then trails it by exactly that much.
pub fn with_backlash(link: f64, motor: f64, half_width: f64) -> f64 {
    let gap = motor - link;
    if gap > half_width {
        motor - half_width
    } else if gap < -half_width {
        motor + half_width
    } else {
        link
    }
}

/// Coulomb friction with stiction on one position-controlled joint at rest: the joint breaks
/// free only when its command is more than the static band `band` away, then slides until the
/// servo's pull falls to the sliding friction, `KINETIC_TO_STATIC · band` short of the command.
///
/// Unlike backlash, a joint that has just stopped is stuck again: a small further change of the
/// command in the same direction does not move it (stick-slip), where a link in backlash
/// follows at once.
pub fn with_friction(joint: f64, command: f64, band: f64) -> f64 {
    let error = command - joint;
    if error.abs() <= band { joint } else { command - error.signum() * KINETIC_TO_STATIC * band }
}

/// How far each joint droops, radians, for a `flex` setting (see [`PlantConfig::flex`]) with the
/// arm in pose `q` (shoulder from +x, elbow relative to the upper arm) and links `l1` and `l2`.
///
/// Gravity pulls along −y. The elbow carries the forearm (a uniform rod, torque ∝ `l2² cos θ₂ / 2`),
/// the shoulder both links; each torque over its stiffness gives the droop, normalised so both
/// joints droop by `flex` with the arm stretched out along +x.
pub fn droop(flex: f64, l1: f64, l2: f64, q: Pose) -> Pose {
    if flex == 0.0 {
        return Pose::new(0.0, 0.0);
    }
    let (c1, c12) = (q.shoulder.cos(), (q.shoulder + q.elbow).cos());
    // Torques, up to the common factor (mass per metre · g): forearm about the elbow; both
    // links about the shoulder.
    let elbow = l2 * l2 / 2.0 * c12;
    let shoulder = l1 * l1 / 2.0 * c1 + l2 * (l1 * c1 + l2 / 2.0 * c12);
    let shoulder_horizontal = l1 * l1 / 2.0 + l2 * (l1 + l2 / 2.0);
    let elbow_horizontal = l2 * l2 / 2.0;
    Pose::new(-flex * shoulder / shoulder_horizontal, -flex * elbow / elbow_horizontal)
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
    /// A plant at rest in `pose` (motor, link and command all there).
    pub fn new(cfg: PlantConfig, pose: Pose) -> Self {
        let cfg = cfg.sanitized();
        let pose = crate::solver::sane_seed(pose);
        let mut plant = Self {
            cfg,
            noise: None,
            rng: rng(cfg.seed, Stream::Plant, 0),
            camera_rng: rng(cfg.seed, Stream::Camera, 0),
            pending: VecDeque::new(),
            ticks: 0,
            command: pose,
            motor: pose,
            joint: pose,
            link: pose,
            time: 0.0,
            next_frame: 0.0,
            frame: None,
        };
        plant.set_config(cfg);
        plant.capture_due_frame();
        plant
    }

    /// The configuration in force.
    pub fn config(&self) -> &PlantConfig {
        &self.cfg
    }

    /// Changes the parameters, keeping the arm where it is and the noise streams going. Commands
    /// in the delay line beyond a shorter latency take effect at the next tick.
    pub fn set_config(&mut self, cfg: PlantConfig) {
        let cfg = cfg.sanitized();
        self.noise = (cfg.noise_std > 0.0).then(|| Normal::new(0.0, cfg.noise_std).expect("finite std"));
        if cfg.camera != self.cfg.camera {
            self.frame = None;
            self.next_frame = self.time;
        }
        self.cfg = cfg;
    }

    /// Sends a new command; non-finite angles are ignored (the previous command stays). It takes
    /// effect after [`PlantConfig::latency`] ticks.
    pub fn command(&mut self, pose: Pose) {
        if pose.is_finite() {
            let due = self.ticks + 1 + u64::from(self.cfg.latency);
            // Of several commands sent between two ticks only the last counts: the delay line
            // holds at most one per tick.
            if self.pending.back().is_some_and(|&(d, _)| d == due) {
                self.pending.pop_back();
            }
            self.pending.push_back((due, pose));
        }
    }

    /// The command in force (the newest one out of the delay line).
    pub fn commanded(&self) -> Pose {
        self.command
    }

    /// Commands still in the delay line.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Starts a tick: every command that has waited its latency comes into force.
    fn tick(&mut self) {
        self.ticks += 1;
        // A shorter latency set meanwhile brings waiting commands forward.
        let latest = self.ticks + u64::from(self.cfg.latency);
        while let Some(&(due, pose)) = self.pending.front() {
            if due > self.ticks && due <= latest {
                break;
            }
            self.pending.pop_front();
            // Unwrap onto the motor's side of the circle so a command across ±π turns the short way.
            let unwrap = |c: f64, m: f64| m + crate::kinematics::wrap_angle(c - m);
            self.command = Pose::new(unwrap(pose.shoulder, self.motor.shoulder), unwrap(pose.elbow, self.motor.elbow));
        }
    }

    /// Friction and backlash after the motors moved.
    fn follow_motors(&mut self) {
        let f = self.cfg.friction;
        self.joint = Pose::new(
            with_friction(self.joint.shoulder, self.motor.shoulder, f),
            with_friction(self.joint.elbow, self.motor.elbow, f),
        );
        let b = self.cfg.backlash;
        self.link = Pose::new(
            with_backlash(self.link.shoulder, self.joint.shoulder, b),
            with_backlash(self.link.elbow, self.joint.elbow, b),
        );
    }

    /// One tick: due commands come into force, the motors advance by `dt` seconds, the joints
    /// follow through friction and the links through the backlash, and the camera takes a frame
    /// when one is due.
    pub fn step(&mut self, dt: f64) {
        self.tick();
        let dt = if dt.is_finite() { dt.max(0.0) } else { 0.0 };
        let alpha = if self.cfg.lag > 0.0 { 1.0 - (-dt / self.cfg.lag).exp() } else { 1.0 };
        let follow = |m: f64, c: f64| m + alpha * (c - m);
        self.motor =
            Pose::new(follow(self.motor.shoulder, self.command.shoulder), follow(self.motor.elbow, self.command.elbow));
        self.follow_motors();
        self.time += dt;
        self.capture_due_frame();
    }

    /// One tick in which the motors run until they reach the command in force (at most 10,000
    /// steps of a tenth of the lag); the joints and links then come to rest through friction and
    /// backlash. Commands still in the delay line stay there.
    pub fn settle(&mut self) {
        self.tick();
        if self.cfg.lag > 0.0 {
            for _ in 0..10_000 {
                let dt = self.cfg.lag * 0.1;
                let alpha = 1.0 - (-0.1f64).exp();
                let follow = |m: f64, c: f64| m + alpha * (c - m);
                self.motor = Pose::new(
                    follow(self.motor.shoulder, self.command.shoulder),
                    follow(self.motor.elbow, self.command.elbow),
                );
                self.follow_motors();
                self.time += dt;
                if self.motor.max_joint_distance(self.command) < 1e-12 {
                    break;
                }
            }
        }
        self.motor = self.command;
        self.follow_motors();
        // Settling is slow: the camera has a fresh frame of the resting arm.
        self.frame = None;
        self.next_frame = self.time;
        self.capture_due_frame();
    }

    fn capture_due_frame(&mut self) {
        let cam = self.cfg.camera;
        if !cam.is_on() || self.time < self.next_frame {
            return;
        }
        let sd = cam.noise_metres();
        let tip = self.tip();
        let noise = match Normal::new(0.0, sd) {
            Ok(n) if sd > 0.0 => Point2::new(n.sample(&mut self.camera_rng), n.sample(&mut self.camera_rng)),
            _ => Point2::zeros(),
        };
        self.frame = Some(Frame { tip: tip + cam.offset + noise, time: self.time });
        self.next_frame = next_frame_time(self.next_frame, self.time, 1.0 / cam.fps);
    }

    /// What the encoders read: the link angles (in the command frame) plus noise.
    pub fn measure(&mut self) -> Pose {
        match &self.noise {
            None => self.link,
            Some(n) => {
                Pose::new(self.link.shoulder + n.sample(&mut self.rng), self.link.elbow + n.sample(&mut self.rng))
            }
        }
    }

    /// The camera's latest frame of the tip (`None` without a camera).
    pub fn camera(&self) -> Option<Frame> {
        self.frame
    }

    /// The link angles in the command frame, without noise (what a perfect encoder would read).
    pub fn link_pose(&self) -> Pose {
        self.link
    }

    /// Plant time, seconds (the sum of every step's `dt` and of the settling time).
    pub fn time(&self) -> f64 {
        self.time
    }

    /// The real links' absolute angles: the encoders' angles, the joint offsets, and the droop.
    pub fn actual_pose(&self) -> Pose {
        let real = &self.cfg.real;
        let rigid = real.actual(self.link);
        // The droop depends on the drooped pose: a few fixed-point steps (a contraction for any
        // flex up to pi/4).
        let mut pose = rigid;
        for _ in 0..4 {
            pose = rigid + droop(self.cfg.flex, real.arm.l1(), real.arm.l2(), pose);
        }
        pose
    }

    /// Where the real tip is.
    pub fn tip(&self) -> Point2 {
        self.cfg.real.arm.tip(self.actual_pose())
    }

    /// Base, elbow and tip of the real arm, for drawing.
    pub fn joints(&self) -> [Point2; 3] {
        self.cfg.real.arm.joints(self.actual_pose())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_plant_goes_where_it_is_told() {
        let arm = TwoLinkArm::default();
        let mut p = Plant::new(PlantConfig::ideal(arm), Pose::default());
        p.command(Pose::new(0.5, 1.0));
        p.settle();
        assert!((p.tip() - arm.tip(Pose::new(0.5, 1.0))).norm() < 1e-12);
        assert_eq!(p.measure(), Pose::new(0.5, 1.0));
    }

    #[test]
    fn backlash_is_a_dead_zone_on_commanded_changes() {
        let cfg = PlantConfig { backlash: 0.05, ..PlantConfig::ideal(TwoLinkArm::default()) };
        let mut p = Plant::new(cfg, Pose::default());
        p.command(Pose::new(0.03, 0.0));
        p.settle();
        assert_eq!(p.link_pose().shoulder, 0.0, "inside the dead zone nothing moves");
        p.command(Pose::new(0.5, 0.0));
        p.settle();
        assert!((p.link_pose().shoulder - 0.45).abs() < 1e-12, "the link trails by the half-width");
        p.command(Pose::new(0.42, 0.0));
        p.settle();
        assert!((p.link_pose().shoulder - 0.45).abs() < 1e-12, "reversing takes up the play first");
        assert_eq!(with_backlash(0.0, 0.2, 0.0), 0.2);
    }

    #[test]
    fn lag_approaches_the_command_and_noise_is_seeded() {
        let cfg = PlantConfig { lag: 0.1, noise_std: 0.01, seed: 9, ..PlantConfig::ideal(TwoLinkArm::default()) };
        let mut p = Plant::new(cfg, Pose::default());
        p.command(Pose::new(1.0, 0.0));
        p.step(0.1);
        assert!((p.link_pose().shoulder - (1.0 - (-1f64).exp())).abs() < 1e-12);
        p.settle();
        assert!((p.link_pose().shoulder - 1.0).abs() < 1e-9);
        let mut q = Plant::new(cfg, Pose::default());
        let mut p = Plant::new(cfg, Pose::default());
        assert_eq!(p.measure(), q.measure());
        let spread: Vec<f64> = (0..2000).map(|_| p.measure().elbow).collect();
        let sd = (spread.iter().map(|v| v * v).sum::<f64>() / 2000.0).sqrt();
        assert!((sd - 0.01).abs() < 0.001, "{sd}");
    }

    #[test]
    fn mismatch_moves_the_real_tip_and_bad_input_is_ignored() {
        let arm = TwoLinkArm::default();
        let real = RealArm::mismatched(&arm, [0.1, 0.0], Pose::new(0.0, 0.0)).unwrap();
        let mut p = Plant::new(PlantConfig { real, ..PlantConfig::ideal(arm) }, Pose::default());
        assert!((p.tip().x - 2.1).abs() < 1e-12);
        p.command(Pose::new(f64::NAN, 0.0));
        p.set_config(PlantConfig { backlash: f64::NAN, noise_std: -1.0, ..*p.config() });
        p.settle();
        assert!(p.tip().x.is_finite() && p.config().backlash == 0.0 && p.config().noise_std == 0.0);
    }

    /// Steps of `step` commands, ten of each, starting from rest at 0 on the shoulder; returns
    /// the shoulder link angle after each command.
    fn shoulder_after(cfg: PlantConfig, commands: &[f64]) -> Vec<f64> {
        let mut p = Plant::new(cfg, Pose::default());
        commands
            .iter()
            .map(|&c| {
                p.command(Pose::new(c, 0.0));
                p.settle();
                p.link_pose().shoulder
            })
            .collect()
    }

    #[test]
    fn friction_sticks_and_slips_where_backlash_follows() {
        let ideal = PlantConfig::ideal(TwoLinkArm::default());
        let band = 0.01;
        let friction = PlantConfig { friction: band, ..ideal };
        let backlash = PlantConfig { backlash: band, ..ideal };
        // A command inside the band from rest moves neither.
        assert_eq!(shoulder_after(friction, &[0.005]), [0.0]);
        assert_eq!(shoulder_after(backlash, &[0.005]), [0.0]);
        // A large move: friction stops the kinetic band short, backlash the half-width.
        let stop = 0.5 - KINETIC_TO_STATIC * band;
        assert!((shoulder_after(friction, &[0.5])[0] - stop).abs() < 1e-12);
        assert!((shoulder_after(backlash, &[0.5])[0] - 0.49).abs() < 1e-12);
        // Then small steps on in the same direction: the link in backlash follows each at once;
        // the stuck joint stays put until its error passes the static band, then slips.
        let steps = [0.5, 0.501, 0.502, 0.503, 0.504];
        let b = shoulder_after(backlash, &steps);
        for (k, w) in b.windows(2).enumerate() {
            assert!((w[1] - w[0] - 0.001).abs() < 1e-12, "backlash step {k}: {b:?}");
        }
        let f = shoulder_after(friction, &steps);
        assert_eq!(f[1], f[0], "stuck: error {} < band", 0.501 - f[0]);
        assert_eq!(f[2], f[0], "still stuck: error {} < band", 0.502 - f[0]);
        assert!((f[3] - (0.503 - KINETIC_TO_STATIC * band)).abs() < 1e-12, "slips once past the band: {f:?}");
    }

    #[test]
    fn flex_droops_most_stretched_out_and_the_encoders_cannot_see_it() {
        let arm = TwoLinkArm::default();
        let cfg = PlantConfig { flex: 0.02, ..PlantConfig::ideal(arm) };
        let sag = |pose: Pose| {
            let mut p = Plant::new(cfg, pose);
            p.settle();
            let seen = arm.tip(p.measure());
            assert_eq!(p.measure(), pose, "the encoders read the joint, not the bent link");
            (p.tip() - seen).norm()
        };
        let stretched = sag(Pose::new(0.0, 0.0));
        let up = sag(Pose::new(std::f64::consts::FRAC_PI_2, 0.0));
        let folded = sag(Pose::new(0.0, 2.5));
        // Stretched out along +x both joints droop by about the setting: the tip drops by
        // about (l1 + l2) · flex + l2 · flex.
        let want = 0.02 * (arm.l1() + 2.0 * arm.l2());
        assert!((stretched - want).abs() < 0.1 * want, "{stretched} vs {want}");
        assert!(up < 1e-3 * stretched, "pointing up nothing bends: {up}");
        assert!(folded < stretched && folded > up, "folded in between: {folded}");
        let mut p = Plant::new(cfg, Pose::default());
        p.settle();
        assert!(p.tip().y < 0.0, "gravity pulls the tip down");
    }

    #[test]
    fn latency_delays_commands_by_whole_ticks() {
        let cfg = PlantConfig { latency: 3, ..PlantConfig::ideal(TwoLinkArm::default()) };
        let mut p = Plant::new(cfg, Pose::default());
        p.command(Pose::new(0.4, 0.0));
        for tick in 0..3 {
            p.step(0.01);
            assert_eq!(p.link_pose().shoulder, 0.0, "tick {tick}: still in the delay line");
        }
        p.step(0.01);
        assert_eq!(p.link_pose().shoulder, 0.4);
        assert_eq!(p.in_flight(), 0);
    }

    /// Mean tip error while the plant tracks a target whose shoulder turns at `speed` rad/s,
    /// commanded with the target's exact pose every 10 ms tick.
    fn tracking_error(latency: u32, speed: f64) -> f64 {
        let arm = TwoLinkArm::default();
        let cfg = PlantConfig { latency, ..PlantConfig::ideal(arm) };
        let mut p = Plant::new(cfg, Pose::new(0.0, 0.5));
        let dt = 0.01;
        let mut sum = 0.0;
        for tick in 0..400 {
            let target = Pose::new(speed * tick as f64 * dt, 0.5);
            p.command(target);
            p.step(dt);
            if tick >= 100 {
                sum += (p.tip() - arm.tip(target)).norm();
            }
        }
        sum / 300.0
    }

    #[test]
    fn latency_error_grows_with_target_speed() {
        assert!(tracking_error(0, 2.0) < 1e-12, "no latency, no lag: exact");
        let (slow, fast) = (tracking_error(4, 0.5), tracking_error(4, 2.0));
        assert!(slow > 1e-3, "{slow}");
        // Four ticks late the shoulder trails by speed · 40 ms: the error scales with speed.
        assert!((fast / slow - 4.0).abs() < 0.2, "{slow} {fast}");
        assert!(tracking_error(8, 0.5) > 1.8 * slow, "and with the latency");
    }

    #[test]
    fn the_camera_sees_what_the_encoders_cannot() {
        let arm = TwoLinkArm::default();
        let real = RealArm::with_mismatch(&arm, crate::kinematics::Mismatch::DEFAULT).unwrap();
        let camera = Camera { pixel_noise: 0.5, metres_per_pixel: 1e-3, offset: Point2::new(0.002, 0.0), fps: 10.0 };
        let cfg = PlantConfig { real, flex: 0.02, camera, seed: 3, ..PlantConfig::ideal(arm) };
        let mut p = Plant::new(cfg, Pose::new(0.3, 0.6));
        p.settle();
        let truth = p.tip();
        let by_encoders = (arm.tip(p.measure()) - truth).norm();
        let frame = p.camera().expect("a frame");
        let by_camera = (frame.tip - truth).norm();
        assert!(by_encoders > 0.05, "flex and mismatch hide from the encoders: {by_encoders}");
        assert!(by_camera < 0.002 + 4.0 * 0.5e-3, "the camera sees the tip: {by_camera}");
        // Frames hold between captures at the frame rate.
        let mut times = Vec::new();
        for _ in 0..50 {
            p.step(0.01);
            times.push(p.camera().unwrap().time);
        }
        times.dedup();
        assert_eq!(times.len(), 6, "the settled frame, then 10 fps for half a second: {times:?}");
        // No camera, no frames; pixel noise is seeded.
        let mut blind = Plant::new(PlantConfig { camera: Camera::OFF, ..cfg }, Pose::default());
        blind.step(0.1);
        assert!(blind.camera().is_none());
        let spread: Vec<f64> = (0..400)
            .map(|i| {
                let q = Plant::new(
                    PlantConfig { seed: i, flex: 0.0, camera: Camera { offset: Point2::zeros(), ..camera }, ..cfg },
                    Pose::default(),
                );
                q.camera().unwrap().tip.x - q.tip().x
            })
            .collect();
        let sd = (spread.iter().map(|v| v * v).sum::<f64>() / 400.0).sqrt();
        assert!((sd - 0.5e-3).abs() < 0.1e-3, "{sd}");
    }

    #[test]
    fn a_camera_faster_than_the_clock_neither_hangs_nor_panics() {
        // A frame period below the float spacing of the clock (1e-12 s at 1e6 s of simulated
        // time, or any rate over the cap), and pixel noise times metres per pixel past f64::MAX.
        let arm = TwoLinkArm::default();
        for camera in [
            Camera { fps: 1e300, ..Camera::default() },
            Camera { fps: 1e12, ..Camera::default() },
            Camera { pixel_noise: 1e300, metres_per_pixel: 1e300, ..Camera::default() },
            Camera { pixel_noise: f64::MAX, metres_per_pixel: f64::MAX, fps: f64::MAX, ..Camera::default() },
        ] {
            assert!(camera.validate().is_err(), "{camera:?}");
            let mut p = Plant::new(PlantConfig { camera, ..PlantConfig::ideal(arm) }, Pose::new(0.3, 0.6));
            p.step(1e6);
            for _ in 0..100 {
                p.step(1e-3);
            }
            p.settle();
            let f = p.camera().expect("a frame");
            assert!(f.tip.x.is_finite() && f.tip.y.is_finite() && f.time.is_finite(), "{camera:?}: {f:?}");
        }
        // The schedule itself: one step to the first frame after now, always later than now.
        assert_eq!(next_frame_time(0.0, 1e6, 1e-13), 1e6f64.next_up());
        assert_eq!(next_frame_time(0.0, 1.0, 0.3), 1.2);
        assert_eq!(next_frame_time(2.0, 1.0, 0.3), 2.0);
        assert_eq!(next_frame_time(0.0, 1.0, 0.0), f64::INFINITY);
        assert!(Camera::default().validate().is_ok() && Camera::OFF.validate().is_ok());
        for bad in [
            Camera { pixel_noise: -1.0, ..Camera::default() },
            Camera { metres_per_pixel: 0.0, ..Camera::default() },
            Camera { offset: Point2::new(f64::NAN, 0.0), ..Camera::default() },
            Camera { fps: f64::NAN, ..Camera::default() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn new_channels_sanitize_and_old_files_load() {
        let cfg = PlantConfig {
            friction: f64::NAN,
            flex: -1.0,
            latency: u32::MAX,
            camera: Camera { fps: f64::INFINITY, pixel_noise: f64::NAN, ..Camera::default() },
            ..PlantConfig::ideal(TwoLinkArm::default())
        }
        .sanitized();
        assert_eq!((cfg.friction, cfg.flex, cfg.latency), (0.0, 0.0, MAX_LATENCY));
        assert!(!cfg.camera.is_on() && cfg.camera.pixel_noise == 0.0);
        // A configuration saved before these channels existed still loads, with them off.
        let mut json = serde_json::to_value(PlantConfig::ideal(TwoLinkArm::default())).unwrap();
        for key in ["friction", "flex", "latency", "camera"] {
            json.as_object_mut().unwrap().remove(key);
        }
        let old: PlantConfig = serde_json::from_value(json).unwrap();
        assert_eq!(old, PlantConfig::ideal(TwoLinkArm::default()));
    }
}
