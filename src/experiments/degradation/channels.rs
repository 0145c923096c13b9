//! The perturbation channels, their levels, the settings a run sweeps, and the target sets
//! (held-out and out of distribution).
//!
//! Every channel is swept on its own, the others at zero, and then all together
//! ([`Channel::Combined`]: every channel at the same fraction of its largest level). Level 0 of
//! every channel is one shared baseline: the perfect arm, watched by a perfect camera (no noise,
//! no offset, a frame at every tick).
//!
//! The channels of the plant itself (friction, flex, latency) act on the arm; the three camera
//! channels act only on what the camera reports, so they change no tip error: they change what a
//! camera-based post-move check sees.

use crate::kinematics::{Mismatch, Point2, Region, SampleMode, TwoLinkArm};
use crate::learned::held_out_targets;
use crate::plant::dynamics::Servo;
use crate::plant::{Camera, MAX_FPS, MAX_LATENCY_MS};

/// The largest target noise accepted, metres.
pub const MAX_TARGET_NOISE: f64 = 1e3;
use crate::rng::{Stream, rng};
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// A perturbation channel, named as on the command line and in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Channel {
    /// Encoder (sensor) noise: standard deviation of each joint reading, radians.
    Encoder,
    /// Actuator noise: standard deviation added to each commanded joint angle, radians.
    Actuator,
    /// Backlash: half-width of each joint's dead zone on commanded changes, radians.
    Backlash,
    /// Noise on the sensed target (the input side), standard deviation per axis, metres.
    Target,
    /// Model mismatch: the real arm's link-length errors and joint offsets, as a multiple of
    /// the configured mismatch.
    Mismatch,
    /// Joint friction: the Coulomb friction loss of each joint, N m (the SO-101's STS3215 has
    /// 0.052 N m against a position gain of 998 N m/rad).
    Friction,
    /// Link flex: the droop of the stretched-out arm under gravity, radians.
    Flex,
    /// Control latency: milliseconds a goal takes to reach the servos.
    Latency,
    /// Camera pixel noise: standard deviation of the tip's image position, pixels of 1 mm.
    CameraNoise,
    /// Camera calibration offset: every point the camera reports is shifted this far along x,
    /// metres.
    CameraOffset,
    /// Camera frame period: seconds between frames (0: a frame at every tick).
    CameraPeriod,
    /// Every channel at once, at this fraction of its largest level.
    Combined,
}

impl Channel {
    /// Every channel, in table order.
    pub const ALL: [Channel; 12] = [
        Channel::Encoder,
        Channel::Actuator,
        Channel::Backlash,
        Channel::Target,
        Channel::Mismatch,
        Channel::Friction,
        Channel::Flex,
        Channel::Latency,
        Channel::CameraNoise,
        Channel::CameraOffset,
        Channel::CameraPeriod,
        Channel::Combined,
    ];

