//! `elbow solve X Y`: both analytic branches for one target, their average, and each one's FK
//! error; on a chain (`--arm 3r|rail3`, three or more `--lengths`), every method's answers.

use super::arm::chain_nets;
use super::number::target_coordinate;
use super::{AppArm, ArmChoice, Failure, count, print_json, seed};
use clap::Args;
use elbow::arm::Arm;
use elbow::chain::solve::{Effort, SolveSettings, net_needed, solutions};
use elbow::kinematics::{ElbowMode, Point2, Pose};
use elbow::learned::HeadKind;
use elbow::lineup::SolverId;
use elbow::rng::{Stream, rng};
use elbow::solve_branches;
use elbow::stats::json_numbers;
use serde::Serialize;
use std::path::PathBuf;

/// Arguments of `elbow solve`.
#[derive(Debug, Args)]
pub(crate) struct SolveArgs {
    /// Target x, metres (within ±1e9).
    #[arg(allow_hyphen_values = true, value_parser = target_coordinate, required_unless_present = "describe")]
    x: Option<f64>,
    /// Target y, metres (within ±1e9).
    #[arg(allow_hyphen_values = true, value_parser = target_coordinate, required_unless_present = "describe")]
    y: Option<f64>,
    /// With --arm-file: print every value read from the file and where it came from, and stop.
    #[arg(long, requires = "arm_file", conflicts_with_all = ["x", "json"])]
    describe: bool,
    #[command(flatten)]
    pub(crate) arm: ArmChoice,
    /// Chains only: answers per sampled method (MDN, DLS, hybrid, exact), 1 to 1000 [default: 5].
    #[arg(long, value_parser = count::<1, MAX_SOLVE_SAMPLES>, allow_hyphen_values = true)]
    samples: Option<usize>,
    /// Chains only: the chain model (`elbow train --arm ... --out FILE`) whose nets answer for
    /// mse, mdn and hybrid. Without it, small nets are trained here first (a few seconds; a
    /// note on stderr says so), so every method answers.
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Chains only: training steps of the nets trained here when no --model is given, 1 to
    /// 100000 [default: 2000].
    #[arg(long, value_parser = count::<1, 100_000>, allow_hyphen_values = true)]
    train_steps: Option<usize>,
    /// Chains only: seed of the sampling and of the nets trained here [default: 0].
    #[arg(long, value_parser = seed, allow_hyphen_values = true)]
    seed: Option<u64>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// The most answers per method `solve` prints.
const MAX_SOLVE_SAMPLES: usize = 1000;

#[derive(Serialize)]
struct SolveRow {
    name: &'static str,
    #[serde(serialize_with = "json_numbers")]
    shoulder_deg: f64,
    #[serde(serialize_with = "json_numbers")]
    elbow_deg: f64,
    #[serde(serialize_with = "json_numbers")]
    tip: [f64; 2],
    #[serde(serialize_with = "json_numbers")]
    fk_error: f64,
    admissible: bool,
}

#[derive(Serialize)]
struct SolveReport {
    #[serde(serialize_with = "json_numbers")]
    target: [f64; 2],
    reachable: bool,
    /// Absent when reachable (JSON holds no `null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    unreachable_reason: Option<String>,
    /// Absent when reachable.
    #[serde(serialize_with = "json_numbers", skip_serializing_if = "Option::is_none")]
    missed_by: Option<f64>,
    rows: Vec<SolveRow>,
}

/// `elbow solve`: the two-link arm's branches, or every method's answers on a chain.
pub(crate) fn run(args: &SolveArgs) -> Result<(), Failure> {
    if args.describe {
        let file = args.arm.urdf()?.ok_or_else(|| "--describe needs --arm-file".to_string())?;
        outln!("{}", file.describe().trim_end());
        return Ok(());
    }
    match args.arm.lab()? {
        AppArm::TwoLink(arm) => {
            let chain_only = [
                ("--samples", args.samples.is_some()),
                ("--model", args.model.is_some()),
                ("--train-steps", args.train_steps.is_some()),
                ("--seed", args.seed.is_some()),
            ];
            if let Some((flag, _)) = chain_only.iter().find(|(_, given)| *given) {
                return Err(format!(
                    "{flag} is for chains (--arm 3r or rail3, or three or more --lengths); the two-link arm has its closed form"
                )
                .into());
            }
            Ok(run_two_link(args, &arm)?)
        }
        AppArm::Chain(arm) => run_chain(args, &arm),
    }
}

impl SolveArgs {
    /// The target (clap asks for both coordinates unless `--describe` is given).
    fn target(&self) -> (f64, f64) {
        (self.x.unwrap_or_default(), self.y.unwrap_or_default())
    }
}

/// `elbow solve` on a two-link arm.
fn run_two_link(args: &SolveArgs, arm: &elbow::TwoLinkArm) -> Result<(), String> {
    let (tx, ty) = args.target();
    let arm = *arm;
    let target = Point2::new(tx, ty);
    let b = solve_branches(&arm, target);
    let row = |name, pose: Pose, admissible| {
        let tip = arm.tip(pose);
        SolveRow {
            name,
            shoulder_deg: pose.shoulder.to_degrees(),
            elbow_deg: pose.elbow.to_degrees(),
            tip: [tip.x, tip.y],
            fk_error: arm.miss(pose, target),
            admissible,
        }
    };
    let report = SolveReport {
        target: [tx, ty],
        reachable: b.unreachable.is_none(),
        unreachable_reason: b.unreachable.map(|(r, _)| r.to_string()),
        missed_by: b.unreachable.map(|(_, d)| d),
        rows: vec![
            row("elbow-up", b.up, b.is_admissible(ElbowMode::Up)),
            row("elbow-down", b.down, b.is_admissible(ElbowMode::Down)),
            row("average", b.average(), arm.within_limits(b.average())),
        ],
    };
    if args.json {
        return print_json(&report);
    }
    let num = elbow::stats::fmt_num;
    outln!("target ({}, {}) on arm l1={} l2={}", num(tx), num(ty), arm.l1(), arm.l2());
    match b.unreachable {
        None => outln!("reachable"),
        Some((reason, d)) => {
            outln!("UNREACHABLE: {reason}; solving for the nearest reachable point, missed by {d:.6} m");
        }
    }
    outln!(
        "{:<11} {:>12} {:>12} {:>22} {:>12} {:>10}",
        "pose",
        "shoulder°",
        "elbow°",
        "tip (x, y)",
        "FK error m",
        "in limits"
    );
    for r in &report.rows {
        let tip = format!("({:.6}, {:.6})", r.tip[0], r.tip[1]);
        outln!(
            "{:<11} {:>12.4} {:>12.4} {:>22} {:>12.3e} {:>10}",
            r.name,
            r.shoulder_deg,
            r.elbow_deg,
            tip,
            r.fk_error,
            r.admissible
        );
    }
    Ok(())
}

/// One answer of a chain method.
#[derive(Serialize)]
struct ChainAnswer {
    /// Coordinates: the rail in metres, joint angles in degrees.
    #[serde(serialize_with = "json_numbers")]
    x: Vec<f64>,
    #[serde(serialize_with = "json_numbers")]
    tip: [f64; 2],
    #[serde(serialize_with = "json_numbers")]
    miss: f64,
}

/// One chain method's answers and what they cost.
#[derive(Serialize)]
struct ChainMethodRow {
    method: SolverId,
    answers: Vec<ChainAnswer>,
    /// Answers within the DLS tolerance (DLS and hybrid).
    #[serde(skip_serializing_if = "Option::is_none")]
    converged: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iterations: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    starts: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fallbacks: Option<u64>,
    /// The exact sampler's effective sample size.
    #[serde(serialize_with = "json_numbers", skip_serializing_if = "Option::is_none")]
    ess: Option<f64>,
}

#[derive(Serialize)]
struct ChainSolveReport {
    #[serde(serialize_with = "json_numbers")]
    target: [f64; 2],
    arm: String,
    /// The unit of each coordinate.
    coordinates: Vec<String>,
    /// Whether the exact sampler found any joint vector reaching the target within the limits.
    reachable: bool,
    /// Where the nets came from: a model file, or trained here.
    nets: String,
    methods: Vec<ChainMethodRow>,
    /// Methods left out because the model file holds no net for them (an older file).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    left_out: Vec<SolverId>,
}

/// `elbow solve` on a chain: every applicable method's answers ([`solutions`]).
fn run_chain(args: &SolveArgs, arm: &Arm) -> Result<(), Failure> {
    let (tx, ty) = args.target();
    if args.model.is_some() && args.train_steps.is_some() {
        return Err("--train-steps is for the nets trained here; --model gives them trained".to_string().into());
    }
    let methods = arm.methods();
    let (n, seed) = (args.samples.unwrap_or(5), args.seed.unwrap_or(0));
    let steps = args.train_steps.unwrap_or(super::arm::cli_net_defaults().steps);
    let model = chain_nets(arm, args.model.as_deref(), methods, steps, seed)?;
    let settings = SolveSettings::default();
    // A model file from before a net existed (the flow) answers with the nets it has.
    let has_net = |m: SolverId| net_needed(m, settings.seeds).is_none_or(|k| model.nets().get(k).is_some());
    let (methods, left_out): (Vec<SolverId>, Vec<SolverId>) = methods.iter().partition(|&&m| has_net(m));
    if !left_out.is_empty() {
        super::note(format_args!(
            "note: the model file holds no net for {}: left out (an older file? `elbow train --arm {} --out FILE` trains every net)",
            elbow::keys::join(&left_out),
            arm.name
        ));
    }
    let methods = &methods[..];
    let target = Point2::new(tx, ty);
    let chain = &arm.chain;
    let shown = |x: &[f64]| -> Vec<f64> {
        x.iter().enumerate().map(|(i, &v)| if chain.is_angle(i) { v.to_degrees() } else { v }).collect()
    };
    let mut out = Vec::new();
    let mut rows = Vec::new();
    for (slot, &method) in methods.iter().enumerate() {
        let mut rng = rng(seed, Stream::ChainSolve { slot: slot as u64 }, 0);
        let count = if method == SolverId::Learned(HeadKind::Mse) { 1 } else { n };
        let effort: Effort = solutions(arm, model.nets(), &settings, method, target, count, &mut rng, &mut out)
            .map_err(|e| e.to_string())?;
        if out.iter().any(|v| !v.is_finite()) {
            return Err(format!(
                "the {} method gives no finite answer for ({}, {}): its net cannot be trusted (a corrupt model file?)",
                method.key(),
                tx,
                ty
            )
            .into());
        }
        let answers: Vec<ChainAnswer> = out
            .chunks_exact(arm.coords())
            .map(|x| {
                let tip = chain.tip(x);
                ChainAnswer { x: shown(x), tip: [tip.x, tip.y], miss: (tip.x - target.x).hypot(tip.y - target.y) }
            })
            .collect();
        let iterative = matches!(method, SolverId::Iterative | SolverId::Hybrid);
        let converged = answers.iter().filter(|a| a.miss <= settings.dls_tolerance).count();
        rows.push(ChainMethodRow {
            method,
            answers,
            converged: iterative.then_some(converged),
            iterations: iterative.then_some(effort.iterations),
            starts: iterative.then_some(effort.starts),
            fallbacks: (method == SolverId::Hybrid).then_some(effort.fallbacks),
            ess: effort.ess,
        });
    }
    let reachable = rows.iter().find(|r| r.method == SolverId::Exact).is_none_or(|r| !r.answers.is_empty());
    let coordinates = (0..arm.coords())
        .map(|i| match (chain.is_angle(i), chain.rail().is_some()) {
            (true, rail) => format!("q{} deg", i + usize::from(!rail)),
            (false, _) => "rail m".to_string(),
        })
        .collect();
    let nets = match &args.model {
        Some(p) => format!("from {}", p.display()),
        None => format!("trained here for {steps} steps, seed {seed}"),
    };
    let report = ChainSolveReport {
        target: [tx, ty],
        arm: arm.name.clone(),
        coordinates,
        reachable,
        nets,
        methods: rows,
        left_out,
    };
    if args.json {
        return Ok(print_json(&report)?);
    }
    Ok(print_chain(&report, &settings)?)
}

/// The chain report as a table: one line per answer, then each method's effort.
fn print_chain(r: &ChainSolveReport, settings: &SolveSettings) -> Result<(), String> {
    outln!("target ({}, {}) on arm {} (nets {})", r.target[0], r.target[1], r.arm, r.nets);
    if r.reachable {
        outln!("reachable: the exact sampler found joint vectors within the limits that reach it");
    } else {
        outln!(
            "UNREACHABLE: the exact sampler found no joint vector within the limits that reaches it; the answers below miss it"
        );
    }
    let head: Vec<String> = r.coordinates.iter().map(|c| format!("{c:>10}")).collect();
    outln!("{:<7} {:>3} {} {:>22} {:>11}", "method", "#", head.join(" "), "tip (x, y)", "tip miss m");
    for row in &r.methods {
        if row.answers.is_empty() {
            outln!("{:<7} no answer", row.method.key());
        }
        for (i, a) in row.answers.iter().enumerate() {
            let x: Vec<String> = a.x.iter().map(|v| format!("{v:>10.4}")).collect();
            let tip = format!("({:.6}, {:.6})", a.tip[0], a.tip[1]);
            outln!("{:<7} {:>3} {} {tip:>22} {:>11.3e}", row.method.key(), i + 1, x.join(" "), a.miss);
        }
    }
    for row in &r.methods {
        let n = row.answers.len();
        match (row.converged, row.iterations, row.starts, row.ess) {
            (Some(c), Some(it), Some(st), _) => {
                let fell = row.fallbacks.map_or(String::new(), |f| format!(", {f} fell back to prior starts"));
                let verdict = if c < n { " (did not converge: no start reached the target)" } else { "" };
                outln!(
                    "{}: {c} of {n} converged to {:.0e} m{verdict}, {it} iterations and {st} starts in all{fell}",
                    row.method,
                    settings.dls_tolerance
                );
            }
            (.., Some(ess)) if n > 0 => outln!("{}: {n} samples from a pool of effective size {ess:.0}", row.method),
            (.., Some(_)) => outln!("{}: no samples (no solution found)", row.method),
            _ => {}
        }
    }
    Ok(())
}
