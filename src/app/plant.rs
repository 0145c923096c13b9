//! The simulated real arm: it takes the driving solver's command each frame, steps by the frame
//! time, and is measured through noisy encoders. Also keeps the rolling tip-error history and
//! lets the envelope's intervention flash fade.

use super::AppSet;
use super::solvers::{EnvelopeStats, Solutions};
use super::state::Nominal;
use super::target::{DEFAULT_TARGET, Target};
use bevy::prelude::*;
use elbow::{Plant, PlantConfig, Pose, RealArm, TwoLinkArm, solve_branches};
use std::collections::VecDeque;

/// Registers the plant, its settings and the tip-error history.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<PlantSettings>().init_resource::<TipHistory>().init_resource::<Sim>().add_systems(
        Update,
        (apply_settings.run_if(resource_changed::<PlantSettings>), drive, fade_flash).chain().in_set(AppSet::Plant),
    );
}

/// Seconds of tip error kept for the plot.
pub(crate) const HISTORY_SECS: f64 = 15.0;

/// The plant knobs the panel exposes. Every value is clamped to its range before use.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub(crate) struct PlantSettings {
    /// Encoder noise standard deviation, radians.
    pub(crate) noise_std: f64,
    /// Backlash half-width, radians.
    pub(crate) backlash: f64,
    /// Motor time constant, seconds.
    pub(crate) lag: f64,
    /// Relative link length errors of the real arm.
    pub(crate) length_error: [f64; 2],
    /// Joint offsets of the real arm (shoulder, elbow), radians.
    pub(crate) joint_offset: [f64; 2],
}

/// Slider ranges of the plant knobs.
pub(crate) mod range {
    use std::ops::RangeInclusive;
    /// Encoder noise, radians.
    pub(crate) const NOISE: RangeInclusive<f64> = 0.0..=0.05;
    /// Backlash half-width, radians.
    pub(crate) const BACKLASH: RangeInclusive<f64> = 0.0..=0.1;
    /// Motor lag, seconds.
    pub(crate) const LAG: RangeInclusive<f64> = 0.0..=0.5;
    /// Relative link length error.
    pub(crate) const LENGTH_ERROR: RangeInclusive<f64> = -0.2..=0.2;
    /// Joint offset, radians.
    pub(crate) const OFFSET: RangeInclusive<f64> = -0.2..=0.2;
}

impl Default for PlantSettings {
    fn default() -> Self {
        // The core's default mismatch, so the residual head trains against the plant it drives.
        let offsets = elbow::learned::DEFAULT_JOINT_OFFSETS;
        Self {
            noise_std: 0.002,
            backlash: 0.0,
            lag: 0.06,
            length_error: elbow::learned::DEFAULT_LENGTH_ERROR,
            joint_offset: [offsets.shoulder, offsets.elbow],
        }
    }
}

/// `v` clamped into `range`; non-finite values become the range's start clamped around 0.
fn clamp(v: f64, range: &std::ops::RangeInclusive<f64>) -> f64 {
    let v = if v.is_finite() { v } else { 0.0 };
    v.clamp(*range.start(), *range.end())
}

impl PlantSettings {
    /// Every knob clamped into its range.
    pub(crate) fn sanitized(&self) -> Self {
        Self {
            noise_std: clamp(self.noise_std, &range::NOISE),
            backlash: clamp(self.backlash, &range::BACKLASH),
            lag: clamp(self.lag, &range::LAG),
            length_error: self.length_error.map(|e| clamp(e, &range::LENGTH_ERROR)),
            joint_offset: self.joint_offset.map(|o| clamp(o, &range::OFFSET)),
        }
    }

    /// The real arm these settings describe for `nominal`.
    pub(crate) fn real_arm(&self, nominal: &TwoLinkArm) -> RealArm {
        let s = self.sanitized();
        RealArm::mismatched(nominal, s.length_error, Pose::new(s.joint_offset[0], s.joint_offset[1]))
            .unwrap_or(RealArm::ideal(*nominal))
    }

    /// The plant configuration for `nominal`.
    pub(crate) fn config(&self, nominal: &TwoLinkArm) -> PlantConfig {
        let s = self.sanitized();
        PlantConfig { real: self.real_arm(nominal), backlash: s.backlash, lag: s.lag, noise_std: s.noise_std, seed: 7 }
    }
}

/// The plant and its latest encoder reading (the seed of every solver).
#[derive(Resource, Debug, Clone)]
pub(crate) struct Sim {
    /// The simulated arm.
    pub(crate) plant: Plant,
    /// What the encoders read at the end of the last frame.
    pub(crate) measured: Pose,
}

impl Sim {
    /// A plant at rest in `pose`.
    pub(crate) fn new(cfg: PlantConfig, pose: Pose) -> Self {
        let plant = Plant::new(cfg, pose);
        Self { measured: plant.link_pose(), plant }
    }
}

/// Rolling `[time s, plant tip error m]` samples over the last [`HISTORY_SECS`].
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct TipHistory(pub(crate) VecDeque<[f64; 2]>);

impl FromWorld for Sim {
    /// The plant for the world's nominal arm and settings, resting on the elbow-down answer for
    /// the default target.
    fn from_world(world: &mut World) -> Self {
        let nominal = world.get_resource::<Nominal>().copied().unwrap_or_default().0;
        let settings = world.get_resource::<PlantSettings>().copied().unwrap_or_default();
        Sim::new(settings.config(&nominal), solve_branches(&nominal, DEFAULT_TARGET).down)
    }
}

/// Pushes changed settings into the plant.
fn apply_settings(nominal: Res<Nominal>, settings: Res<PlantSettings>, mut sim: ResMut<Sim>) {
    sim.plant.set_config(settings.config(&nominal.0));
}

/// Commands the driving answer, steps the plant by the frame time, reads the encoders and
/// records the tip error.
fn drive(
    time: Res<Time>,
    target: Res<Target>,
    solutions: Res<Solutions>,
    mut sim: ResMut<Sim>,
    mut history: ResMut<TipHistory>,
) {
    if let Some(command) = solutions.command {
        sim.plant.command(command);
    }
    let dt = time.delta_secs_f64().clamp(0.0, 0.1);
    sim.plant.step(dt);
    let measured = sim.plant.measure();
    sim.measured = if measured.is_finite() { measured } else { sim.plant.link_pose() };
    let now = time.elapsed_secs_f64();
    let error = (sim.plant.tip() - target.pos).norm();
    if error.is_finite() {
        history.0.push_back([now, error]);
    }
    while history.0.front().is_some_and(|p| p[0] < now - HISTORY_SECS) {
        history.0.pop_front();
    }
}

/// Lets the intervention flash fade out.
fn fade_flash(time: Res<Time>, mut stats: ResMut<EnvelopeStats>) {
    if stats.flash > 0.0 {
        stats.flash = (stats.flash - time.delta_secs()).max(0.0);
    }
}