    /// The key on the command line and in JSON/CSV.
    pub fn key(self) -> &'static str {
        match self {
            Channel::Encoder => "encoder",
            Channel::Actuator => "actuator",
            Channel::Backlash => "backlash",
            Channel::Target => "target",
            Channel::Mismatch => "mismatch",
            Channel::Friction => "friction",
            Channel::Flex => "flex",
            Channel::Latency => "latency",
            Channel::CameraNoise => "camera-noise",
            Channel::CameraOffset => "camera-offset",
            Channel::CameraPeriod => "camera-period",
            Channel::Combined => "combined",
        }
    }

    /// The unit of its levels.
    pub fn unit(self) -> &'static str {
        match self {
            Channel::Encoder | Channel::Actuator | Channel::Backlash | Channel::Flex => "rad",
            Channel::Target | Channel::CameraOffset => "m",
            Channel::Mismatch => "x mismatch",
            Channel::Friction => "N m",
            Channel::Latency => "ms",
            Channel::CameraNoise => "px",
            Channel::CameraPeriod => "s",
            Channel::Combined => "x max",
        }
    }

    /// True for the channels that act only on the camera (never on the arm).
    pub fn camera_only(self) -> bool {
        matches!(self, Channel::CameraNoise | Channel::CameraOffset | Channel::CameraPeriod)
    }

    /// The largest level accepted on this channel, and why, in words: the plant's own bound on
    /// the quantity, so a level the plant would not take is refused here, as randomization
    /// refuses it (`None`: the mismatch, bounded by the real arm it makes, and the combined
    /// channel, by the levels it combines).
    fn largest(self) -> Option<(f64, &'static str)> {
        match self {
            Channel::Encoder | Channel::Actuator => Some((crate::plant::MAX_ENCODER_NOISE, "pi rad")),
            Channel::Backlash => Some((crate::plant::MAX_BACKLASH, "pi/4 rad (45 degrees)")),
            Channel::Target => Some((MAX_TARGET_NOISE, "1000 m")),
            Channel::Friction => Some((MAX_FRICTION, "2.94 N m (the servo's torque limit)")),
            Channel::Flex => Some((crate::plant::MAX_FLEX, "pi/4 rad (45 degrees)")),
            Channel::Latency => Some((MAX_LATENCY_MS, "10000 ms")),
            Channel::CameraNoise => Some((crate::plant::MAX_PIXEL_NOISE, "1e6 pixels")),
            Channel::CameraOffset => Some((crate::plant::MAX_CAMERA_OFFSET, "1000 m")),
            Channel::CameraPeriod => Some((MAX_CAMERA_PERIOD, "3600 s")),
            _ => None,
        }
    }

    /// This channel's level in the combined channel at `fraction` of its largest level `top`: the
    /// product, except that a camera period too short for the camera is its shortest, 1/[`MAX_FPS`]
    /// s (a valid `--camera-period` never makes a combined level invalid).
    pub fn combined_level(self, fraction: f64, top: f64) -> f64 {
        let level = fraction * top;
        if self == Channel::CameraPeriod && level > 0.0 && level < 1.0 / MAX_FPS { 1.0 / MAX_FPS } else { level }
    }

    /// Checks one level of this channel: finite, at least 0, within the channel's largest level
    /// (the plant's own bound on the quantity), and a camera period of 0 or at least 1/[`MAX_FPS`].
    pub fn check_level(self, level: f64) -> Result<(), String> {
        let got = crate::stats::fmt_num(level);
        if !(level.is_finite() && level >= 0.0) {
            return Err(format!("{} levels must be finite numbers >= 0, got {got}", self.key()));
        }
        if let Some((top, words)) = self.largest()
            && level > top
        {
            return Err(format!("{} levels must be at most {words}, got {got}", self.key()));
        }
        if self == Channel::CameraPeriod && level > 0.0 && level < 1.0 / MAX_FPS {
            return Err(format!(
                "camera-period levels must be 0 (a frame every tick) or at least 1/{MAX_FPS} s, got {got}"
            ));
        }
        Ok(())
    }
}

/// The most friction loss accepted, N m: the servo's torque limit (beyond it nothing moves).
pub const MAX_FRICTION: f64 = Servo::STS3215.torque_limit;
/// The slowest camera accepted, seconds between frames.
pub const MAX_CAMERA_PERIOD: f64 = 3600.0;
/// Metres per pixel of the degradation run's camera.
pub const METRES_PER_PIXEL: f64 = 1e-3;

/// The channels of the exercise protocol: noise on the solver's joint angles and backlash.
pub const EXERCISE_CHANNELS: [Channel; 2] = [Channel::Actuator, Channel::Backlash];

/// The levels swept on each channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChannelLevels {
    /// Encoder noise, radians.
    pub encoder: Vec<f64>,
    /// Actuator noise (the exercise's noise on joint angles), radians.
    pub actuator: Vec<f64>,
    /// Backlash half-width, radians.
    pub backlash: Vec<f64>,
    /// Sensed-target noise, metres.
    pub target: Vec<f64>,
    /// Mismatch, as multiples of the configured mismatch.
    pub mismatch: Vec<f64>,
    /// Friction loss of each joint, N m.
    pub friction: Vec<f64>,
    /// Droop of the stretched-out arm, radians.
    pub flex: Vec<f64>,
    /// Control latency, milliseconds.
    pub latency: Vec<f64>,
    /// Camera pixel noise, pixels of [`METRES_PER_PIXEL`].
    pub camera_noise: Vec<f64>,
    /// Camera calibration offset along x, metres.
    pub camera_offset: Vec<f64>,
    /// Camera frame period, seconds (0: a frame at every tick).
    pub camera_period: Vec<f64>,
    /// Fractions of every channel's largest level, applied together.
    pub combined: Vec<f64>,
}

