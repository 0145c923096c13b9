//! "Why did it do that?": one learned solver's answer for one target, taken apart, on any arm.
//!
//! [`explain`] is the one entry point: for an arm and a [`SolverId`] it explains that solver's
//! answer, and which solvers it explains on an arm is the arm's answer ([`solvers`]): the
//! learned heads where the arm has a closed form (this module), the nets on a redundant chain
//! ([`chain`]: the mixture's components or the flow's draws, the training data around the
//! target, and what damped least squares from the answer makes of it).
//!
//! On the two-link arm, [`explain_head`] shows what a head computed and why it answers as it does: its raw outputs (the
//! MDN's mixture weights, means and spreads, the single answer of the other heads, the residual
//! hybrid's base and correction), which branch each candidate is near, how dense the training
//! data is around the target, whether the target lies inside the region the head was trained
//! on, and what the safety envelope would do with the answer and why. The numbers are the ones
//! the head and the envelope use; nothing is re-derived for show.

pub mod chain;
pub mod density;

pub use density::{Density, density};

use crate::analytic::solve_branches;
use crate::arm::Arm;
use crate::atlas::{BranchClass, Trained, classify};
use crate::chain::nets::NetKind;
use crate::envelope::{Envelope, EnvelopeConfig, Fit, Reason};
use crate::kinematics::{ElbowMode, Point2, Pose, Region};
use crate::learned::{HeadKind, LearnedIk, LearnedModel};
use crate::lineup::SolverId;
use crate::stats::json_numbers;
use chain::{ChainExplanation, explain_net};
use serde::Serialize;

/// Radius of the neighbourhood in which training targets are counted, as a fraction of the reach.
pub const DENSITY_RADIUS: f64 = 0.05;

/// One candidate pose of the head: an MDN component, or the single answer of the other heads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateView {
    /// Mixture weight (1 for heads without a mixture).
    #[serde(serialize_with = "json_numbers")]
    pub weight: f64,
    /// The decoded pose, radians (shoulder, elbow).
    #[serde(serialize_with = "json_numbers")]
    pub pose: [f64; 2],
    /// The MDN component's standard deviation per network output, in the output encoding's
    /// units (`None` for heads without a mixture).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sigma: Option<Vec<f64>>,
    /// Where the pose puts the tip on the nominal arm, metres.
    #[serde(serialize_with = "json_numbers")]
    pub tip: [f64; 2],
    /// Distance from that tip to the target, metres.
    #[serde(serialize_with = "json_numbers")]
    pub fk_miss: f64,
    /// Heads fitted to a real arm (the residual hybrid): distance from the target to the tip
    /// that pose gives on that real arm, metres.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_miss: Option<f64>,
    /// Which branch the pose is near (the atlas's classes and threshold).
    pub near: BranchClass,
    /// Largest joint distance to the elbow-up branch, radians (`None` when unreachable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_up: Option<f64>,
    /// Largest joint distance to the elbow-down branch, radians (`None` when unreachable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_down: Option<f64>,
}

/// What the safety envelope would do with the head's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvelopeView {
    /// The checks that can fire for this head on this arm, in the order they run.
    pub checks: Vec<Reason>,
    /// Why the proposal would be rejected, or `None` when it would be accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected_for: Option<Reason>,
    /// The reason in a sentence, with the numbers the check compared.
    pub why: String,
    /// What would go to the arm: the proposal, or the classical fallback's answer.
    #[serde(serialize_with = "json_numbers")]
    pub sent: [f64; 2],
    /// The classical fallback's status when it takes over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback_status: Option<String>,
}

