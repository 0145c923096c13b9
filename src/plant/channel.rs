//! The reality-gap channels, one row each in one table ([`ROWS`]): every quantity by which the
//! simulated real arm may differ from the nominal model, with its key, unit, physical bound,
//! default degradation levels, randomization ranges, one line of help and its physics.
//!
//! Everything that lists the channels reads them from here: the degradation experiment's axes
//! and default levels ([`ChannelLevels`]), the value of every channel in one setting
//! ([`Perturbation`], which the physics hooks turn into a [`PlantConfig`]), the check of a level
//! against its bound ([`Channel::check_level`]), the randomization ranges and their check, and the
//! command line's level and range flags with their help. Adding a channel is one variant of
//! [`Channel`], one row of [`ROWS`] (in the same order), and its physics: a hook on the plant's
//! configuration or its camera, or, for a channel the protocol applies outside the plant, the
//! protocol's code. The JSON of [`ChannelLevels`] and [`Perturbation`] has one field per row
//! ([`Row::field`]), in table order, so records written before the table replay bit for bit.

use std::fmt;
use std::ops::{Index, IndexMut};

use super::dynamics::Servo;
use super::{Camera, MAX_BACKLASH, MAX_CAMERA_OFFSET, MAX_ENCODER_NOISE, MAX_FLEX, MAX_FPS, MAX_LATENCY_MS};
use super::{MAX_PAYLOAD, MAX_PIXEL_NOISE, PlantConfig};
use crate::kinematics::{Mismatch, Point2};
use serde::de::{Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A reality-gap channel, named as on the command line and in JSON. Its row in [`ROWS`] holds
/// everything else about it ([`Channel::row`]).
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
    /// A payload at the tip, kg: a small ball centred at the end of the last link. Under gravity
    /// the servos sag under it (the SO-101's by 1.2 mm at full stretch with 250 g).
    Payload,
    /// Every channel at once, at this fraction of its largest level.
    Combined,
}

/// The largest target noise accepted, metres.
pub const MAX_TARGET_NOISE: f64 = 1e3;
/// The most friction loss accepted, N m: the servo's torque limit (beyond it nothing moves).
pub const MAX_FRICTION: f64 = Servo::STS3215.torque_limit;
/// The slowest camera accepted, seconds between frames.
pub const MAX_CAMERA_PERIOD: f64 = 3600.0;
/// Metres per pixel of the camera a [`Perturbation`] sets up.
pub const METRES_PER_PIXEL: f64 = 1e-3;
/// The largest mismatch a randomization range may reach, as a multiple of [`Mismatch::DEFAULT`]:
/// link lengths up to 60 % off and joint offsets up to half a radian; beyond about 16 a drawn link
/// would have no length at all.
pub const MAX_MISMATCH: f64 = 10.0;
/// The SO-101 servo's own friction loss, N m ([`Servo::STS3215`]).
const SO101_FRICTION: f64 = Servo::STS3215.frictionloss;

/// The largest level of a channel, and why, in words.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// The largest level accepted, in the channel's unit.
    pub max: f64,
    /// The same in words, as error messages say it (`pi/4 rad (45 degrees)`).
    pub words: &'static str,
}

/// The uniform ranges `[lo, hi]` a randomized channel is drawn from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Randomized {
    /// The randomized training range.
    pub training: [f64; 2],
    /// The range of the test plants outside it.
    pub outside: [f64; 2],
    /// The highest end a range may have.
    pub limit: f64,
    /// The unit of the ranges as error messages say it, with its leading space (` rad`).
    pub unit: &'static str,
}

/// How a level becomes physics.
#[derive(Clone, Copy)]
pub enum Physics {
    /// The plant simulates it: the hook sets the level on the plant's configuration.
    Plant(fn(&mut PlantConfig, f64)),
    /// Only the camera sees it: the hook sets the level on the camera (the arm moves as without).
    Camera(fn(&mut Camera, f64)),
    /// The protocol that drives the plant applies it, outside the plant (in words: where).
    Protocol(&'static str),
    /// Not a quantity of its own: the other channels at a fraction of their largest levels.
    Combined,
}

impl fmt::Debug for Physics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Physics::Plant(_) => f.write_str("Plant"),
            Physics::Camera(_) => f.write_str("Camera"),
            Physics::Protocol(words) => write!(f, "Protocol({words:?})"),
            Physics::Combined => f.write_str("Combined"),
        }
    }
}