impl Default for ChannelLevels {
    fn default() -> Self {
        Self {
            encoder: vec![0.0, 0.01, 0.02, 0.05],
            actuator: vec![0.0, 0.01, 0.02, 0.05],
            backlash: vec![0.0, 0.01, 0.02, 0.05],
            target: vec![0.0, 0.01, 0.02, 0.05],
            mismatch: vec![0.0, 0.5, 1.0, 2.0],
            friction: vec![0.0, 0.1, 0.25, 0.5],
            flex: vec![0.0, 0.01, 0.02, 0.05],
            latency: vec![0.0, 33.0, 67.0, 133.0],
            camera_noise: vec![0.0, 5.0, 20.0, 50.0],
            camera_offset: vec![0.0, 0.01, 0.03, 0.1],
            camera_period: vec![0.0, 0.5, 1.0, 2.0],
            combined: vec![0.0, 0.25, 0.5, 1.0],
        }
    }
}

impl ChannelLevels {
    /// Only the baseline (every channel at 0).
    pub fn baseline() -> Self {
        let mut out = Self::default();
        for ch in Channel::ALL {
            *out.of_mut(ch) = vec![0.0];
        }
        out
    }

    /// The baseline and `channel` swept over `levels`, every other channel at 0.
    pub fn only(channel: Channel, levels: Vec<f64>) -> Self {
        let mut out = Self::baseline();
        *out.of_mut(channel) = levels;
        out
    }

    /// The levels of one channel.
    pub fn of(&self, channel: Channel) -> &[f64] {
        match channel {
            Channel::Encoder => &self.encoder,
            Channel::Actuator => &self.actuator,
            Channel::Backlash => &self.backlash,
            Channel::Target => &self.target,
            Channel::Mismatch => &self.mismatch,
            Channel::Friction => &self.friction,
            Channel::Flex => &self.flex,
            Channel::Latency => &self.latency,
            Channel::CameraNoise => &self.camera_noise,
            Channel::CameraOffset => &self.camera_offset,
            Channel::CameraPeriod => &self.camera_period,
            Channel::Combined => &self.combined,
        }
    }

    /// The levels of one channel, mutably.
    pub fn of_mut(&mut self, channel: Channel) -> &mut Vec<f64> {
        match channel {
            Channel::Encoder => &mut self.encoder,
            Channel::Actuator => &mut self.actuator,
            Channel::Backlash => &mut self.backlash,
            Channel::Target => &mut self.target,
            Channel::Mismatch => &mut self.mismatch,
            Channel::Friction => &mut self.friction,
            Channel::Flex => &mut self.flex,
            Channel::Latency => &mut self.latency,
            Channel::CameraNoise => &mut self.camera_noise,
            Channel::CameraOffset => &mut self.camera_offset,
            Channel::CameraPeriod => &mut self.camera_period,
            Channel::Combined => &mut self.combined,
        }
    }
}

/// The value of every channel in one setting.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Perturbation {
    /// Encoder noise, radians.
    pub encoder: f64,
    /// Actuator noise, radians.
    pub actuator: f64,
    /// Backlash half-width, radians.
    pub backlash: f64,
    /// Sensed-target noise, metres.
    pub target: f64,
    /// Mismatch multiple.
    pub mismatch: f64,
    /// Friction loss of each joint, N m.
    pub friction: f64,
    /// Droop of the stretched-out arm, radians.
    pub flex: f64,
    /// Control latency, milliseconds.
    pub latency: f64,
    /// Camera pixel noise, pixels.
    pub camera_noise: f64,
    /// Camera offset along x, metres.
    pub camera_offset: f64,
    /// Camera frame period, seconds (0: a frame at every tick).
    pub camera_period: f64,
}

impl Perturbation {
    /// `mismatch` scaled by `scale`.
    pub fn scaled(mismatch: Mismatch, scale: f64) -> Mismatch {
        Mismatch {
            length_error: mismatch.length_error.map(|e| e * scale),
            joint_offsets: mismatch.joint_offsets * scale,
        }
    }

    fn set(&mut self, channel: Channel, value: f64) {
        match channel {
            Channel::Encoder => self.encoder = value,
            Channel::Actuator => self.actuator = value,
            Channel::Backlash => self.backlash = value,
            Channel::Target => self.target = value,
            Channel::Mismatch => self.mismatch = value,
            Channel::Friction => self.friction = value,
            Channel::Flex => self.flex = value,
            Channel::Latency => self.latency = value,
            Channel::CameraNoise => self.camera_noise = value,
            Channel::CameraOffset => self.camera_offset = value,
            Channel::CameraPeriod => self.camera_period = value,
            Channel::Combined => {}
        }
    }

