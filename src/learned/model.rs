//! A trained head ([`LearnedModel`]) behind one trait, its solver adapter, and the checks every
//! network read from a model file passes ([`FieldError`], `validate_layers`; the file format
//! itself is [`super::file`]).

use super::data::AngleEncoding;
use super::head::{HeadKind, Output};
use crate::analytic::{Branches, solve_branches};
use crate::kinematics::{ElbowMode, Point2, Pose, RealArm, Region, TwoLinkArm};
use crate::nn::{MdnNll, Mlp};
use crate::solver::{IkSolver, Solution, SolveStatus};
use serde::{Deserialize, Serialize};

pub use super::branch::Candidate;

/// A learned head's answer for one target, as batched inference
/// ([`LearnedModel::predict_batch`]) gives it and [`LearnedModel::solution`] takes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchAnswer {
    /// The proposed pose (a mixture: the mean of its likeliest component). Always finite.
    pub pose: Pose,
    /// Weight of the likeliest component (1 for heads without a mixture).
    pub top_weight: f32,
    /// Correction heads: whether the learned correction was applied (false: it was out of bounds
    /// or switched off, and the pose is the analytic answer). False for the other heads.
    pub corrected: bool,
}

/// What a learned head proposes for one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The proposed pose (for the MDN: the mean of the likeliest component).
    pub pose: Pose,
    /// Every candidate with its weight, likeliest first.
    pub candidates: Vec<Candidate>,
    /// For the residual hybrid: the correction applied on top of the analytic answer.
    pub correction: Option<Pose>,
    /// For the residual hybrid: the analytic answer it started from.
    pub base: Option<Pose>,
}

impl Prediction {
    /// The proposal in the form [`LearnedModel::solution`] takes: the pose, the top weight, and
    /// whether a correction was applied.
    pub fn answer(&self) -> BatchAnswer {
        BatchAnswer {
            pose: self.pose,
            top_weight: self.candidates.first().map_or(0.0, |c| c.weight),
            corrected: self.correction.is_some(),
        }
    }
}

/// One interface for every learned head, used by the app and the experiments.
pub trait LearnedIk: Send + Sync {
    /// Which head this is.
    fn kind(&self) -> HeadKind;

    /// The proposal for `target`; `mode` is used by heads that take the elbow mode and ignored by
    /// the others. Always finite, whatever the input.
    fn predict(&self, target: Point2, mode: ElbowMode) -> Prediction;
}

