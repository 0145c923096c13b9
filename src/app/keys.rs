//! Keyboard shortcuts for the live toggles ([`SHORTCUTS`]): pick a learned head, toggle the
//! envelope and the atlas, step through atlas layers, pause training. Keys typed into an egui
//! field stay with egui.

use super::AppSet;
use super::atlas::AtlasView;
use super::state::arm::two_link_lab;
use super::state::solve::Driver;
use super::state::train::{RunState, TrainCommand, Training};
use bevy::prelude::*;
use bevy_egui::input::EguiWantsInput;
use elbow::atlas::Layer;
use elbow::{HeadKind, SolverId};

/// Registers the shortcut systems: the two-link lab's, and the help overlay's in every lab.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Help>().add_systems(Update, (keys.run_if(two_link_lab), help).in_set(AppSet::Input));
}

/// Whether the overlay listing every key and mouse action is shown (`?` or F1 toggles it,
/// Escape closes it).
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Help(pub(crate) bool);

/// The keys of the help overlay itself, with what they do.
pub(crate) const HELP_KEYS: [(&str, &str); 2] = [("? or F1", "this list on/off"), ("Esc", "close this list")];

/// Toggles the help overlay.
fn help(input: Option<Res<ButtonInput<KeyCode>>>, egui: Option<Res<EguiWantsInput>>, mut help: ResMut<Help>) {
    let Some(input) = input else { return };
    if egui.is_some_and(|e| e.wants_any_keyboard_input()) {
        return;
    }
    if input.any_just_pressed([KeyCode::Slash, KeyCode::F1]) {
        help.0 = !help.0;
    } else if input.just_pressed(KeyCode::Escape) {
        help.0 = false;
    }
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

/// What a keyboard shortcut does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shortcut {
    /// This learned head drives the plant.
    Head(HeadKind),
    /// The safety envelope on or off.
    Envelope,
    /// The atlas on or off.
    Atlas,
    /// The next atlas layer.
    Layer,
    /// Pause training if a head is running, else start or resume it.
    Training,
}

/// The number keys, `1` to `9`: the n-th head of [`HeadKind::ALL`] (the head registry) is driven
/// by the n-th (on a chain, the n-th driver).
pub(crate) const DIGITS: [(KeyCode, &str); 9] = [
    (KeyCode::Digit1, "1"),
    (KeyCode::Digit2, "2"),
    (KeyCode::Digit3, "3"),
    (KeyCode::Digit4, "4"),
    (KeyCode::Digit5, "5"),
    (KeyCode::Digit6, "6"),
    (KeyCode::Digit7, "7"),
    (KeyCode::Digit8, "8"),
    (KeyCode::Digit9, "9"),
];

/// The shortcuts that are not heads.
const TOGGLES: [(KeyCode, &str, Shortcut); 4] = [
    (KeyCode::KeyE, "E", Shortcut::Envelope),
    (KeyCode::KeyA, "A", Shortcut::Atlas),
    (KeyCode::KeyL, "L", Shortcut::Layer),
    (KeyCode::Space, "Space", Shortcut::Training),
];

/// Every shortcut with its key and what it does, for the panel and the README: a number key per
/// head of the registry, in its order, then the toggles.
pub(crate) const SHORTCUTS: [(KeyCode, &str, Shortcut); HeadKind::COUNT + TOGGLES.len()] = {
    assert!(HeadKind::COUNT <= DIGITS.len(), "more heads than number keys");
    let mut all = [TOGGLES[0]; HeadKind::COUNT + TOGGLES.len()];
    let mut i = 0;
    while i < HeadKind::COUNT {
        all[i] = (DIGITS[i].0, DIGITS[i].1, Shortcut::Head(HeadKind::ALL[i]));
        i += 1;
    }
    let mut t = 0;
    while t < TOGGLES.len() {
        all[HeadKind::COUNT + t] = TOGGLES[t];
        t += 1;
    }
    all
};

impl Shortcut {
    /// What the shortcut does, in a few words.
    pub(crate) fn describe(self) -> String {
        match self {
            Shortcut::Head(h) => format!("drive with {}", h.spec().short),
            Shortcut::Envelope => "safety envelope on/off".into(),
            Shortcut::Atlas => "atlas on/off".into(),
            Shortcut::Layer => "next atlas layer".into(),
            Shortcut::Training => "pause training, or start/resume it".into(),
        }
    }
}
