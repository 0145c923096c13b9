//! The chain's atlas under the arm, computed off the frame: the workspace coloured by one
//! layer of [`elbow::atlas::chain`] (the MSE answer's tip miss, the MDN's re-simulation error,
//! the exact posterior's spread, the hybrid's success). While the nets train, the map follows
//! their snapshots at most every few seconds, so it never takes both cores from training.

use super::AppSet;
use super::job::Job;
use super::state::arm::{Lab, manifold};
use super::state::manifold::ChainNets;
use bevy::prelude::*;
use elbow::atlas::chain::{ChainAtlas, ChainLayer};
use elbow::atlas::{AtlasConfig, Map, Trained, compute};
use elbow::chain::nets::ChainNet;
use elbow::chain::{Nets, Seeds, solve::net_needed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Registers the atlas view and the system that starts and collects its maps.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<ChainAtlasView>()
        .init_resource::<ChainAtlasJob>()
        .add_systems(Update, schedule.in_set(AppSet::Solve).run_if(manifold));
}

/// Least time between two maps that differ only by newer snapshots of the nets.
const FOLLOW_EVERY: Duration = Duration::from_secs(5);

/// The chain atlas as the panel and the heatmap show it.
#[derive(Resource, Debug, Clone)]
pub(crate) struct ChainAtlasView {
    /// Shown and computed.
    pub(crate) on: bool,
    /// What the cells show.
    pub(crate) layer: ChainLayer,
    /// The latest map (for the current arm and layer, or the one before while it is computed).
    pub(crate) latest: Option<Arc<ChainAtlas>>,
    /// Bumped with every new map.
    pub(crate) generation: u64,
    /// A map is being computed.
    pub(crate) busy: bool,
    /// Why there is no map (a net not trained yet, a failure).
    pub(crate) note: Option<String>,
    /// Milliseconds the latest map took.
    pub(crate) compute_ms: f64,
}

impl Default for ChainAtlasView {
    fn default() -> Self {
        Self {
            on: false,
            layer: ChainLayer::ExactSpread,
            latest: None,
            generation: 0,
            busy: false,
            note: None,
            compute_ms: f64::NAN,
        }
    }
}

/// What a map is computed for: the arm, the layer and the nets' snapshot (0 for a layer that
/// uses no net).
#[derive(Debug, Clone, PartialEq)]
struct AtlasKey {
    arm: String,
    layer: ChainLayer,
    nets: u64,
}

/// The background job of the chain atlas.
#[derive(Resource, Default)]
struct ChainAtlasJob {
    job: Job<AtlasKey, Result<ChainAtlas, String>>,
    key: Option<AtlasKey>,
    started: Option<Instant>,
}

/// Starts a map when the arm, the layer or (now and then) the nets changed, and collects it.
fn schedule(lab: Res<Lab>, nets: Res<ChainNets>, mut view: ResMut<ChainAtlasView>, mut job: ResMut<ChainAtlasJob>) {
    let Some(arm) = lab.chain() else { return };
    if !view.on {
        view.busy = job.job.busy();
        return;
    }
    let layer = view.layer;
    let kind = net_needed(layer.method(), Seeds::Mdn);
    let net: Option<ChainNet> = kind.and_then(|k| nets.get(k).cloned());
    if kind.is_some() && net.is_none() {
        view.note = Some(format!("waits for the {} net to train", layer.method()));
        return;
    }
    let mut key = AtlasKey { arm: arm.name.clone(), layer, nets: if kind.is_some() { nets.generation } else { 0 } };
    // A newer snapshot alone waits for its turn.
    if let Some(old) = &job.key
        && old.arm == key.arm
        && old.layer == key.layer
        && job.started.is_some_and(|t| t.elapsed() < FOLLOW_EVERY)
    {
        key.nets = old.nets;
    }
    if let Some(result) = job.job.poll(&key) {
        match result.and_then(|r| r) {
            Ok(map) => {
                view.compute_ms = job.started.map_or(f64::NAN, |t| t.elapsed().as_secs_f64() * 1e3);
                view.latest = Some(Arc::new(map));
                view.generation += 1;
                view.note = None;
            }
            Err(e) => view.note = Some(e),
        }
    }
    job.job.want(&key);
    if job.job.due() {
        let (arm, cfg) = (arm.clone(), AtlasConfig::for_arm(arm));
        job.key = Some(key.clone());
        job.started = Some(Instant::now());
        job.job.start(key, move || {
            let trained = Trained { nets: Nets::of(net.as_ref()), ..Trained::default() };
            match compute(&arm, layer.method(), trained, &cfg, &|_, _| true) {
                Ok(Some(Map::Chain(c))) => Ok(c),
                Ok(_) => Err(format!("no chain map of {layer}")),
                Err(e) => Err(e.to_string()),
            }
        });
    }
    view.busy = job.job.busy();
}
