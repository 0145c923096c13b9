//! Tracking a figure eight under control latency: what latency costs the classical solvers (more
//! the faster the target), the claim's fit, and the command line (JSON, bad flags, the plot).

use elbow::experiments::degradation::Verdict;
use elbow::experiments::tracking::{TrackingConfig, tracking};
use elbow::lineup::{Pipeline, SolverId};

mod common;

const ANALYTIC: Pipeline = Pipeline::plain(SolverId::Analytic);

#[test]
fn latency_costs_the_analytic_solver_in_proportion_to_speed_times_delay() {
    // The default latencies and speeds; the heads barely trained (they are not judged here).
    let cfg = TrackingConfig { train_steps: 50, ..TrackingConfig::default() };
    let r = tracking(&cfg).unwrap();
    let speeds = [0.1, 0.2, 0.4];
    assert_eq!(r.config.latencies_ms, [0.0, 33.0, 67.0, 133.0]);
    let cell = |l: f64, v: f64| r.cell(ANALYTIC, l, v).unwrap();
    for v in speeds {
        let (none, most) = (cell(0.0, v), cell(133.0, v));
        assert!(none.mean_error < most.mean_error, "{v} m/s: {none:?} vs {most:?}");
        assert!(none.worst_error < most.worst_error, "{v} m/s: {none:?} vs {most:?}");
        // The servos' own lag is a few millimetres, not nothing.
        assert!(none.mean_error > 1e-4 && none.mean_error < 0.05, "{none:?}");
        assert!(none.samples > 0 && most.added_error > 0.0);
    }
    // The added error grows with speed at every latency.
    for l in [33.0, 67.0, 133.0] {
        let added: Vec<f64> = speeds.iter().map(|&v| cell(l, v).added_error).collect();
        assert!(added.windows(2).all(|w| w[0] < w[1]), "{l} ms: {added:?}");
    }
    // The verdict follows its rule from the fitted numbers.
    let fit = r.fit(ANALYTIC).unwrap();
    assert_eq!(fit.points.len(), 9, "three speeds x three nonzero latencies");
    let (slope, r2) = (fit.slope.unwrap(), fit.r_squared.unwrap());
    assert_eq!(fit.holds(), Some(r2 >= 0.9 && slope > 0.0));
    let both = r.fits.iter().all(|f| f.holds() == Some(true));
    assert_eq!(r.claim.verdict == Verdict::Holds, both, "{:?}", r.claim);
    // The cost is of the order of the distance the target moves during the delay.
    assert!(slope > 0.3 && slope < 3.0, "{slope}");
}

fn run(args: &[&str]) -> common::Run {
    common::elbow(&[&["experiment", "tracking"][..], args].concat())
}

const SMALL: &[&str] = &["--speeds", "0.4", "--latency", "33,133", "--train-steps", "50"];

#[test]
fn the_command_line_prints_json_without_null_or_nan_and_a_table() {
    let out = run(&[SMALL, &["--json"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("null") && !out.stdout.contains("NaN"), "{}", out.stdout);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["config"]["latencies_ms"], serde_json::json!([0.0, 33.0, 133.0]), "0 ms always runs");
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 10 * 3, "ten pipelines x three latencies x one speed");
    assert_eq!(cells[0]["pipeline"], "analytic");
    assert!(cells.iter().any(|c| c["pipeline"] == "envelope(mdn)" && c["envelope_accepted"].is_number()));
    assert!(v["claim"]["verdict"].is_string() && v["fits"][0]["slope"].is_number(), "{}", v["claim"]);
    let table = run(SMALL);
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(table.stdout.contains("133 ms") && table.stdout.contains("0.4 m/s"), "{}", table.stdout);
    assert!(table.stdout.contains("verdict: ") && table.stdout.contains("R²"), "{}", table.stdout);
}

#[test]
fn bad_flags_exit_2_naming_the_flag_and_its_unit() {
    for (flag, value, unit) in [
        ("--latency", "-5", "ms"),
        ("--latency", "10001", "ms"),
        ("--latency", "nan", "ms"),
        ("--latency", "0,abc", "ms"),
        ("--speeds", "0", "m/s"),
        ("--speeds", "5.5", "m/s"),
        ("--speeds", "inf", "m/s"),
        ("--rate", "0.5", "Hz"),
        ("--rate", "1001", "Hz"),
        ("--laps", "1", "2 to 100"),
        ("--laps", "2.5", "whole number"),
        ("--train-steps", "0", "whole number"),
        ("--seed", "-1", "whole number"),
    ] {
        let out = common::run_limited(&["experiment", "tracking", flag, value], common::unit() * 5);
        assert_eq!(out.code, 2, "{flag} {value}: {}", out.stderr);
        assert!(out.stderr.contains(flag) && out.stderr.contains(unit), "{flag} {value}: {}", out.stderr);
        assert!(out.stdout.is_empty() && !out.stderr.contains("panicked"), "{flag} {value}");
    }
    // Values each fine alone, refused together before any work: too slow a target for the work
    // limit, too fast a lap for the control rate.
    for (args, needle) in
        [(&["--speeds", "0.0001"][..], "s of plant time"), (&["--speeds", "5", "--rate", "1"][..], "Hz")]
    {
        let out = common::run_limited(&[&["experiment", "tracking"][..], args].concat(), common::unit() * 5);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle) && out.stderr.contains("m/s"), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "one sentence: {}", out.stderr);
    }
}

