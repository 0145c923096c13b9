//! `elbow explain --head mdn --target X,Y`: why a learned head answers as it does for one target
//! (its raw outputs, the branch each candidate is near, the training data around the target,
//! the training region, and what the envelope would do and why), as text or JSON.

use super::arm::two_link_head;
use super::number::MAX_TARGET;
use super::{ArmArgs, parse_pair, print_json, seed, shown};
use clap::Args;
use elbow::explain::{CandidateView, explain};
use elbow::kinematics::{ElbowMode, Point2, Pose};
use elbow::learned::{HeadKind, MAX_STEPS, TrainConfig};
use elbow::{Envelope, EnvelopeConfig};
use std::path::PathBuf;

/// Arguments of `elbow explain`.
#[derive(Debug, Args)]
pub(crate) struct ExplainArgs {
    /// The head to explain: mse, mdn, mode or residual.
    #[arg(long, default_value = "mdn")]
    head: HeadKind,
    /// The target `X,Y`, metres.
    #[arg(long, value_parser = parse_target, allow_hyphen_values = true)]
    target: Point2,
    /// The pose the arm is at, `SHOULDER,ELBOW` in radians (the envelope's joint-step check
    /// measures from it) [default: 0,1.5708, the experiments' start pose].
    #[arg(long, value_parser = parse_pose, allow_hyphen_values = true)]
    from: Option<Pose>,
    /// The elbow mode asked of the mode-conditioned and residual heads, up or down [default: the
    /// mode of `--from`].
    #[arg(long)]
    mode: Option<ElbowMode>,
    /// A trained model file (`elbow train --out`) for the head, instead of training one here.
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Training steps when the head is trained here, 1 to 10000000 [default: 6000].
    #[arg(long, value_parser = super::count::<1, MAX_STEPS>, allow_hyphen_values = true)]
    train_steps: Option<usize>,
    /// Seed of the training here.
    #[arg(long, default_value_t = 0, value_parser = seed, allow_hyphen_values = true)]
    seed: u64,
    #[command(flatten)]
    arm: ArmArgs,
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

/// Runs `elbow explain`.
pub(crate) fn run(args: &ExplainArgs) -> Result<(), String> {
    let arm = args.arm.arm()?;
    let steps = args.train_steps.unwrap_or(TrainConfig::default().steps);
    let (model, data) = two_link_head(args.head, arm, args.model.as_deref(), steps, args.seed)?;
    let from = args.from.unwrap_or(elbow::experiments::degradation::protocol::START);
    let mode = args.mode.unwrap_or(ElbowMode::of(from));
    let envelope = Envelope { arm, config: EnvelopeConfig::for_arm(&arm) };
    let e = explain(&model, args.target, from, mode, &data.data_config().targets(), &envelope);
    if args.json {
        return print_json(&e);
    }
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
    if args.model.is_some() {
        super::note(format_args!(
            "note: the model file does not record its training data; the density is that of the default sampler over its region"
        ));
    }
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
