//! The workspace atlas, computed off the frame: whenever a snapshot of the mapped head arrives,
//! the mapped solver or layer changes, or (for the silent layer) a perturbation setting moves, a new map of every cell is started on a
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
    /// The mapped head's model the latest map was started with.
    mapped_model: Option<LearnedModel>,
    /// The solver, cells per side and silent layer the latest map was started for.
    requested: Option<(elbow::SolverId, usize, bool)>,
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
        match done.and_then(|r| r) {
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
    // What the map must be of; a change of it, a new snapshot of the mapped head, or (for the
    // silent layer) a new perturbation setting calls for a new map. Comparing with what was
    // *requested*, not with what arrived, keeps a failed map from restarting every frame.
    let key = (solver, view.cells_per_side(), wants_silent);
    let head_model = solver.head().and_then(|h| models.get(h));
    let new_model = models.is_changed() && head_model != job.mapped_model.as_ref();
    let new_plant = plant.is_changed() && wants_silent;
    if job.requested != Some(key) || new_model || new_plant || nominal.is_changed() {
        job.stale = true;
    }
    if !view.on || !job.stale || job.work.busy() {
        return;
    }
    job.stale = false;
    job.requested = Some(key);
    job.mapped_model = head_model.cloned();
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
