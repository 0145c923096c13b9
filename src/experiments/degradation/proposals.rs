//! Every learned head's proposals for one set of (sensed) targets and both elbow modes,
//! computed once with batched inference and shared by every pipeline and setting that asks for
//! the same targets.
//!
//! A learned head's answer depends on the target and, for heads that take one, on the elbow mode
//! of the current pose, nothing else; so the protocols look it up here instead of running the
//! network per pipeline. Each answer goes through the one rule [`crate::LearnedModel::solution`],
//! so it equals [`crate::learned::LearnedSolver`]'s for the same target and mode up to float
//! rounding (the batched and single paths round differently).

use crate::kinematics::{ElbowMode, Point2};
use crate::learned::{HeadKind, PredictScratch};
use crate::lineup::{Lineup, Table};
use crate::solver::Solution;

/// Proposals per head, per elbow mode (`[up, down]`), per target.
#[derive(Debug, Clone, Default)]
pub struct Proposals {
    by_head: Table<HeadKind, [Vec<Solution>; 2]>,
}

fn mode_index(mode: ElbowMode) -> usize {
    match mode {
        ElbowMode::Up => 0,
        ElbowMode::Down => 1,
    }
}

impl Proposals {
    /// Runs every head of `lineup` that has a model over `targets`.
    pub fn new(lineup: &Lineup, targets: &[Point2]) -> Self {
        let mut scratch = PredictScratch::default();
        let mut answers = Vec::with_capacity(targets.len());
        let mut by_head: Table<HeadKind, [Vec<Solution>; 2]> = Table::default();
        for (head, slot) in by_head.iter_mut() {
            let Some(model) = lineup.models[head] else { continue };
            let modes: &[ElbowMode] = if head.takes_mode() { &ElbowMode::BOTH } else { &[ElbowMode::Down] };
            for &mode in modes {
                answers.clear();
                model.predict_batch(targets, mode, &mut scratch, &mut answers);
                slot[mode_index(mode)] = targets.iter().zip(&answers).map(|(&t, a)| model.solution(t, a)).collect();
            }
            if !head.takes_mode() {
                slot[0] = slot[1].clone();
            }
        }
        Self { by_head }
    }

    /// The proposal of `head` for target `i` in `mode`; `None` when the head has no model.
    pub fn get(&self, head: HeadKind, i: usize, mode: ElbowMode) -> Option<Solution> {
        self.by_head[head][mode_index(mode)].get(i).copied()
    }
}