/// One head's answer for one target, taken apart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The head.
    pub head: HeadKind,
    /// The target, metres.
    #[serde(serialize_with = "json_numbers")]
    pub target: [f64; 2],
    /// The pose the arm is at (the envelope's joint-step check measures from it), radians.
    #[serde(serialize_with = "json_numbers")]
    pub from: [f64; 2],
    /// The elbow mode asked of heads that take one.
    pub mode: ElbowMode,
    /// Whether the nominal arm can reach the target.
    pub reachable: bool,
    /// Whether the target lies in the region the head was trained on (reachable and, for a
    /// sector, inside its bearings).
    pub in_training_region: bool,
    /// The region the head was trained on.
    pub region: Region,
    /// The head's answer: the pose it sends (for the MDN, the likeliest component's mean).
    pub answer: CandidateView,
    /// Its status: what the head itself reports (`unverified`: it checks nothing).
    pub status: String,
    /// Every candidate, likeliest first (one for heads without a mixture).
    pub candidates: Vec<CandidateView>,
    /// Residual hybrid: the analytic answer it starts from, radians.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<[f64; 2]>,
    /// Residual hybrid: the learned correction applied on top of it, radians (`None` when it
    /// was out of bounds and the analytic answer went through unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correction: Option<[f64; 2]>,
    /// Training data around the target.
    pub density: Density,
    /// The envelope's decision.
    pub envelope: EnvelopeView,
    /// The explanation in plain sentences, most important first.
    pub summary: Vec<String>,
}

/// What an explanation is asked: the target, and what each kind of arm needs besides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ask<'a> {
    /// The target, metres.
    pub target: Point2,
    /// Two-link arm: the pose the arm is at (the envelope's joint-step check measures from it).
    pub from: Pose,
    /// Two-link arm: the elbow mode asked of heads that take one.
    pub mode: ElbowMode,
    /// Two-link arm: the targets the head was trained on (for the density).
    pub training: &'a [Point2],
    /// Chain: a tip within this of the target (metres) is a success.
    pub tolerance: f64,
    /// Chain: the answer to explain (the driver's), else the net's own.
    pub answer: Option<&'a [f64]>,
}

impl<'a> Ask<'a> {
    /// `target`, from the experiments' start pose in its elbow mode, with no training targets,
    /// the chains' tolerance ([`chain::TOLERANCE`]) and the solver's own answer.
    pub fn at(target: Point2) -> Self {
        let from = Pose::new(0.0, std::f64::consts::FRAC_PI_2);
        Self { target, from, mode: ElbowMode::of(from), training: &[], tolerance: chain::TOLERANCE, answer: None }
    }
}

/// One solver's answer taken apart, on any arm (JSON: the explanation itself).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Explained {
    /// A two-link head's.
    TwoLink(Box<Explanation>),
    /// A chain net's.
    Chain(Box<ChainExplanation>),
}

/// Why a solver's answer was not explained.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExplainError {
    /// The solver is not explained on this arm.
    #[error("{solver} is not explained on {arm}; the solvers explained there are {among}")]
    NotHere {
        /// The solver asked.
        solver: SolverId,
        /// The arm's name.
        arm: String,
        /// The keys of the solvers explained there.
        among: String,
    },
    /// The solver has no trained model yet.
    #[error("{0} has no trained model to explain")]
    NoModel(SolverId),
}

/// What explains a solver on an arm: a head on the arm's closed form, or a chain's net.
enum Subject {
    Head(crate::kinematics::TwoLinkArm, HeadKind),
    Net(NetKind),
}

/// The net that is the chain solver `solver`'s answer (the hybrid is explained through its seeds'
/// net, not as one of its own).
fn net_of(solver: SolverId) -> Option<NetKind> {
    match solver {
        SolverId::Learned(HeadKind::Mse) => Some(NetKind::Mse),
        SolverId::Learned(HeadKind::Mdn) => Some(NetKind::Mdn),
        SolverId::Flow => Some(NetKind::Flow),
        _ => None,
    }
}

/// What explains `solver` on `arm`, if it is explained there: the heads on a closed form, the
/// nets among a chain's methods.
fn subject(arm: &Arm, solver: SolverId) -> Option<Subject> {
    match arm.closed_form() {
        Some(two) => solver.head().filter(|_| arm.solvers().contains(&solver)).map(|h| Subject::Head(two, h)),
        None => net_of(solver).filter(|_| arm.methods().contains(&solver)).map(Subject::Net),
    }
}

