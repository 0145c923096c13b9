//! Keyboard shortcuts on a chain ([`shortcuts`]): a number key per driver of the arm's methods,
//! in the registry's order, **A** the atlas on/off, **L** its next layer, **Space** stops
//! training when a net is training and otherwise trains every net afresh. Keys typed into an egui
//! field stay with egui.

use super::super::AppSet;
use super::super::keys::DIGITS;
use super::super::state::arm::{Lab, chain_lab};
use super::atlas::ChainAtlasView;
use super::state::{ChainTrainCommand, ChainTraining, ChainView, RunPhase, drives, method_label};
use bevy::prelude::*;
use bevy_egui::input::EguiWantsInput;
use elbow::atlas::chain::ChainLayer;
use elbow::chain::{ChainArm, Method};

/// Registers the chain's shortcut system.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, keys.in_set(AppSet::Input).run_if(chain_lab));
}

/// What a chain shortcut does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChainShortcut {
    /// This method drives the chain.
    Driver(Method),
    /// The atlas on or off.
    Atlas,
    /// The atlas's next layer.
    Layer,
    /// Stop training if a net is training, else train every net afresh.
    Training,
}

impl ChainShortcut {
    /// What the shortcut does, in a few words.
    pub(crate) fn describe(self) -> String {
        match self {
            ChainShortcut::Driver(m) => format!("drive with {}", method_label(m)),
            ChainShortcut::Atlas => "atlas on/off".into(),
            ChainShortcut::Layer => "next atlas layer".into(),
            ChainShortcut::Training => "stop training, or train again".into(),
        }
    }
}

/// Every shortcut on `arm` with its key: a number key per driver, then the toggles.
pub(crate) fn shortcuts(arm: &ChainArm) -> Vec<(KeyCode, &'static str, ChainShortcut)> {
    let drivers = arm.methods().iter().copied().filter(|&m| drives(m));
    let mut out: Vec<_> =
        DIGITS.iter().zip(drivers).map(|(&(k, name), m)| (k, name, ChainShortcut::Driver(m))).collect();
    out.extend([
        (KeyCode::KeyA, "A", ChainShortcut::Atlas),
        (KeyCode::KeyL, "L", ChainShortcut::Layer),
        (KeyCode::Space, "Space", ChainShortcut::Training),
    ]);
    out
}

/// Applies the shortcuts pressed this frame.
fn keys(
    input: Option<Res<ButtonInput<KeyCode>>>,
    egui: Option<Res<EguiWantsInput>>,
    lab: Res<Lab>,
    mut view: ResMut<ChainView>,
    mut atlas: ResMut<ChainAtlasView>,
    training: Res<ChainTraining>,
    mut train: MessageWriter<ChainTrainCommand>,
) {
    let (Some(input), Some(arm)) = (input, lab.chain()) else { return };
    if egui.is_some_and(|e| e.wants_any_keyboard_input()) {
        return;
    }
    for (key, _, shortcut) in shortcuts(arm) {
        if !input.just_pressed(key) {
            continue;
        }
        match shortcut {
            ChainShortcut::Driver(m) => view.driver = m,
            ChainShortcut::Atlas => atlas.on = !atlas.on,
            ChainShortcut::Layer => {
                let i = ChainLayer::ALL.iter().position(|&l| l == atlas.layer).unwrap_or(0);
                atlas.layer = ChainLayer::ALL[(i + 1) % ChainLayer::ALL.len()];
            }
            ChainShortcut::Training => {
                let running = training.runs.iter().any(|r| r.state == RunPhase::Running);
                train.write(if running { ChainTrainCommand::Stop } else { ChainTrainCommand::Start });
            }
        }
    }
}
