//! Headless tests of the feedback head driving: on a mismatched plant its later moves beat its
//! first, and the calibrating baseline is judged beside it on the same plant.

use super::FeedbackLab;
use crate::app::logic_plugin;
use crate::app::state::arm::PlantSettings;
use crate::app::state::train::TrainingParams;
use crate::app::state::view::Target;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use elbow::experiments::feedback::{FeedbackConfig, train_feedback_head};
use elbow::experiments::plants::Ranges;
use elbow::plant::Camera;
use elbow::{Point2, TrainConfig, TwoLinkArm};
use std::time::Duration;

#[test]
#[allow(clippy::print_stderr, reason = "the per-move errors are worth seeing when it fails")]
fn on_a_mismatched_plant_the_feedback_heads_later_moves_beat_its_first() {
    let arm = TwoLinkArm::default();
    let tc = TrainConfig { arm, steps: 2_000, ..TrainConfig::default() };
    let fc = FeedbackConfig { episodes: 400, ..FeedbackConfig::default() };
    let (head, _, _) =
        train_feedback_head(&tc, &fc, &Ranges::TRAINING, Camera::default(), &mut || true).expect("trains");
    let targets = [(1.2, 0.6), (0.8, 1.1), (1.4, -0.3), (0.6, 0.9), (1.0, -0.8), (1.5, 0.4), (0.9, 0.2), (1.3, 0.9)];
    // With a latency longer than a frame the command is in flight every frame: a move still
    // ends once its goal has reached the servos and the arm has settled.
    let late = drive(&head, 200.0, &targets);
    let moves = &late.world().resource::<FeedbackLab>().moves;
    assert_eq!(moves.len(), targets.len(), "every move ends under 200 ms of latency");
    let app = drive(&head, 0.0, &targets);
    let moves = &app.world().resource::<FeedbackLab>().moves;
    eprintln!("{moves:?}");
    assert_eq!(moves.len(), targets.len());
    assert_eq!(app.world().resource::<FeedbackLab>().history.seen().len(), 2, "the window holds the last two moves");
    let later: f64 = moves[2..].iter().map(|m| m.head).sum::<f64>() / (moves.len() - 2) as f64;
    assert!(
        later < 0.6 * moves[0].head,
        "first move {:.1} mm, later moves {:.1} mm on average",
        moves[0].head * 1e3,
        later * 1e3
    );
    // The calibrated closed form is judged on the same plant: from its second move on it knows
    // the arm too.
    assert!(moves.iter().all(|m| m.calibrated.is_finite()));
    let calibrated_later: f64 = moves[2..].iter().map(|m| m.calibrated).sum::<f64>() / (moves.len() - 2) as f64;
    assert!(calibrated_later < 0.5 * moves[0].calibrated);
}

/// The app after the head drove `targets` on the mismatched plant with `latency_ms` of
/// latency (its moves in the [`FeedbackLab`]).
fn drive(head: &elbow::experiments::feedback::FeedbackHead, latency_ms: f64, targets: &[(f64, f64)]) -> App {
    let mut app = App::new();
    app.insert_resource(TrainingParams { autostart: false, ..TrainingParams::default() });
    // One and a half times the default gap, inside the ranges the head was trained on.
    app.insert_resource(PlantSettings {
        length_error: [0.09, -0.06],
        joint_offset: [0.045, -0.075],
        camera_noise: 0.5,
        latency_ms,
        ..PlantSettings::IDEAL
    });
    app.add_plugins(MinimalPlugins).add_plugins(logic_plugin);
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(16)));
    app.update();
    {
        let mut lab = app.world_mut().resource_mut::<FeedbackLab>();
        lab.head = Some(head.clone());
        lab.drives = true;
        lab.restart();
    }
    for (k, &(x, y)) in targets.iter().enumerate() {
        app.world_mut().resource_mut::<Target>().pos = Point2::new(x, y);
        let mut frames = 0;
        while app.world().resource::<FeedbackLab>().moves.len() <= k {
            app.update();
            frames += 1;
            assert!(frames < 1_000, "move {k} never ended (latency {latency_ms} ms)");
        }
    }
    app
}
