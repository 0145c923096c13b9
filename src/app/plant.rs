//! The simulated real arm: it takes this frame's command, steps by the frame time, and is
//! measured through noisy encoders; the rolling tip-error history is kept for the plot.

use super::AppSet;
use super::state::arm::{HISTORY_SECS, MAX_FRAME_SECS, Nominal, PlantSettings, Sim, TipHistory, two_link_lab};
use super::state::solve::{BranchEvent, BranchLog, Solutions};
use super::state::view::Target;
use bevy::prelude::*;
use elbow::learned::branch::is_branch_change;

/// Registers the systems that apply settings and drive the plant.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(
        Update,
        (apply_settings.run_if(resource_changed::<PlantSettings>), drive)
            .chain()
            .in_set(AppSet::Plant)
            .run_if(two_link_lab),
    );
}

/// Pushes changed settings into the plant: its channels, and the real arm they describe (the
/// mismatch and link masses).
fn apply_settings(nominal: Res<Nominal>, settings: Res<PlantSettings>, mut sim: ResMut<Sim>) {
    let cfg = settings.config(&nominal.0);
    sim.plant.set_config(cfg);
    sim.plant.set_real(cfg.two_link_real());
}

/// Commands the driving answer, steps the plant by the frame time, reads the encoders and
/// records the tip error.
pub(crate) fn drive(
    time: Res<Time>,
    target: Res<Target>,
    solutions: Res<Solutions>,
    mut sim: ResMut<Sim>,
    mut history: ResMut<TipHistory>,
    mut branches: ResMut<BranchLog>,
) {
    if let Some(command) = solutions.command {
        if branches.last_command.is_some_and(|last| is_branch_change(last, command)) {
            let why = solutions
                .branch_change
                .map_or_else(|| "the driver's answer moved to the other elbow branch".to_string(), |c| c.describe());
            branches.count += 1;
            branches.latest = Some(BranchEvent { at: target.pos, when: time.elapsed_secs_f64(), why });
        }
        branches.last_command = Some(command);
        sim.plant.command(&command.coords());
    }
    let dt = time.delta_secs_f64().clamp(0.0, MAX_FRAME_SECS);
    sim.plant.step(dt);
    let measured = elbow::Pose::of(&sim.plant.measure());
    sim.measured = if measured.is_finite() { measured } else { elbow::Pose::of(&sim.plant.link()) };
    let now = time.elapsed_secs_f64();
    let error = (sim.plant.tip() - target.pos).norm();
    if error.is_finite() {
        history.0.push_back([now, error]);
    }
    while history.0.front().is_some_and(|p| p[0] < now - HISTORY_SECS) {
        history.0.pop_front();
    }
}
