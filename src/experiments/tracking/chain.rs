//! Tracking on a redundant chain: the path's reachability, the pose every run starts from, and
//! one pipeline of the chain's line-up ([`ChainSolver`]) driving the arm's plant.

use super::{FigureEight, Goal, Speed, Track, TrackingConfig, follow};
use crate::arm::Arm;
use crate::chain::dls::ChainDls;
use crate::chain::solve::{ChainSolver, NetSet, SolveSettings};
use crate::experiments::ExperimentError;
use crate::kinematics::serial::{Coords, padded};
use crate::kinematics::{Point2, TwoLinkArm};
use crate::lineup::{Pipeline, SolverId};
use crate::plant::{Plant, PlantConfig};
use crate::rng::{Stream, rng};
use crate::solver::{IkSolver, SolveStatus};
use std::f64::consts::PI;

/// The margin the path keeps inside a chain's reachable workspace, as a share of its reach:
/// every point within this distance of the path is reachable too.
pub const MARGIN_SHARE: f64 = 0.02;
/// Points of the path checked for reachability, evenly spaced in phase.
pub const PATH_POINTS: usize = 256;
/// Points on the margin's circle around each path point checked with it.
pub const RING_POINTS: usize = 8;
/// DLS iterations from the previous answer (or the prior centre) before prior restarts.
const ITERATIONS: u32 = 200;
/// DLS restarts from prior draws when the previous answer does not lead to a solution.
const RESTARTS: u32 = 64;

/// The first point near `path` that the chain of `arm` does not reach within its joint limits,
/// if any: [`PATH_POINTS`] points of the path and, around each, [`RING_POINTS`] points at
/// distance `margin`, each solved by DLS (tolerance 1e-6 m) from the last path point's answer,
/// then from prior draws (a fixed stream); a point DLS solves is reachable, so `None` proves the
/// path and its margin reachable at those points.
pub fn unreachable(arm: &Arm, path: &FigureEight, margin: f64) -> Option<Point2> {
    let d = arm.coords();
    let dls = ChainDls::new(&arm.chain);
    let mut rng = rng(0, Stream::ChainTrack, 0);
    let mut x = padded(&arm.prior_center());
    for i in 0..PATH_POINTS {
        let p = path.at_phase(2.0 * PI * i as f64 / PATH_POINTS as f64);
        for k in 0..=RING_POINTS {
            let a = 2.0 * PI * k as f64 / RING_POINTS as f64;
            let q = if k == 0 { p } else { p + Point2::new(a.cos(), a.sin()) * margin };
            let mut y = x;
            let mut o = dls.refine(&mut y[..d], q, ITERATIONS);
            if !o.converged {
                o = dls.from_prior(&mut y[..d], q, &arm.prior, RESTARTS, &mut rng);
            }
            if !o.converged {
                return Some(q);
            }
            if k == 0 {
                x = y;
            }
        }
    }
    None
}

/// The pose every run on `arm` starts from, at rest: a DLS solution of `target` (the path's
/// starting point), from the prior centre ([`Arm::prior_center`]) and, where that does not
/// converge (rail3's and 3r's centre is the arm stretched out along `x`, a singular pose DLS
/// cannot leave towards a target on that line), from prior draws seeded by `seed` (the run's:
/// where on the self-motion the arm starts is part of what a seed varies); converged to 1e-6 m
/// within the joint limits, or an error.
pub fn start_pose(arm: &Arm, target: Point2, seed: u64) -> Result<Coords, ExperimentError> {
    let d = arm.coords();
    let dls = ChainDls::new(&arm.chain);
    let mut x = padded(&arm.prior_center());
    let mut o = dls.refine(&mut x[..d], target, ITERATIONS);
    if !o.converged {
        o = dls.from_prior(&mut x[..d], target, &arm.prior, RESTARTS, &mut rng(seed, Stream::ChainTrack, 1));
    }
    if !o.converged {
        return Err(ExperimentError::Invalid(format!(
            "the path's starting point ({:.3}, {:.3}) m is out of reach of arm {}: DLS did not converge from the prior centre nor from {RESTARTS} prior draws",
            target.x, target.y, arm.name
        )));
    }
    Ok(x)
}