/// One channel: everything the crate knows about it.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The channel (its position in [`ROWS`] is its place in [`Channel`]).
    pub channel: Channel,
    /// The key on the command line and in JSON/CSV values (`camera-noise`).
    pub key: &'static str,
    /// Its field in the JSON of [`ChannelLevels`] and [`Perturbation`] (`camera_noise`).
    pub field: &'static str,
    /// The degradation experiment's flag for its levels, without the dashes (`target-noise`).
    pub flag: &'static str,
    /// Other spellings of the flag, hidden from the help.
    pub aliases: &'static [&'static str],
    /// The unit of its levels.
    pub unit: &'static str,
    /// The largest level accepted (`None`: bounded otherwise, as the mismatch by the real arm it
    /// makes and the combined channel by the levels it combines).
    pub bound: Option<Bound>,
    /// The degradation experiment's default levels.
    pub levels: &'static [f64],
    /// The randomization ranges, for the channels domain randomization draws.
    pub randomized: Option<Randomized>,
    /// One line of help: what a level is, in its unit (the command line's `--help`, the app's
    /// tooltips).
    pub help: &'static str,
    /// Where the end of the app's slider sits, in the unit (`None`: no slider).
    pub slider: Option<f64>,
    /// How a level is applied.
    pub physics: Physics,
}

const fn bound(max: f64, words: &'static str) -> Option<Bound> {
    Some(Bound { max, words })
}