/// One unusable field of a model: its name (`net.layers[1].w`, `mdn.sigma_min`) and what is
/// wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("field `{field}`: {reason}")]
pub struct FieldError {
    /// The field, as a path into the file.
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

/// `Err(FieldError)` for `field` with `reason`.
pub(crate) fn field_err<T>(field: impl Into<String>, reason: impl Into<String>) -> Result<T, FieldError> {
    Err(FieldError { field: field.into(), reason: reason.into() })
}

/// The smallest spread (a mixture's floor, a scaling) a file may hold: below it a division by
/// it overflows the activation bound.
pub const MIN_SPREAD: f64 = 1e-6;

/// The largest scaling spread a file may hold.
pub const MAX_SPREAD: f64 = 1e6;

/// The largest input magnitude a network of the lab is fed (a two-link head's features are at
/// most 1e3; a chain net's are the target, centred and scaled): the bound
/// [`activation_bound`] starts from.
pub const MAX_NET_INPUT: f64 = 1e6;

/// The largest activation a network read from a file may reach for inputs up to
/// [`MAX_NET_INPUT`]: far below `f32::MAX` (3.4e38), so no sum, exponent or decoding of an output
/// overflows. A trained network stays many orders of magnitude below it.
pub const MAX_ACTIVATION: f64 = 1e30;

/// An upper bound on the magnitude of every value `net` computes (pre-activations included) for
/// inputs of magnitude at most `input`, layer by layer: a layer's pre-activations are at most its
/// largest row sum of absolute weights times the bound of its inputs plus its largest bias;
/// tanh caps its outputs at 1.
pub fn activation_bound(net: &Mlp, input: f64) -> f64 {
    let mut x = input;
    let mut worst = input;
    for l in &net.layers {
        let rows = l.w.row_iter().map(|r| r.iter().map(|v| f64::from(v.abs())).sum::<f64>());
        let row_sum = rows.fold(0.0, f64::max);
        let bias = l.b.iter().map(|v| f64::from(v.abs())).fold(0.0, f64::max);
        let pre = row_sum * x + bias;
        worst = worst.max(pre);
        x = match l.activation {
            crate::nn::Activation::Tanh => pre.min(1.0),
            crate::nn::Activation::Relu | crate::nn::Activation::Identity => pre,
        };
    }
    worst
}

/// Checks a network read from a file, naming the field (`field` is its path, `net`, `mse.net`):
/// 1 to 9 layers of 1 to 4096 units that chain, every weight and bias finite, and weights small
/// enough that no activation can pass [`MAX_ACTIVATION`] ([`activation_bound`]).
pub(crate) fn validate_layers(net: &Mlp, field: &str) -> Result<(), FieldError> {
    use super::limits::{MAX_DEPTH, MAX_HIDDEN};
    let layers = &net.layers;
    if layers.is_empty() || layers.len() > MAX_DEPTH + 1 {
        return field_err(
            format!("{field}.layers"),
            format!("must hold 1 to {} layers, got {}", MAX_DEPTH + 1, layers.len()),
        );
    }
    for (i, l) in layers.iter().enumerate() {
        let (rows, cols) = l.w.shape();
        if !(1..=MAX_HIDDEN).contains(&rows) || !(1..=MAX_HIDDEN).contains(&cols) {
            return field_err(
                format!("{field}.layers[{i}].w"),
                format!("must be 1 to {MAX_HIDDEN} units each way, got {rows}x{cols}"),
            );
        }
        if l.b.len() != rows {
            return field_err(format!("{field}.layers[{i}].b"), format!("must hold {rows} values, got {}", l.b.len()));
        }
        if i > 0 && cols != layers[i - 1].w.nrows() {
            return field_err(
                format!("{field}.layers[{i}].w"),
                format!("takes {cols} inputs but layer {} gives {}", i - 1, layers[i - 1].w.nrows()),
            );
        }
        if let Some(v) = l.w.iter().find(|v| !v.is_finite()) {
            return field_err(format!("{field}.layers[{i}].w"), format!("holds a non-finite weight ({v})"));
        }
        if let Some(v) = l.b.iter().find(|v| !v.is_finite()) {
            return field_err(format!("{field}.layers[{i}].b"), format!("holds a non-finite bias ({v})"));
        }
    }
    let bound = activation_bound(net, MAX_NET_INPUT);
    if bound.is_nan() || bound > MAX_ACTIVATION {
        return field_err(
            field.to_string(),
            format!(
                "its weights are too large: an activation could reach {bound:.1e}, over the {MAX_ACTIVATION:e} a trained network never nears (a corrupt file?)"
            ),
        );
    }
    Ok(())
}

/// A trained network with everything needed to use it: its head, arm, encoding and scaling.
/// Saved and loaded as one head of a model file ([`super::file`]: [`LearnedModel::save`],
/// [`LearnedModel::load`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LearnedModel {
    /// Which head.
    pub kind: HeadKind,
    /// The network.
    pub net: Mlp,
    /// The nominal arm it was trained for.
    pub arm: TwoLinkArm,
    /// The region its training targets came from (outside it, the model extrapolates).
    pub region: Region,
    /// How poses are encoded at its output (unused by the residual head, which outputs angles).
    pub encoding: AngleEncoding,
    /// The mixture layout, for the MDN head.
    pub mdn: Option<MdnNll>,
    /// Network outputs are divided by this to give radians (residual head).
    pub output_scale: f32,
    /// Residual head: a correction larger than this on either joint (radians) is rejected and
    /// the analytic answer is returned unchanged.
    pub max_correction: f64,
    /// For the residual head: the real arm its corrections were fitted to.
    pub real: Option<RealArm>,
}

