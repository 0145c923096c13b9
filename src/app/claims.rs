//! The claims board: every claim of the lab with its verdict for the scene on screen, computed
//! off the frame by the same experiment and verdict code as `elbow experiment degradation`.
//!
//! The scene becomes a degradation run ([`config`]): each plant knob that is on (encoder noise,
//! backlash, friction, flex, latency, the camera's noise, offset and frame period, the model
//! mismatch) is a channel swept from 0 to its slider's value, all of them together are the
//! combined channel, and beyond-reach targets are the out-of-distribution set. The board reruns
//! when a knob moves and, while the heads train, at most every [`MODEL_REFRESH_SECS`].

use super::AppSet;
use super::job::Job;
use super::state::arm::{Lab, PlantSettings};
use super::state::manifold::ChainNets;
use super::state::train::Models;
use super::sweep::{Learners, MODEL_REFRESH_SECS, SweepChannel};
use bevy::prelude::*;
use elbow::Mismatch;
use elbow::arm::Arm;
use elbow::experiments::degradation::{Channel, ChannelLevels, Claim, DegradationConfig, OodKind, Protocol};
use std::sync::Arc;
use std::time::Duration;

/// Held-out targets per setting of the board's run: every move is a simulated second or two of
/// the plant's dynamics, so 100 per setting keep the board within seconds (rates to about ±5 %).
pub(crate) const BOARD_TARGETS: usize = 100;

/// Registers the board and its job.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<ClaimsBoard>().init_resource::<ClaimsJob>().add_systems(Update, schedule.in_set(AppSet::Solve));
}

/// The latest verdicts and what they are of.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct ClaimsBoard {
    /// The claims with their verdicts, and the scene they were computed for.
    pub(crate) latest: Option<(Arc<Vec<Claim>>, String)>,
    /// Where the run stands in words ([`super::job::Job::status`]).
    pub(crate) status: String,
    /// A run is in progress.
    pub(crate) busy: bool,
    /// Why no run can start yet (a head without a model), or why the last one failed.
    pub(crate) note: Option<String>,
}

/// What the verdicts are of: the arm and the plant's knobs.
type Key = (Arm, PlantSettings);

/// A finished run: the claims and the scene in words.
type Judged = (Vec<Claim>, String);

/// The run in progress.
#[derive(Resource, Default)]
pub(crate) struct ClaimsJob {
    work: Job<Key, Result<Judged, String>>,
    /// Models changed: rerun when the refresh interval has passed.
    models_stale: bool,
}

/// The degradation run that judges the claims for the scene `plant` on `arm`, and the scene in
/// words (the knobs that are on).
pub(crate) fn config(plant: &PlantSettings, arm: &Arm) -> (DegradationConfig, String) {
    let mut levels = ChannelLevels::baseline();
    let mut on = Vec::new();
    for channel in SweepChannel::all() {
        // The camera's frame period is always some value while it runs; it is a knob like the
        // others, judged from a frame every tick to the slider's rate.
        let Some(level) = channel.current(plant) else { continue };
        if level > 0.0 {
            *levels.of_mut(channel.channel()) = vec![0.0, level];
            on.push(format!("{} {}", channel.channel().key(), short(level)));
        }
    }
    let mismatch = plant.mismatch();
    if mismatch != Mismatch::NONE {
        levels[Channel::Mismatch] = vec![0.0, 1.0];
        on.push("mismatch".to_string());
    }
    if on.len() > 1 {
        levels[Channel::Combined] = vec![0.0, 1.0];
    }
    let cfg = DegradationConfig {
        protocol: Protocol::Plant,
        levels,
        mismatch,
        ood: vec![OodKind::Beyond],
        targets: BOARD_TARGETS,
        ..DegradationConfig::on(arm)
    };
    let scene = if on.is_empty() { "the perfect arm".to_string() } else { on.join(", ") };
    (cfg, scene)
}

/// A slider value in a few digits.
fn short(x: f64) -> String {
    format!("{}", (x * 1e4).round() / 1e4)
}

/// Collects a finished run and starts a new one when the knobs or the models changed.
fn schedule(
    mut job: ResMut<ClaimsJob>,
    mut board: ResMut<ClaimsBoard>,
    models: Res<Models>,
    nets: Res<ChainNets>,
    plant: Res<PlantSettings>,
    lab: Res<Lab>,
) {
    let key = (lab.arm().clone(), plant.sanitized());
    match job.work.poll(&key) {
        Some(Ok(Ok((claims, scene)))) => {
            board.latest = Some((Arc::new(claims), scene));
            board.note = None;
        }
        Some(Ok(Err(why)) | Err(why)) => board.note = Some(why),
        None => {}
    }
    job.work.want(&key);
    let ClaimsJob { work, models_stale } = &mut *job;
    let changed = models.is_changed() || nets.is_changed();
    work.refresh_for_models(models_stale, changed, Duration::from_secs_f64(MODEL_REFRESH_SECS));
    if job.work.due() {
        match Learners::of(&lab, &models, &nets) {
            Err(why) => board.note = Some(why),
            Ok(learners) => {
                board.note = None;
                job.models_stale = false;
                let (cfg, scene) = config(&plant, lab.arm());
                let meter = job.work.meter();
                job.work.start(key, move || Ok((learners.run(&cfg, &meter)?.claims, scene)));
            }
        }
    }
    let busy = job.work.busy();
    if board.busy != busy {
        board.busy = busy;
    }
    let status = job.work.status();
    if board.status != status {
        board.status = status;
    }
}