/// Every channel, in the order of [`Channel`]: the degradation experiment sweeps them in this
/// order, and the JSON of [`ChannelLevels`] and [`Perturbation`] lists them in it.
pub const ROWS: &[Row] = &[
    Row {
        channel: Channel::Encoder,
        key: "encoder",
        field: "encoder",
        flag: "encoder",
        aliases: &["noise"],
        unit: "rad",
        bound: bound(MAX_ENCODER_NOISE, "pi rad"),
        levels: &[0.0, 0.01, 0.02, 0.05],
        randomized: None,
        help: "encoder noise: standard deviation of each joint reading, radians",
        slider: Some(0.05),
        physics: Physics::Plant(|c, v| c.noise_std = v),
    },
    Row {
        channel: Channel::Actuator,
        key: "actuator",
        field: "actuator",
        flag: "actuator",
        aliases: &[],
        unit: "rad",
        bound: bound(MAX_ENCODER_NOISE, "pi rad"),
        levels: &[0.0, 0.01, 0.02, 0.05],
        randomized: None,
        help: "actuator noise: standard deviation added to each commanded joint angle, radians (the exercise's joint noise)",
        slider: None,
        physics: Physics::Protocol("added to every command the protocol sends"),
    },
    Row {
        channel: Channel::Backlash,
        key: "backlash",
        field: "backlash",
        flag: "backlash",
        aliases: &[],
        unit: "rad",
        bound: bound(MAX_BACKLASH, "pi/4 rad (45 degrees)"),
        levels: &[0.0, 0.01, 0.02, 0.05],
        randomized: Some(Randomized {
            training: [0.0, 0.01],
            outside: [0.01, 0.02],
            limit: MAX_BACKLASH,
            unit: " rad",
        }),
        help: "backlash: half-width of each joint's free play, radians",
        slider: Some(0.1),
        physics: Physics::Plant(|c, v| c.backlash = v),
    },
    Row {
        channel: Channel::Target,
        key: "target",
        field: "target",
        flag: "target-noise",
        aliases: &[],
        unit: "m",
        bound: bound(MAX_TARGET_NOISE, "1000 m"),
        levels: &[0.0, 0.01, 0.02, 0.05],
        randomized: None,
        help: "noise on the sensed target: standard deviation per axis, metres",
        slider: None,
        physics: Physics::Protocol("added to the target the solvers are given"),
    },
    Row {
        channel: Channel::Mismatch,
        key: "mismatch",
        field: "mismatch",
        flag: "mismatch-scale",
        aliases: &[],
        unit: "x mismatch",
        bound: None,
        levels: &[0.0, 0.5, 1.0, 2.0],
        randomized: Some(Randomized {
            training: [0.0, 1.5],
            outside: [1.5, 3.0],
            limit: MAX_MISMATCH,
            unit: " times the default gap",
        }),
        help: "model mismatch: the real arm's link-length errors and joint offsets, as multiples of the configured mismatch",
        slider: None,
        physics: Physics::Protocol("the real arm the plant is built on"),
    },
    Row {
        channel: Channel::Friction,
        key: "friction",
        field: "friction",
        flag: "friction",
        aliases: &[],
        unit: "N m",
        bound: bound(MAX_FRICTION, "2.94 N m (the servo's torque limit)"),
        levels: &[0.0, 0.1, 0.25, 0.5],
        randomized: Some(Randomized {
            training: [0.0, 3.0 * SO101_FRICTION],
            outside: [3.0 * SO101_FRICTION, 6.0 * SO101_FRICTION],
            limit: MAX_FRICTION,
            unit: " N m",
        }),
        help: "Coulomb friction loss of each joint, N m (the SO-101's servo has 0.052)",
        slider: Some(0.5),
        physics: Physics::Plant(|c, v| c.servo.frictionloss = v),
    },
    Row {
        channel: Channel::Flex,
        key: "flex",
        field: "flex",
        flag: "flex",
        aliases: &[],
        unit: "rad",
        bound: bound(MAX_FLEX, "pi/4 rad (45 degrees)"),
        levels: &[0.0, 0.01, 0.02, 0.05],
        randomized: Some(Randomized { training: [0.0, 0.02], outside: [0.02, 0.04], limit: MAX_FLEX, unit: " rad" }),
        help: "link flex: droop of the stretched-out arm under gravity, radians",
        slider: Some(0.1),
        physics: Physics::Plant(|c, v| c.flex = v),
    },
    Row {
        channel: Channel::Latency,
        key: "latency",
        field: "latency",
        flag: "latency",
        aliases: &[],
        unit: "ms",
        bound: bound(MAX_LATENCY_MS, "10000 ms"),
        levels: &[0.0, 33.0, 67.0, 133.0],
        randomized: None,
        help: "control latency: milliseconds a goal takes to reach the servos",
        slider: Some(500.0),
        physics: Physics::Plant(|c, v| c.latency_ms = v),
    },
    Row {
        channel: Channel::CameraNoise,
        key: "camera-noise",
        field: "camera_noise",
        flag: "camera-noise",
        aliases: &[],
        unit: "px",
        bound: bound(MAX_PIXEL_NOISE, "1e6 pixels"),
        levels: &[0.0, 5.0, 20.0, 50.0],
        randomized: None,
        help: "the camera's pixel noise: standard deviation of the tip's image position, pixels of 1 mm",
        slider: Some(20.0),
        physics: Physics::Camera(|c, v| c.pixel_noise = v),
    },
    Row {
        channel: Channel::CameraOffset,
        key: "camera-offset",
        field: "camera_offset",
        flag: "camera-offset",
        aliases: &[],
        unit: "m",
        bound: bound(MAX_CAMERA_OFFSET, "1000 m"),
        levels: &[0.0, 0.01, 0.03, 0.1],
        randomized: None,
        help: "the camera's calibration offset: every point it reports is shifted this far along x, metres",
        slider: Some(0.05),
        physics: Physics::Camera(|c, v| c.offset = Point2::new(v, 0.0)),
    },
    Row {
        channel: Channel::CameraPeriod,
        key: "camera-period",
        field: "camera_period",
        flag: "camera-period",
        aliases: &[],
        unit: "s",
        bound: bound(MAX_CAMERA_PERIOD, "3600 s"),
        levels: &[0.0, 0.5, 1.0, 2.0],
        randomized: None,
        help: "the camera's frame period: seconds between frames (0: a frame at every tick)",
        slider: Some(2.0),
        physics: Physics::Camera(|c, v| c.fps = if v > 0.0 { (1.0 / v).min(MAX_FPS) } else { MAX_FPS }),
    },
    Row {
        channel: Channel::Payload,
        key: "payload",
        field: "payload",
        flag: "payload",
        aliases: &[],
        unit: "kg",
        bound: bound(MAX_PAYLOAD, "1000 kg"),
        // Only the baseline by default: a default run (and its combined channel) is the run it
        // was before the payload had a row; `--payload 0,0.25,0.5` sweeps it.
        levels: &[0.0],
        randomized: None,
        help: "a payload held at the tip, kg (a ball of water's density centred there), which the servos sag under when the arm hangs in a vertical plane",
        slider: Some(0.5),
        physics: Physics::Plant(|c, v| c.payload = v),
    },
    Row {
        channel: Channel::Combined,
        key: "combined",
        field: "combined",
        flag: "combined",
        aliases: &[],
        unit: "x max",
        bound: None,
        levels: &[0.0, 0.25, 0.5, 1.0],
        randomized: None,
        help: "every channel at once, at these fractions of its largest level",
        slider: None,
        physics: Physics::Combined,
    },
];