    /// The camera of this setting: [`METRES_PER_PIXEL`], the pixel noise, the offset along x,
    /// and the frame period (0: the fastest camera, [`MAX_FPS`], a frame at every tick).
    pub fn camera(&self) -> Camera {
        let fps = if self.camera_period > 0.0 { (1.0 / self.camera_period).min(MAX_FPS) } else { MAX_FPS };
        Camera {
            pixel_noise: self.camera_noise,
            metres_per_pixel: METRES_PER_PIXEL,
            offset: Point2::new(self.camera_offset, 0.0),
            fps,
        }
    }
}

/// One point of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Setting {
    /// The channel swept (`None`: the shared baseline, every channel at zero; left out of JSON).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub channel: Option<Channel>,
    /// Its level.
    pub level: f64,
    /// Every channel's value.
    pub perturbation: Perturbation,
}

/// The settings sweeping `channels`: the baseline, then each nonzero level of each channel
/// alone; [`Channel::Combined`] sets every other listed channel to the fraction of its largest
/// level.
pub fn settings(levels: &ChannelLevels, channels: &[Channel]) -> Vec<Setting> {
    let mut out = vec![Setting { channel: None, level: 0.0, perturbation: Perturbation::default() }];
    for &ch in channels {
        for &level in levels.of(ch).iter().filter(|&&l| l > 0.0) {
            let mut p = Perturbation::default();
            if ch == Channel::Combined {
                for &other in channels.iter().filter(|&&c| c != Channel::Combined) {
                    p.set(other, other.combined_level(level, levels.of(other).iter().copied().fold(0.0, f64::max)));
                }
            } else {
                p.set(ch, level);
            }
            out.push(Setting { channel: Some(ch), level, perturbation: p });
        }
    }
    out
}

/// An out-of-distribution target set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OodKind {
    /// Beyond the reach (5% to 50% further out).
    Beyond,
    /// Inside the unreachable hole around the base (only for arms with `l1 != l2`).
    Hole,
    /// Reachable but outside the training sector (only when the heads trained on a sector).
    Sector,
}

impl OodKind {
    /// Every kind.
    pub const ALL: [OodKind; 3] = [OodKind::Beyond, OodKind::Hole, OodKind::Sector];

    /// The key on the command line and in JSON/CSV.
    pub fn key(self) -> &'static str {
        match self {
            OodKind::Beyond => "beyond",
            OodKind::Hole => "hole",
            OodKind::Sector => "sector",
        }
    }

    /// True when this set has any targets for `arm` and `region`.
    pub fn exists(self, arm: &TwoLinkArm, region: Region) -> bool {
        self.absent_because(arm, region).is_none()
    }

    /// Why this set has no targets for `arm` and `region`, or `None` when it has some.
    pub fn absent_because(self, arm: &TwoLinkArm, region: Region) -> Option<&'static str> {
        match self {
            OodKind::Beyond => None,
            OodKind::Hole => (arm.inner_radius() <= 0.01 * arm.reach())
                .then_some("the arm has no hole around its base (l1 = l2, or within 1 % of the reach)"),
            OodKind::Sector => (!matches!(region, Region::Sector { .. }))
                .then_some("the heads trained on the whole annulus (use --region sector:FROM,TO)"),
        }
    }
}

crate::keys::keyed!(OodKind, "OOD set");

/// Which targets a cell covers. Serialised as its [`Split::key`] (and read back from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum Split {
    /// Held-out targets from the training distribution.
    In,
    /// An out-of-distribution set.
    Ood(OodKind),
}

impl Split {
    /// `in`, `beyond`, `hole` or `sector`.
    pub fn key(self) -> &'static str {
        match self {
            Split::In => "in",
            Split::Ood(k) => k.key(),
        }
    }
}

impl From<Split> for &'static str {
    fn from(s: Split) -> Self {
        s.key()
    }
}

impl TryFrom<String> for Split {
    type Error = String;

