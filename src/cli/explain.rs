//! `elbow explain --solver mdn --target X,Y`: why a learned solver answers as it does for one
//! target, on any arm, through the one entry point [`elbow::explain::explain`]. On the two-link
//! arm a head: its raw outputs, the branch each candidate is near, the training data around the
//! target, the training region, and what the envelope would do and why. On a chain
//! (`--arm rail3`) a net: its mixture's components or its draws, the training data around the
//! target, and what DLS from its answer makes of it. As text or JSON.

use super::arm::{chain_nets, cli_net_defaults, two_link_head};
use super::number::MAX_TARGET;
use super::{AppArm, ArmChoice, Failure, parse_pair, print_json, seed, shown};
use clap::Args;
use elbow::arm::Arm;
use elbow::atlas::Trained;
use elbow::explain::chain::ChainExplanation;
use elbow::explain::{Ask, CandidateView, Explained, Explanation, explain};
use elbow::kinematics::{ElbowMode, Point2, Pose};
use elbow::learned::{HeadKind, MAX_STEPS, TrainConfig};
use elbow::{LearnedModel, SolverId};
use std::path::PathBuf;

/// Arguments of `elbow explain`.
#[derive(Debug, Args)]
pub(crate) struct ExplainArgs {
    /// The solver to explain. Two-link arm: a head, mse, mdn, mode or residual; chains: a net,
    /// mse, mdn or flow [default: mdn].
    #[arg(long, conflicts_with = "head")]
    solver: Option<SolverId>,
    /// The head to explain on the two-link arm (the same as `--solver`): mse, mdn, mode or
    /// residual.
    #[arg(long)]
    head: Option<HeadKind>,
    /// The target `X,Y`, metres.
    #[arg(long, value_parser = parse_target, allow_hyphen_values = true)]
    target: Point2,
    /// Two-link arm: the pose the arm is at, `SHOULDER,ELBOW` in radians (the envelope's
    /// joint-step check measures from it) [default: 0,1.5708, the experiments' start pose].
    #[arg(long, value_parser = parse_pose, allow_hyphen_values = true)]
    from: Option<Pose>,
    /// Two-link arm: the elbow mode asked of the mode-conditioned and residual heads, up or down
    /// [default: the mode of `--from`].
    #[arg(long)]
    mode: Option<ElbowMode>,
    /// A trained model file (`elbow train --out`; on a chain, `elbow train --arm ... --out`) for
    /// the solver, instead of training one here.
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Training steps when the head or net is trained here, 1 to 10000000 [default: 6000; chains
    /// 2000].
    #[arg(long, value_parser = super::count::<1, MAX_STEPS>, allow_hyphen_values = true)]
    train_steps: Option<usize>,
    /// Seed of the training here.
    #[arg(long, default_value_t = 0, value_parser = seed, allow_hyphen_values = true)]
    seed: u64,
    /// The arm.
    #[command(flatten)]
    arm: ArmChoice,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Parses `X,Y` metres, each within ±[`MAX_TARGET`].
fn parse_target(s: &str) -> Result<Point2, String> {
    let (x, y) = parse_pair(s, "the target")?;
    if x.abs() > MAX_TARGET || y.abs() > MAX_TARGET {
        return Err(format!("the target's coordinates must lie within ±1e9 m, got `{}`", shown(s)));
    }
    Ok(Point2::new(x, y))
}

/// Parses `SHOULDER,ELBOW` radians, each within ±4π.
fn parse_pose(s: &str) -> Result<Pose, String> {
    let (a, b) = parse_pair(s, "the pose")?;
    let bound = 4.0 * std::f64::consts::PI;
    if a.abs() > bound || b.abs() > bound {
        return Err(format!("joint angles must lie within ±4π radians (two turns), got `{s}`"));
    }
    Ok(Pose::new(a, b))
}

/// The models an explanation reads, owned: a two-link head with its training targets, or a
/// chain's nets.
enum Models {
    /// A two-link head and the targets it was trained on.
    Head(HeadKind, Box<LearnedModel>, Vec<Point2>),
    /// A chain's nets.
    Nets(Box<elbow::chain::ChainModel>),
}

/// Runs `elbow explain` on any arm.
pub(crate) fn run(args: &ExplainArgs) -> Result<(), Failure> {
    let arm = match args.arm.lab()? {
        AppArm::TwoLink(two) => Arm::two_link(two),
        AppArm::Chain(arm) => arm,
    };
    let solver = args.solver.or(args.head.map(SolverId::Learned)).unwrap_or(SolverId::Learned(HeadKind::Mdn));
    elbow::explain::check(&arm, solver).map_err(|e| e.to_string())?;
    let models = match (arm.closed_form(), solver.head()) {
        (Some(two), Some(head)) => {
            let steps = args.train_steps.unwrap_or(TrainConfig::default().steps);
            let (model, data) = two_link_head(head, two, args.model.as_deref(), steps, args.seed)?;
            Models::Head(head, Box::new(model), data.data_config().targets())
        }
        _ => {
            let given =
                [("--from", args.from.is_some()), ("--mode", args.mode.is_some()), ("--head", args.head.is_some())];
            if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
                return Err(
                    format!("{flag} is for the two-link arm; on {} choose a net with --solver", arm.name).into()
                );
            }
            let steps = args.train_steps.unwrap_or(cli_net_defaults().steps);
            Models::Nets(Box::new(chain_nets(&arm, args.model.as_deref(), &[solver], steps, args.seed)?))
        }
    };
    let from = args.from.unwrap_or(elbow::experiments::degradation::protocol::START);
    let mut ask = Ask { from, mode: args.mode.unwrap_or(ElbowMode::of(from)), ..Ask::at(args.target) };
    let mut trained = Trained::default();
    match &models {
        Models::Head(head, model, data) => {
            trained.heads[*head] = Some(model);
            ask.training = data;
        }
        Models::Nets(model) => trained.nets = model.nets(),
    }
    let e = explain(&arm, solver, &trained, &ask).map_err(|e| e.to_string())?;
    if args.json {
        return Ok(print_json(&e)?);
    }
    match &e {
        Explained::TwoLink(e) => print_head(e)?,
        Explained::Chain(e) => print_net(e, &arm.name, ask.tolerance)?,
    }
    if args.model.is_some() && matches!(e, Explained::TwoLink(_)) {
        super::note(format_args!(
            "note: the model file does not record its training data; the density is that of the default sampler over its region"
        ));
    }
    Ok(())
}

/// The text of a two-link head's explanation.
fn print_head(e: &Explanation) -> Result<(), String> {
    outln!(
        "{} head for the target ({}, {}) m, the arm at ({:.4}, {:.4}) rad, mode {}:",
        e.head,
        e.target[0],
        e.target[1],
        e.from[0],
        e.from[1],
        e.mode
    );
    outln!("");
    for line in &e.summary {
        outln!("- {line}");
    }
    outln!("");
    outln!(
        "  candidate  weight   shoulder    elbow    tip x    tip y  FK miss m  near             to up  to down  sigma (encoded)"
    );
    for (i, c) in e.candidates.iter().enumerate() {
        row(&format!("{}", i + 1), c)?;
    }
    row("answer", &e.answer)?;
    outln!("");
    outln!("status: {} (a learned head checks nothing)", e.status);
    outln!(
        "training region: {} (target {}), data within {:.3} m: {} targets, typical {:.1}, relative {:.2}",
        e.region,
        if e.in_training_region { "inside" } else { "outside" },
        e.density.radius,
        e.density.count,
        e.density.typical,
        e.density.relative
    );
    let checks: Vec<&str> = e.envelope.checks.iter().map(|r| r.label()).collect();
    outln!("envelope checks: {}", checks.join(", "));
    outln!("envelope: {}", e.envelope.why);
    if let Some(status) = &e.envelope.fallback_status {
        outln!("fallback: ({:.4}, {:.4}) rad, {status}", e.envelope.sent[0], e.envelope.sent[1]);
    }
    Ok(())
}

/// The text of a chain net's explanation on the arm named `arm`.
fn print_net(e: &ChainExplanation, arm: &str, tolerance: f64) -> Result<(), String> {
    let mm = |m: f64| format!("{:.2} mm", m * 1e3);
    outln!("{} net on {arm} for the target ({}, {}) m:", e.kind, e.target[0], e.target[1]);
    outln!("");
    for line in &e.summary {
        outln!("- {line}");
    }
    outln!("");
    let coords: Vec<String> = e.answer.iter().map(|v| format!("{v:.4}")).collect();
    outln!("answer: ({}), tip {} from the target", coords.join(", "), mm(e.answer_miss));
    if !e.components.is_empty() {
        outln!("  component  weight  mean's tip miss  spread");
        for (i, c) in e.components.iter().enumerate() {
            outln!("  {:<9} {:>6.3} {:>16} {:>7.3}", i + 1, c.weight, mm(c.mean_miss), c.spread);
        }
    }
    outln!(
        "draws: {} of the posterior, {:.0} % within {}, median tip miss {}, spread {:.3}",
        elbow::explain::chain::DRAWS,
        100.0 * e.draws_within,
        mm(tolerance),
        mm(e.draws_median_miss),
        e.draws_spread
    );
    outln!(
        "training data within {:.3} m: {} targets, typical {:.1}, relative {:.2}",
        e.density.radius,
        e.density.count,
        e.density.typical,
        e.density.relative
    );
    let c = &e.check;
    outln!(
        "check (DLS from the answer): {} after {} iteration(s), tip error {}, moved {:.4}",
        if c.converged { "converged" } else { "did not converge" },
        c.iterations,
        mm(c.error),
        c.moved
    );
    Ok(())
}

/// One candidate's row of the text table.
fn row(name: &str, c: &CandidateView) -> Result<(), String> {
    let dist = |d: Option<f64>| d.map_or("-".to_string(), |d| format!("{d:.3}"));
    let sigma =
        c.sigma.as_ref().map_or("-".to_string(), |s| s.iter().map(|v| format!("{v:.3}")).collect::<Vec<_>>().join(" "));
    outln!(
        "  {name:<9} {:>6.3} {:>10.4} {:>8.4} {:>8.4} {:>8.4} {:>10.4}  {:<15} {:>6} {:>8}  {sigma}",
        c.weight,
        c.pose[0],
        c.pose[1],
        c.tip[0],
        c.tip[1],
        c.fk_miss,
        c.near.label(),
        dist(c.to_up),
        dist(c.to_down)
    );
    Ok(())
}
