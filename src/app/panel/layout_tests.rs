//! Headless egui layout tests of the panel's rows that change by themselves while the app runs:
//! the branch line and the feedback head's training row must neither move the controls below
//! them nor widen the panel (a click aimed at a control would land on another).

use super::super::feedback::{self, FeedbackLab, TrainFeedback};
use super::super::state::solve::{BRANCH_MARK_SECS, BranchEvent, BranchLog};
use super::{branch_line, side_panel};
use bevy::ecs::system::InMut;
use bevy::prelude::*;
use bevy_egui::egui;
use elbow::Point2;
use elbow::learned::branch::BranchChange;

/// Runs a few frames of a 1280x720 egui context whose side panel holds a separator (full width,
/// as the app's panel has) and `contents` (enough frames for the panel to settle on its width);
/// returns the panel's rect.
fn settle(ctx: &egui::Context, mut contents: impl FnMut(&mut egui::Ui)) -> egui::Rect {
    let screen = egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(1280.0, 720.0));
    let mut rect = egui::Rect::NOTHING;
    for _ in 0..4 {
        let input = egui::RawInput { screen_rect: Some(screen), ..Default::default() };
        let _ = ctx.run_ui(input, |ui| {
            rect = side_panel()
                .show(ui, |ui| {
                    super::scrolled(ui, |ui| {
                        ui.separator();
                        contents(ui)
                    })
                })
                .response
                .rect;
        });
    }
    rect
}

/// Where a button below the branch line lands, and the panel's rect, for `log` at app time `now`.
fn below_the_branch_line(ctx: &egui::Context, log: &BranchLog, now: f64) -> (egui::Rect, egui::Rect) {
    let mut below = egui::Rect::NOTHING;
    let panel = settle(ctx, |ui| {
        branch_line(ui, log, now, 4.9);
        below = ui.button("a control below").rect;
    });
    (below, panel)
}

#[test]
fn the_branch_line_moves_nothing_below_it() {
    let ctx = egui::Context::default();
    let quiet = BranchLog::default();
    let (below, panel) = below_the_branch_line(&ctx, &quiet, 30.0);
    let reasons = [
        BranchChange::JointLimit.describe(),
        BranchChange::WeightsCrossed { kept: 0.12, taken: 0.88 }.describe(),
        BranchChange::NoCandidate.describe(),
        BranchChange::CandidateOutsideLimits.describe(),
    ];
    for why in reasons {
        let event = BranchEvent { at: Point2::new(1.3, 0.0), when: 29.0, why: why.clone() };
        let fresh = BranchLog { count: 1, latest: Some(event.clone()), ..BranchLog::default() };
        assert!(fresh.marked(30.0).is_some(), "the change is marked");
        assert_eq!(below_the_branch_line(&ctx, &fresh, 30.0), (below, panel), "while marked: {why}");
        // Faded, and held (the branch-flip lesson) long after.
        let later = 29.0 + BRANCH_MARK_SECS + 20.0;
        assert!(fresh.marked(later).is_none(), "it fades");
        assert_eq!(below_the_branch_line(&ctx, &fresh, later), (below, panel), "faded: {why}");
        let held = BranchLog { hold: true, ..fresh };
        assert!(held.marked(later).is_some(), "held");
        assert_eq!(below_the_branch_line(&ctx, &held, later), (below, panel), "held: {why}");
    }
}

/// The feedback head's section alone, as the panel runs it.
fn feedback_section(InMut(ui): InMut<egui::Ui>, lab: ResMut<FeedbackLab>, mut train: MessageWriter<TrainFeedback>) {
    feedback::section(ui, lab.into(), &mut train, true);
}

/// The panel's rect with the feedback head's section in it, its training as `training`, and
/// where a button below the section lands.
fn panel_with_feedback(
    ctx: &egui::Context,
    world: &mut World,
    training: Option<Result<(), String>>,
) -> (egui::Rect, egui::Rect) {
    world.resource_mut::<FeedbackLab>().training = training;
    let mut below = egui::Rect::NOTHING;
    let panel = settle(ctx, |ui| {
        world.run_system_cached_with(feedback_section, ui).expect("the section runs");
        below = ui.button("a control below").rect;
    });
    (panel, below)
}

#[test]
fn training_the_feedback_head_does_not_widen_the_panel() {
    let ctx = egui::Context::default();
    let mut world = World::new();
    world.init_resource::<FeedbackLab>();
    world.init_resource::<Messages<TrainFeedback>>();
    let (idle, below) = panel_with_feedback(&ctx, &mut world, None);
    assert!((idle.width() - super::PANEL_WIDTH).abs() < 1.0, "the panel opens at its default width: {idle:?}");
    let busy = panel_with_feedback(&ctx, &mut world, Some(Ok(())));
    assert_eq!(busy, (idle, below), "starting the training moves the panel's edge or what is below");
    let (failed, _) = panel_with_feedback(&ctx, &mut world, Some(Err("training failed: the plants diverged".into())));
    assert_eq!(failed, idle, "a failure's sentence wraps");
}

/// The panel's width is the panel's, not its rows': a row wider than the panel (a long status
/// that comes and goes) neither widens it nor, once gone, lets it shrink (the panel went from 510
/// to 462 px while the app ran, as its widest row changed).
#[test]
fn the_panel_keeps_its_width_whatever_its_rows() {
    let ctx = egui::Context::default();
    let narrow = |ui: &mut egui::Ui| {
        ui.label("a short row");
    };
    let wide = |ui: &mut egui::Ui| {
        ui.horizontal(|ui| {
            ui.add_sized([900.0, 20.0], egui::Label::new("a row wider than the panel"));
        });
    };
    let first = settle(&ctx, narrow);
    assert!((first.width() - super::PANEL_WIDTH).abs() < 1.0, "{first:?}");
    assert_eq!(settle(&ctx, wide), first, "a wide row widens the panel");
    assert_eq!(settle(&ctx, narrow), first, "the panel moves once the wide row is gone");
}

/// A lesson whose knob is in the collapsed reality gap opens that section as it opens (friction
/// and flex opened on a closed section, their knob out of sight), once: the user may close it.
#[test]
fn a_lesson_opens_the_section_its_knob_is_in() {
    use super::opens_the_gap;
    use crate::app::lessons::ActiveLesson;
    use elbow::lessons::Lesson;
    let friction = ActiveLesson(Some(Lesson::Friction));
    assert!(opens_the_gap(None, friction), "the app opened on the friction lesson");
    assert!(opens_the_gap(Some(ActiveLesson(None)), friction), "the friction lesson was chosen");
    assert!(!opens_the_gap(Some(friction), friction), "already open: the user may close the section");
    assert!(opens_the_gap(Some(friction), ActiveLesson(Some(Lesson::Flex))));
    assert!(!opens_the_gap(Some(ActiveLesson(None)), ActiveLesson(Some(Lesson::Noise))), "noise's knob is above it");
}