/// How many channels there are.
pub const COUNT: usize = ROWS.len();

// The rows stand in the order of the enum: `Channel::row` indexes by the variant.
const _: () = {
    let mut i = 0;
    while i < COUNT {
        assert!(ROWS[i].channel as usize == i, "ROWS must list the channels in the order of `Channel`");
        i += 1;
    }
};

impl Channel {
    /// Every channel, in table order.
    pub const ALL: [Channel; COUNT] = {
        let mut out = [Channel::Combined; COUNT];
        let mut i = 0;
        while i < COUNT {
            out[i] = ROWS[i].channel;
            i += 1;
        }
        out
    };

    /// Its row of [`ROWS`].
    pub const fn row(self) -> &'static Row {
        &ROWS[self as usize]
    }

    /// The key on the command line and in JSON/CSV.
    pub fn key(self) -> &'static str {
        self.row().key
    }

    /// The unit of its levels.
    pub fn unit(self) -> &'static str {
        self.row().unit
    }

    /// True for the channels that act only on the camera (never on the arm).
    pub fn camera_only(self) -> bool {
        matches!(self.row().physics, Physics::Camera(_))
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
    pub fn check_level(self, level: f64) -> Result<(), LevelError> {
        let row = self.row();
        if !(level.is_finite() && level >= 0.0) {
            return Err(LevelError::NotANumber { channel: row.key, got: level });
        }
        if let Some(b) = row.bound
            && level > b.max
        {
            return Err(LevelError::AboveBound {
                channel: row.key,
                unit: row.unit,
                limit: b.max,
                words: b.words,
                got: level,
            });
        }
        if self == Channel::CameraPeriod && level > 0.0 && level < 1.0 / MAX_FPS {
            return Err(LevelError::FasterThanCamera { got: level });
        }
        Ok(())
    }
}

crate::keys::keyed!(Channel, "channel");

/// Why a channel's level was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LevelError {
    /// Not a finite number at least 0.
    #[error("{channel} levels must be finite numbers >= 0, got {}", crate::stats::fmt_num(*got))]
    NotANumber {
        /// The channel's key.
        channel: &'static str,
        /// The level given.
        got: f64,
    },
    /// Above the channel's largest level.
    #[error("{channel} levels must be at most {words}, got {}", crate::stats::fmt_num(*got))]
    AboveBound {
        /// The channel's key.
        channel: &'static str,
        /// The unit of the level.
        unit: &'static str,
        /// The largest level accepted.
        limit: f64,
        /// The same in words.
        words: &'static str,
        /// The level given.
        got: f64,
    },
    /// A camera period shorter than the fastest camera's.
    #[error(
        "camera-period levels must be 0 (a frame every tick) or at least 1/{MAX_FPS} s, got {}",
        crate::stats::fmt_num(*got)
    )]
    FasterThanCamera {
        /// The period given, seconds.
        got: f64,
    },
}

/// Why a randomization range was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the {set} {channel} range must have 0 <= low <= high <= {limit:.3}{unit}, got [{lo:?}, {hi:?}]")]
pub struct RangeError {
    /// Which set of ranges (`randomized`, `outside`).
    pub set: &'static str,
    /// The channel's key.
    pub channel: &'static str,
    /// The range's low end.
    pub lo: f64,
    /// The range's high end.
    pub hi: f64,
    /// The highest end accepted.
    pub limit: f64,
    /// Its unit, with its leading space.
    pub unit: &'static str,
}