/// One pipeline of the chain's line-up tracking the path at `latency_ms` and `speed`: the arm's
/// plant ([`Arm::real`], gravity on when it hangs, [`Arm::vertical`]; the servo of `cfg.body`)
/// at rest on `start`, the goal at each tick the [`ChainSolver`]'s answer from the encoders
/// (sent whether or not DLS and the hybrid report it converged; the share they do not is
/// counted).
pub(super) fn track(
    arm: &Arm,
    nets: &NetSet,
    start: &Coords,
    pipeline: Pipeline,
    cfg: &TrackingConfig,
    latency_ms: f64,
    speed: Speed,
) -> Result<Track, ExperimentError> {
    let mut solver = ChainSolver::new(arm, nets.nets(), SolveSettings::default(), pipeline.solver)
        .map_err(|e| ExperimentError::Invalid(e.to_string()))?;
    solver.seed = cfg.seed;
    let plant_cfg = PlantConfig {
        latency_ms,
        gravity: arm.vertical(),
        ..PlantConfig::ideal(TwoLinkArm::default()).with_body(&cfg.body)
    };
    let plant = Plant::new(arm.real(), plant_cfg, &start[..arm.coords()]);
    let checked = matches!(pipeline.solver, SolverId::Iterative | SolverId::Hybrid);
    follow(plant, pipeline, cfg, latency_ms, speed, checked, |target, encoders| {
        let s = solver.solve(target, encoders);
        Some(Goal { pose: s.pose, accepted: false, failed: s.status == SolveStatus::NotConverged })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::ArmKind;
    use crate::experiments::tracking::{AMPLITUDE_SHARE, CHAIN_SOLVERS, tracking};

    #[test]
    fn the_path_fits_every_named_arm_with_its_margin() {
        for kind in ArmKind::ALL {
            let arm = kind.arm();
            let cfg = TrackingConfig::for_arm(arm.clone());
            cfg.validate().unwrap_or_else(|e| panic!("{kind}: {e}"));
            let path = cfg.path;
            if arm.closed_form().is_some() {
                assert_eq!(path, FigureEight::default(), "the two-link arm keeps the reference path");
                continue;
            }
            let reach = arm.chain.reach();
            assert_eq!(path.centre, [arm.demo_target().x, arm.demo_target().y], "{kind}");
            assert_eq!(path.amplitude, AMPLITUDE_SHARE.map(|s| s * reach), "{kind}");
            // Every point of the path, and every point within the margin of it, is reachable.
            assert_eq!(unreachable(&arm, &path, MARGIN_SHARE * reach), None, "{kind}");
            // The check sees a path that leaves the workspace: pushed out by a fifth of the reach
            // beyond the margin.
            let out = FigureEight { centre: [path.centre[0] + 0.5 * reach, path.centre[1]], ..path };
            assert!(unreachable(&arm, &out, MARGIN_SHARE * reach).is_some(), "{kind}: {out:?}");
            let e = TrackingConfig { path: out, ..cfg.clone() }.validate().unwrap_err().to_string();
            assert!(e.contains("reachable workspace") && e.contains(kind.key()), "{kind}: {e}");
            // The start is a converged DLS answer of the path's first point within the limits.
            let x = start_pose(&arm, path.at_phase(0.0), 0).unwrap();
            let d = arm.coords();
            assert!((arm.chain.tip(&x[..d]) - path.at_phase(0.0)).norm() < 1e-6, "{kind}: {x:?}");
            assert!(arm.chain.within_limits(&x[..d]), "{kind}: {x:?}");
            // Where DLS from the prior's centre is stuck (rail3, 3r), the run's seed draws the
            // start on the self-motion; elsewhere the start is the same whatever the seed.
            let other = start_pose(&arm, path.at_phase(0.0), 1).unwrap();
            let stuck = matches!(kind, ArmKind::Rail3 | ArmKind::ThreeR);
            assert_eq!(other != x, stuck, "{kind}: {x:?} {other:?}");
        }
    }

    #[test]
    fn dls_on_a_chain_loses_more_to_latency_the_faster_the_target() {
        for kind in [ArmKind::Rail3, ArmKind::So101] {
            let cfg = TrackingConfig {
                latencies_ms: vec![133.0],
                speeds: vec![0.1, 0.4],
                solvers: vec![SolverId::Iterative],
                ..TrackingConfig::for_arm(kind.arm())
            };
            let r = tracking(&cfg).unwrap();
            assert_eq!(r.arm, kind.key());
            let dls = Pipeline::plain(SolverId::Iterative);
            assert_eq!(r.pipelines, [dls]);
            let cell = |l: f64, v: f64| r.cell(dls, l, v).unwrap();
            for v in [0.1, 0.4] {
                let (none, late) = (cell(0.0, v), cell(133.0, v));
                assert!(none.mean_error < late.mean_error, "{kind} {v} m/s: {none:?} vs {late:?}");
                // The servos' own lag: millimetres, not nothing.
                assert!(none.mean_error > 1e-4 && none.mean_error < 0.05, "{kind}: {none:?}");
                assert!(none.not_converged == Some(0.0), "{kind}: DLS reaches every target: {none:?}");
            }
            assert!(cell(133.0, 0.1).added_error < cell(133.0, 0.4).added_error, "{kind}");
            assert_eq!(r.fits.len(), 1, "{kind}: the claim is judged on DLS");
            assert_eq!(r.gravity, kind == ArmKind::So101, "{kind}");
            let text = serde_json::to_string(&r).unwrap();
            assert!(!text.contains("null") && !text.contains("NaN"), "{text}");
        }
    }

    #[test]
    fn tiny_nets_drive_every_pipeline_of_the_line_up() {
        let cfg = TrackingConfig {
            latencies_ms: vec![133.0],
            speeds: vec![0.3, 0.4],
            train_steps: 10,
            ..TrackingConfig::for_arm(ArmKind::Rail3.arm())
        };
        let r = tracking(&cfg).unwrap();
        assert_eq!(r.pipelines, CHAIN_SOLVERS.map(Pipeline::plain));
        assert_eq!(r.cells.len(), 5 * 2 * 2);
        for c in &r.cells {
            assert!(c.mean_error.is_finite() && c.worst_error >= c.mean_error, "{c:?}");
            let checked = matches!(c.pipeline.solver, SolverId::Iterative | SolverId::Hybrid);
            assert_eq!(c.not_converged.is_some(), checked, "{c:?}");
        }
        assert_eq!(r.fits.iter().map(|f| f.pipeline.solver).collect::<Vec<_>>(), [SolverId::Iterative]);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["arm"], "rail3");
        assert_eq!(json["config"]["arm"], "rail3");
        assert!(json.get("gravity").is_none(), "rail3 lies on a table");
        let back: TrackingConfig = serde_json::from_value(json["config"].clone()).unwrap();
        assert_eq!(back, r.config, "the configuration reads back");
    }

    #[test]
    fn solvers_that_do_not_apply_are_refused_naming_the_arm() {
        let rail3 = TrackingConfig::for_arm(ArmKind::Rail3.arm());
        for (s, why) in [(SolverId::Analytic, "closed form"), (SolverId::Exact, "not a controller")] {
            let e = TrackingConfig { solvers: vec![SolverId::Iterative, s], ..rail3.clone() }.validate().unwrap_err();
            let e = e.to_string();
            assert!(e.contains(s.key()) && e.contains("rail3") && e.contains(why), "{e}");
        }
        let e = TrackingConfig { solvers: vec![SolverId::Flow], ..TrackingConfig::default() }.validate().unwrap_err();
        assert!(e.to_string().contains("flow") && e.to_string().contains("2r"), "{e}");
        let e = TrackingConfig { solvers: vec![SolverId::Hybrid], ..rail3.clone() }.validate().unwrap_err();
        assert!(e.to_string().contains("classical") && e.to_string().contains("dls"), "{e}");
        let heavy = crate::plant::Body { gravity: true, ..Default::default() };
        let e = TrackingConfig { body: heavy, ..rail3 }.validate().unwrap_err();
        assert!(e.to_string().contains("rail3") && e.to_string().contains("gravity"), "{e}");
    }
}
