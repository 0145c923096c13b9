//! The one table of random streams: every seeded generator of the crate is [`rng`] of the run's
//! seed, a named [`Stream`] and an index (a target, a row, a setting).
//!
//! The three words and the stream's slot are laid side by side in ChaCha's 256-bit key, so two
//! different `(seed, stream, index)` give two different keys, hence independent sequences: no salt
//! can collide with another, no index can spill into a neighbour's bits, and no seed's streams
//! overlap another seed's (the old `seed * C + (index << 8 | purpose)` did all three).
//!
//! This module is a leaf: it names nothing else in the crate.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What a generator is for. Each variant is its own stream; the ones with a `slot` are a family
/// of streams, one per slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// Training targets of the two-link heads (both branches, or the residuals).
    TrainingData,
    /// A two-link network's initial weights and its epoch shuffles.
    TrainingFit,
    /// Held-out evaluation targets of a trained two-link model.
    HeldOut,
    /// The plant's noise (encoder noise, backlash), from its configured seed.
    Plant,
    /// The plant's camera noise.
    Camera,
    /// An atlas row's perturbation samples (index: the row).
    AtlasSilent,
    /// Targets of one out-of-distribution set (slot: the set).
    OodTargets {
        /// The set's position in its list.
        slot: u64,
    },
    /// A degradation setting's seed (index: the setting).
    Setting,
    /// The sensor noise on a setting's targets.
    Sensed,
    /// Actuator noise in the plant protocol.
    Actuator,
    /// Joint noise and backlash in the exercise protocol.
    Exercise,
    /// Training data of a randomized-plant head.
    RandomizedData,
    /// The plants a randomization experiment evaluates on.
    RandomizedPlants,
    /// A chain network's input scaling, initial weights and training draws.
    ChainTraining,
    /// The chain experiment's test targets.
    ChainTargets,
    /// The exact reference samples on a chain target (index: the target).
    ChainReference,
    /// One method's samples on a chain target (slot: the method's column; index: the target).
    ChainMethod {
        /// The method's position in the run's list.
        slot: u64,
    },
    /// A second exact sample set on a chain target, for the floor (index: the target).
    ChainFloor,
    /// One method's timed repetitions on the demo target (slot: the method; index: the repetition).
    ChainDemo {
        /// The method's position in the run's list.
        slot: u64,
    },
    /// The exact samples drawn for the demo figure when the exact method did not run.
    ChainDemoExact,
    /// The benchmark's fixed targets.
    Bench,
    /// One method's answers in `elbow solve --arm` (slot: the method's position in
    /// [`crate::lineup::SolverId::CHAIN`]).
    ChainSolve {
        /// The method's position.
        slot: u64,
    },
    /// One row of a chain atlas (index: the row).
    ChainAtlas,
    /// Training episodes of a feedback head (its plants, targets and history).
    FeedbackData,
    /// The episodes a feedback head is evaluated on (index: the plant set).
    FeedbackEpisodes,
    /// The draws and training stand-ins of a chain net's explanation.
    ChainExplain,
    /// A chain solver's draws for one answer (index: the target's bits).
    ChainDrive,
    /// The held-out targets of a degradation run on a chain.
    GapTargets,
    /// The DLS restarts of a chain tracking run's start pose and path check (index: which).
    ChainTrack,
}

impl Stream {
    /// The stream's two key words: its tag and its slot (0 for streams without one).
    const fn words(self) -> (u64, u64) {
        match self {
            Stream::TrainingData => (1, 0),
            Stream::TrainingFit => (2, 0),
            Stream::HeldOut => (3, 0),
            Stream::Plant => (4, 0),
            Stream::Camera => (5, 0),
            Stream::AtlasSilent => (6, 0),
            Stream::OodTargets { slot } => (7, slot),
            Stream::Setting => (8, 0),
            Stream::Sensed => (9, 0),
            Stream::Actuator => (10, 0),
            Stream::Exercise => (11, 0),
            Stream::RandomizedData => (12, 0),
            Stream::RandomizedPlants => (13, 0),
            Stream::ChainTraining => (14, 0),
            Stream::ChainTargets => (15, 0),
            Stream::ChainReference => (16, 0),
            Stream::ChainMethod { slot } => (17, slot),
            Stream::ChainFloor => (18, 0),
            Stream::ChainDemo { slot } => (19, slot),
            Stream::ChainDemoExact => (20, 0),
            Stream::Bench => (21, 0),
            Stream::ChainSolve { slot } => (22, slot),
            Stream::ChainAtlas => (23, 0),
            Stream::FeedbackData => (24, 0),
            Stream::FeedbackEpisodes => (25, 0),
            Stream::ChainExplain => (26, 0),
            Stream::ChainDrive => (27, 0),
            Stream::GapTargets => (28, 0),
            Stream::ChainTrack => (29, 0),
        }
    }
}

