//! The learned heads' one identity, [`HeadKind`], and everything each one is: its names, what
//! its network takes in and puts out, and what it is trained on ([`HeadSpec`]).
//!
//! Adding a head means adding a variant here and its [`HeadKind::spec`]; every table, colour,
//! line-up and training path keys on the kind and reads the spec, and the exhaustive matches on
//! [`Output`] and [`TrainedOn`] make the compiler point at every place that needs a decision.

use super::data::AngleEncoding;
use crate::nn::MdnNll;
use serde::{Deserialize, Serialize};

/// What a head's network outputs mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// One encoded pose, fitted by squared error.
    Pose,
    /// A Gaussian mixture over encoded poses, fitted by negative log-likelihood.
    Mixture,
    /// A joint-angle correction added to the analytic answer, fitted by squared error.
    Correction,
}

/// What a head learns from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainedOn {
    /// Reachable targets, each paired with both elbow branches of the nominal arm.
    BothBranches,
    /// Reachable targets, each paired with the correction that makes the analytic answer of the
    /// nominal arm land on the real arm.
    Corrections,
}

/// Everything that makes one head what it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadSpec {
    /// Short key for the command line, JSON and model files (`mdn`).
    pub key: &'static str,
    /// Short label for buttons and plots (`MDN`).
    pub short: &'static str,
    /// Name for tables and legends (`MDN head`).
    pub name: &'static str,
    /// True when the elbow mode is a network input (`+-1`, after the polar target).
    pub takes_mode: bool,
    /// What the outputs mean.
    pub output: Output,
    /// What it is trained on.
    pub trained_on: TrainedOn,
    /// Training targets are multiplied by this (and outputs divided by it) so they are of order
    /// one: corrections are a few hundredths of a radian.
    pub output_scale: f32,
    /// True for a head meant to answer on one valid branch by itself (the MDN, the mode head):
    /// what the lesson's claims call "a learned controller". False for the MSE head (it learns
    /// the average of the branches, a lesson of its own) and for corrections of the analytic
    /// answer.
    pub picks_a_branch: bool,
}

