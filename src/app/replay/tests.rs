//! Headless tests of the replay: a record made by a small catalogued run, opened in the logic
//! plugins, lands on the recorded tip bit for bit.

use super::{KEEP_MOVES, OpenReplay, ReplayView};
use crate::app::logic_plugin;
use crate::app::state::arm::PlantSettings;
use crate::app::state::train::TrainingParams;
use crate::app::state::view::Target;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use elbow::experiments::degradation::{
    CatalogSink, Channel, ChannelLevels, DegradationConfig, FailureRecord, Finding, Protocol, degradation_catalogued,
};
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

/// The logic plugins on a fixed 16 ms clock, no training.
fn app() -> App {
    let mut app = App::new();
    app.insert_resource(TrainingParams { autostart: false, ..TrainingParams::default() });
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
    assert_eq!((tick.joints[2] - record.target).norm().to_bits(), record.happened.error.to_bits());
    assert!(!view.playing);
    let moves_kept = view.trace.as_ref().unwrap().moves.iter().filter(|m| !m.ticks.is_empty()).count();
    assert_eq!(moves_kept, KEEP_MOVES.min(record.index + 1));
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
    // Closed, the live lab draws again.
    app.world_mut().resource_mut::<ReplayView>().close();
    assert!(app.world().resource::<ReplayView>().open.is_none());
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
    // A chain's record names the two-link arm as its configuration's, and the chain it ran on:
    // refused, not replayed on the two-link arm.
    let mut record = records().into_iter().next().expect("a record");
    record.config.chain = Some(elbow::arm::ArmKind::Rail3.arm());
    let mut lab = self::app();
    lab.update();
    lab.world_mut().write_message(OpenReplay { record: Box::new(record), name: "chain #0".into() });
    lab.update();
    let view = lab.world().resource::<ReplayView>();
    assert!(view.open.is_none());
    let why = view.error.as_deref().expect("said why");
    assert!(why.contains("a record of rail3") && why.contains("elbow replay FILE --index N"), "{why}");
}
