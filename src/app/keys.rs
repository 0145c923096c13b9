//! Keyboard shortcuts for the live toggles ([`SHORTCUTS`]): pick a learned head, toggle the
//! envelope and the atlas, step through atlas layers, pause training. Keys typed into an egui
//! field stay with egui.

use super::AppSet;
use super::state::{AtlasView, Driver, RunState, SHORTCUTS, Shortcut, TrainCommand, Training};
use bevy::prelude::*;
use bevy_egui::input::EguiWantsInput;
use elbow::atlas::Layer;
use elbow::{HeadKind, SolverId};

/// Registers the shortcut system.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, keys.in_set(AppSet::Input));
}

/// Applies the shortcuts pressed this frame.
fn keys(
    input: Option<Res<ButtonInput<KeyCode>>>,
    egui: Option<Res<EguiWantsInput>>,
    mut driver: ResMut<Driver>,
    mut view: ResMut<AtlasView>,
    training: Res<Training>,
    mut train: MessageWriter<TrainCommand>,
) {
    let Some(input) = input else { return };
    if egui.is_some_and(|e| e.wants_any_keyboard_input()) {
        return;
    }
    for (key, _, shortcut) in SHORTCUTS {
        if input.just_pressed(key) {
            apply(shortcut, &mut driver, &mut view, &training, &mut train);
        }
    }
}

/// Does what `shortcut` says.
fn apply(
    shortcut: Shortcut,
    driver: &mut Driver,
    view: &mut AtlasView,
    training: &Training,
    train: &mut MessageWriter<TrainCommand>,
) {
    match shortcut {
        Shortcut::Head(head) => driver.0.solver = SolverId::Learned(head),
        Shortcut::Envelope => driver.0.envelope = !driver.0.envelope,
        Shortcut::Atlas => view.on = !view.on,
        Shortcut::Layer => {
            let i = Layer::ALL.iter().position(|&l| l == view.layer).unwrap_or(0);
            view.layer = Layer::ALL[(i + 1) % Layer::ALL.len()];
        }
        Shortcut::Training => {
            let running = HeadKind::ALL.iter().any(|&h| training.head(h).state == RunState::Running);
            train.write(if running { TrainCommand::Pause } else { TrainCommand::Start });
        }
    }
}