/// The generator of `stream` number `index` under `seed`: independent of every other
/// `(seed, stream, index)`, and the same on every thread and every run.
pub fn rng(seed: u64, stream: Stream, index: u64) -> ChaCha8Rng {
    let (tag, slot) = stream.words();
    let mut key = [0u8; 32];
    for (chunk, word) in key.chunks_exact_mut(8).zip([seed, tag, slot, index]) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    ChaCha8Rng::from_seed(key)
}

/// A seed for something seeded by a plain number (a plant's configuration): the first word of
/// [`rng`]`(seed, stream, index)`.
pub fn subseed(seed: u64, stream: Stream, index: u64) -> u64 {
    rng(seed, stream, index).next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_words(mut r: ChaCha8Rng) -> [u64; 4] {
        std::array::from_fn(|_| r.next_u64())
    }

    /// Every stream, with two slots for the families.
    fn streams() -> Vec<Stream> {
        use Stream::*;
        let mut all = vec![
            TrainingData,
            TrainingFit,
            HeldOut,
            Plant,
            Camera,
            AtlasSilent,
            Setting,
            Sensed,
            Actuator,
            Exercise,
            RandomizedData,
            RandomizedPlants,
            ChainTraining,
            ChainTargets,
            ChainReference,
            ChainFloor,
            ChainDemoExact,
            Bench,
            ChainAtlas,
            FeedbackData,
            FeedbackEpisodes,
            ChainExplain,
            ChainDrive,
            ChainTrack,
        ];
        for slot in [0, 1, 256] {
            all.extend([OodTargets { slot }, ChainMethod { slot }, ChainDemo { slot }, ChainSolve { slot }]);
        }
        all
    }

    #[test]
    fn distinct_triples_give_distinct_sequences() {
        let mut seen = std::collections::HashMap::new();
        for seed in [0, 1, u64::MAX] {
            for stream in streams() {
                for index in [0, 1, 2, 255, 256, u64::MAX >> 8, u64::MAX] {
                    let words = first_words(rng(seed, stream, index));
                    if let Some(other) = seen.insert(words, (seed, stream, index)) {
                        panic!("{:?} and {other:?} give the same sequence", (seed, stream, index));
                    }
                }
            }
        }
    }

    #[test]
    fn the_same_triple_gives_the_same_sequence() {
        let a = first_words(rng(7, Stream::ChainMethod { slot: 2 }, 40));
        assert_eq!(a, first_words(rng(7, Stream::ChainMethod { slot: 2 }, 40)));
        assert_eq!(subseed(7, Stream::Setting, 3), rng(7, Stream::Setting, 3).next_u64());
    }

    /// The chain experiment's old per-target seed, `seed * C + ((target << 8) | purpose)`.
    fn old_rng_for(seed: u64, target: usize, purpose: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9).wrapping_add(((target as u64) << 8) | purpose))
    }

    #[test]
    fn the_old_packing_collided_where_the_table_does_not() {
        // A purpose past 8 bits spilled into the target: target 0's 256th purpose was target 1's
        // reference draw.
        assert_eq!(first_words(old_rng_for(5, 0, 256)), first_words(old_rng_for(5, 1, 0)));
        assert_ne!(
            first_words(rng(5, Stream::ChainDemo { slot: 256 }, 0)),
            first_words(rng(5, Stream::ChainDemo { slot: 0 }, 1))
        );
        // Seeds overlapped: seed 1's reference on target 0 was a draw of seed 0 (the multiplier
        // is 0x9e3779 targets and 0xb9 purposes long).
        assert_eq!(first_words(old_rng_for(1, 0, 0)), first_words(old_rng_for(0, 0x9e_3779, 0xb9)));
        assert_ne!(
            first_words(rng(1, Stream::ChainReference, 0)),
            first_words(rng(0, Stream::ChainMethod { slot: 0xb9 }, 0x9e_3779))
        );
    }
}
