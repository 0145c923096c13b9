//! "Why did it do that?" on a redundant chain: one net's answer for one target, taken apart
//! (reached through the one entry point, [`super::explain`]).
//!
//! A chain net answers from a posterior, so its answer is best read through that posterior:
//! the mixture's components (weight, where each mean puts the tip, how wide it is), or for a
//! flow the spread of its samples; how many of its draws put the tip within the tolerance; how
//! densely the training data (the prior's draws, seen through forward kinematics) cover the
//! target; and what the classical check does with the answer: damped least squares from it,
//! which is how the hybrid turns a draw into an answer it can vouch for, reporting when it
//! cannot.

use super::density::{Density, density};
use crate::arm::Arm;
use crate::chain::arm::Chain;
use crate::chain::dls::ChainDls;
use crate::chain::nets::{ChainNet, NetKind};
use crate::kinematics::Point2;
use crate::rng::{Stream, rng};
use crate::stats::json_numbers;
use serde::Serialize;

/// Draws of the net's posterior the explanation looks at.
pub const DRAWS: usize = 400;
/// Prior draws standing in for the training data (the nets train on fresh prior draws).
pub const TRAINING_DRAWS: usize = 4_000;
/// The neighbourhood of the density, as a share of the chain's reach.
pub const DENSITY_RADIUS: f64 = 0.1;
/// Iterations of the classical check (the hybrid's DLS finish).
pub const CHECK_ITERATIONS: u32 = 64;
/// Components listed, likeliest first.
pub const COMPONENTS: usize = 4;
/// The success radius of a chain's answers, metres (as the chain experiment and the app's
/// chain lab count them).
pub const TOLERANCE: f64 = 1e-3;

/// One mixture component, as the target's posterior has it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComponentView {
    /// Its weight.
    #[serde(serialize_with = "json_numbers")]
    pub weight: f64,
    /// Where its mean puts the tip, metres from the target.
    #[serde(serialize_with = "json_numbers")]
    pub mean_miss: f64,
    /// Its width: the root of the trace of its covariance, in the coordinates' units.
    #[serde(serialize_with = "json_numbers")]
    pub spread: f64,
}

/// What the classical check (DLS from the answer) makes of it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CheckView {
    /// True when DLS from the answer reaches the target within the tolerance.
    pub converged: bool,
    /// Iterations it took.
    pub iterations: u32,
    /// Its tip error at the end, metres.
    #[serde(serialize_with = "json_numbers")]
    pub error: f64,
    /// How far it moved the answer, in the coordinates' units (Euclidean).
    #[serde(serialize_with = "json_numbers")]
    pub moved: f64,
}

/// Writes a net as its solver's key.
fn solver_key<S: serde::Serializer>(kind: &NetKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.solver().key())
}

/// One net's answer for one target on a chain, taken apart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChainExplanation {
    /// The net, written as its solver's key (`"solver": "mdn"`), as the two-link explanation
    /// names its head.
    #[serde(rename = "solver", serialize_with = "solver_key")]
    pub kind: NetKind,
    /// The target, metres.
    #[serde(serialize_with = "json_numbers")]
    pub target: [f64; 2],
    /// The answer explained: the net's own (the likeliest component's mean for an MDN, the
    /// posterior mean for the squared-error net, the flow's first draw), or the driver's.
    #[serde(serialize_with = "json_numbers")]
    pub answer: Vec<f64>,
    /// Where the answer puts the tip, metres from the target.
    #[serde(serialize_with = "json_numbers")]
    pub answer_miss: f64,
    /// The mixture's components, likeliest first (at most [`COMPONENTS`]; none for a flow).
    pub components: Vec<ComponentView>,
    /// Share of [`DRAWS`] draws of the posterior whose tip lands within the tolerance.
    #[serde(serialize_with = "json_numbers")]
    pub draws_within: f64,
    /// The median tip miss of those draws, metres.
    #[serde(serialize_with = "json_numbers")]
    pub draws_median_miss: f64,
    /// The spread of the draws: the root of the trace of their covariance.
    #[serde(serialize_with = "json_numbers")]
    pub draws_spread: f64,
    /// The training data around the target.
    pub density: Density,
    /// DLS from the answer.
    pub check: CheckView,
    /// The explanation in plain sentences, most important first.
    pub summary: Vec<String>,
}