/// The solvers explained on `arm`, in its tables' order.
pub fn solvers(arm: &Arm) -> Vec<SolverId> {
    arm.solvers().iter().copied().filter(|&s| subject(arm, s).is_some()).collect()
}

/// Whether `solver` is explained on `arm`: refused naming those that are, if not (before any
/// model is trained for it).
pub fn check(arm: &Arm, solver: SolverId) -> Result<(), ExplainError> {
    subject(arm, solver).map(|_| ()).ok_or_else(|| not_here(arm, solver))
}

/// The refusal of `solver` on `arm`, naming the solvers explained there.
fn not_here(arm: &Arm, solver: SolverId) -> ExplainError {
    let among: Vec<&str> = solvers(arm).iter().map(|s| s.key()).collect();
    ExplainError::NotHere { solver, arm: arm.name.clone(), among: among.join(", ") }
}

/// The one entry point: `solver`'s answer on `arm` for `ask`, taken apart, with the `trained`
/// models (a head on the two-link arm, a net on a chain). A solver not explained on the arm is
/// refused naming those that are ([`check`]); one without its model is refused by name.
pub fn explain(arm: &Arm, solver: SolverId, trained: &Trained<'_>, ask: &Ask<'_>) -> Result<Explained, ExplainError> {
    match subject(arm, solver).ok_or_else(|| not_here(arm, solver))? {
        Subject::Head(two, head) => {
            let model = trained.heads[head].ok_or(ExplainError::NoModel(solver))?;
            let envelope = Envelope { arm: two, config: EnvelopeConfig::for_arm(&two) };
            let e = explain_head(model, ask.target, ask.from, ask.mode, ask.training, &envelope);
            Ok(Explained::TwoLink(Box::new(e)))
        }
        Subject::Net(kind) => {
            let net = trained.nets.get(kind).ok_or(ExplainError::NoModel(solver))?;
            Ok(Explained::Chain(Box::new(explain_net(arm, net, ask.target, ask.tolerance, ask.answer))))
        }
    }
}

/// Explains `model`'s answer for `target` with the arm at `from`, given the targets it was
/// trained on (`training`, for the density) and the `envelope` that would vet it. Heads that
/// take an elbow mode are asked for `mode`. [`explain`] reaches it for a head.
pub fn explain_head(
    model: &LearnedModel,
    target: Point2,
    from: Pose,
    mode: ElbowMode,
    training: &[Point2],
    envelope: &Envelope,
) -> Explanation {
    let arm = model.arm;
    let branches = solve_branches(&arm, target);
    let reachable = branches.unreachable.is_none();
    let prediction = model.predict(target, mode);
    let solution = model.solution(target, &prediction.answer());
    let sigmas = mixture_sigmas(model, target, mode);
    let fitted = model.kind.fits_real_arm().then(|| model.judged_on());
    let view = |weight: f64, pose: Pose, sigma: Option<Vec<f64>>| {
        let tip = arm.tip(pose);
        CandidateView {
            weight,
            pose: [pose.shoulder, pose.elbow],
            sigma,
            tip: [tip.x, tip.y],
            // hypot: a far target's miss does not overflow where the squares would.
            fk_miss: (tip.x - target.x).hypot(tip.y - target.y),
            real_miss: fitted.map(|real| real.miss(pose, target)),
            near: classify(&branches, pose, solution.status),
            to_up: reachable.then(|| pose.max_joint_distance(branches.up)),
            to_down: reachable.then(|| pose.max_joint_distance(branches.down)),
        }
    };
    let candidates: Vec<CandidateView> = prediction
        .candidates
        .iter()
        .enumerate()
        .map(|(i, c)| view(c.weight as f64, c.pose, sigmas.as_ref().and_then(|s| s.get(i).cloned())))
        .collect();
    let answer = view(prediction.answer().top_weight as f64, solution.pose, None);
    let region = model.region;
    let in_training_region = reachable && region.contains_bearing(target);
    let density = density(training, target, DENSITY_RADIUS * arm.reach());
    let envelope = envelope_view(envelope, Fit::of(model.kind, region), solution.pose, target, from);
    let mut out = Explanation {
        head: model.kind,
        target: [target.x, target.y],
        from: [from.shoulder, from.elbow],
        mode,
        reachable,
        in_training_region,
        region,
        answer,
        status: solution.status.label().to_string(),
        candidates,
        base: prediction.base.map(|b| [b.shoulder, b.elbow]),
        correction: prediction.correction.map(|c| [c.shoulder, c.elbow]),
        density,
        envelope,
        summary: Vec::new(),
    };
    out.summary = summarize(&out);
    out
}