#[test]
fn the_plot_is_written_after_the_numbers_and_bad_paths_fail_before_any_work() {
    let dir = std::env::temp_dir().join(format!("elbow-tracking-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["t.svg", "t.png"] {
        let path = dir.join(name);
        let out = run(&[SMALL, &["--json", "--plot", path.to_str().unwrap()]].concat());
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(serde_json::from_str::<serde_json::Value>(&out.stdout).is_ok(), "the numbers print too");
        let bytes = std::fs::read(&path).unwrap();
        if name.ends_with("svg") {
            let svg = String::from_utf8_lossy(&bytes);
            assert!(svg.contains("<svg") && svg.contains("envelope(mdn)") && svg.contains("0.4 m/s"), "{svg:.300}");
        } else {
            assert_eq!(&bytes[..4], b"\x89PNG");
        }
    }
    for (plot, needle) in [("t.pdf", "must end in .png or .svg"), ("/nonexistent-dir/t.svg", "/nonexistent-dir")] {
        let args = [&["experiment", "tracking"][..], SMALL, &["--plot", plot]].concat();
        let out = common::run_limited(&args, common::unit() * 5);
        assert_eq!(out.code, 2, "{plot}: {}", out.stderr);
        assert!(out.stderr.contains(needle) && out.stderr.contains("--plot"), "{plot}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "refused before any work: {}", out.stdout);
        assert_eq!(out.stderr.trim().lines().count(), 1, "one sentence: {}", out.stderr);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `--arm rail3` runs the chain's line-up (tiny nets here) and says which arm ran, in JSON and
/// in the table; a solver that does not apply to the arm is refused before any work with exit
/// code 2, naming the solver and the arm.
#[test]
fn a_chain_tracks_and_refuses_the_solvers_it_does_not_have() {
    let tiny = ["--speeds", "0.3,0.4", "--latency", "133", "--train-steps", "10"];
    let out = run(&[&["--arm", "rail3", "--json"][..], &tiny].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("null") && !out.stdout.contains("NaN"), "{}", out.stdout);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!((&v["arm"], &v["config"]["arm"]), (&serde_json::json!("rail3"), &serde_json::json!("rail3")));
    let pipelines: Vec<&str> = v["pipelines"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert_eq!(pipelines, ["mse", "mdn", "flow", "dls", "hybrid"]);
    assert_eq!(v["fits"].as_array().unwrap().len(), 1, "judged on DLS");
    assert_eq!(v["fits"][0]["pipeline"], "dls");
    let table = run(&[&["--arm", "so101", "--solvers", "dls"][..], &tiny].concat());
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(table.stdout.starts_with("Arm so101") && table.stdout.contains("gravity on"), "{}", table.stdout);
    assert!(table.stdout.contains("verdict: ") && table.stdout.contains("dls:"), "{}", table.stdout);
    for (arm, solvers, needle) in [
        ("rail3", "analytic", "closed form"),
        ("3r", "dls,exact", "not a controller"),
        ("two-link", "dls,flow", "chain's solver"),
        ("so101", "mdn,hybrid", "classical"),
    ] {
        let args = [&["experiment", "tracking", "--arm", arm, "--solvers", solvers][..], &tiny].concat();
        let out = common::run_limited(&args, common::unit() * 5);
        assert_eq!(out.code, 2, "{arm} {solvers}: {}", out.stderr);
        let arm_key = if arm == "two-link" { "2r" } else { arm };
        assert!(out.stderr.contains(needle) && out.stderr.contains(arm_key), "{arm} {solvers}: {}", out.stderr);
        assert!(out.stdout.is_empty() && !out.stderr.contains("panicked"), "{arm} {solvers}");
        assert_eq!(out.stderr.trim().lines().count(), 1, "one sentence: {}", out.stderr);
    }
    // The two-link arm's body flags are refused on a chain, which has its own; a bad arm or
    // solver key is refused by the parser.
    for args in [
        &["--arm", "rail3", "--gravity"][..],
        &["--arm", "so101", "--link-mass", "1,1"],
        &["--arm", "4r"],
        &["--arm", "rail3", "--solvers", "transformer"],
    ] {
        let out = common::run_limited(&[&["experiment", "tracking"][..], args].concat(), common::unit() * 5);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty() && !out.stderr.contains("panicked"), "{args:?}: {}", out.stderr);
    }
}
