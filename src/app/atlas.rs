//! The workspace atlas, computed off the frame as a [`Job`]: its key is what the map is of (the
//! nominal arm, the mapped solver, cells per side, and whether the silent layer is sampled); a
//! new snapshot of the mapped head or (for the silent layer) a new perturbation setting calls for
//! a new map of the same key. A map of a key no longer wanted is dropped when it arrives.
//! The frame only polls, so it never waits for a map.

use super::AppSet;
use super::job::Job;
use super::state::arm::{Nominal, PlantSettings, closed_form};
use super::state::solve::Driver;
use super::state::train::Models;
use bevy::prelude::*;
use elbow::arm::Arm;
use elbow::atlas::{Atlas, AtlasConfig, Layer, Map, Trained, compute};
use elbow::{HeadKind, LearnedModel, Pipeline, SolverId, Table, TwoLinkArm};
use std::sync::Arc;
use std::time::Instant;

/// Registers the view, the job and the system that starts and collects maps.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<AtlasView>()
        .init_resource::<AtlasJob>()
        .add_systems(Update, schedule.in_set(AppSet::Solve).run_if(closed_form));
}

/// The workspace atlas: what to map, how, and the latest map.
#[derive(Resource, Debug, Clone)]
pub(crate) struct AtlasView {
    /// Draw the heatmap under the arm.
    pub(crate) on: bool,
    /// Map the driving solver (else [`AtlasView::solver`]).
    pub(crate) follow_driver: bool,
    /// The solver mapped when not following the driver.
    pub(crate) solver: SolverId,
    /// The layer painted.
    pub(crate) layer: Layer,
    /// Cells per side.
    pub(crate) resolution: usize,
    /// The latest finished map.
    pub(crate) latest: Option<Arc<Atlas>>,
    /// Wall time of the latest map, milliseconds.
    pub(crate) compute_ms: f64,
    /// Maps finished so far (the heatmap repaints when it changes).
    pub(crate) generation: u64,
    /// A map is being computed.
    pub(crate) busy: bool,
}

impl Default for AtlasView {
    fn default() -> Self {
        Self {
            on: true,
            follow_driver: true,
            solver: SolverId::Learned(HeadKind::Mse),
            layer: Layer::Miss,
            resolution: 128,
            latest: None,
            compute_ms: 0.0,
            generation: 0,
            busy: false,
        }
    }
}

impl AtlasView {
    /// Cells per side, clamped to what the app draws (16 to 512).
    pub(crate) fn cells_per_side(&self) -> usize {
        self.resolution.clamp(16, 512)
    }

    /// The solver mapped, given the driving pipeline.
    pub(crate) fn mapped(&self, driver: Pipeline) -> SolverId {
        if self.follow_driver { driver.solver } else { self.solver }
    }
}

/// What a map is of: the nominal arm, the solver, cells per side, the silent layer sampled.
type Key = (TwoLinkArm, SolverId, usize, bool);

/// The map being computed, and the model it maps.
#[derive(Resource, Default)]
pub(crate) struct AtlasJob {
    work: Job<Key, Result<(Atlas, f64), String>>,
    /// The mapped head's model the latest map was started with.
    mapped_model: Option<LearnedModel>,
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
        friction: s.frictionloss,
        flex: s.flex,
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
    let solver = view.mapped(driver.0);
    let wants_silent = view.layer == Layer::Silent;
    let key = (nominal.0, solver, view.cells_per_side(), wants_silent);
    match job.work.poll(&key) {
        Some(Ok(Ok((atlas, ms)))) => {
            view.latest = Some(Arc::new(atlas));
            view.compute_ms = ms;
            view.generation += 1;
        }
        Some(Ok(Err(why)) | Err(why)) => warn!("atlas refused: {why}"),
        None => {}
    }
    job.work.want(&key);
    let head_model = solver.head().and_then(|h| models.get(h));
    let new_model = models.is_changed() && head_model != job.mapped_model.as_ref();
    if new_model || (plant.is_changed() && wants_silent) {
        job.work.invalidate();
    }
    if view.on && job.work.due() {
        job.mapped_model = head_model.cloned();
        let cfg = config(&view, &plant);
        let arm = nominal.0;
        // The thread owns copies of the models it needs (snapshots are small).
        let owned: Table<HeadKind, Option<LearnedModel>> = Table::from_fn(|h| models.get(h).cloned());
        job.work.start(key, move || {
            let t = Instant::now();
            let trained = Trained { heads: Table::from_fn(|h| owned[h].as_ref()), ..Trained::default() };
            match compute(&Arm::two_link(arm), solver, trained, &cfg, &|_, _| true) {
                Ok(Some(Map::TwoLink(a))) => Ok((a, t.elapsed().as_secs_f64() * 1e3)),
                Ok(_) => Err(format!("no two-link map of {solver}")),
                Err(e) => Err(e.to_string()),
            }
        });
    }
    let busy = job.work.busy();
    if view.busy != busy {
        view.busy = busy;
    }
}