/// The root of the trace of the covariance of `xs` (`d` values each).
fn spread(xs: &[f64], d: usize) -> f64 {
    let n = xs.len() / d.max(1);
    if n < 2 {
        return 0.0;
    }
    let mut total = 0.0;
    for i in 0..d {
        let mean = xs.iter().skip(i).step_by(d).sum::<f64>() / n as f64;
        total += xs.iter().skip(i).step_by(d).map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    }
    total.sqrt()
}

/// Explains `net`'s answer for `target` on `arm` with success radius `tolerance`; `answer`, when
/// given, is the answer to explain (the driver's: the fan's draw nearest the pose), else the
/// net's own. Deterministic: its draws are seeded.
pub fn explain_net(
    arm: &Arm,
    net: &ChainNet,
    target: Point2,
    tolerance: f64,
    answer: Option<&[f64]>,
) -> ChainExplanation {
    let chain: &Chain = &arm.chain;
    let d = arm.coords();
    let kind = net.kind;
    let mut rng = rng(0, Stream::ChainExplain, 0);
    let mut draws = Vec::with_capacity(DRAWS * d);
    net.sample(target, DRAWS, &mut rng, &mut draws);
    let mixture = net.mixture_for(target).unwrap_or_default();
    let likeliest = mixture.iter().max_by(|a, b| a.weight.total_cmp(&b.weight));
    let answer = match (answer.filter(|a| a.len() == d), likeliest) {
        (Some(a), _) => a.to_vec(),
        (None, _) if kind == NetKind::Flow => draws[..d].to_vec(),
        (None, Some(c)) if kind == NetKind::Mdn => c.mean[..d].to_vec(),
        (None, _) => {
            let mut x = vec![0.0; d];
            net.answer(target, &mut x);
            x
        }
    };
    let miss = |x: &[f64]| (chain.tip(x) - target).norm();
    let answer_miss = miss(&answer);
    let mut components: Vec<ComponentView> = mixture
        .into_iter()
        .map(|c| ComponentView {
            weight: c.weight,
            mean_miss: miss(&c.mean[..d]),
            spread: c.factor[..d].iter().map(|row| row[..d].iter().map(|a| a * a).sum::<f64>()).sum::<f64>().sqrt(),
        })
        .collect();
    components.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    components.truncate(COMPONENTS);
    let mut misses: Vec<f64> = draws.chunks_exact(d).map(miss).collect();
    let draws_within = misses.iter().filter(|&&m| m <= tolerance).count() as f64 / misses.len().max(1) as f64;
    misses.sort_by(f64::total_cmp);
    let draws_median_miss = misses.get(misses.len() / 2).copied().unwrap_or(f64::NAN);
    let draws_spread = spread(&draws, d);
    // The nets train on the prior's draws, tip for coordinates: their tips are the training
    // targets.
    let mut x = vec![0.0; d];
    let training: Vec<Point2> = (0..TRAINING_DRAWS)
        .map(|_| {
            arm.prior.sample(&mut rng, &mut x);
            chain.tip(&x)
        })
        .collect();
    let density = density(&training, target, DENSITY_RADIUS * chain.reach());
    let mut checked = answer.clone();
    let outcome = ChainDls { tolerance, ..ChainDls::new(chain) }.refine(&mut checked, target, CHECK_ITERATIONS);
    let moved = checked.iter().zip(&answer).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
    let check = CheckView { converged: outcome.converged, iterations: outcome.iterations, error: outcome.error, moved };
    let summary = summarize(kind, answer_miss, &components, draws_within, draws_spread, &density, &check, tolerance);
    ChainExplanation {
        kind,
        target: [target.x, target.y],
        answer,
        answer_miss,
        components,
        draws_within,
        draws_median_miss,
        draws_spread,
        density,
        check,
        summary,
    }
}