impl LearnedModel {
    /// Whether this model may answer for `arm` (and, when given, the training `region` a run
    /// asks for): `Err` is one plain sentence naming what differs and the flags that fix it. A
    /// net answers only for the arm it was trained on; on another region its held-out and
    /// out-of-distribution figures would be measured against the wrong distribution, so that
    /// is refused too.
    pub fn check_fits(&self, arm: &TwoLinkArm, region: Option<Region>) -> Result<(), String> {
        if self.arm != *arm {
            return Err(format!(
                "the {} model was trained for the arm `{}` but this run uses `{}`; pass the same flags or train a model for this arm",
                self.kind, self.arm, arm
            ));
        }
        match region {
            Some(r) if r != self.region => Err(format!(
                "the {} model was trained on --region {} but this run uses --region {r}; pass --region {} or train a model on {r}",
                self.kind, self.region, self.region
            )),
            _ => Ok(()),
        }
    }

    /// A model around a freshly built network; its scaling comes from the head's spec.
    pub(crate) fn new(
        kind: HeadKind,
        net: Mlp,
        arm: TwoLinkArm,
        region: Region,
        encoding: AngleEncoding,
        mdn: Option<MdnNll>,
        real: Option<RealArm>,
    ) -> Self {
        Self {
            kind,
            net,
            arm,
            region,
            encoding,
            mdn,
            output_scale: kind.spec().output_scale,
            max_correction: 0.5,
            real,
        }
    }

    /// Inputs of the network for one target, in polar form: the bearing as `[cos, sin]`, the
    /// radius over the reach, then (for heads that take one) the mode as +-1. Polar inputs keep
    /// the map smooth near the base, where the shoulder angle turns with the bearing.
    /// Non-finite or huge coordinates are clamped so the network output stays finite.
    pub fn features(&self, target: Point2, mode: ElbowMode, out: &mut [f32]) {
        let (x, y) = if target.x.is_finite() && target.y.is_finite() { (target.x, target.y) } else { (0.0, 0.0) };
        let r = x.hypot(y);
        let (c, s) = if r > 0.0 { (x / r, y / r) } else { (1.0, 0.0) };
        out[0] = c as f32;
        out[1] = s as f32;
        out[2] = (r / self.arm.reach()).min(1e3) as f32;
        if self.kind.takes_mode() {
            out[3] = mode.sign() as f32;
        }
    }

    /// Network inputs per sample.
    pub fn input_dims(&self) -> usize {
        self.kind.input_dims()
    }

    /// Network outputs per sample.
    pub fn output_dims(&self) -> usize {
        self.kind.output_dims(self.encoding, self.mdn)
    }

    /// The arm this model's answers are judged on: the real arm it was fitted to for heads
    /// that fit one, else the nominal arm.
    pub fn judged_on(&self) -> RealArm {
        match self.real {
            Some(real) if self.kind.fits_real_arm() => real,
            _ => RealArm::ideal(self.arm),
        }
    }