/// Declares [`HeadKind`] from the head registry below: the variants, [`HeadKind::ALL`] in
/// registry order, and [`HeadKind::spec`]. One row per head is the only place a head is named.
macro_rules! registry {
    ($($(#[doc = $doc:literal])* $variant:ident => $spec:expr,)+) => {
        /// Which learned head a model is. Serialised as its [`HeadSpec::key`] (`"mdn"`); the
        /// variant spellings of older model files (`"Mdn"`) still load, since keys are matched
        /// ignoring case.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(into = "String", try_from = "String")]
        pub enum HeadKind {
            $($(#[doc = $doc])* $variant,)+
        }

        impl HeadKind {
            /// Every head, in registry (display) order: tables, line-ups, the app's number keys
            /// (`1` is the first head) and the claims all follow it.
            pub const ALL: [HeadKind; [$(HeadKind::$variant),+].len()] = [$(HeadKind::$variant),+];

            /// What this head is: its registry row.
            pub const fn spec(self) -> HeadSpec {
                match self {
                    $(HeadKind::$variant => $spec,)+
                }
            }
        }
    };
}

/// A head whose outputs are one pose fitted by squared error to data holding both branches.
const fn pose(key: &'static str, short: &'static str, name: &'static str, takes_mode: bool) -> HeadSpec {
    HeadSpec {
        key,
        short,
        name,
        takes_mode,
        output: Output::Pose,
        trained_on: TrainedOn::BothBranches,
        output_scale: 1.0,
        picks_a_branch: true,
    }
}

registry! {
    /// Squared error on data holding both branches: learns their invalid average.
    Mse => HeadSpec { picks_a_branch: false, ..pose("mse", "MSE", "MSE head", false) },
    /// Mixture density network: one Gaussian component per branch, picks the likeliest.
    Mdn => HeadSpec { output: Output::Mixture, ..pose("mdn", "MDN", "MDN head", false) },
    /// The elbow mode is an input; each mode gives its own branch.
    Mode => pose("mode", "mode", "mode head", true),
    /// Analytic answer on the nominal model plus a learned correction for the real arm.
    Residual => HeadSpec {
        output: Output::Correction,
        trained_on: TrainedOn::Corrections,
        output_scale: 10.0,
        picks_a_branch: false,
        ..pose("residual", "residual", "residual hybrid", true)
    },
}

impl HeadKind {
    /// The number of heads.
    pub const COUNT: usize = Self::ALL.len();

    /// Position in [`HeadKind::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The key used on the command line, in JSON and in model files.
    pub const fn key(self) -> &'static str {
        self.spec().key
    }

    /// True when the network takes the elbow mode as an input.
    pub const fn takes_mode(self) -> bool {
        self.spec().takes_mode
    }

    /// Network inputs per sample: the polar target `[cos, sin, r / reach]`, then the mode.
    pub const fn input_dims(self) -> usize {
        if self.takes_mode() { 4 } else { 3 }
    }

    /// The mixture layout of a head with mixture outputs, `None` for the others.
    pub fn mixture(self, encoding: AngleEncoding, components: usize, sigma_min: f32) -> Option<MdnNll> {
        match self.spec().output {
            Output::Mixture => Some(MdnNll { k: components, d: encoding.dims(), sigma_min }),
            Output::Pose | Output::Correction => None,
        }
    }

    /// Values per training target: an encoded pose, or a two-joint correction.
    pub fn target_dims(self, encoding: AngleEncoding) -> usize {
        match self.spec().output {
            Output::Pose | Output::Mixture => encoding.dims(),
            Output::Correction => 2,
        }
    }

    /// Network outputs per sample, given the mixture layout for mixture heads.
    pub fn output_dims(self, encoding: AngleEncoding, mixture: Option<MdnNll>) -> usize {
        match (self.spec().output, mixture) {
            (Output::Mixture, Some(m)) => m.outputs(),
            (Output::Mixture, None) => 0,
            (Output::Pose | Output::Correction, _) => self.target_dims(encoding),
        }
    }

    /// True when the head is meant for the mismatched real arm and is judged there.
    pub const fn fits_real_arm(self) -> bool {
        matches!(self.spec().trained_on, TrainedOn::Corrections)
    }
}

// Model files written before heads were named by key spell the variant (`Mse`, `Residual`):
// keys parse ignoring case, so they still load.
crate::keys::keyed!(HeadKind, "head", serde);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_parse_back() {
        for (i, h) in HeadKind::ALL.into_iter().enumerate() {
            assert_eq!(h.index(), i);
            assert_eq!(h.key().parse::<HeadKind>().unwrap(), h);
            assert!(HeadKind::ALL.iter().filter(|o| o.spec().short == h.spec().short).count() == 1);
        }
        let err = "mlp".parse::<HeadKind>().unwrap_err();
        assert!(err.contains("head must be one of mse, mdn, mode, residual"), "{err}");
    }

    #[test]
    fn heads_serialise_as_their_key_and_old_spellings_load() {
        for h in HeadKind::ALL {
            let json = serde_json::to_string(&h).unwrap();
            assert_eq!(json, format!("\"{}\"", h.key()));
            assert_eq!(serde_json::from_str::<HeadKind>(&json).unwrap(), h);
            // Model files written before heads were named by key spell the variant.
            let old = serde_json::to_string(&format!("{h:?}")).unwrap();
            assert_eq!(serde_json::from_str::<HeadKind>(&old).unwrap(), h, "{old}");
        }
        assert!(serde_json::from_str::<HeadKind>("\"transformer\"").is_err());
    }

    #[test]
    fn layouts_follow_the_spec() {
        let enc = AngleEncoding::Circular;
        assert_eq!(HeadKind::Mse.output_dims(enc, None), 3);
        let m = HeadKind::Mdn.mixture(enc, 2, 0.01);
        assert_eq!(HeadKind::Mdn.output_dims(enc, m), 2 + 2 * 3 * 2);
        assert_eq!(HeadKind::Residual.output_dims(enc, None), 2);
        assert_eq!(HeadKind::Mode.input_dims(), 4);
        assert!(HeadKind::Residual.fits_real_arm() && !HeadKind::Mdn.fits_real_arm());
    }
}