/// The sentences, most important first.
#[allow(clippy::too_many_arguments)]
fn summarize(
    kind: NetKind,
    answer_miss: f64,
    components: &[ComponentView],
    draws_within: f64,
    draws_spread: f64,
    density: &Density,
    check: &CheckView,
    tolerance: f64,
) -> Vec<String> {
    let mm = |m: f64| format!("{:.1} mm", m * 1e3);
    let mut out = Vec::new();
    let verdict = if answer_miss <= tolerance { "within" } else { "outside" };
    out.push(format!(
        "The answer puts the tip {} from the target, {verdict} the {} tolerance; the net reports nothing either way.",
        mm(answer_miss),
        mm(tolerance)
    ));
    match kind {
        NetKind::Mse => out.push(format!(
            "A squared-error net answers the mean of the posterior: where the answers form a spread (the draws' spread is {draws_spread:.2}), their mean need not be an answer at all."
        )),
        NetKind::Mdn => {
            if let Some(top) = components.first() {
                out.push(format!(
                    "{} component(s) listed; the likeliest (weight {:.2}) puts its mean {} from the target, {} of the draws land within the tolerance.",
                    components.len(),
                    top.weight,
                    mm(top.mean_miss),
                    percent(draws_within)
                ));
            }
        }
        NetKind::Flow => out.push(format!(
            "The flow's draws spread {draws_spread:.2} over the manifold; {} of them land within the tolerance.",
            percent(draws_within)
        )),
    }
    out.push(if density.relative < 0.02 {
        format!(
            "Almost no training data here: {} training targets within {}, against {:.0} around a typical one; the net extrapolates.",
            density.count,
            mm(density.radius),
            density.typical
        )
    } else {
        format!(
            "Training data here: {} targets within {} ({:.0} % of the typical density).",
            density.count,
            mm(density.radius),
            100.0 * density.relative
        )
    });
    out.push(if check.converged {
        format!(
            "The classical check, DLS from this answer, reaches the target in {} iteration(s), moving it by {:.3} in the coordinates: the hybrid would send that, vouched for.",
            check.iterations, check.moved
        )
    } else {
        format!(
            "The classical check, DLS from this answer, stops {} short after {} iterations: the hybrid would try other seeds, then prior starts, and report a failure if none reaches.",
            mm(check.error),
            check.iterations
        )
    });
    out
}

fn percent(share: f64) -> String {
    format!("{:.0} %", 100.0 * share)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::ArmKind;
    use crate::chain::nets::NetConfig;

    fn small(kind: NetKind, arm: &Arm) -> ChainNet {
        let cfg = NetConfig { hidden: 32, depth: 2, components: 8, steps: 400, batch: 256, ..NetConfig::default() };
        ChainNet::train(arm, kind, &cfg, |_, _| true).expect("trains")
    }

    #[test]
    fn the_mse_net_on_rail3_is_explained_as_the_mean_of_a_spread_and_the_check_repairs_it() {
        let arm = ArmKind::Rail3.arm();
        let target = arm.demo_target();
        let mse = small(NetKind::Mse, &arm);
        let e = explain_net(&arm, &mse, target, 1e-3, None);
        assert!(e.answer_miss > 0.05, "the posterior mean misses: {}", e.answer_miss);
        assert_eq!(e.components.len(), 1, "one component of weight 1");
        assert!(e.draws_within < 0.01, "its n copies all miss");
        assert!(e.check.converged && e.check.error <= 1e-3, "DLS from it reaches: {:?}", e.check);
        // The benchmark's demo target lies where the prior puts few tips: some training, sparse.
        assert!(e.density.count > 0 && e.density.relative < 0.5, "{:?}", e.density);
        assert!(e.summary[0].contains("outside") && e.summary[1].contains("mean of the posterior"), "{:?}", e.summary);
        // Deterministic.
        assert_eq!(e, explain_net(&arm, &mse, target, 1e-3, None));
    }

    #[test]
    fn an_mdn_is_explained_by_its_components_and_far_targets_by_missing_data() {
        let arm = ArmKind::Rail3.arm();
        let mdn = small(NetKind::Mdn, &arm);
        let e = explain_net(&arm, &mdn, arm.demo_target(), 1e-3, None);
        assert!(!e.components.is_empty() && e.components.len() <= COMPONENTS);
        assert_eq!(e.answer_miss, e.components[0].mean_miss, "its own answer: the likeliest component's mean");
        assert!(e.components.windows(2).all(|w| w[0].weight >= w[1].weight), "likeliest first");
        assert!(e.draws_spread > 0.1, "rail3's posterior at its demo target is a spread");
        // Past the reach nothing was trained and nothing reaches.
        let far = Point2::new(3.0 * arm.chain.reach(), 0.0);
        let e = explain_net(&arm, &mdn, far, 1e-3, None);
        assert_eq!(e.density.count, 0);
        assert!(!e.check.converged && e.summary.iter().any(|s| s.contains("extrapolates")), "{:?}", e.summary);
        // A given answer is the one explained.
        let given = vec![0.0; arm.coords()];
        let e = explain_net(&arm, &mdn, arm.demo_target(), 1e-3, Some(&given));
        assert_eq!(e.answer, given);
    }
}
