//! Issue 48: a servo far stiffer than the plant's 1 ms step, as a user types it on the command
//! line (`--kp 1e6 --torque-limit 1e4`), gives finite numbers in every experiment that takes it;
//! a servo beyond what the step resolves is refused before any work, in one sentence with the
//! quantity, its unit and the limit.

mod common;

use common::{Run, elbow};

/// The issue's servo.
const STIFF: &[&str] = &["--kp", "1e6", "--torque-limit", "1e4"];

/// Every number in `json` (recursively), with the strings the project writes for non-finite ones
/// counted as such.
fn all_finite(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Number(n) => n.as_f64().is_some_and(f64::is_finite),
        serde_json::Value::String(s) => !matches!(s.as_str(), "NaN" | "inf" | "-inf"),
        serde_json::Value::Array(a) => a.iter().all(all_finite),
        serde_json::Value::Object(o) => o.values().all(all_finite),
        _ => true,
    }
}

fn json(run: &Run) -> serde_json::Value {
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains("null"), "{}", run.stdout);
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

#[test]
fn tracking_on_the_issues_stiff_servo_gives_finite_errors() {
    // Two speeds at one latency above 0 ms: the least a run with something to judge asks.
    let args = [&["experiment", "tracking", "--speeds", "0.2,0.4", "--latency", "33", "--train-steps", "5"][..], STIFF];
    let v = json(&elbow(&[&args.concat()[..], &["--json"]].concat()));
    assert!(all_finite(&v), "{v}");
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 10 * 2 * 2, "ten pipelines x two latencies x two speeds");
    for c in cells {
        let mean = c["mean_error"].as_f64().unwrap();
        assert!(mean < 2.0, "within the arm's reach of the target: {c}");
    }
    // The table says so too.
    let table = elbow(&args.concat());
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(!table.stdout.contains("NaN") && !table.stdout.contains("inf"), "{}", table.stdout);
}

#[test]
fn degradation_on_the_issues_stiff_servo_gives_finite_errors_and_a_catalog() {
    let dir = common::scratch().join("stiff-servo");
    std::fs::create_dir_all(&dir).unwrap();
    let catalog = dir.join("catalog.jsonl");
    let _ = std::fs::remove_file(&catalog);
    let levels = ["--encoder", "0", "--actuator", "0", "--backlash", "0,0.02", "--target-noise", "0"];
    let more = ["--mismatch-scale", "0", "--friction", "0", "--flex", "0", "--latency", "0", "--camera-noise", "0"];
    let rest = ["--camera-offset", "0", "--camera-period", "0", "--combined", "0", "--ood", "none"];
    let run =
        [&["experiment", "degradation", "--protocol", "plant", "--targets", "8", "--train-steps", "5"][..], STIFF];
    let args = [&run.concat()[..], &levels, &more, &rest].concat();
    let catalog_arg = catalog.display().to_string();
    let out = elbow(&[&args[..], &["--json", "--catalog", &catalog_arg]].concat());
    let v = json(&out);
    assert!(all_finite(&v), "{v}");
    // The analytic solver on the perfect arm: a finite error, most targets reached (the issue's
    // servo is nearly undamped and may still ring when the settle times out).
    let baseline = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["solver"] == "analytic" && c.get("channel").is_none())
        .expect("the analytic baseline cell");
    assert!(baseline["missed"].as_f64().unwrap() <= 0.25, "{baseline}");
    // The catalog holds what the run found, every record finite.
    let text = std::fs::read_to_string(&catalog).unwrap();
    assert!(out.stderr.contains(&format!("wrote {} failure record", text.lines().count())), "{}", out.stderr);
    for line in text.lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(all_finite(&record["happened"]), "{line}");
    }
}

#[test]
fn a_servo_beyond_what_the_step_resolves_is_refused_before_any_work() {
    for (args, words) in [
        (&["--kp", "1e6", "--armature", "1e-5"][..], "sqrt(kp / armature), is 3.162e5 rad/s, above the 1e5 rad/s"),
        (&["--kv", "1e4"][..], "kv / armature, is 3.571e5 1/s, above the 5e4 1/s"),
        (&["--kp", "1e6", "--torque-limit", "1e6"][..], "is 3.571e7 rad/s^2, above the 1e6 rad/s^2"),
        (&["--armature", "0"][..], "'--armature <ARMATURE>': must be a number from 1e-6 to 1000 kg m^2"),
        (&["--kp", "1e-300"][..], "'--kp <KP>': must be a number from 0.001 to 1e6 N m/rad"),
        (&["--link-mass", "1e-300,0.05"][..], "'--link-mass <LINK_MASS>': must be a number from 1e-6 to 1000 kg"),
    ] {
        for experiment in ["tracking", "degradation"] {
            let out = elbow(&[&["experiment", experiment][..], args].concat());
            assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
            assert!(out.stdout.is_empty(), "{args:?}: nothing ran: {}", out.stdout);
            let first = out.stderr.lines().next().unwrap_or_default();
            assert!(first.contains(words), "{args:?}: {}", out.stderr);
        }
    }
}