/// The MDN's spread per component, likeliest first (the order of [`LearnedIk::predict`]'s
/// candidates); `None` for heads without a mixture.
fn mixture_sigmas(model: &LearnedModel, target: Point2, mode: ElbowMode) -> Option<Vec<Vec<f64>>> {
    let mdn = model.mdn?;
    let mut x = [0f32; 4];
    model.features(target, mode, &mut x);
    let out = model.net.forward_one(&x[..model.input_dims()]);
    let mut components = mdn.components(out.as_view());
    components.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    Some(components.into_iter().map(|c| c.sigma.into_iter().map(f64::from).collect()).collect())
}

/// The envelope's decision on `pose` from a proposer of kind `fit`, with the numbers behind it.
fn envelope_view(envelope: &Envelope, fit: Fit, pose: Pose, target: Point2, from: Pose) -> EnvelopeView {
    let (rejected_for, miss) = envelope.verdict_as(fit, pose, target, from);
    let cfg = envelope.config;
    let why = match rejected_for {
        None => match fit {
            Fit::Pose => format!(
                "accepted: finite, within the joint limits, a joint step of {:.3} rad (limit {:.3}), and its tip {:.4} m from the target on the nominal arm (limit {:.4} m)",
                pose.max_joint_distance(from),
                cfg.max_joint_step(),
                miss,
                cfg.max_fk_miss
            ),
            Fit::Correction { .. } => format!(
                "accepted: inside the trust region (reachable, in the trained region, a correction within {:.2} rad of an analytic branch) and a joint step of {:.3} rad (limit {:.3})",
                cfg.max_correction,
                pose.max_joint_distance(from),
                cfg.max_joint_step()
            ),
        },
        Some(Reason::NonFinite) => "rejected: the answer is not a finite pose".to_string(),
        Some(Reason::JointLimit) => "rejected: the answer lies outside the joint limits".to_string(),
        Some(Reason::JointStep) => format!(
            "rejected: it would move a joint by {:.3} rad, more than the {:.3} rad one control period allows",
            pose.max_joint_distance(from),
            cfg.max_joint_step()
        ),
        Some(Reason::TrustRegion) => {
            let b = solve_branches(&envelope.arm, target);
            if b.unreachable.is_some() {
                "rejected: the target is out of reach, outside the trust region".to_string()
            } else {
                format!(
                    "rejected: outside the trust region (a correction of {:.3} rad from the nearest analytic branch, limit {:.2}, or a target outside the trained region)",
                    pose.max_joint_distance(b.up).min(pose.max_joint_distance(b.down)),
                    cfg.max_correction
                )
            }
        }
        Some(Reason::FkMiss) => {
            format!(
                "rejected: its tip misses the target by {miss:.4} m on the nominal arm, over the {:.4} m limit",
                cfg.max_fk_miss
            )
        }
    };
    let (sent, fallback_status) = match rejected_for {
        None => (pose, None),
        Some(_) => {
            let fallback = envelope.fallback(target, from);
            (fallback.pose, Some(fallback.status.label().to_string()))
        }
    };
    EnvelopeView {
        checks: envelope.active_checks(fit),
        rejected_for,
        why,
        sent: [sent.shoulder, sent.elbow],
        fallback_status,
    }
}