    /// Checks every field of the head a file could get wrong, naming the first bad one (the
    /// file's format and version are [`super::file`]'s): the arm, region and real arm, the mixture layout (components in 1..=32, values
    /// per component matching the encoding, a sigma floor in (0, 1000]), every layer's shape
    /// (1 to 9 layers of 1 to 4096 units that chain) and weights (all finite), the network's
    /// inputs and outputs for this head, and the output scale and correction bound.
    pub fn validate(&self) -> Result<(), FieldError> {
        use super::limits::{MAX_COMPONENTS, MAX_SIGMA_MIN};
        if let Err(e) = self.arm.validate() {
            return field_err("arm", e.to_string());
        }
        if let Err(e) = self.region.validate() {
            return field_err("region", e.to_string());
        }
        match self.real {
            Some(real) => {
                if let Err(e) = real.arm.validate() {
                    return field_err("real.arm", e.to_string());
                }
                if !real.joint_offsets.is_finite() {
                    return field_err("real.joint_offsets", "must be finite");
                }
            }
            None if self.kind.fits_real_arm() => {
                return field_err("real", format!("a {} head needs the real arm it was fitted to", self.kind));
            }
            None => {}
        }
        let spec = self.kind.spec();
        if spec.output == Output::Mixture {
            let Some(m) = self.mdn else {
                return field_err("mdn", format!("a {} head needs a mixture layout", self.kind));
            };
            if !(1..=MAX_COMPONENTS).contains(&m.k) {
                return field_err("mdn.k", format!("must be in 1..={MAX_COMPONENTS}, got {}", m.k));
            }
            if m.d != self.encoding.dims() {
                return field_err(
                    "mdn.d",
                    format!("must be {} for the {:?} encoding, got {}", self.encoding.dims(), self.encoding, m.d),
                );
            }
            if !(m.sigma_min.is_finite() && m.sigma_min >= MIN_SPREAD as f32 && m.sigma_min <= MAX_SIGMA_MIN) {
                return field_err(
                    "mdn.sigma_min",
                    format!("must be in [{MIN_SPREAD:e}, {MAX_SIGMA_MIN}], got {:e}", m.sigma_min),
                );
            }
        }
        validate_layers(&self.net, "net")?;
        if self.net.inputs() != self.input_dims() || self.net.outputs() != self.output_dims() {
            return field_err(
                "net",
                format!(
                    "network is {}->{} but a {} head needs {}->{}",
                    self.net.inputs(),
                    self.net.outputs(),
                    self.kind,
                    self.input_dims(),
                    self.output_dims()
                ),
            );
        }
        if !(self.output_scale.is_finite() && self.output_scale > 0.0) {
            return field_err("output_scale", format!("must be a finite number > 0, got {}", self.output_scale));
        }
        if !(self.max_correction.is_finite() && self.max_correction >= 0.0) {
            return field_err("max_correction", format!("must be a finite number >= 0, got {}", self.max_correction));
        }
        Ok(())
    }

    /// The one rule from this head's answer for `target` to a [`Solution`], used by every
    /// caller (the [`LearnedSolver`] behind the app and the line-up, the atlas, the degradation
    /// experiment's batched proposals):
    /// - a pose or mixture head proposes and checks nothing: [`SolveStatus::Unverified`];
    /// - a correction head starts from the analytic answer on its nominal arm, so it passes on
    ///   the analytic verdict on reachability ([`SolveStatus::Unreachable`], with the reason and
    ///   the distance missed); on a reachable target it is [`SolveStatus::Unverified`] when the
    ///   learned correction was applied and [`SolveStatus::Converged`] when it was not (the pose
    ///   is then exactly the analytic branch it was asked for).
    pub fn solution(&self, target: Point2, answer: &BatchAnswer) -> Solution {
        let status = match self.kind.spec().output {
            Output::Pose | Output::Mixture => SolveStatus::Unverified,
            Output::Correction => match solve_branches(&self.arm, target).unreachable {
                Some((reason, missed_by)) => SolveStatus::Unreachable { reason, missed_by },
                None if answer.corrected => SolveStatus::Unverified,
                None => SolveStatus::Converged,
            },
        };
        Solution { pose: answer.pose, status, residual: None, iterations: 0 }
    }

    /// The residual head's proposal with the correction switched on or off.
    pub fn predict_residual(&self, target: Point2, mode: ElbowMode, use_correction: bool) -> Prediction {
        self.residual_on(&solve_branches(&self.arm, target), target, mode, use_correction)
    }

    /// [`LearnedModel::predict_residual`] on branches the caller has already solved.
    fn residual_on(&self, branches: &Branches, target: Point2, mode: ElbowMode, use_correction: bool) -> Prediction {
        let base = branches.pose(mode);
        let mut correction = None;
        let mut pose = base;
        if use_correction {
            let mut x = [0f32; 4];
            self.features(target, mode, &mut x);
            let out = self.net.forward_one(&x);
            let d = Pose::new(out[0] as f64, out[1] as f64) * (1.0 / self.output_scale as f64);
            if d.is_finite() && d.max_abs() <= self.max_correction {
                pose = (base + d).wrapped();
                correction = Some(d);
            }
        }
        Prediction { pose, candidates: vec![Candidate { weight: 1.0, pose }], correction, base: Some(base) }
    }
}