/// Checks the range `[lo, hi]` of `channel` in the set called `set`: finite, `0 <= lo <= hi`, and
/// `hi` within the channel's randomization limit (a channel that is never randomized takes only
/// `[0, 0]`).
pub fn check_range(set: &'static str, channel: Channel, [lo, hi]: [f64; 2]) -> Result<(), RangeError> {
    let (limit, unit) = channel.row().randomized.map_or((0.0, ""), |r| (r.limit, r.unit));
    if lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo <= hi && hi <= limit {
        Ok(())
    } else {
        Err(RangeError { set, channel: channel.key(), lo, hi, limit, unit })
    }
}

/// Writes `values` as a struct called `name` with one field per row that `keep` keeps, in table
/// order, as `#[derive(Serialize)]` would.
fn serialize_rows<S: Serializer, T: Serialize>(
    s: S,
    name: &'static str,
    values: &[T; COUNT],
    keep: fn(&Row) -> bool,
) -> Result<S::Ok, S::Error> {
    let kept = ROWS.iter().filter(|r| keep(r)).count();
    let mut out = s.serialize_struct(name, kept)?;
    for (row, v) in ROWS.iter().zip(values) {
        if keep(row) {
            out.serialize_field(row.field, v)?;
        }
    }
    out.end()
}

/// Every row's field name, in table order.
const FIELDS: [&str; COUNT] = {
    let mut out = [""; COUNT];
    let mut i = 0;
    while i < COUNT {
        out[i] = ROWS[i].field;
        i += 1;
    }
    out
};

/// Reads what [`serialize_rows`] writes, as `#[derive(Deserialize)]` with `#[serde(default)]`
/// would: a missing field keeps its value in `start`, an unknown one is skipped, a repeated one is
/// refused.
struct RowsVisitor<T> {
    name: &'static str,
    keep: fn(&Row) -> bool,
    start: [T; COUNT],
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for RowsVisitor<T> {
    type Value = [T; COUNT];

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "struct {}", self.name)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = self.start;
        for (row, slot) in ROWS.iter().zip(out.iter_mut()) {
            if (self.keep)(row) {
                match seq.next_element()? {
                    Some(v) => *slot = v,
                    None => break,
                }
            }
        }
        Ok(out)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = self.start;
        let mut seen = [false; COUNT];
        while let Some(key) = map.next_key::<String>()? {
            match ROWS.iter().position(|r| (self.keep)(r) && r.field == key) {
                Some(i) if seen[i] => return Err(A::Error::duplicate_field(ROWS[i].field)),
                Some(i) => {
                    seen[i] = true;
                    out[i] = map.next_value()?;
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

/// Reads a struct called `name` written by [`serialize_rows`].
fn deserialize_rows<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    name: &'static str,
    keep: fn(&Row) -> bool,
    start: [T; COUNT],
) -> Result<[T; COUNT], D::Error> {
    d.deserialize_struct(name, &FIELDS, RowsVisitor { name, keep, start })
}

/// Every row that is a quantity of its own (all but the combined channel).
fn quantity(row: &Row) -> bool {
    !matches!(row.physics, Physics::Combined)
}

/// Every row.
fn any_row(_: &Row) -> bool {
    true
}

/// The value of every channel in one setting (the combined channel has none). Serialised as a
/// struct with one field per channel, in table order.
#[derive(Clone, Copy, PartialEq, Default)]
pub struct Perturbation([f64; COUNT]);

impl Perturbation {
    /// `mismatch` scaled by `scale`.
    pub fn scaled(mismatch: Mismatch, scale: f64) -> Mismatch {
        Mismatch {
            length_error: mismatch.length_error.map(|e| e * scale),
            joint_offsets: mismatch.joint_offsets * scale,
        }
    }

    /// This setting with `channel` at `value` (the combined channel, which has no value of its
    /// own, is left alone).
    pub fn with(mut self, channel: Channel, value: f64) -> Self {
        self.set(channel, value);
        self
    }

    /// Sets `channel` to `value` (the combined channel, which has no value of its own, is left
    /// alone).
    pub fn set(&mut self, channel: Channel, value: f64) {
        if quantity(channel.row()) {
            self.0[channel as usize] = value;
        }
    }

    /// Applies every channel the plant simulates to `cfg`: each row's [`Physics::Plant`] hook,
    /// and a camera of [`METRES_PER_PIXEL`] that each [`Physics::Camera`] hook sets up (a period
    /// of 0 is the fastest camera, [`MAX_FPS`], a frame at every tick). The channels the protocol
    /// applies ([`Physics::Protocol`]) are left to it.
    pub fn configure(&self, cfg: &mut PlantConfig) {
        cfg.camera = Camera { metres_per_pixel: METRES_PER_PIXEL, ..Camera::OFF };
        for (row, &v) in ROWS.iter().zip(&self.0) {
            match row.physics {
                Physics::Plant(apply) => apply(cfg, v),
                Physics::Camera(apply) => apply(&mut cfg.camera, v),
                Physics::Protocol(_) | Physics::Combined => {}
            }
        }
    }
}

impl Index<Channel> for Perturbation {
    type Output = f64;

    fn index(&self, channel: Channel) -> &f64 {
        &self.0[channel as usize]
    }
}

impl fmt::Debug for Perturbation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("Perturbation");
        for (row, v) in ROWS.iter().zip(&self.0).filter(|(r, _)| quantity(r)) {
            out.field(row.field, v);
        }
        out.finish()
    }
}

impl Serialize for Perturbation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_rows(s, "Perturbation", &self.0, quantity)
    }
}