    /// `in`, or an OOD set's key.
    fn try_from(s: String) -> Result<Self, String> {
        if s == "in" {
            return Ok(Split::In);
        }
        s.parse::<OodKind>().map(Split::Ood).map_err(|e| format!("split must be `in` or an OOD set: {e}"))
    }
}

/// `n` targets of one OOD set.
pub fn ood_targets(arm: &TwoLinkArm, region: Region, kind: OodKind, n: usize, seed: u64) -> Vec<Point2> {
    let mut rng = rng(seed, Stream::OodTargets { slot: kind as u64 }, 0);
    let polar = |r: f64, b: f64| Point2::new(r * b.cos(), r * b.sin());
    (0..n)
        .map(|_| {
            let b: f64 = rng.random_range(-std::f64::consts::PI..std::f64::consts::PI);
            match kind {
                OodKind::Beyond => polar(arm.reach() * rng.random_range(1.05..1.5), b),
                OodKind::Hole => polar(arm.inner_radius() * rng.random_range(0.0..0.95), b),
                OodKind::Sector => {
                    for _ in 0..10_000 {
                        let p = arm.sample_target(&mut rng, SampleMode::UniformArea, Region::Annulus);
                        if !region.contains_bearing(p) {
                            return p;
                        }
                    }
                    polar(arm.reach() * 1.1, b)
                }
            }
        })
        .collect()
}

/// Every target set of a run: the held-out targets, then each OOD set that exists, the OOD
/// budget shared evenly among them.
pub fn target_sets(
    arm: &TwoLinkArm,
    region: Region,
    held_out: usize,
    ood_total: usize,
    kinds: &[OodKind],
    seed: u64,
) -> Vec<(Split, Vec<Point2>)> {
    let mut sets = vec![(Split::In, held_out_targets(arm, region, held_out, seed))];
    let live: Vec<OodKind> = OodKind::ALL.into_iter().filter(|k| kinds.contains(k) && k.exists(arm, region)).collect();
    for (i, &kind) in live.iter().enumerate() {
        let n = ood_total / live.len() + usize::from(i < ood_total % live.len());
        if n > 0 {
            sets.push((Split::Ood(kind), ood_targets(arm, region, kind, n, seed)));
        }
    }
    sets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_is_a_baseline_then_each_channel_alone_then_together() {
        let s = settings(&ChannelLevels::default(), &Channel::ALL);
        assert_eq!(s.len(), 1 + 12 * 3);
        assert_eq!(s[0].perturbation, Perturbation::default());
        let enc = s.iter().find(|x| x.channel == Some(Channel::Encoder) && x.level == 0.05).unwrap();
        assert_eq!(enc.perturbation, Perturbation { encoder: 0.05, ..Perturbation::default() });
        let all = s.iter().find(|x| x.channel == Some(Channel::Combined) && x.level == 0.5).unwrap();
        assert_eq!(
            all.perturbation,
            Perturbation {
                encoder: 0.025,
                actuator: 0.025,
                backlash: 0.025,
                target: 0.025,
                mismatch: 1.0,
                friction: 0.25,
                flex: 0.025,
                latency: 66.5,
                camera_noise: 25.0,
                camera_offset: 0.05,
                camera_period: 1.0,
            }
        );
    }

    #[test]
    fn ood_sets_lie_where_they_say() {
        let arm = TwoLinkArm::new(1.0, 0.5).unwrap();
        let region = Region::Sector { from: -1.0, to: 1.0 };
        let sets = target_sets(&arm, region, 10, 30, &OodKind::ALL, 3);
        assert_eq!(sets.iter().map(|s| s.1.len()).sum::<usize>(), 40);
        for (split, targets) in &sets {
            for p in targets {
                match split {
                    Split::In => assert!(arm.is_reachable(*p) && region.contains_bearing(*p)),
                    Split::Ood(OodKind::Beyond) => assert!(p.norm() > arm.reach()),
                    Split::Ood(OodKind::Hole) => assert!(p.norm() < arm.inner_radius()),
                    Split::Ood(OodKind::Sector) => assert!(arm.is_reachable(*p) && !region.contains_bearing(*p)),
                }
            }
        }
        let default = target_sets(&TwoLinkArm::default(), Region::Annulus, 10, 5, &OodKind::ALL, 3);
        assert_eq!(default.iter().map(|s| s.0).collect::<Vec<_>>(), [Split::In, Split::Ood(OodKind::Beyond)]);
    }
}