impl LearnedIk for LearnedModel {
    fn kind(&self) -> HeadKind {
        self.kind
    }

    fn predict(&self, target: Point2, mode: ElbowMode) -> Prediction {
        let output = self.kind.spec().output;
        if output == Output::Correction {
            return self.predict_residual(target, mode, true);
        }
        let mut x = [0f32; 4];
        self.features(target, mode, &mut x);
        let out = self.net.forward_one(&x[..self.input_dims()]);
        let mut candidates = match (output, self.mdn) {
            (Output::Mixture, Some(mdn)) => mdn
                .components(out.as_view())
                .into_iter()
                .map(|c| Candidate { weight: c.weight, pose: self.encoding.decode(&c.mean) })
                .collect(),
            (Output::Mixture, None) | (Output::Pose | Output::Correction, _) => {
                vec![Candidate { weight: 1.0, pose: self.encoding.decode(out.as_slice()) }]
            }
        };
        for c in &mut candidates {
            if !c.pose.is_finite() || !c.weight.is_finite() {
                *c = Candidate { weight: 0.0, pose: Pose::default() };
            }
        }
        candidates.sort_by(|a, b| b.weight.total_cmp(&a.weight));
        Prediction { pose: candidates[0].pose, candidates, correction: None, base: None }
    }
}

/// How a learned solver picks the elbow mode it asks heads that take one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModeChoice {
    /// Always this mode.
    Fixed(ElbowMode),
    /// The mode of the seed pose (the arm keeps its current branch).
    FromSeed,
}

/// A learned head used as an [`IkSolver`]: it proposes, nothing checks. Its status is
/// [`SolveStatus::Unverified`] (the residual hybrid passes on the analytic solver's failures).
#[derive(Debug, Clone, Copy)]
pub struct LearnedSolver<'m> {
    /// The head.
    pub model: &'m LearnedModel,
    /// How the mode input is chosen.
    pub mode: ModeChoice,
    /// Residual head only: apply the learned correction (off: exactly the analytic answer).
    pub use_correction: bool,
    /// Heads with several candidates (the MDN): `Some(hysteresis)` takes the candidate nearest
    /// the seed unless another outweighs it by more than that ([`super::branch::keep_branch`],
    /// what a driver of a real arm needs); `None` takes the likeliest (offline evaluation).
    pub keep_branch: Option<f32>,
}

impl<'m> LearnedSolver<'m> {
    /// A solver using `model`, keeping the seed's elbow mode, with corrections on.
    pub fn new(model: &'m LearnedModel) -> Self {
        Self { model, mode: ModeChoice::FromSeed, use_correction: true, keep_branch: None }
    }
}

impl IkSolver for LearnedSolver<'_> {
    type Joints = Pose;

    fn name(&self) -> &str {
        self.model.kind.key()
    }

    fn solve(&self, target: Point2, seed: Pose) -> Solution {
        let mode = match self.mode {
            ModeChoice::Fixed(m) => m,
            ModeChoice::FromSeed => ElbowMode::of(crate::solver::sane_seed(seed)),
        };
        let prediction = if self.model.kind.spec().output == Output::Correction {
            self.model.predict_residual(target, mode, self.use_correction)
        } else {
            self.model.predict(target, mode)
        };
        let mut answer = prediction.answer();
        if let Some(hysteresis) = self.keep_branch
            && prediction.candidates.len() > 1
            && let Some(pick) =
                super::branch::keep_branch(&self.model.arm, target, &prediction.candidates, seed, hysteresis)
        {
            answer.pose = pick.candidate.pose;
            answer.top_weight = pick.candidate.weight;
        }
        self.model.solution(target, &answer)
    }
}
