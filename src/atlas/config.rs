//! The one configuration of a map ([`AtlasConfig`]) and why a map was not made
//! ([`AtlasError`]), shared by the two-link map and the chain's.

use crate::chain::solve::{SolveError, SolveSettings};
use crate::kinematics::Mismatch;
use crate::plant::channel::Channel;
use crate::plant::dynamics::Servo;
use serde::{Deserialize, Serialize};

/// Everything that defines an atlas.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AtlasConfig {
    /// Cells per side.
    pub resolution: usize,
    /// How far beyond the rim the map reaches, as a fraction of the reach.
    pub margin: f64,
    /// Standard deviation of the joint noise of the silent layer, radians.
    pub noise: f64,
    /// Backlash half-width of the silent layer, radians: each joint lands uniformly in the play.
    pub backlash: f64,
    /// The real arm of the silent layer, as a mismatch from the line-up's nominal arm.
    pub mismatch: Mismatch,
    /// Joint friction of the silent layer: each joint's Coulomb friction loss, N m (the channel
    /// table's friction, up to [`crate::plant::channel::MAX_FRICTION`]). A position servo holding against it stops
    /// anywhere within `friction / kp` of its command ([`AtlasConfig::stiction_band`], on the
    /// STS3215's gain); which side depends on where it came from, which a map does not know, so
    /// uniformly within it.
    pub friction: f64,
    /// Link flex of the silent layer ([`crate::plant::droop`]), radians of droop stretched out.
    pub flex: f64,
    /// Noise samples per cell of the silent layer (0: no silent layer).
    pub samples: usize,
    /// A tip error above this (metres) counts as a miss in the silent layer.
    pub tolerance: f64,
    /// Seed of the silent layer's noise (on a chain, of the sampling).
    pub seed: u64,
    /// On a chain: how DLS, the hybrid and the exact sampler run.
    pub settings: SolveSettings,
}

impl Default for AtlasConfig {
    fn default() -> Self {
        Self {
            resolution: 128,
            margin: 0.25,
            noise: 0.02,
            backlash: 0.0,
            mismatch: Mismatch::NONE,
            friction: 0.0,
            flex: 0.0,
            samples: 4,
            tolerance: 0.05,
            seed: 0,
            settings: SolveSettings::default(),
        }
    }
}

/// Largest resolution accepted (cells per side).
pub const MAX_RESOLUTION: usize = 1024;
/// Most noise samples per cell.
pub const MAX_SAMPLES: usize = 64;

impl AtlasConfig {
    /// How far from its command a joint at rest may stop under [`AtlasConfig::friction`],
    /// radians: the friction loss over the STS3215's position gain.
    pub fn stiction_band(&self) -> f64 {
        self.friction / Servo::STS3215.kp
    }

    /// Checks every field of a two-link map, with a message naming the first bad one.
    pub fn validate(&self) -> Result<(), String> {
        if !(2..=MAX_RESOLUTION).contains(&self.resolution) {
            return Err(format!("resolution must be in 2..={MAX_RESOLUTION}, got {}", self.resolution));
        }
        if !(self.margin.is_finite() && (0.0..=2.0).contains(&self.margin)) {
            return Err(format!("margin must be in [0, 2], got {}", self.margin));
        }
        // The channel table's bounds on each quantity: the plant's own, as on the command line.
        for (name, channel, v) in [
            ("noise", Channel::Encoder, self.noise),
            ("backlash", Channel::Backlash, self.backlash),
            ("friction", Channel::Friction, self.friction),
            ("flex", Channel::Flex, self.flex),
        ] {
            let Some(bound) = channel.row().bound else { continue };
            if !(v.is_finite() && (0.0..=bound.max).contains(&v)) {
                return Err(format!("{name} must be a number from 0 to {}, got {v}", bound.words));
            }
        }
        let m = self.mismatch;
        let offsets = [m.joint_offsets.shoulder, m.joint_offsets.elbow];
        if !m.length_error.iter().chain(&offsets).all(|v| v.is_finite() && v.abs() <= 0.5) {
            return Err(format!("mismatch errors and offsets must be within ±0.5, got {m:?}"));
        }
        if self.samples > MAX_SAMPLES {
            return Err(format!("samples must be at most {MAX_SAMPLES}, got {}", self.samples));
        }
        if !(self.tolerance.is_finite() && self.tolerance > 0.0) {
            return Err(format!("tolerance must be > 0, got {}", self.tolerance));
        }
        Ok(())
    }
}

/// Why a map was not made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AtlasError {
    /// The solver, the layer or a setting does not fit the arm.
    #[error("{0}")]
    Invalid(String),
    /// The layer's method needs a net that was not given.
    #[error(transparent)]
    NoNet(#[from] SolveError),
}
