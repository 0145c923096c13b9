//! The chain lab: a redundant planar chain (`3r`, `rail3` or one from lengths), where a target
//! has a whole manifold of answers and a learned inverse map can earn its place.
//!
//! What the user sees: the fan of the MDN's answers beside the exact posterior's fan, the
//! squared-error net's one answer (the posterior mean: collapsed into the middle of the fan on
//! rail3, missing on 3r), a few DLS and hybrid answers, and the simulated chain following the
//! driver, walked along the solution manifold by the self-motion slider. The nets train off the
//! frame and the exact fan is drawn off the frame.
//!
//! One plugin per concern: [`state`] (resources), [`lab`] (switching arms), [`train`]
//! (background training), [`answers`] (each frame's answers and the chain's motion), [`draw`]
//! (gizmos), [`atlas`] (the workspace map, off the frame) and [`panel`] (the side panel's chain sections, called by the app's panel). Its
//! systems run only while a chain lab is open ([`super::state::arm::manifold`]); the two-link
//! systems only while it is not.

pub(crate) mod answers;
pub(crate) mod atlas;
pub(crate) mod draw;
pub(crate) mod lab;
pub(crate) mod panel;
pub(crate) mod state;
pub(crate) mod train;

use bevy::prelude::*;

/// The chain lab's logic: resources, switching, training, answers and motion (no window needed).
pub(crate) fn logic_plugin(app: &mut App) {
    app.add_plugins((state::plugin, lab::plugin, train::plugin, answers::plugin, atlas::plugin));
}

#[cfg(test)]
mod tests;
