//! Why the plant refused a setting: [`PlantError`] names the [`Quantity`], its unit, the limits it
//! must keep and the value given, and reads as one sentence.
//!
//! The module depends on nothing in the plant: each check states its own limits
//! ([`crate::plant::PlantConfig::validate`], [`crate::plant::dynamics::Servo::validate`],
//! [`crate::plant::Camera::validate`]).

use crate::stats::fmt_num;

/// A quantity of the plant that a user sets, or that follows from what they set (a servo's rates
/// on its own armature).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Quantity {
    /// The servo's position gain.
    Kp,
    /// The servo's largest torque.
    TorqueLimit,
    /// The servo's velocity gain.
    Kv,
    /// The joint's viscous damping.
    Damping,
    /// The servo's armature (reflected rotor inertia).
    Armature,
    /// The joint's Coulomb friction loss.
    FrictionLoss,
    /// The servo's natural frequency on its armature alone, `sqrt(kp / armature)`.
    NaturalFrequency,
    /// The servo's velocity gain over its armature, `kv / armature`.
    VelocityRate,
    /// The servo's top acceleration on its armature, `min(torque limit, pi kp) / armature`.
    TopAcceleration,
    /// The mass of one link.
    LinkMass {
        /// Which link, counted from 1 at the base.
        link: usize,
    },
    /// The half-width of the free play between each servo and its link.
    Backlash,
    /// The standard deviation of the encoder noise.
    EncoderNoise,
    /// The links' droop at full stretch.
    Flex,
    /// The control latency.
    Latency,
    /// The payload held at the tip.
    Payload,
    /// The camera's pixel noise.
    PixelNoise,
    /// The camera's scale at the arm's plane.
    MetresPerPixel,
    /// The camera's calibration offset, on each axis.
    CameraOffset,
    /// The camera's frame rate.
    FrameRate,
}

impl Quantity {
    /// The quantity's name in words, as a message says it (`torque limit`, `link 2 mass`).
    pub fn name(self) -> String {
        match self {
            Quantity::Kp => "kp".into(),
            Quantity::TorqueLimit => "torque limit".into(),
            Quantity::Kv => "kv".into(),
            Quantity::Damping => "damping".into(),
            Quantity::Armature => "armature".into(),
            Quantity::FrictionLoss => "friction loss".into(),
            Quantity::NaturalFrequency => "natural frequency".into(),
            Quantity::VelocityRate => "velocity rate".into(),
            Quantity::TopAcceleration => "top acceleration".into(),
            Quantity::LinkMass { link } => format!("link {link} mass"),
            Quantity::Backlash => "backlash".into(),
            Quantity::EncoderNoise => "encoder noise".into(),
            Quantity::Flex => "flex".into(),
            Quantity::Latency => "latency".into(),
            Quantity::Payload => "payload".into(),
            Quantity::PixelNoise => "pixel noise".into(),
            Quantity::MetresPerPixel => "metres per pixel".into(),
            Quantity::CameraOffset => "offset".into(),
            Quantity::FrameRate => "frame rate".into(),
        }
    }

    /// Checks `got` against `limits` (both ends included, and finite), in `unit`: the frame rate
    /// also takes 0 (the camera off). The error carries all four.
    pub fn check(self, got: f64, unit: &'static str, limits: [f64; 2]) -> Result<(), PlantError> {
        let [lo, hi] = limits;
        let off = self == Quantity::FrameRate && got == 0.0;
        if off || (got.is_finite() && (lo..=hi).contains(&got)) {
            Ok(())
        } else {
            Err(PlantError::OutOfRange { quantity: self, unit, limits, got })
        }
    }

    /// Checks a servo's rate `got` against its largest value `limit`, in `unit` (the least is 0).
    pub fn check_rate(self, got: f64, unit: &'static str, limit: f64) -> Result<(), PlantError> {
        if got > limit {
            Err(PlantError::OutOfRange { quantity: self, unit, limits: [0.0, limit], got })
        } else {
            Ok(())
        }
    }
}

