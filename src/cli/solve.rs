//! `elbow solve X Y`: both analytic branches for one target, their average, and each one's FK
//! error.

use super::{ArmArgs, parse_finite, print_json};
use clap::Args;
use elbow::kinematics::{ElbowMode, Point2, Pose};
use elbow::solve_branches;
use elbow::stats::json_numbers;
use serde::Serialize;

/// Arguments of `elbow solve`.
#[derive(Debug, Args)]
pub(crate) struct SolveArgs {
    /// Target x, metres.
    #[arg(allow_hyphen_values = true, value_parser = parse_finite)]
    x: f64,
    /// Target y, metres.
    #[arg(allow_hyphen_values = true, value_parser = parse_finite)]
    y: f64,
    #[command(flatten)]
    pub(crate) arm: ArmArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

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

/// `elbow solve`.
pub(crate) fn run(args: &SolveArgs) -> Result<(), String> {
    let arm = args.arm.arm()?;
    let target = Point2::new(args.x, args.y);
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
        target: [args.x, args.y],
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
    outln!("target ({}, {}) on arm l1={} l2={}", args.x, args.y, arm.l1(), arm.l2());
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
