//! The workspace atlas, computed off the frame: whenever a model snapshot arrives, the mapped
//! solver changes or a perturbation setting moves, a new map of every cell is started on a
//! background thread (one at a time; changes during a run start the next one when it ends).
//! The frame only polls, so it never waits for a map.

use super::AppSet;
use super::state::{AtlasView, Background, Driver, Models, Nominal, PlantSettings};
use bevy::prelude::*;
use elbow::atlas::{Atlas, AtlasConfig, Layer, compute};
use elbow::{HeadKind, LearnedModel, Lineup, Table};
use std::sync::Arc;
use std::time::Instant;

/// Registers the job and the system that starts and collects maps.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<AtlasJob>().add_systems(Update, schedule.in_set(AppSet::Solve));
}

/// The map being computed, and whether its inputs changed since it started.
#[derive(Resource, Default)]
pub(crate) struct AtlasJob {
    work: Background<Result<(Atlas, f64), String>>,
    stale: bool,
}

/// Noise samples per cell of the app's silent layer.
pub(crate) const SILENT_SAMPLES: usize = 16;

/// The atlas configuration for the current perturbation settings.
pub(crate) fn config(view: &AtlasView, plant: &PlantSettings) -> AtlasConfig {
    let s = plant.sanitized();
    AtlasConfig {
        resolution: view.cells_per_side(),
        noise: s.noise_std,
        backlash: s.backlash,
        mismatch: s.mismatch(),
        // The noise samples cost as much as the rest of the map: only for the silent layer, and
        // then enough of them (16) that the rate reads as a rate, not as dice.
        samples: if view.layer == Layer::Silent { SILENT_SAMPLES } else { 0 },
        ..AtlasConfig::default()
    }
}

/// Collects a finished map, and starts a new one when the inputs changed.
fn schedule(
    mut job: ResMut<AtlasJob>,
    mut view: ResMut<AtlasView>,
    models: Res<Models>,
    plant: Res<PlantSettings>,
    driver: Res<Driver>,
    nominal: Res<Nominal>,
) {
    if let Some(done) = job.work.poll() {
        view.busy = false;
        match done {
            Ok((atlas, ms)) => {
                view.latest = Some(Arc::new(atlas));
                view.compute_ms = ms;
                view.generation += 1;
            }
            Err(why) => warn!("atlas refused: {why}"),
        }
    }
    let solver = view.mapped(driver.0);
    let wants_silent = view.layer == Layer::Silent;
    let shows_other = view.latest.as_ref().is_some_and(|a| {
        a.solver != solver || a.resolution != view.cells_per_side() || (wants_silent && a.samples == 0)
    });
    let touched =
        models.is_changed() || plant.is_changed() || nominal.is_changed() || driver.is_changed() || view.is_changed();
    if touched && (view.latest.is_none() || shows_other || models.is_changed() || plant.is_changed()) {
        job.stale = true;
    }
    if !view.on || !job.stale || job.work.busy() {
        return;
    }
    job.stale = false;
    view.busy = true;
    let cfg = config(&view, &plant);
    let arm = nominal.0;
    // The thread owns copies of the models it needs (snapshots are small).
    let owned: Table<HeadKind, Option<LearnedModel>> = Table::from_fn(|h| models.get(h).cloned());
    job.work.start(move || {
        let t = Instant::now();
        let lineup = Lineup::new(arm, Table::from_fn(|h| owned[h].as_ref()));
        compute(&lineup, solver, &cfg).map(|a| (a, t.elapsed().as_secs_f64() * 1e3))
    });
}