/// Why the plant refused a setting: the first quantity out of its limits, in its unit.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum PlantError {
    /// One number outside its limits (a servo's rate: above its upper limit).
    #[error("{}", out_of_range(*quantity, unit, *limits, *got))]
    OutOfRange {
        /// What was refused.
        quantity: Quantity,
        /// Its unit (`N m/rad`, `kg`, `pixels`).
        unit: &'static str,
        /// The least and the largest value accepted (the frame rate also takes 0).
        limits: [f64; 2],
        /// The value given (or, for a rate, what the given values make it).
        got: f64,
    },
    /// The camera's calibration offset beyond its limit on an axis.
    #[error("the camera's offset must lie within ±{limit} {unit} on each axis, got ({}, {})", got[0], got[1])]
    CameraOffset {
        /// Its unit, metres.
        unit: &'static str,
        /// The largest offset accepted on each axis, either way.
        limit: f64,
        /// The offset given, `x` then `y`.
        got: [f64; 2],
    },
}

impl PlantError {
    /// The quantity refused.
    pub fn quantity(&self) -> Quantity {
        match self {
            PlantError::OutOfRange { quantity, .. } => *quantity,
            PlantError::CameraOffset { .. } => Quantity::CameraOffset,
        }
    }

    /// The unit of the quantity refused.
    pub fn unit(&self) -> &'static str {
        match self {
            PlantError::OutOfRange { unit, .. } | PlantError::CameraOffset { unit, .. } => unit,
        }
    }

    /// The least and the largest value accepted (the offset: on each axis).
    pub fn limits(&self) -> [f64; 2] {
        match self {
            PlantError::OutOfRange { limits, .. } => *limits,
            PlantError::CameraOffset { limit, .. } => [-limit, *limit],
        }
    }
}

/// The sentence of [`PlantError::OutOfRange`]: the quantity, its limits and the value given,
/// each written as the plant has always written it.
fn out_of_range(quantity: Quantity, unit: &str, [lo, hi]: [f64; 2], got: f64) -> String {
    let bound = |v: f64| if v == 0.0 { "0".to_string() } else { format!("{v:e}") };
    let name = quantity.name();
    match quantity {
        Quantity::Kp
        | Quantity::TorqueLimit
        | Quantity::Kv
        | Quantity::Damping
        | Quantity::Armature
        | Quantity::FrictionLoss => format!(
            "the servo's {name} must be a number from {} to {} {unit}, got {}",
            bound(lo),
            bound(hi),
            fmt_num(got)
        ),
        Quantity::NaturalFrequency => format!(
            "the servo's natural frequency on its armature, sqrt(kp / armature), is {got:.3e} {unit}, above the {} {unit} the plant resolves; lower kp or raise the armature",
            bound(hi)
        ),
        Quantity::VelocityRate => format!(
            "the servo's velocity gain over its armature, kv / armature, is {got:.3e} {unit}, above the {} {unit} the plant resolves; lower kv or raise the armature",
            bound(hi)
        ),
        Quantity::TopAcceleration => format!(
            "the servo's top acceleration on its armature, min(torque limit, pi kp) / armature, is {got:.3e} {unit}, above the {} {unit} the plant resolves; lower the torque limit or kp, or raise the armature",
            bound(hi)
        ),
        Quantity::LinkMass { .. } => {
            format!("{name} must be a number from {lo:e} to {hi:e} {unit}, got {}", fmt_num(got))
        }
        Quantity::Backlash | Quantity::EncoderNoise | Quantity::Flex | Quantity::Latency | Quantity::Payload => {
            format!("the {name} must be a number from {} to {} {unit}, got {got}", fmt_num(lo), fmt_num(hi))
        }
        Quantity::PixelNoise => {
            format!("the camera's pixel noise must be a number from {} to {hi:e} {unit}, got {got}", bound(lo))
        }
        Quantity::MetresPerPixel => {
            format!("the camera's metres per pixel must be a number from {lo:e} to {hi} {unit}, got {got}")
        }
        Quantity::FrameRate => format!(
            "the camera's frame rate must be 0 (off) or a number from 1/3600 (a frame an hour) to {hi:e} per second, got {got}"
        ),
        Quantity::CameraOffset => {
            format!("the camera's offset must lie within {lo} to {hi} {unit} on each axis, got {got}")
        }
    }
}
