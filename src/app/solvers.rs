//! Every frame, every solver of [`SolverId::TWO_LINK`] answers for the target from the plant's
//! measured pose (learned heads once they have a model), and the driving solver's answer
//! becomes this frame's proposal. The envelope plugin decides what of it reaches the plant.

use super::AppSet;
use super::format::finite;
use super::state::arm::{Nominal, Sim, closed_form};
use super::state::solve::{Driver, Readout, Solutions};
use super::state::train::Models;
use super::state::view::Target;
use bevy::prelude::*;
use elbow::learned::branch::{HYSTERESIS, keep_branch};
use elbow::{HeadKind, LearnedIk, Lineup, Point2, RealArm, Solution, SolverId, Table};

/// Registers the system that fills [`Solutions`].
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, solve_all.in_set(AppSet::Solve).run_if(closed_form));
}

/// The readout of a solution for `target`, judged on `arm`.
fn readout(arm: &RealArm, target: Point2, s: Solution) -> Readout {
    Readout {
        pose: s.pose.is_finite().then_some(s.pose),
        status: Some(s.status),
        tip_error: finite(arm.miss(s.pose, target)),
        iterations: s.iterations,
    }
}

/// Runs every solver, and the driver's.
fn solve_all(
    nominal: Res<Nominal>,
    target: Res<Target>,
    models: Res<Models>,
    sim: Res<Sim>,
    driver: Res<Driver>,
    mut out: ResMut<Solutions>,
) {
    let arm = nominal.0;
    let (t, seed) = (target.pos, sim.measured());
    // A driver keeps its elbow branch: a head with several answers takes the one nearest the
    // arm's pose unless it must change (see `elbow::learned::branch`).
    let lineup = Lineup { keep_branch: Some(HYSTERESIS), ..Lineup::new(arm, Table::from_fn(|h| models.get(h))) };
    let out = &mut *out;
    for id in SolverId::TWO_LINK {
        // Heads that fit the real arm are judged there; everything else on the nominal model.
        let judged_on = id.head().and_then(|h| models.get(h)).map_or(RealArm::ideal(arm), |m| m.judged_on());
        out.rows[id] = lineup.solve(id, t, seed).map_or_else(Readout::default, |s| readout(&judged_on, t, s));
    }
    let mode = elbow::ElbowMode::of(seed);
    out.candidates =
        Table::from_fn(|h: HeadKind| models.get(h).map_or_else(Vec::new, |m| m.predict(t, mode).candidates));
    out.proposal = lineup.solve(driver.0.solver, t, seed);
    out.branch_change = driver.0.solver.head().and_then(|h| {
        let pick = keep_branch(&arm, t, &out.candidates[h], seed, HYSTERESIS)?;
        pick.change
    });
    out.driver_name = driver.0.label();
    out.frame += 1;
}

/// The solvers the app's table lists, in order: every one of [`SolverId::TWO_LINK`] (what the
/// single-identity test compares with the legend and the degradation line-up).
#[cfg(test)]
pub(crate) fn table_rows(solutions: &Solutions) -> Vec<elbow::SolverId> {
    solutions.rows.keys().filter(|id| SolverId::TWO_LINK.contains(id)).collect()
}
