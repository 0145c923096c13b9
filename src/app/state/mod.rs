//! The resources and messages several plugins share, split by concern: [`arm`] (the nominal arm
//! and the simulated plant), [`view`] (the target and where the pointer is), [`solve`] (the
//! driver and this frame's answers) and [`train`] (models and training). Plugins depend on these
//! modules (and on [`super::format`]) rather than on each other; a resource that one plugin owns
//! and only presentation reads (the atlas view, the live sweep, the shortcuts) lives with that
//! plugin instead.
//!
//! Per-solver and per-head data live in [`elbow::Table`]s keyed by [`elbow::SolverId`] and
//! [`elbow::HeadKind`], so a new head gets its row, model slot, training run and toggle without
//! touching these files.

pub(crate) mod arm;
pub(crate) mod manifold;
pub(crate) mod solve;
pub(crate) mod train;
pub(crate) mod view;

use bevy::prelude::*;

/// Registers every shared resource with its default, and the shared messages (the arm first:
/// the plant and the target are built for the nominal arm).
pub(crate) fn plugin(app: &mut App) {
    app.add_plugins((arm::plugin, view::plugin, solve::plugin, train::plugin, manifold::plugin));
}
