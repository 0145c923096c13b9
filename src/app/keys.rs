//! Keyboard shortcuts, one table for every lab ([`shortcuts`]): a number key per driver of the
//! lab in force (the two-link heads, or the chain's methods), the envelope where there is one,
//! the atlas and its layers, training. Keys typed into an egui field stay with egui.

use super::AppSet;
use super::atlas::AtlasView;
use super::manifold_atlas::ChainAtlasView;
use super::state::arm::Lab;
use super::state::manifold::{ChainTrainCommand, ChainTraining, ChainView, drives, method_label};
use super::state::solve::Driver;
use super::state::train::{RunState, TrainCommand, Training};
use bevy::prelude::*;
use bevy_egui::input::EguiWantsInput;
use elbow::atlas::Layer;
use elbow::atlas::chain::ChainLayer;
use elbow::{HeadKind, SolverId};

/// Registers the shortcut system and the help overlay's, in every lab.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Help>().add_systems(Update, (keys, help).in_set(AppSet::Input));
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

/// The chain lab's state the shortcuts change.
#[derive(bevy::ecs::system::SystemParam)]
struct ChainKeys<'w> {
    view: ResMut<'w, ChainView>,
    atlas: ResMut<'w, ChainAtlasView>,
    training: Res<'w, ChainTraining>,
    train: MessageWriter<'w, ChainTrainCommand>,
}

/// The two-link lab's state the shortcuts change.
#[derive(bevy::ecs::system::SystemParam)]
struct TwoLinkKeys<'w> {
    driver: ResMut<'w, Driver>,
    atlas: ResMut<'w, AtlasView>,
    training: Res<'w, Training>,
    train: MessageWriter<'w, TrainCommand>,
}

/// Applies the shortcuts pressed this frame, on the lab open.
fn keys(
    input: Option<Res<ButtonInput<KeyCode>>>,
    egui: Option<Res<EguiWantsInput>>,
    lab: Res<Lab>,
    mut two: TwoLinkKeys,
    mut chain: ChainKeys,
) {
    let Some(input) = input else { return };
    if egui.is_some_and(|e| e.wants_any_keyboard_input()) {
        return;
    }
    for (key, _, shortcut) in shortcuts(&lab) {
        if input.just_pressed(key) {
            apply(shortcut, &mut two, &mut chain);
        }
    }
}

/// Does what `shortcut` says, on the lab it belongs to.
fn apply(shortcut: Shortcut, two: &mut TwoLinkKeys, chain: &mut ChainKeys) {
    match shortcut {
        Shortcut::Head(head) => two.driver.0.solver = SolverId::Learned(head),
        Shortcut::Method(m) => chain.view.driver = m,
        Shortcut::Envelope => two.driver.0.envelope = !two.driver.0.envelope,
        Shortcut::Atlas(Family::TwoLink) => two.atlas.on = !two.atlas.on,
        Shortcut::Atlas(Family::Chain) => chain.atlas.on = !chain.atlas.on,
        Shortcut::Layer(Family::TwoLink) => {
            let i = Layer::ALL.iter().position(|&l| l == two.atlas.layer).unwrap_or(0);
            two.atlas.layer = Layer::ALL[(i + 1) % Layer::ALL.len()];
        }
        Shortcut::Layer(Family::Chain) => {
            let i = ChainLayer::ALL.iter().position(|&l| l == chain.atlas.layer).unwrap_or(0);
            chain.atlas.layer = ChainLayer::ALL[(i + 1) % ChainLayer::ALL.len()];
        }
        Shortcut::Training(Family::TwoLink) => {
            let running = HeadKind::ALL.iter().any(|&h| two.training.head(h).state == RunState::Running);
            two.train.write(if running { TrainCommand::Pause } else { TrainCommand::Start });
        }
        Shortcut::Training(Family::Chain) => {
            let running = chain.training.runs.iter().any(|r| r.state == RunState::Running);
            chain.train.write(if running { ChainTrainCommand::Stop } else { ChainTrainCommand::Start });
        }
    }
}

/// Which lab's state a shortcut acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// The two-link lab's.
    TwoLink,
    /// The chain lab's.
    Chain,
}

/// What a keyboard shortcut does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shortcut {
    /// This learned head drives the two-link plant.
    Head(HeadKind),
    /// This method drives the chain.
    Method(SolverId),
    /// The safety envelope on or off (the two-link lab).
    Envelope,
    /// The atlas on or off.
    Atlas(Family),
    /// The next atlas layer.
    Layer(Family),
    /// Two-link: pause training if a head is running, else start or resume it. Chain: stop
    /// training if a net is training, else train every net afresh.
    Training(Family),
}

/// The number keys, `1` to `9`: the n-th head of [`HeadKind::ALL`] (the head registry) is driven
/// by the n-th (on a chain, the n-th driver of the arm's methods).
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

/// The one shortcut table: every shortcut of `lab` with its key, for the keys, the panel, the
/// help overlay and `docs/0-the-app.md`. A number key per driver the lab has (the two-link heads of the
/// registry, or the chain's drivers among its arm's methods, in registry order), then the
/// envelope where the lab has one, the atlas, its layers and training.
pub(crate) fn shortcuts(lab: &Lab) -> Vec<(KeyCode, &'static str, Shortcut)> {
    let (drivers, family): (Vec<Shortcut>, Family) = match lab.chain() {
        None => (HeadKind::ALL.into_iter().map(Shortcut::Head).collect(), Family::TwoLink),
        Some(arm) => {
            (arm.methods().iter().copied().filter(|&m| drives(m)).map(Shortcut::Method).collect(), Family::Chain)
        }
    };
    let mut out: Vec<_> = DIGITS.iter().zip(drivers).map(|(&(k, name), s)| (k, name, s)).collect();
    if family == Family::TwoLink {
        out.push((KeyCode::KeyE, "E", Shortcut::Envelope));
    }
    out.extend([
        (KeyCode::KeyA, "A", Shortcut::Atlas(family)),
        (KeyCode::KeyL, "L", Shortcut::Layer(family)),
        (KeyCode::Space, "Space", Shortcut::Training(family)),
    ]);
    out
}

impl Shortcut {
    /// What the shortcut does, in a few words.
    pub(crate) fn describe(self) -> String {
        match self {
            Shortcut::Head(h) => format!("drive with {}", h.spec().short),
            Shortcut::Method(m) => format!("drive with {}", method_label(m)),
            Shortcut::Envelope => "safety envelope on/off".into(),
            Shortcut::Atlas(_) => "atlas on/off".into(),
            Shortcut::Layer(_) => "next atlas layer".into(),
            Shortcut::Training(Family::TwoLink) => "pause training, or start/resume it".into(),
            Shortcut::Training(Family::Chain) => "stop training, or train again".into(),
        }
    }
}