impl<'de> Deserialize<'de> for Perturbation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_rows(d, "Perturbation", quantity, [0.0; COUNT]).map(Perturbation)
    }
}

/// The levels swept on each channel. Serialised as a struct with one field per channel, in table
/// order; a field left out takes its row's default levels.
#[derive(Clone, PartialEq)]
pub struct ChannelLevels([Vec<f64>; COUNT]);

impl Default for ChannelLevels {
    /// Every row's default levels.
    fn default() -> Self {
        Self(std::array::from_fn(|i| ROWS[i].levels.to_vec()))
    }
}

impl ChannelLevels {
    /// Only the baseline (every channel at 0).
    pub fn baseline() -> Self {
        Self(std::array::from_fn(|_| vec![0.0]))
    }

    /// The baseline and `channel` swept over `levels`, every other channel at 0.
    pub fn only(channel: Channel, levels: Vec<f64>) -> Self {
        Self::baseline().with(channel, levels)
    }

    /// These levels with `channel`'s replaced by `levels`.
    pub fn with(mut self, channel: Channel, levels: Vec<f64>) -> Self {
        self.0[channel as usize] = levels;
        self
    }

    /// The levels of one channel.
    pub fn of(&self, channel: Channel) -> &[f64] {
        &self.0[channel as usize]
    }

    /// The levels of one channel, mutably.
    pub fn of_mut(&mut self, channel: Channel) -> &mut Vec<f64> {
        &mut self.0[channel as usize]
    }
}

impl Index<Channel> for ChannelLevels {
    type Output = Vec<f64>;

    fn index(&self, channel: Channel) -> &Vec<f64> {
        &self.0[channel as usize]
    }
}

impl IndexMut<Channel> for ChannelLevels {
    fn index_mut(&mut self, channel: Channel) -> &mut Vec<f64> {
        &mut self.0[channel as usize]
    }
}

impl fmt::Debug for ChannelLevels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("ChannelLevels");
        for (row, v) in ROWS.iter().zip(&self.0) {
            out.field(row.field, v);
        }
        out.finish()
    }
}

impl Serialize for ChannelLevels {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_rows(s, "ChannelLevels", &self.0, any_row)
    }
}

impl<'de> Deserialize<'de> for ChannelLevels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_rows(d, "ChannelLevels", any_row, ChannelLevels::default().0).map(ChannelLevels)
    }
}

