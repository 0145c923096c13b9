//! The gap to reality: the direction of each of the seed's claims, on seeded data.
//! Nothing here hard-codes a measured number; each test compares solvers or settings.

use elbow::experiments::{DegradationConfig, DegradationReport, Split, degradation};
use elbow::{HeadKind, Mismatch, Pipeline, Pose, Region, SolverId, TwoLinkArm};
use std::sync::OnceLock;

fn args(ticks: usize) -> DegradationConfig {
    DegradationConfig {
        noise: vec![0.0, 0.02, 0.06],
        backlash: vec![0.0, 0.05],
        targets: 1500,
        ood_fraction: 0.3,
        tolerance: 0.05,
        ticks,
        train_steps: 3000,
        region: Region::Annulus,
        mismatch: Mismatch { length_error: [0.02, -0.02], joint_offsets: Pose::new(0.01, -0.01) },
        seed: 7,
        arm: TwoLinkArm::default(),
    }
}

/// A pipeline by its key (`analytic`, `mse`, `envelope(mdn)`).
fn p(key: &str) -> Pipeline {
    key.parse().unwrap_or_else(|e| panic!("{e}"))
}

/// A split by its old name.
fn split(name: &str) -> Split {
    if name == "in" { Split::In } else { Split::Ood }
}

fn report() -> &'static DegradationReport {
    static R: OnceLock<DegradationReport> = OnceLock::new();
    R.get_or_init(|| degradation(&args(3)).unwrap())
}

fn cell<'a>(
    r: &'a DegradationReport,
    solver: &str,
    split: &str,
    noise: f64,
    backlash: f64,
) -> &'a elbow::experiments::degradation::Cell {
    r.cell(p(solver), self::split(split), noise, backlash)
        .unwrap_or_else(|| panic!("no cell {solver} {split} {noise} {backlash}"))
}

#[test]
fn analytic_degrades_gracefully_with_noise() {
    let r = report();
    let e: Vec<f64> = [0.0, 0.02, 0.06].iter().map(|&n| cell(r, "analytic", "in", n, 0.0).error.mean).collect();
    assert!(e[0] < e[1] && e[1] < e[2], "error should grow with noise: {e:?}");
    // Graceful: bounded by the noise-induced tip motion (reach x noise) plus the mismatch floor.
    assert!(e[2] < e[0] + 2.0 * 0.06 * 2.0, "{e:?}");
}

#[test]
fn analytic_is_honest_out_of_distribution_and_learned_is_not() {
    let r = report();
    for (noise, backlash) in [(0.0, 0.0), (0.06, 0.05)] {
        let analytic = cell(r, "analytic", "ood", noise, backlash);
        assert_eq!(analytic.reported, 1.0);
        assert_eq!(analytic.silent, 0.0);
        for learned in ["mse", "mdn", "mode"] {
            let c = cell(r, learned, "ood", noise, backlash);
            assert_eq!(c.reported, 0.0, "{learned} never reports");
            assert!(c.silent > 0.9, "{learned} fails silently: {}", c.silent);
        }
    }
}

#[test]
fn learned_heads_fail_silently_more_often_than_analytic() {
    let r = report();
    for noise in [0.0, 0.02, 0.06] {
        let analytic = cell(r, "analytic", "in", noise, 0.0).silent;
        for learned in ["mse", "mdn", "mode"] {
            let c = cell(r, learned, "in", noise, 0.0);
            assert!(c.silent >= analytic, "{learned} at noise {noise}: {} vs analytic {analytic}", c.silent);
        }
    }
    let mse = cell(r, "mse", "in", 0.0, 0.0).error.mean;
    let mdn = cell(r, "mdn", "in", 0.0, 0.0).error.mean;
    assert!(mdn * 5.0 < mse, "the averaging trap: MSE {mse} vs MDN {mdn}");
}

#[test]
fn envelope_turns_silent_failures_into_reported_fallbacks() {
    let r = report();
    for inner in ["mse", "mdn"] {
        let env = format!("envelope({inner})");
        for (noise, backlash) in [(0.0, 0.0), (0.02, 0.05)] {
            let raw_ood = cell(r, inner, "ood", noise, backlash);
            let env_ood = cell(r, &env, "ood", noise, backlash);
            assert!(env_ood.silent < raw_ood.silent, "{env} OOD silent {} vs {}", env_ood.silent, raw_ood.silent);
            assert!(env_ood.reported > 0.9, "{env} reports its fallbacks: {}", env_ood.reported);
            let raw_in = cell(r, inner, "in", noise, backlash);
            let env_in = cell(r, &env, "in", noise, backlash);
            assert!(env_in.silent <= raw_in.silent, "{env} held-out silent {} vs {}", env_in.silent, raw_in.silent);
            let log = env_in.envelope.expect("enveloped cells carry their log");
            assert!(log.interventions() > 0 && log.accepted + log.interventions() == 1500);
        }
    }
}

#[test]
fn the_lineup_measures_every_solver_and_every_enveloped_head() {
    let r = report();
    for pipeline in Pipeline::lineup() {
        assert!(r.cell(pipeline, Split::In, 0.0, 0.0).is_some(), "{pipeline}");
    }
    let heads = HeadKind::ALL.map(|h| Pipeline::enveloped(SolverId::Learned(h)));
    assert!(heads.iter().all(|&h| r.cells.iter().any(|c| c.solver == h)));
}

#[test]
fn residual_hybrid_closes_the_sim_to_real_gap() {
    let r = report();
    let analytic = cell(r, "analytic", "in", 0.0, 0.0).error.mean;
    let residual = cell(r, "residual", "in", 0.0, 0.0).error.mean;
    assert!(residual * 3.0 < analytic, "residual {residual} vs analytic {analytic}");
}

#[test]
fn backlash_hurts_an_open_loop_arm_and_the_servo_takes_it_up() {
    let open = degradation(&DegradationConfig { targets: 400, ood_fraction: 0.0, train_steps: 300, ..args(1) }).unwrap();
    let without = cell(&open, "analytic", "in", 0.0, 0.0).error.mean;
    let with = cell(&open, "analytic", "in", 0.0, 0.05).error.mean;
    assert!(with > without + 0.01, "open loop: backlash {with} vs none {without}");
    let servo = cell(report(), "analytic", "in", 0.0, 0.05).error.mean;
    assert!(servo < with, "servo {servo} vs open loop {with}");
}

#[test]
fn bad_arguments_are_refused_not_panicked_on() {
    for bad in [
        DegradationConfig { targets: 0, ..args(3) },
        DegradationConfig { tolerance: f64::NAN, ..args(3) },
        DegradationConfig { ticks: 0, ..args(3) },
        DegradationConfig { noise: vec![-1.0], ..args(3) },
        DegradationConfig { mismatch: Mismatch { length_error: [-1.0, 0.0], ..Mismatch::NONE }, ..args(3) },
    ] {
        assert!(degradation(&bad).is_err());
    }
}
