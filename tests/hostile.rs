//! The command line against a hostile user (issue #9): every case refuses bad input with exit
//! code 2 and a message stating the limit, never panics (exit 101), never hangs, never loses a
//! good model and never prints a silently wrong answer. Runs use small bounds so the whole file
//! takes seconds.

use proptest::prelude::*;
use std::path::{Path, PathBuf};

mod common;
use common::{Run, elbow, elbow_sh, run_limited, unit};

/// Asserts a refusal: exit 2, no panic, and every needle in the message.
fn refused(args: &[&str], needles: &[&str]) -> String {
    refused_run(args, needles).stderr
}

/// [`refused`], returning the whole run (for its time).
fn refused_run(args: &[&str], needles: &[&str]) -> Run {
    let run = elbow(args);
    let err = &run.stderr;
    assert_eq!(run.code, 2, "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?} should say `{n}`: {err}");
    }
    run
}

/// Asserts a refusal that comes before any work: well under the time of the reference run
/// ([`common::unit`]), whose start-up alone a refusal needs.
fn refused_up_front(args: &[&str], needles: &[&str]) {
    let run = refused_run(args, needles);
    assert!(run.elapsed < unit() * 5, "{args:?} took {:?}, the reference run {:?}", run.elapsed, unit());
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
    let Run { code, stderr: err, .. } = elbow(&[
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
    // Memory and work are estimated from the arguments and refused up front.
    refused_up_front(
        &["train", "--hidden", "4096", "--depth", "8", "--batch", "65536", "--steps", "1"],
        &["memory", "limit"],
    );
    refused_up_front(&["train", "--hidden", "1024", "--depth", "8", "--steps", "10000000"], &["FLOP", "limit"]);
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
            let Run { code, stderr: err, .. } = elbow_sh(args, redirect);
            assert_eq!(code, 2, "{args} {redirect}: {err}");
            assert!(err.contains("standard output") && !err.contains("panicked"), "{args} {redirect}: {err}");
        }
    }
    // Even with stderr full too, the exit code tells, and nothing panics; notes on a full stderr
    // (atlas's "wrote FILE") do not fail a run that worked.
    let dir = scratch("stderr");
    let atlas = format!("atlas --solver analytic --resolution 8 --out {}", dir.join("a.png").display());
    assert_eq!(elbow_sh(&atlas, "2> /dev/full").code, 0, "{atlas}");
    std::fs::remove_dir_all(&dir).ok();
    for args in ["solve 1 1", "solve 1 nan", "train --steps 0"] {
        assert_eq!(elbow_sh(args, "> /dev/full 2> /dev/full").code, 2, "{args}");
    }
    // Redirecting to /dev/null is fine.
    assert_eq!(elbow_sh("solve 1 1", "> /dev/null").code, 0);
    // Help and version are output too.
    for args in ["--help", "--version", "atlas --help"] {
        let full = elbow_sh(args, "> /dev/full");
        assert!(full.code == 2 && full.stderr.contains("standard output"), "{args} > /dev/full: {}", full.stderr);
        let closed = elbow_sh(args, ">&-");
        assert!(closed.code == 2 && closed.stderr.contains("standard output"), "{args} >&-: {}", closed.stderr);
        assert_eq!(elbow_sh(args, "> /dev/null").code, 0, "{args}");
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
        ("mdn.sigma_min", Box::new(|v| v["solvers"]["mdn"]["mdn"]["sigma_min"] = (-1.0).into())),
        ("mdn.sigma_min", Box::new(|v| v["solvers"]["mdn"]["mdn"]["sigma_min"] = 1e30.into())),
        ("mdn.k", Box::new(|v| v["solvers"]["mdn"]["mdn"]["k"] = 1_000_000_000_000u64.into())),
        ("mdn.k", Box::new(|v| v["solvers"]["mdn"]["mdn"]["k"] = 0.into())),
        ("mdn.k", Box::new(|v| v["solvers"]["mdn"]["mdn"]["k"] = 6148914691236517206u64.into())),
        ("mdn.d", Box::new(|v| v["solvers"]["mdn"]["mdn"]["d"] = 7.into())),
        ("arm", Box::new(|v| v["arm"]["chain"]["links"][0]["length"] = (-1.0).into())),
        ("arm", Box::new(|v| v["arm"]["chain"]["links"][1]["limits"]["max"] = 1e20.into())),
        (
            "region",
            Box::new(|v| v["solvers"]["mdn"]["region"] = serde_json::json!({"Sector": {"from": 3.0, "to": 1.0}})),
        ),
        ("output_scale", Box::new(|v| v["solvers"]["mdn"]["output_scale"] = 0.0.into())),
        ("max_correction", Box::new(|v| v["solvers"]["mdn"]["max_correction"] = (-1.0).into())),
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
    v["solvers"]["mdn"]["net"]["layers"][0]["b"][0] = serde_json::json!(1e300);
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
    // A run of 100 times the reference's steps: refused after training, each would take far
    // longer than the bound of `refused_up_front`.
    let long = ["train", "--steps", "30000", "--data-size", "1024", "--quiet", "--out"];
    for (out, needle) in [
        (fifo.to_str().unwrap(), "FIFO"),
        ("/proc/version", "cannot write the model"),
        (dir.to_str().unwrap(), "directory"),
        ("/nonexistent-elbow-dir/m.json", "cannot write the model"),
        ("/dev/full", "device"),
    ] {
        refused_up_front(&[&long[..], &[out]].concat(), &[needle]);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_good_model_is_never_replaced_by_a_bad_or_partial_one() {
    let dir = scratch("keep");
    let path = dir.join("m.json");
    let p = path.to_str().unwrap();
    tiny_model(&path, "mse");
    let before = std::fs::read(&path).unwrap();
    // A diverged run is reported and saves nothing: a deep, wide ReLU net at a run-away rate
    // blows up again after each of the divergence guard's roll-backs (at 0.999 the default net
    // recovers, now that the guard rolls it back).
    let wild = ["--activation", "relu", "--hidden", "512", "--depth", "6", "--lr", "0.999"];
    let err = refused(
        &[&["train"][..], &wild, &["--steps", "2000", "--data-size", "512", "--quiet", "--out", p]].concat(),
        &["diverged", "roll-backs"],
    );
    assert!(err.contains("nothing was saved"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // Ctrl-C or SIGTERM mid-training, and during the held-out evaluation (a million targets
    // through a wide net): the run stops within a few steps (exit 130, saying so), the old model
    // untouched, no temporary files.
    let training = ["train", "--steps", "2000000", "--data-size", "1024", "--quiet", "--out", p];
    let evaluating = [
        "train",
        "--steps",
        "10",
        "--data-size",
        "256",
        "--hidden",
        "1024",
        "--eval-targets",
        "1000000",
        "--quiet",
        "--out",
        p,
    ];
    for (args, signal) in
        [(&training[..], libc::SIGINT), (&training[..], libc::SIGTERM), (&evaluating[..], libc::SIGINT)]
    {
        let run = interrupted(args, signal);
        assert_eq!(run.code, 130, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("interrupted") && run.stderr.contains("nothing was saved"), "{}", run.stderr);
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
    // Retraining does replace it, whole.
    tiny_model(&path, "mdn");
    assert!(elbow::LearnedModel::load(&path).is_ok());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary files left");
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs `elbow ARGS`, sends `signal` once the run is well under way (one reference run's time
/// after the start), and returns the run, which must end within a few reference runs of it.
fn interrupted(args: &[&str], signal: i32) -> Run {
    let child = common::spawn(args);
    std::thread::sleep(unit());
    // SAFETY: signalling our own child by its id.
    unsafe { libc::kill(child.id() as i32, signal) };
    common::wait_limited(child, &format!("{args:?} after signal {signal}"), unit() * 6)
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// Runs `elbow ARGS` under a file-size limit of `blocks` (`ulimit -f`: blocks of 512 bytes in
/// dash, 1024 in bash); standard output and error are pipes, which the limit does not touch.
fn under_file_size_limit(blocks: u32, args: &[&str]) -> Run {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    common::elbow_sh_after(&format!("ulimit -f {blocks}"), &quoted.join(" "), "")
}

/// A small plant-protocol degradation run, less `--targets`: encoder noise only.
const SMALL_DEGRADATION: &[&str] = &[
    "experiment",
    "degradation",
    "--protocol",
    "plant",
    "--train-steps",
    "30",
    "--encoder",
    "0,0.05",
    "--actuator",
    "0",
    "--backlash",
    "0",
    "--target-noise",
    "0",
    "--mismatch-scale",
    "0",
    "--friction",
    "0",
    "--flex",
    "0",
    "--latency",
    "0",
    "--camera-noise",
    "0",
    "--camera-offset",
    "0",
    "--camera-period",
    "0",
    "--combined",
    "0",
    "--quiet",
];

#[test]
fn a_file_that_cannot_be_written_costs_neither_the_report_nor_the_old_file_and_leaves_no_debris() {
    let dir = scratch("fsize");
    let (catalog, figure, model, fans) =
        (dir.join("c.jsonl"), dir.join("p.svg"), dir.join("m.json"), dir.join("f.svg"));
    std::fs::write(&catalog, "old catalog\n").unwrap();
    tiny_model(&model, "mse");
    let old_model = std::fs::read(&model).unwrap();
    // 8 blocks (4 or 8 KiB): less than a few catalog records, a figure or a model. The write
    // fails with EFBIG (SIGXFSZ is ignored, not fatal) after the run: the report is printed
    // whole, then one line says what could not be written.
    let (c, p) = (catalog.to_str().unwrap(), figure.to_str().unwrap());
    let run = under_file_size_limit(
        8,
        &[SMALL_DEGRADATION, &["--targets", "50", "--json", "--catalog", c, "--plot", p]].concat(),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).expect("the whole report, first");
    assert!(report["cells"].as_array().is_some_and(|c| !c.is_empty()), "{}", run.stdout);
    let err = run.stderr.trim();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot write the catalog") && err.contains("too large") && err.contains("p.svg"), "{err}");
    let m = model.to_str().unwrap();
    let run = under_file_size_limit(
        8,
        &["train", "--steps", "30", "--data-size", "256", "--eval-targets", "10", "--quiet", "--out", m],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stdout.contains("held-out FK miss") && !run.stdout.contains("saved"), "{}", run.stdout);
    assert!(run.stderr.trim().lines().count() == 1 && run.stderr.contains("m.json"), "{}", run.stderr);
    let f = fans.to_str().unwrap();
    let chain = ["experiment", "chain", "--arm", "rail3", "--methods", "flow", "--seeds", "flow", "--quiet"];
    let small = ["--targets", "8", "--samples", "30", "--steps", "150", "--plot", f];
    let run = under_file_size_limit(8, &[&chain[..], &small].concat());
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stdout.contains("resim"), "the report first: {}", run.stdout);
    assert!(run.stderr.trim().lines().count() == 1 && run.stderr.contains("f.svg"), "{}", run.stderr);
    // The old files as they were; no figure, no temporary file.
    assert_eq!(std::fs::read_to_string(&catalog).unwrap(), "old catalog\n");
    assert_eq!(std::fs::read(&model).unwrap(), old_model);
    assert_eq!(names(&dir), ["c.jsonl", "m.json"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_catalog_run_ended_by_a_signal_leaves_no_temporary_file_and_a_killed_one_is_swept_next_time() {
    let dir = scratch("catalog-signals");
    let catalog = dir.join("c.jsonl");
    std::fs::write(&catalog, "old catalog\n").unwrap();
    let c = catalog.to_str().unwrap();
    // Far longer than the wait before the signal (and within the run's limit of plant time): the
    // catalog streams into a temporary file.
    let long = [SMALL_DEGRADATION, &["--targets", "80000", "--catalog", c]].concat();
    let temps = || names(&dir).into_iter().filter(|n| n.starts_with(".c.jsonl.tmp-")).count();
    for signal in [libc::SIGHUP, libc::SIGTERM, libc::SIGINT] {
        let child = common::spawn(&long);
        std::thread::sleep(unit());
        assert_eq!(temps(), 1, "the catalog streams into a temporary file");
        // SAFETY: signalling our own child by its id.
        unsafe { libc::kill(child.id() as i32, signal) };
        let run = common::wait_limited(child, &format!("signal {signal}"), unit() * 6);
        assert_eq!(run.code, 130, "signal {signal}: {}", run.stderr);
        assert_eq!(temps(), 0, "signal {signal}: the temporary file is removed");
    }
    // SIGKILL cannot be caught: its temporary file stays, until the next write to the path.
    let child = common::spawn(&long);
    std::thread::sleep(unit());
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    common::wait_limited(child, "SIGKILL", unit() * 6);
    assert_eq!(temps(), 1, "SIGKILL leaves its debris");
    assert_eq!(std::fs::read_to_string(&catalog).unwrap(), "old catalog\n");
    let run = elbow(&[SMALL_DEGRADATION, &["--targets", "50", "--csv", "--catalog", c]].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(temps(), 0, "the next write sweeps the dead process's temporary file");
    assert!(std::fs::read_to_string(&catalog).unwrap().starts_with("{\"version\":2"));
    // The same for a model: a planted temporary file of a process that no longer runs.
    let stale = dir.join(format!(".m.json.tmp-{}-0", i32::MAX - 1));
    std::fs::write(&stale, "debris").unwrap();
    tiny_model(&dir.join("m.json"), "mse");
    assert_eq!(names(&dir), ["c.jsonl", "m.json"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn answers_are_right_or_refused() {
    refused(&["solve", "1", "0.8", "--elbow-limits", "1e20,2e20"], &["720"]);
    refused(&["train", "--region", "sector:720,800"], &["360"]);
    refused(&["experiment", "degradation", "--region", "sector:720,800"], &["360"]);
    refused(&["train", "--region", "sector:0,360"], &["360"]);
    // The branch average at the inner rim is a straight elbow (0 deg), not 90.
    let Run { code, stdout: out, .. } = elbow(&["solve", "0.5", "0", "--lengths", "1,0.5", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["rows"][2]["name"], "average");
    assert!(v["rows"][2]["elbow_deg"].as_f64().unwrap().abs() < 1e-6, "{out}");
    // The largest accepted arm still answers exactly.
    let Run { code, stdout: out, .. } = elbow(&["solve", "1e6", "5e5", "--lengths", "1e6,1e6", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["rows"][0]["fk_error"].as_f64().unwrap() < 1e-9 * 2e6, "{out}");
    // JSON never holds null for a number: an unlimited joint speed is written "inf".
    let Run { code, stdout: out, stderr: err, .. } = elbow(&[
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
        "--max-joint-speed",
        "inf",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let config = v["config"].to_string();
    assert!(!config.contains("null"), "{config}");
    assert_eq!(v["config"]["envelope"]["max_joint_speed"], "inf", "{config}");
}

#[test]
fn negative_values_parse_and_errors_are_clear() {
    let Run { code, stdout: out, stderr: err, .. } = elbow(&["solve", "1", "0.5", "--elbow-limits", "-150,150"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("average"));
    let Run { code, stderr: err, .. } = elbow(&[
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
    // A negative value reaches its flag's parser, and the message names the flag, the value
    // and what is accepted (not clap's "unexpected argument" with a `-- -1` tip).
    for (args, accepted) in [
        (vec!["solve", "1", "1", "--lengths", "-1,1"], "1e-6"),
        (vec!["train", "--steps", "-5"], "from 1 to"),
        (vec!["train", "--lr", "-1"], "(0, 1)"),
        (vec!["atlas", "--out", "a.png", "--resolution", "-3"], "from 2 to"),
        (vec!["experiment", "degradation", "--corrections", "-1"], "from 0 to"),
    ] {
        let flag = args[args.len() - 2];
        let value = args[args.len() - 1];
        let err = refused(&args, &[flag, value, accepted]);
        assert!(!err.contains("-- -") && err.trim().lines().count() <= 3, "{args:?}: {err}");
    }
    let err = refused(&["train", "--lengths", "1e-200,1e-200"], &["1e-6"]);
    assert!(!err.contains("joint limits"), "{err}");
}

#[test]
fn the_reality_gap_channels_refuse_hostile_levels_up_front() {
    // Every new degradation channel, with values no channel accepts: refused before any work,
    // naming the flag (clap) or the channel (the core's check), never a panic or a hang.
    for flag in
        ["--friction", "--flex", "--latency", "--camera-noise", "--camera-offset", "--camera-period", "--payload"]
    {
        for bad in ["-1", "nan", "inf", "1e308", "", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16"] {
            let err = refused(&["experiment", "degradation", flag, bad, "--targets", "10"], &[]);
            let channel = flag.trim_start_matches("--");
            assert!(err.contains(flag) || err.contains(channel), "{flag} {bad}: {err}");
        }
    }
    // Each channel's own bound, in words.
    for (flag, bad, needle) in [
        ("--friction", "3", "2.94 N m"),
        ("--flex", "0.8", "45 degrees"),
        ("--latency", "3.15e10", "10000 ms"),
        ("--latency", "10001", "10000 ms"),
        ("--camera-noise", "2e6", "1e6 pixels"),
        ("--camera-offset", "1001", "1000 m"),
        ("--camera-period", "1e-9", "1/10000"),
        ("--camera-period", "4000", "3600 s"),
        ("--payload", "1001", "1000 kg"),
    ] {
        refused_up_front(&["experiment", "degradation", flag, bad], &[needle]);
    }
    // The combined channel may not take a channel past its bound either.
    refused_up_front(
        &["experiment", "degradation", "--latency", "0,10000", "--combined", "0,1.5"],
        &["combined", "latency"],
    );
}

#[test]
fn averaging_uses_given_models() {
    let dir = scratch("given");
    let (mse, mdn, mode) = (dir.join("mse.json"), dir.join("mdn.json"), dir.join("mode.json"));
    tiny_model(&mse, "mse");
    tiny_model(&mdn, "mdn");
    tiny_model(&mode, "mode");
    let Run { code, stdout: out, stderr: err, .. } = elbow(&[
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
                "3",
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
                "--corrections",
                "--length-error",
                "--joint-offset",
                "--json",
                "--csv",
            ],
        ),
        5 => (
            vec![
                "experiment",
                "randomization",
                "--steps",
                "5",
                "--data-size",
                "32",
                "--plants",
                "1",
                "--targets",
                "2",
                "--episodes",
                "10",
            ],
            &[
                "--heads",
                "--mismatch",
                "--flex",
                "--friction",
                "--backlash",
                "--outside-mismatch",
                "--outside-flex",
                "--outside-friction",
                "--outside-backlash",
                "--tolerance",
                "--seed",
                "--plot",
                "--quiet",
                "--json",
            ],
        ),
        _ => (vec!["bench"], &["--train-steps"]),
    }
}

proptest! {
    // Derived from `ProptestConfig::default()`, so `PROPTEST_RNG_SEED` (set by `.ci/run`) pins the
    // cases, and a failing case is saved to `tests/hostile.proptest-regressions` and re-run first.
    #![proptest_config(ProptestConfig::with_cases(80))]

    /// No invocation built from hostile fragments panics (exit 101), dies of a signal, or runs
    /// past a time bound.
    #[test]
    fn no_hostile_invocation_panics_or_hangs(
        which in 0usize..6,
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
            if !matches!(flag, "--json" | "--csv" | "--quiet") {
                args.push(VALUES[v]);
            }
        }
        let Run { code, stderr: err, .. } = run_limited(&args, common::limit());
        prop_assert!(code != 101 && code >= 0, "{:?} exited {}: {}", args, code, err);
        prop_assert!(!err.contains("panicked"), "{:?}: {}", args, err);
    }
}

/// A run of `elbow experiment randomization` that would take far longer than the bound of
/// [`refused_up_front`] (two million training steps, within the work limit), drawing to `plot`,
/// with `extra` flags (which replace the run's own `--steps` or `--data-size`).
fn long_randomization<'a>(plot: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["experiment", "randomization", "--quiet", "--plot", plot];
    for (flag, value) in [("--steps", "2000000"), ("--data-size", "16")] {
        if !extra.contains(&flag) {
            args.extend([flag, value]);
        }
    }
    args.extend(extra);
    args
}

#[test]
fn randomization_refuses_hostile_values_before_any_work() {
    let dir = scratch("randomization");
    let plot = dir.join("r.png");
    let p = plot.to_str().unwrap();
    let mut cases: Vec<(Vec<&str>, &str)> = Vec::new();
    for flag in [
        "--mismatch",
        "--flex",
        "--friction",
        "--backlash",
        "--outside-mismatch",
        "--outside-flex",
        "--outside-friction",
        "--outside-backlash",
    ] {
        let cap = if flag.ends_with("mismatch") {
            "times the default gap"
        } else if flag.ends_with("friction") {
            "2.940 N m"
        } else {
            "0.785 rad"
        };
        for (value, needle) in [
            ("0,nan", "not a finite number"),
            ("nan,nan", "not a finite number"),
            ("0,inf", "not a finite number"),
            ("-inf,0", "not a finite number"),
            ("-1,1", "0 <= LO <= HI"),
            ("-1e308,-1", "0 <= LO <= HI"),
            ("0.5,0.1", "0 <= LO <= HI"),
            ("0,1e308", cap),
            ("1e308,1e308", cap),
            ("0,20", cap),
            ("", "two numbers"),
            ("0", "two numbers"),
        ] {
            cases.push((vec![flag, value], needle));
        }
    }
    // A droop past a quarter turn (pi/2), and past the plant's own cap of pi/4.
    cases.push((vec!["--flex", "0,1.6"], "0.785 rad"));
    cases.push((vec!["--outside-flex", "0.5,0.8"], "0.785 rad"));
    for (flag, range) in [("--plants", "from 1 to 10000"), ("--targets", "from 1 to 100000"), ("--steps", "from 1 to")]
    {
        for value in ["0", "-1", "nan", "1e308", "18446744073709551616", "1000000000000"] {
            cases.push((vec![flag, value], range));
        }
    }
    cases.push((vec!["--data-size", "0"], "from 16 to"));
    cases.push((vec!["--data-size", "1e308"], "from 16 to"));
    cases.push((vec!["--plants", "10000", "--targets", "100000"], "limit"));
    for value in ["0", "-0", "-1", "nan", "inf", "-inf", "1e308", "3"] {
        cases.push((vec!["--tolerance", value], "tolerance"));
    }
    for value in ["-1", "nan", "18446744073709551616"] {
        cases.push((vec!["--seed", value], "--seed"));
    }
    cases.push((vec!["--heads", "mdn,residual,mdn"], "twice"));
    cases.push((vec!["--heads", ""], "head must be one of"));
    for (args, needle) in cases {
        let all = long_randomization(p, &args);
        refused_up_front(&all, &[needle]);
        let err = elbow(&all).stderr;
        assert!(err.trim().lines().count() <= 3, "{args:?}: one sentence, then clap's hint: {err}");
        assert!(!plot.exists(), "{args:?}: no figure written");
    }
    for bad in ["r.pdf", "/", "/nonexistent-elbow-dir/r.svg", dir.to_str().unwrap()] {
        refused_up_front(&long_randomization(bad, &[]), &["--plot"]);
    }
    // Ranges so wide that data collection finds too few commands: refused before training, with
    // the reason.
    for (flag, value) in [("--friction", "0,0.7"), ("--mismatch", "0,10")] {
        refused(&long_randomization(p, &[flag, value]), &["could be reached", "narrow the ranges"]);
        assert!(!plot.exists());
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "nothing written");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn hostile_plant_configs_neither_panic_nor_hang() {
    use elbow::kinematics::{Point2, Pose, TwoLinkArm};
    use elbow::plant::{Camera, Plant, PlantConfig};
    // No command reads a plant configuration from a file; the library's deserialisation and the
    // plant itself must still stand hostile values: out-of-range numbers are parse errors, and
    // any value that parses (or is set in code) gives a plant that settles in bounded time.
    let ideal = serde_json::to_value(PlantConfig::ideal(TwoLinkArm::default())).unwrap();
    for (field, value) in [
        ("backlash", "1e309"),
        ("flex", "-1e309"),
        ("latency_ms", "1e999"),
        ("seed", "-1"),
        ("latency_ms", "\"NaN\""),
        ("flex", "null"),
        ("camera", "{\"fps\": 1e999}"),
    ] {
        let mut json = ideal.to_string();
        json.insert_str(json.len() - 1, &format!(",\"{field}\": {value}"));
        // The duplicate key or the bad number is an error, not a panic.
        let parsed = std::panic::catch_unwind(|| serde_json::from_str::<PlantConfig>(&json));
        assert!(parsed.is_ok_and(|r| r.is_err()), "{field}: {value}");
    }
    let huge = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e308, -1e308, 0.0];
    let mut configs = Vec::new();
    for &v in &huge {
        let camera = Camera { pixel_noise: v, metres_per_pixel: v, offset: Point2::new(v, v), fps: v };
        let servo =
            elbow::plant::dynamics::Servo { kp: v, kv: v, torque_limit: v, damping: v, armature: v, frictionloss: v };
        configs.push(PlantConfig {
            servo,
            flex: v,
            backlash: v,
            noise_std: v,
            latency_ms: v,
            link_mass: [v, v],
            camera,
            ..PlantConfig::ideal(TwoLinkArm::default())
        });
        // Each field alone too, the others ideal, through a JSON round trip where it parses.
        for field in ["flex", "backlash", "noise_std", "latency_ms"] {
            let mut json = ideal.clone();
            json[field] = serde_json::json!(v);
            if let Ok(cfg) = serde_json::from_value::<PlantConfig>(json) {
                configs.push(cfg);
            }
        }
        let mut json = ideal.clone();
        json["camera"] = serde_json::json!({ "pixel_noise": v, "metres_per_pixel": v, "fps": v, "offset": [v, v] });
        if let Ok(cfg) = serde_json::from_value::<PlantConfig>(json) {
            configs.push(cfg);
        }
    }
    let (done, finished) = std::sync::mpsc::channel();
    let count = configs.len();
    std::thread::spawn(move || {
        for cfg in configs {
            let mut plant = Plant::new(cfg.two_link_real(), cfg, &Pose::new(0.0, 1.0).coords());
            for command in [Pose::new(1.0, -1.0), Pose::new(f64::NAN, 1e308)] {
                plant.command(&command.coords());
                plant.settle();
                plant.step(0.01);
                let _ = (plant.measure(), plant.camera(), plant.tip());
            }
            done.send(()).unwrap();
        }
    });
    for i in 0..count {
        let limit = common::limit();
        assert!(finished.recv_timeout(limit).is_ok(), "plant {i} of {count} panicked or ran past {limit:?}");
    }
}

/// A change to a model file's JSON.
type Edit = dyn Fn(&mut serde_json::Value);

#[test]
fn model_files_with_finite_extremes_are_refused_naming_the_field() {
    let dir = scratch("extremes");
    let edit = |from: &std::path::Path, to: &str, change: &Edit| {
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(from).unwrap()).unwrap();
        change(&mut v);
        let path = dir.join(to);
        std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
        path.display().to_string()
    };
    // A two-link MDN: a huge but finite weight, a spread floor below any use.
    let mdn = dir.join("mdn.json");
    let train = format!("train --head mdn --steps 5 --data-size 64 --eval-targets 10 --out {}", mdn.display());
    assert_eq!(elbow_sh(&train, "> /dev/null").code, 0);
    let cases: [(&str, &Edit, &str); 3] = [
        ("w.json", &|v| v["solvers"]["mdn"]["net"]["layers"][0]["w"][0][0] = 3e38.into(), "its weights are too large"),
        ("b.json", &|v| v["solvers"]["mdn"]["net"]["layers"][1]["b"][0][0] = 1e37.into(), "its weights are too large"),
        ("sigma.json", &|v| v["solvers"]["mdn"]["mdn"]["sigma_min"] = 1e-40.into(), "mdn.sigma_min"),
    ];
    for (name, change, says) in cases {
        let path = edit(&mdn, name, change);
        let run = elbow_sh(&format!("explain --head mdn --target 1,0.5 --model {path}"), "");
        assert!(run.code == 2 && run.stderr.contains(says), "{name}: {} {}", run.code, run.stderr);
        assert!(!run.stdout.contains("NaN") && !run.stdout.contains("inf"), "{name}: {}", run.stdout);
    }
    // A chain model: spreads of 1e300 and 1e-40, a huge weight.
    let chain = dir.join("chain.json");
    assert_eq!(elbow_sh(&format!("train --arm rail3 --steps 5 --out {}", chain.display()), "> /dev/null").code, 0);
    let cases: [(&str, &Edit, &str); 3] = [
        ("out.json", &|v| v["solvers"]["mse"]["output"][0][1] = 1e300.into(), "mse.output"),
        ("in.json", &|v| v["solvers"]["mse"]["input"][0][1] = 1e-40.into(), "mse.input"),
        ("cw.json", &|v| v["solvers"]["mse"]["net"]["layers"][0]["w"][0][0] = 3e38.into(), "its weights are too large"),
    ];
    for (name, change, says) in cases {
        let path = edit(&chain, name, change);
        let run = elbow_sh(&format!("solve --arm rail3 --model {path} 1.5 0"), "");
        assert!(run.code == 2 && run.stderr.contains(says), "{name}: {} {}", run.code, run.stderr);
        assert!(!run.stdout.contains("NaN") && !run.stdout.contains("inf"), "{name}: {}", run.stdout);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The longest run of digits in `text`.
fn longest_digit_run(text: &str) -> usize {
    text.split(|c: char| !c.is_ascii_digit()).map(str::len).max().unwrap_or(0)
}

/// Issue #48 (a): a refused number is echoed bounded (as typed when short, `1e299` for three
/// hundred typed digits), never as the three hundred digits Rust's `{}` writes for `1e300`, on
/// every real-valued flag of the plant, the tolerances, the OOD fraction, the combined channel,
/// the atlas and the chain experiment; each refusal names the flag, its range and its unit.
#[test]
fn refused_numbers_are_echoed_bounded_naming_the_flag_and_its_range() {
    let digits = format!("1{}", "0".repeat(299));
    let degradation = ["experiment", "degradation"];
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (degradation.to_vec(), "--kp", "N m/rad"),
        (degradation.to_vec(), "--kv", "N m s/rad"),
        (degradation.to_vec(), "--torque-limit", "N m"),
        (degradation.to_vec(), "--damping", "N m s/rad"),
        (degradation.to_vec(), "--armature", "kg m^2"),
        (degradation.to_vec(), "--tolerance", "(0, 1000] m"),
        (degradation.to_vec(), "--ood-fraction", "from 0 to 10"),
        (degradation.to_vec(), "--combined", "pi rad"),
        (vec!["experiment", "tracking"], "--kp", "N m/rad"),
        (vec!["experiment", "randomization"], "--tolerance", "(0, 2] m"),
        (vec!["experiment", "chain"], "--tolerance", "(0, 1] m"),
        (vec!["experiment", "chain"], "--ess-factor", "from 1 to 1000"),
        (vec!["atlas", "--out", "a.png"], "--margin", "from 0 to 2"),
        (vec!["atlas", "--out", "a.png"], "--noise", "from 0 to pi rad"),
        (vec!["atlas", "--out", "a.png"], "--backlash", "from 0 to pi/4 rad"),
        (vec!["atlas", "--out", "a.png", "--arm", "rail3"], "--margin", "from 0 to 2"),
    ];
    for (base, flag, range) in &cases {
        for value in ["1e300", digits.as_str()] {
            let args = [&base[..], &[flag, value]].concat();
            let err = refused(&args, &[flag, range]);
            assert!(longest_digit_run(&err) < 30 && err.len() < 400, "{args:?}: {err}");
        }
    }
    // The link masses, one of a pair.
    let err = refused(&["experiment", "degradation", "--link-mass", &format!("{digits},1")], &["--link-mass", "kg"]);
    assert!(longest_digit_run(&err) < 30, "{err}");
}

/// Issue #48 (c): each refusal blames what is wrong: the default mismatch that leaves the
/// residual head nothing to learn (not "0 usable targets"), three lengths on a two-link command
/// (not "not a finite number"), a chain named to a two-link command (not a hint about `--from`).
#[test]
fn refusals_blame_the_setting_that_is_wrong() {
    let err = refused(&["train", "--head", "residual", "--lengths", "1,2e-4", "--steps", "10"], &["default mismatch"]);
    assert!(err.contains("0.0 % of the nominal arm's workspace") && !err.contains("usable targets"), "{err}");
    // `explain` answers on a chain; what a chain lacks is refused naming that setting.
    let err =
        refused(&["explain", "--lengths", "1,1,1", "--target", "1,1", "--from", "0,1"], &["--from", "two-link arm"]);
    assert!(!err.contains("finite number"), "{err}");
    refused(
        &["explain", "--lengths", "1,1,1", "--target", "1,1", "--solver", "dls"],
        &["dls is not explained", "mse, mdn, flow"],
    );
    let err = refused(&["experiment", "averaging", "--arm", "so101"], &["two-link arm", "so101 is a chain"]);
    assert!(!err.contains("--from") && !err.contains("tip:"), "{err}");
    // The degradation runs on a chain; a two-link setting that does nothing there is refused
    // naming that setting, before any net trains.
    refused(
        &["experiment", "degradation", "--arm", "so101", "--region", "sector:0,90"],
        &["a training region does not apply on so101"],
    );
    let err = refused(&["explain", "--target", "1,1,1"], &["two numbers", "3 value(s)"]);
    assert!(!err.contains("finite number"), "{err}");
}

/// Issue #48 (d): the chain atlas has a work limit, refused in one sentence before any net is
/// trained or any cell mapped (the two-link atlas's limit on a learned head, too, comes before
/// its training).
#[test]
fn an_atlas_beyond_its_work_limit_is_refused_before_any_work() {
    for layer in ["exact-spread", "hybrid-success", "mse-miss"] {
        let args = ["atlas", "--out", "a.png", "--arm", "rail3", "--layer", layer, "--resolution", "512"];
        refused_up_front(&args, &["answers", "above the limit", "--resolution"]);
    }
    refused_up_front(
        &[
            "atlas",
            "--out",
            "a.png",
            "--arm",
            "so101",
            "--layer",
            "mdn-resim",
            "--resolution",
            "256",
            "--samples",
            "64",
        ],
        &["answers", "above the limit"],
    );
}

/// Issue #48 (e): the plant experiments' work limits count simulated seconds of plant time, and
/// a run above them is refused before any work with the quantity, its unit and the limit.
#[test]
fn plant_runs_are_limited_in_seconds_of_plant_time_before_any_work() {
    for args in [
        &["experiment", "degradation", "--targets", "6000"][..],
        &["experiment", "degradation", "--targets", "2000", "--corrections", "4"],
        &["experiment", "randomization", "--data-size", "100000"],
        &["experiment", "tracking", "--speeds", "0.001"],
    ] {
        let err = refused(args, &["s of plant time", "above the limit of", " s;"]);
        assert!(err.trim().lines().count() == 1, "{args:?}: one sentence: {err}");
        refused_up_front(args, &[]);
    }
}

/// Issue #48 (f): a tracking run whose claim has nothing to judge (only the 0 ms baseline, or a
/// single speed and latency) is refused before any work, saying so, rather than run for minutes
/// to a verdict of "DOES NOT HOLD" with nothing judged.
#[test]
fn a_tracking_run_with_nothing_to_judge_is_refused_up_front() {
    for args in [
        &["experiment", "tracking", "--latency", "0", "--train-steps", "10"][..],
        &["experiment", "tracking", "--latency", "0,100", "--speeds", "0.4", "--train-steps", "10"],
    ] {
        refused_up_front(args, &["nothing to judge", "add a latency above 0 ms"]);
    }
}