/// Why a row of the table contradicts itself, if it does: a key that does not parse back to its
/// channel, default levels that do not pass [`Channel::check_level`], randomization ranges out of
/// order or beyond the channel's bound or limit, a slider beyond the bound, an empty help line.
pub fn check_row(row: &Row) -> Result<(), String> {
    let key = row.key;
    if key.parse::<Channel>().ok() != Some(row.channel) {
        return Err(format!("{key}: the key does not parse back to {:?}", row.channel));
    }
    if row.levels.is_empty() || row.levels.first() != Some(&0.0) {
        return Err(format!("{key}: the default levels must start at the baseline, 0"));
    }
    for &level in row.levels {
        row.channel.check_level(level).map_err(|e| format!("{key}: a default level is refused: {e}"))?;
    }
    if let Some(r) = row.randomized {
        if row.bound.is_some_and(|b| r.limit > b.max) {
            return Err(format!("{key}: the randomization limit {} is beyond the bound", r.limit));
        }
        for (set, span) in [("randomized", r.training), ("outside", r.outside)] {
            check_range(set, row.channel, span).map_err(|e| format!("{key}: {e}"))?;
        }
        if r.outside[0] < r.training[1] {
            return Err(format!("{key}: the outside range must start where the training range ends or beyond"));
        }
    }
    if let Some(end) = row.slider
        && !(end > 0.0 && row.bound.is_none_or(|b| end <= b.max))
    {
        return Err(format!("{key}: the slider's end {end} is not within (0, bound]"));
    }
    if row.help.is_empty() || row.help.contains('\n') {
        return Err(format!("{key}: the help must be one line"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_consistent_and_every_key_and_field_is_its_own() {
        for row in ROWS {
            check_row(row).unwrap();
        }
        for (i, a) in ROWS.iter().enumerate() {
            for b in &ROWS[i + 1..] {
                assert!(a.key != b.key && a.field != b.field && a.flag != b.flag, "{} and {}", a.key, b.key);
            }
        }
        // The check catches a broken row.
        let good = *Channel::Flex.row();
        let broken = [
            Row { levels: &[0.0, 1.0], ..good },
            Row { key: "flexx", ..good },
            Row { levels: &[0.01], ..good },
            Row { randomized: Some(Randomized { training: [0.0, 1.0], ..good.randomized.unwrap() }), ..good },
            Row { randomized: Some(Randomized { outside: [0.0, 0.01], ..good.randomized.unwrap() }), ..good },
            Row { slider: Some(1.0), ..good },
        ];
        for row in broken {
            assert!(check_row(&row).is_err(), "{row:?}");
        }
    }

    #[test]
    fn the_json_has_one_field_per_channel_in_table_order_and_reads_back() {
        let p = Perturbation::default().with(Channel::Flex, 0.5).with(Channel::Combined, 3.0);
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(
            json,
            r#"{"encoder":0.0,"actuator":0.0,"backlash":0.0,"target":0.0,"mismatch":0.0,"friction":0.0,"flex":0.5,"latency":0.0,"camera_noise":0.0,"camera_offset":0.0,"camera_period":0.0,"payload":0.0}"#
        );
        assert_eq!(serde_json::from_str::<Perturbation>(&json).unwrap(), p);
        let some: Perturbation = serde_json::from_str(r#"{"latency":2.0,"other":[1]}"#).unwrap();
        assert_eq!(some, Perturbation::default().with(Channel::Latency, 2.0));
        assert!(serde_json::from_str::<Perturbation>(r#"{"flex":1.0,"flex":2.0}"#).is_err());
        let levels: ChannelLevels = serde_json::from_str(r#"{"encoder":[0.0,1.0]}"#).unwrap();
        assert_eq!(levels, ChannelLevels::default().with(Channel::Encoder, vec![0.0, 1.0]));
        let text = serde_json::to_string(&ChannelLevels::default()).unwrap();
        assert!(text.starts_with(r#"{"encoder":[0.0,0.01,0.02,0.05],"actuator":"#), "{text}");
        assert!(text.ends_with(r#""combined":[0.0,0.25,0.5,1.0]}"#), "{text}");
        assert_eq!(serde_json::from_str::<ChannelLevels>(&text).unwrap(), ChannelLevels::default());
    }

    #[test]
    fn the_hooks_build_the_plant_and_camera_of_a_setting() {
        let arm = crate::kinematics::TwoLinkArm::default();
        let mut cfg = PlantConfig::ideal(arm);
        let p = Perturbation::default()
            .with(Channel::Encoder, 0.1)
            .with(Channel::Friction, 0.2)
            .with(Channel::CameraOffset, 0.3)
            .with(Channel::CameraPeriod, 0.5)
            .with(Channel::Actuator, 9.0)
            .with(Channel::Payload, 0.25);
        p.configure(&mut cfg);
        assert_eq!((cfg.noise_std, cfg.servo.frictionloss, cfg.backlash), (0.1, 0.2, 0.0));
        assert_eq!(cfg.payload, 0.25);
        assert_eq!(cfg.camera, Camera { offset: Point2::new(0.3, 0.0), fps: 2.0, ..Camera::OFF });
        Perturbation::default().configure(&mut cfg);
        assert_eq!(cfg.camera.fps, MAX_FPS);
    }
}
