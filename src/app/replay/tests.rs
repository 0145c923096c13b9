//! Headless tests of the replay: a record made by a small catalogued run (on the two-link arm
//! or the rail3 chain), opened in the logic plugins, lands on the recorded tip bit for bit, in
//! the lab of the record's arm.

use super::{KEEP_MOVES, OpenReplay, ReplayView};
use crate::app::logic_plugin;
use crate::app::state::arm::{Lab, PlantSettings};
use crate::app::state::manifold::ChainTraining;
use crate::app::state::train::TrainingParams;
use crate::app::state::view::{Framing, Target};
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use elbow::arm::ArmKind;
use elbow::experiments::degradation::{
    CatalogSink, Channel, ChannelLevels, DegradationConfig, FailureRecord, Finding, OodKind, Protocol, Split,
    degradation_catalogued,
};
use elbow::lineup::{Pipeline, SolverId};
use std::time::{Duration, Instant};

/// The records of a small plant-protocol run with encoder noise swept.
fn records() -> Vec<FailureRecord> {
    let levels = ChannelLevels::only(Channel::Encoder, vec![0.0, 0.05]);
    let cfg = DegradationConfig {
        protocol: Protocol::Plant,
        levels,
        targets: 40,
        train_steps: 200,
        ..DegradationConfig::default()
    };
    let mut out = Vec::new();
    let mut push = |r: &FailureRecord| out.push(r.clone());
    degradation_catalogued(&cfg, Vec::new(), &|_| {}, Some(CatalogSink { cap: 2, sink: &mut push })).expect("runs");
    out
}

/// The records of a small plant-protocol run on the rail3 chain: nets trained a few steps, four
/// held-out targets and two beyond the reach, the baseline setting only.
fn chain_records() -> Vec<FailureRecord> {
    let arm = ArmKind::Rail3.arm();
    let cfg = DegradationConfig {
        protocol: Protocol::Plant,
        levels: ChannelLevels::baseline(),
        targets: 4,
        ood_fraction: 0.5,
        train_steps: 20,
        ..DegradationConfig::on(&arm)
    };
    let mut out = Vec::new();
    let mut push = |r: &FailureRecord| out.push(r.clone());
    degradation_catalogued(&cfg, Vec::new(), &|_| {}, Some(CatalogSink { cap: 2, sink: &mut push })).expect("runs");
    out
}

/// The logic plugins on a fixed 16 ms clock, no training.
fn app() -> App {
    let mut app = App::new();
    app.insert_resource(TrainingParams { autostart: false, ..TrainingParams::default() });
    app.insert_resource(ChainTraining { autostart: false, ..ChainTraining::default() });
    app.insert_resource(PlantSettings::IDEAL);
    app.add_plugins(MinimalPlugins).add_plugins(logic_plugin);
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(16)));
    app
}

/// Opens `record` and runs frames until its re-run is in (fails after two minutes).
fn open(app: &mut App, record: &FailureRecord) {
    app.update();
    app.world_mut().write_message(OpenReplay { record: Box::new(record.clone()), name: "test #0".into() });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        app.update();
        let view = app.world().resource::<ReplayView>();
        assert!(view.error.is_none(), "{:?}", view.error);
        if view.trace.is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "no replay after two minutes");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_replay_opens_paused_on_the_recorded_tip_and_scrubs_and_plays() {
    let records = records();
    let record = records
        .iter()
        .find(|r| r.verdict == Finding::Silent && r.index > 0)
        .expect("a silent miss past the first target");
    let mut app = app();
    open(&mut app, record);
    let view = app.world().resource::<ReplayView>();
    assert!(view.differences.is_empty(), "the re-run reproduces the record: {:?}", view.differences);
    assert_eq!(app.world().resource::<Target>().pos, record.target, "the target is the record's");
    // Paused at the end of the failing move: the real tip where the record says, bit for bit.
    let (mv, tick) = view.current().expect("a sub-step");
    assert_eq!(mv.index, record.index);
    assert_eq!((tick.tip() - record.target).norm().to_bits(), record.happened.error.to_bits());
    assert!(!view.playing);
    let moves_kept = view.trace.as_ref().unwrap().moves.iter().filter(|m| !m.ticks.is_empty()).count();
    assert_eq!(moves_kept, KEEP_MOVES.min(record.index + 1));
    // The camera frames the action: the target with its tolerance circle, the real tip and the
    // sensed target, with a margin, not the whole workspace.
    app.update();
    let view = app.world().resource::<ReplayView>();
    let (mv, tick) = view.current().expect("a sub-step");
    let framing = *app.world().resource::<Framing>();
    let focus = framing.focus.expect("the replay frames its action");
    let tol = record.expected.tolerance;
    for p in [tick.tip(), mv.sensed, mv.target + elbow::Point2::new(tol, tol), mv.target - elbow::Point2::new(tol, tol)]
    {
        assert!(focus.contains(p), "{p:?} in {focus:?}");
    }
    let action = (tick.tip() - mv.target).norm().max((mv.sensed - mv.target).norm()) + tol;
    assert!(focus.size.iter().all(|&s| s <= 3.0 * 2.0 * action), "{focus:?} for {action} m of action");
    assert_eq!(framing.zoom, 1.0);
    // Back to the start of the move, then play: a 16 ms frame advances the sub-steps of 16 ms
    // of plant time (eight of 2 ms).
    let mut view = app.world_mut().resource_mut::<ReplayView>();
    view.at = view.move_start(false);
    let start = view.at;
    view.playing = true;
    app.update();
    let per_frame = (0.016 / elbow::plant::SUBSTEP).floor() as usize;
    assert_eq!(app.world().resource::<ReplayView>().at, start + per_frame);
    app.world_mut().resource_mut::<ReplayView>().step(-3);
    assert_eq!(app.world().resource::<ReplayView>().at, start + per_frame - 3);
    // Zoomed, then closed: the live lab draws again, framed as before, the zoom as framed.
    app.world_mut().resource_mut::<Framing>().zoom_by(3.0);
    app.world_mut().resource_mut::<ReplayView>().close();
    app.update();
    assert!(app.world().resource::<ReplayView>().open.is_none());
    assert_eq!(*app.world().resource::<Framing>(), Framing::default(), "the lab's frame again");
}

