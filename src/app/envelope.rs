//! The safety envelope in the app: when the driver is enveloped, the driving solver's proposal
//! is checked (the learned part proposes, the classical part disposes), the command is the
//! proposal or the classical fallback, and every decision is counted by reason and flashed.

use super::AppSet;
use super::state::arm::{Nominal, Sim, closed_form};
use super::state::solve::{Command, Driver, EnvelopeStats, FLASH_SECS, Solutions};
use super::state::train::Models;
use super::state::view::Target;
use bevy::prelude::*;
use elbow::{Lineup, Table};

/// Registers the decision and the flash.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, (decide.run_if(closed_form), fade_flash).chain().in_set(AppSet::Envelope));
}

/// Turns this frame's proposal into the command, through the envelope when the driver has one.
#[allow(clippy::too_many_arguments)]
pub(crate) fn decide(
    nominal: Res<Nominal>,
    target: Res<Target>,
    sim: Res<Sim>,
    driver: Res<Driver>,
    models: Res<Models>,
    mut solutions: ResMut<Solutions>,
    mut stats: ResMut<EnvelopeStats>,
    mut command: ResMut<Command>,
) {
    // With the models, so the residual's trust region is the region it was trained on.
    let lineup = Lineup::new(nominal.0, Table::from_fn(|h| models.get(h)));
    let answer = solutions.proposal.map(|p| lineup.vet(driver.0, p, target.pos, sim.measured()));
    let verdict = answer.and_then(|a| a.verdict);
    if let Some(decision) = verdict {
        stats.log.record(decision);
        if let Some(reason) = decision {
            stats.flash = FLASH_SECS;
            stats.last = Some(reason);
        }
    }
    let solution = answer.map(|a| a.solution);
    solutions.intervention = verdict.flatten();
    solutions.command = solution.map(|s| s.pose).filter(|p| p.is_finite());
    solutions.driver_status = solution.map(|s| s.status);
    *command = Command::pose(solutions.command);
}

/// Lets the intervention flash fade out.
fn fade_flash(time: Res<Time>, mut stats: ResMut<EnvelopeStats>) {
    if stats.flash > 0.0 {
        stats.flash = (stats.flash - time.delta_secs()).max(0.0);
    }
}
