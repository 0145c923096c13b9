//! The command line against a hostile user (issue #9): every case refuses bad input with exit
//! code 2 and a message stating the limit, never panics (exit 101), never hangs, never loses a
//! good model and never prints a silently wrong answer. Runs use small bounds so the whole file
//! takes seconds.

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_elbow");

/// Exit code, stdout and stderr of one run (killed, and reported as a failure, past `limit`).
fn run_limited(args: &[&str], limit: Duration) -> (i32, String, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("waits").is_some() {
            break;
        }
        if start.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!("{args:?} ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn elbow(args: &[&str]) -> (i32, String, String) {
    run_limited(args, Duration::from_secs(60))
}

/// Runs through `sh` so redirections (`>&-`, `> /dev/full`) apply.
fn elbow_sh(args: &str, redirect: &str) -> (i32, String) {
    let out = Command::new("sh").arg("-c").arg(format!("\"$0\" {args} {redirect}")).arg(BIN).output().expect("sh runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into())
}

/// Asserts a refusal: exit 2, no panic, and every needle in the message.
fn refused(args: &[&str], needles: &[&str]) -> String {
    let (code, _, err) = elbow(args);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?} should say `{n}`: {err}");
    }
    err
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("elbow-hostile-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Trains a tiny model to `path`.
fn tiny_model(path: &Path, head: &str) {
    let p = path.to_str().unwrap();
    let (code, _, err) = elbow(&[
        "train",
        "--head",
        head,
        "--steps",
        "30",
        "--data-size",
        "256",
        "--eval-targets",
        "10",
        "--quiet",
        "--out",
        p,
    ]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn absurd_link_lengths_are_refused_with_the_range() {
    for cmd in [
        vec!["train", "--quiet"],
        vec!["experiment", "averaging"],
        vec!["experiment", "degradation"],
        vec!["solve", "1", "0"],
    ] {
        for lengths in ["1e155,1", "1e308,1e308", "1.35e154,1", "1.3e154,1", "1e-162,1", "1e-200,1e-200", "1,1e-5"] {
            let mut args = cmd.clone();
            args.extend(["--lengths", lengths]);
            let err = refused(&args, &["1e"]);
            assert!(!err.contains("joint limits"), "{err}");
        }
    }
    let dir = scratch("lengths");
    let out = dir.join("m.json");
    refused(&["train", "--lengths", "1e155,1", "--quiet", "--out", out.to_str().unwrap()], &["1e6"]);
    assert!(!out.exists(), "no file is left behind");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn counts_are_bounded_before_anything_is_allocated() {
    for (args, limit) in [
        (vec!["experiment", "averaging", "--targets", "18446744073709551615"], "1000000"),
        (vec!["experiment", "averaging", "--targets", "1000000000000"], "1000000"),
        (vec!["experiment", "averaging", "--targets", "0"], "from 1"),
        (vec!["experiment", "averaging", "--steps", "1000000000000"], "10000000"),
        (vec!["experiment", "degradation", "--train-steps", "1000000000000"], "10000000"),
        (vec!["experiment", "degradation", "--targets", "0"], "from 1"),
        (vec!["train", "--eval-targets", "1000000000000"], "1000000"),
        (vec!["train", "--steps", "1000000000000"], "10000000"),
        (vec!["train", "--steps", "0"], "from 1"),
        (vec!["bench", "--train-steps", "1000000000000"], "200000"),
        (vec!["bench", "--train-steps", "5"], "from 10"),
    ] {
        refused(&args, &[limit]);
    }
    // Memory and work are estimated from the arguments and refused up front, in well under a second.
    let t = Instant::now();
    refused(&["train", "--hidden", "4096", "--depth", "8", "--batch", "65536", "--steps", "1"], &["memory", "limit"]);
    refused(&["train", "--hidden", "1024", "--depth", "8", "--steps", "10000000"], &["FLOP", "limit"]);
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn write_errors_on_stdout_are_errors() {
    for args in [
        "solve 1 1",
        "solve 1 1 --json",
        "train --steps 20 --data-size 64 --eval-targets 10 --json",
        "experiment degradation --targets 10 --train-steps 10 --noise 0 --backlash 0 --csv",
    ] {
        for redirect in ["> /dev/full", ">&-"] {
            let (code, err) = elbow_sh(args, redirect);
            assert_eq!(code, 2, "{args} {redirect}: {err}");
            assert!(err.contains("standard output") && !err.contains("panicked"), "{args} {redirect}: {err}");
        }
    }
    // Even with stderr full too, the exit code tells, and nothing panics.
    for args in ["solve 1 1", "solve 1 nan", "train --steps 0"] {
        assert_eq!(elbow_sh(args, "> /dev/full 2> /dev/full").0, 2, "{args}");
    }
    // Redirecting to /dev/null is fine.
    assert_eq!(elbow_sh("solve 1 1", "> /dev/null").0, 0);
    // Help and version are output too.
    for args in ["--help", "--version", "atlas --help"] {
        assert_eq!(elbow_sh(args, "> /dev/full").0, 2, "{args}");
        assert_eq!(elbow_sh(args, "> /dev/null").0, 0, "{args}");
    }
}

#[test]
fn hostile_model_files_are_refused_naming_the_field() {
    let dir = scratch("models");
    let good = dir.join("good.json");
    tiny_model(&good, "mdn");
    let text = std::fs::read_to_string(&good).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(&str, Edit)> = vec![
        ("mdn.sigma_min", Box::new(|v| v["mdn"]["sigma_min"] = (-1.0).into())),
        ("mdn.sigma_min", Box::new(|v| v["mdn"]["sigma_min"] = 1e30.into())),
        ("mdn.k", Box::new(|v| v["mdn"]["k"] = 1_000_000_000_000u64.into())),
        ("mdn.k", Box::new(|v| v["mdn"]["k"] = 0.into())),
        ("mdn.k", Box::new(|v| v["mdn"]["k"] = 6148914691236517206u64.into())),
        ("mdn.d", Box::new(|v| v["mdn"]["d"] = 7.into())),
        ("arm", Box::new(|v| v["arm"]["l1"] = (-1.0).into())),
        ("arm", Box::new(|v| v["arm"]["limits"][1]["max"] = 1e20.into())),
        ("region", Box::new(|v| v["region"] = serde_json::json!({"Sector": {"from": 3.0, "to": 1.0}}))),
        ("output_scale", Box::new(|v| v["output_scale"] = 0.0.into())),
        ("max_correction", Box::new(|v| v["max_correction"] = (-1.0).into())),
        ("format", Box::new(|v| v["format"] = "other".into())),
    ];
    let bad = dir.join("bad.json");
    for (field, edit) in &cases {
        let mut m = v.clone();
        edit(&mut m);
        std::fs::write(&bad, serde_json::to_string(&m).unwrap()).unwrap();
        let err = elbow::LearnedModel::load(&bad).unwrap_err().to_string();
        assert!(err.contains(field), "{field}: {err}");
        // The experiments' --model refuses it the same way.
        let e = refused(
            &["experiment", "averaging", "--model", bad.to_str().unwrap(), "--steps", "5", "--targets", "5"],
            &[],
        );
        assert!(e.contains(field) || e.contains("not a valid"), "{field}: {e}");
    }
    // A non-finite weight: JSON has no NaN, but a number too large for f32 becomes infinite.
    v["net"]["layers"][0]["b"][0] = serde_json::json!(1e300);
    std::fs::write(&bad, serde_json::to_string(&v).unwrap()).unwrap();
    let err = elbow::LearnedModel::load(&bad).unwrap_err().to_string();
    assert!(err.contains("net.layers[0].b") || err.contains("not a valid"), "{err}");
    // Size and kind are checked before reading.
    let big = dir.join("big.json");
    std::fs::File::create(&big).unwrap().set_len(elbow::learned::MAX_MODEL_FILE_BYTES + 1).unwrap();
    assert!(elbow::LearnedModel::load(&big).unwrap_err().to_string().contains("limit"));
    assert!(elbow::LearnedModel::load(Path::new("/dev/zero")).unwrap_err().to_string().contains("device"));
    assert!(elbow::LearnedModel::load(&dir).unwrap_err().to_string().contains("directory"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn outputs_that_cannot_be_written_are_refused_before_training() {
    let dir = scratch("out");
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string path and mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let t = Instant::now();
    refused(&["train", "--quiet", "--out", fifo.to_str().unwrap()], &["FIFO"]);
    refused(&["train", "--quiet", "--out", "/proc/version"], &["cannot write the model"]);
    refused(&["train", "--quiet", "--out", dir.to_str().unwrap()], &["directory"]);
    refused(&["train", "--quiet", "--out", "/nonexistent-elbow-dir/m.json"], &["cannot write the model"]);
    refused(&["train", "--quiet", "--out", "/dev/full"], &["device"]);
    assert!(t.elapsed() < Duration::from_secs(5), "refused before training: {:?}", t.elapsed());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_good_model_is_never_replaced_by_a_bad_or_partial_one() {
    let dir = scratch("keep");
    let path = dir.join("m.json");
    let p = path.to_str().unwrap();
    tiny_model(&path, "mse");
    let before = std::fs::read(&path).unwrap();
    // A diverged run is reported and saves nothing.
    let err = refused(
        &["train", "--lr", "0.999", "--steps", "2000", "--data-size", "512", "--quiet", "--out", p],
        &["diverged"],
    );
    assert!(err.contains("nothing was saved"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // Ctrl-C or SIGTERM mid-training: exit 130, the old model untouched, no temporary files.
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let child: Child = Command::new(BIN)
            .args(["train", "--steps", "1000000", "--quiet", "--out", p])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        // SAFETY: signalling our own child by its id.
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
    // Retraining does replace it, whole.
    tiny_model(&path, "mdn");
    assert!(elbow::LearnedModel::load(&path).is_ok());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary files left");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn answers_are_right_or_refused() {
    refused(&["solve", "1", "0.8", "--elbow-limits", "1e20,2e20"], &["720"]);
    refused(&["train", "--region", "sector:720,800"], &["360"]);
    refused(&["experiment", "degradation", "--region", "sector:720,800"], &["360"]);
    refused(&["train", "--region", "sector:0,360"], &["360"]);
    // The branch average at the inner rim is a straight elbow (0 deg), not 90.
    let (code, out, _) = elbow(&["solve", "0.5", "0", "--lengths", "1,0.5", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["rows"][2]["name"], "average");
    assert!(v["rows"][2]["elbow_deg"].as_f64().unwrap().abs() < 1e-6, "{out}");
    // The largest accepted arm still answers exactly.
    let (code, out, _) = elbow(&["solve", "1e6", "5e5", "--lengths", "1e6,1e6", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["rows"][0]["fk_error"].as_f64().unwrap() < 1e-6 * 1e6, "{out}");
    // JSON never holds null numbers.
    assert!(!out.contains("null") || v["missed_by"].is_null());
}

#[test]
fn negative_values_parse_and_errors_are_clear() {
    let (code, out, err) = elbow(&["solve", "1", "0.5", "--elbow-limits", "-150,150"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("average"));
    let (code, _, err) = elbow(&[
        "experiment",
        "degradation",
        "--targets",
        "10",
        "--train-steps",
        "10",
        "--noise",
        "0",
        "--backlash",
        "0",
        "--length-error",
        "-0.1,0.1",
        "--joint-offset",
        "-0.01,-0.02",
        "--csv",
    ]);
    assert_eq!(code, 0, "{err}");
    for args in
        [vec!["solve", "1", "1", "--lengths", "-1,1"], vec!["train", "--steps", "-5"], vec!["train", "--lr", "-1"]]
    {
        let err = refused(&args, &[]);
        assert!(!err.contains("-- -"), "{args:?}: {err}");
    }
    let err = refused(&["train", "--lengths", "1e-200,1e-200"], &["1e-6"]);
    assert!(!err.contains("joint limits"), "{err}");
}

#[test]
fn averaging_uses_given_models() {
    let dir = scratch("given");
    let (mse, mdn, mode) = (dir.join("mse.json"), dir.join("mdn.json"), dir.join("mode.json"));
    tiny_model(&mse, "mse");
    tiny_model(&mdn, "mdn");
    tiny_model(&mode, "mode");
    let (code, out, err) = elbow(&[
        "experiment",
        "averaging",
        "--model",
        mse.to_str().unwrap(),
        "--model",
        mdn.to_str().unwrap(),
        "--targets",
        "50",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["train_seconds"].as_f64(), Some(0.0), "nothing trained: {out}");
    refused(&["experiment", "averaging", "--model", mode.to_str().unwrap()], &["mode"]);
    refused(&["experiment", "averaging", "--model", mse.to_str().unwrap(), "--lengths", "1,0.5"], &["lengths"]);
    refused(&["experiment", "averaging", "--model", "/dev/zero"], &["device"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// Hostile values for any flag.
const VALUES: &[&str] = &[
    "nan",
    "NaN",
    "inf",
    "-inf",
    "-1",
    "0",
    "-0",
    "1.5",
    "1e308",
    "-1e308",
    "1e-320",
    "18446744073709551616",
    "1000000000000",
    "1,1",
    "-1,-1",
    "1e155,1",
    "nan,1",
    "1,",
    ",",
    "720,800",
    "-150,150",
    "sector:720,800",
    "sector:-1e308,1e308",
    "sector:0,360",
    "annulus",
    "",
    " ",
    "abc",
    "--",
    "-",
    "\u{1F4A5}",
    "/dev/zero",
    "/proc/version",
    "/nonexistent/x.json",
    "/",
];

/// Flags each command may receive hostile values for, with base flags that keep valid runs short.
fn command(which: usize) -> (Vec<&'static str>, &'static [&'static str]) {
    match which {
        0 => (vec!["solve"], &["--lengths", "--elbow-limits", "--json"]),
        1 => (
            vec!["train", "--steps", "5", "--data-size", "64", "--eval-targets", "10", "--quiet"],
            &[
                "--lengths",
                "--elbow-limits",
                "--region",
                "--lr",
                "--hidden",
                "--depth",
                "--batch",
                "--components",
                "--head",
                "--encoding",
                "--activation",
                "--seed",
                "--out",
                "--json",
            ],
        ),
        2 => (
            vec!["experiment", "averaging", "--steps", "5", "--targets", "10", "--quiet"],
            &["--lengths", "--elbow-limits", "--region", "--seed", "--model", "--json"],
        ),
        3 => (
            vec![
                "experiment",
                "degradation",
                "--train-steps",
                "5",
                "--targets",
                "10",
                "--noise",
                "0",
                "--backlash",
                "0",
            ],
            &[
                "--lengths",
                "--elbow-limits",
                "--region",
                "--seed",
                "--ood-fraction",
                "--tolerance",
                "--ticks",
                "--length-error",
                "--joint-offset",
                "--json",
                "--csv",
            ],
        ),
        _ => (vec!["bench"], &["--train-steps"]),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 80, failure_persistence: None, ..ProptestConfig::default() })]

    /// No invocation built from hostile fragments panics (exit 101), dies of a signal, or runs
    /// past a time bound.
    #[test]
    fn no_hostile_invocation_panics_or_hangs(
        which in 0usize..5,
        picks in proptest::collection::vec((0usize..16, 0usize..VALUES.len()), 0..4),
        xy in (0usize..VALUES.len(), 0usize..VALUES.len()),
    ) {
        let (mut args, flags) = command(which);
        if which == 0 {
            args.push(VALUES[xy.0]);
            args.push(VALUES[xy.1]);
        }
        if which == 4 {
            // Bench with a valid step count would run for seconds: always give it a hostile one.
            args.extend(["--train-steps", VALUES[xy.0]]);
        }
        for (f, v) in picks {
            let flag = flags[f % flags.len()];
            args.push(flag);
            if !matches!(flag, "--json" | "--csv") {
                args.push(VALUES[v]);
            }
        }
        let (code, _, err) = run_limited(&args, Duration::from_secs(20));
        prop_assert!(code != 101 && code >= 0, "{:?} exited {}: {}", args, code, err);
        prop_assert!(!err.contains("panicked"), "{:?}: {}", args, err);
    }
}