#[test]
fn a_record_of_another_arm_is_refused_in_one_sentence() {
    let mut record = records().into_iter().next().expect("a record");
    record.arm = elbow::TwoLinkArm::new(1.0, 0.5).unwrap();
    let mut app = app();
    app.update();
    app.world_mut().write_message(OpenReplay { record: Box::new(record), name: "other #0".into() });
    app.update();
    let view = app.world().resource::<ReplayView>();
    assert!(view.open.is_none());
    let why = view.error.as_deref().expect("said why");
    assert!(why.contains("elbow --replay FILE --index N") && !why.contains('\n'), "{why}");
}

#[test]
fn a_chains_record_opens_on_its_chain_and_scrubs_its_plant_bit_for_bit() {
    let chain = chain_records();
    let rail3 = ArmKind::Rail3.arm();
    // DLS on the second target beyond the reach: it misses and says so, and its replay trains
    // no net.
    let record = chain
        .iter()
        .find(|r| {
            r.pipeline == Pipeline::plain(SolverId::Iterative) && r.split == Split::Ood(OodKind::Beyond) && r.index == 1
        })
        .expect("a DLS record of the second target beyond the reach");
    assert_eq!(record.verdict, Finding::Reported);
    // Opened from the two-link lab: the lab switches to the record's chain, and the replay
    // stays open through its own switch.
    let mut app = app();
    open(&mut app, record);
    assert_eq!(*app.world().resource::<Lab>(), Lab(rail3.clone()), "the lab is the record's chain");
    assert_eq!(app.world().resource::<Target>().pos, record.target, "the target is the record's");
    let view = app.world().resource::<ReplayView>();
    assert!(view.open.is_some());
    assert!(view.differences.is_empty(), "the re-run reproduces the record: {:?}", view.differences);
    // Paused at the end of the failing move: the real chain's tip where the record says, bit for
    // bit, every joint of it drawn (the base on its rail, three links).
    let (mv, tick) = view.current().expect("a sub-step");
    assert_eq!(mv.index, record.index);
    assert_eq!((tick.tip() - record.target).norm().to_bits(), record.happened.error.to_bits());
    assert_eq!(tick.points.len(), rail3.chain.points(&rail3.prior_center()).len());
    assert_eq!((tick.goal.len(), tick.servos.len()), (rail3.coords(), rail3.coords()));
    let moves_kept = view.trace.as_ref().unwrap().moves.iter().filter(|m| !m.ticks.is_empty()).count();
    assert_eq!(moves_kept, 2, "both moves keep their sub-steps");
    // The scrubber moves over the chain's sub-steps: back to the start of the move, the chain is
    // elsewhere; a frame of play advances 16 ms of plant time.
    let end = tick.points.clone();
    let mut view = app.world_mut().resource_mut::<ReplayView>();
    view.at = view.move_start(false);
    let start = view.at;
    assert!(start > 0, "the first move's sub-steps come first");
    assert_ne!(view.current().unwrap().1.points, end, "the chain moves over the failing move");
    view.playing = true;
    app.update();
    let per_frame = (0.016 / elbow::plant::SUBSTEP).floor() as usize;
    assert_eq!(app.world().resource::<ReplayView>().at, start + per_frame);
    // The user's own switch of the lab closes the replay.
    *app.world_mut().resource_mut::<Lab>() = Lab::default();
    app.update();
    assert!(app.world().resource::<ReplayView>().open.is_none(), "closed by the user's switch");
    // A two-link record opened in the chain lab switches back to the two-link lab.
    *app.world_mut().resource_mut::<Lab>() = Lab(rail3);
    app.update();
    let two_link = records().into_iter().find(|r| r.index > 0).expect("a two-link record");
    open(&mut app, &two_link);
    assert_eq!(*app.world().resource::<Lab>(), Lab::default());
    let view = app.world().resource::<ReplayView>();
    assert!(view.open.is_some() && view.differences.is_empty(), "{:?}", view.differences);
    assert_eq!(view.current().unwrap().1.points.len(), 3, "base, elbow and tip");
}