/// The explanation's sentences, most important first.
fn summarize(e: &Explanation) -> Vec<String> {
    let mut out = Vec::new();
    let head = e.head;
    if !e.reachable {
        out.push(format!(
            "The target is out of reach; the {head} head answers anyway ({}), with a tip {:.3} m from it, and reports nothing.",
            e.status, e.answer.fk_miss
        ));
    } else if !e.in_training_region {
        out.push(format!(
            "The target is outside the region the {head} head was trained on ({}): it extrapolates.",
            e.region
        ));
    }
    if e.candidates.len() > 1 {
        let parts: Vec<String> = e
            .candidates
            .iter()
            .enumerate()
            .map(|(i, c)| match c.near {
                // Out of reach no branch exists for a component to be near.
                BranchClass::OutsideReported | BranchClass::OutsideSilent => {
                    format!("component {} (weight {:.2})", i + 1, c.weight)
                }
                near => format!("component {} (weight {:.2}) near {}", i + 1, c.weight, near.label()),
            })
            .collect();
        out.push(format!("Mixture: {}; the head sends the likeliest component's mean.", parts.join(", ")));
    }
    match e.answer.near {
        BranchClass::Average => out.push(format!(
            "The answer sits near the average of the two branches, which is no solution: the averaging trap (tip {:.3} m off).",
            e.answer.fk_miss
        )),
        BranchClass::Up | BranchClass::Down => out.push(format!(
            "The answer is near the {} branch; its tip is {:.4} m from the target on the nominal arm.",
            e.answer.near.label(),
            e.answer.fk_miss
        )),
        BranchClass::Neither => out.push(format!(
            "The answer is near neither branch nor their average; its tip is {:.3} m from the target.",
            e.answer.fk_miss
        )),
        BranchClass::OutsideReported | BranchClass::OutsideSilent => {}
    }
    if let (Some(base), correction) = (e.base, e.correction) {
        out.push(match correction {
            Some(c) => format!(
                "It starts from the analytic answer ({:.3}, {:.3}) rad and adds a learned correction of ({:+.4}, {:+.4}) rad for the real arm it was fitted to{}.",
                base[0],
                base[1],
                c[0],
                c[1],
                e.answer.real_miss.map_or(String::new(), |m| format!(", where its tip is {m:.4} m from the target"))
            ),
            None => "Its learned correction was out of bounds, so the analytic answer goes through unchanged.".to_string(),
        });
    }
    out.push(format!(
        "Training data: {} targets within {:.3} m, {:.2}x the typical density of its training set.",
        e.density.count, e.density.radius, e.density.relative
    ));
    out.push(format!("Envelope: {}.", e.envelope.why));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinematics::TwoLinkArm;
    use crate::learned::{TrainConfig, Trainer};

    fn trained(head: HeadKind) -> (LearnedModel, Vec<Point2>) {
        let cfg = TrainConfig { head, steps: 1500, data_size: 4000, hidden: 32, ..TrainConfig::default() };
        let targets = cfg.data_config().targets();
        let mut t = Trainer::new(cfg).expect("valid config");
        t.run(|_, _| {}).unwrap();
        (t.into_model(), targets)
    }

    /// Which solvers are explained is the arm's answer: the heads on the two-link arm, the nets
    /// on a chain; one entry point explains both, and refuses a solver without its model.
    #[test]
    fn one_entry_point_explains_heads_and_nets() {
        use crate::arm::ArmKind;
        let (two, rail3) = (ArmKind::TwoR.arm(), ArmKind::Rail3.arm());
        assert_eq!(solvers(&two), HeadKind::ALL.map(SolverId::Learned).to_vec());
        let keys: Vec<&str> = solvers(&rail3).iter().map(|s| s.key()).collect();
        assert_eq!(keys, ["mse", "mdn", "flow"]);
        let ask = Ask::at(Point2::new(1.0, 0.8));
        let mdn = SolverId::Learned(HeadKind::Mdn);
        assert_eq!(explain(&rail3, mdn, &Trained::default(), &ask), Err(ExplainError::NoModel(mdn)));
        let e = explain(&two, SolverId::Iterative, &Trained::default(), &ask).unwrap_err();
        assert_eq!(
            e.to_string(),
            "dls is not explained on 2r; the solvers explained there are mse, mdn, mode, residual"
        );
        let (model, training) = trained(HeadKind::Mdn);
        let mut t = Trained::default();
        t.heads[HeadKind::Mdn] = Some(&model);
        let e = explain(&two, mdn, &t, &Ask { training: &training, ..ask }).unwrap();
        assert!(matches!(e, Explained::TwoLink(ref h) if h.head == HeadKind::Mdn), "{e:?}");
    }

    fn envelope() -> Envelope {
        let arm = TwoLinkArm::default();
        Envelope { arm, config: crate::EnvelopeConfig::for_arm(&arm) }
    }

    #[test]
    fn the_mse_head_is_caught_in_the_average_and_the_envelope_says_why() {
        let (model, training) = trained(HeadKind::Mse);
        let target = Point2::new(1.0, 0.8);
        let e = explain_head(&model, target, Pose::new(0.0, 1.5), ElbowMode::Down, &training, &envelope());
        assert_eq!(e.answer.near, BranchClass::Average, "{e:#?}");
        assert_eq!(e.envelope.rejected_for, Some(Reason::FkMiss));
        assert!(e.envelope.why.contains("misses the target"), "{}", e.envelope.why);
        assert!(e.summary.iter().any(|s| s.contains("averaging trap")), "{:?}", e.summary);
    }

    #[test]
    fn the_mdn_shows_one_component_on_each_branch() {
        let (model, training) = trained(HeadKind::Mdn);
        let e =
            explain_head(&model, Point2::new(1.0, 0.8), Pose::new(0.0, 1.5), ElbowMode::Down, &training, &envelope());
        let near: Vec<BranchClass> = e.candidates.iter().map(|c| c.near).collect();
        assert!(near.contains(&BranchClass::Up) && near.contains(&BranchClass::Down), "{near:?}");
        assert!(e.candidates.iter().all(|c| c.sigma.as_ref().is_some_and(|s| s.len() == 3)), "{e:#?}");
        let weights: f64 = e.candidates.iter().map(|c| c.weight).sum();
        assert!((weights - 1.0).abs() < 1e-4, "{weights}");
    }

    #[test]
    fn beyond_the_reach_no_training_data_and_the_answer_is_unreachable() {
        let (model, training) = trained(HeadKind::Mdn);
        let e =
            explain_head(&model, Point2::new(2.5, 0.0), Pose::new(0.0, 1.5), ElbowMode::Down, &training, &envelope());
        assert!(!e.reachable && !e.in_training_region);
        assert_eq!(e.density.count, 0);
        assert_eq!(e.answer.near, BranchClass::OutsideSilent);
        assert!(e.summary[0].contains("out of reach"), "{:?}", e.summary);
        let inside =
            explain_head(&model, Point2::new(1.0, 0.8), Pose::new(0.0, 1.5), ElbowMode::Down, &training, &envelope());
        assert!(inside.density.relative > 0.3 && inside.density.count > 0, "{:?}", inside.density);
    }

    #[test]
    fn the_residual_shows_its_base_and_correction() {
        let (model, training) = trained(HeadKind::Residual);
        let e =
            explain_head(&model, Point2::new(1.0, 0.8), Pose::new(0.0, 1.5), ElbowMode::Down, &training, &envelope());
        let (base, c) = (e.base.expect("a base"), e.correction.expect("a correction"));
        let sent = Pose::new(base[0] + c[0], base[1] + c[1]).wrapped();
        assert!((sent.shoulder - e.answer.pose[0]).abs() < 1e-9 && (sent.elbow - e.answer.pose[1]).abs() < 1e-9);
    }
}
