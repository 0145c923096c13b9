//! The command line as a user runs it: output, JSON, exit codes and messages on bad input.

mod common;

/// Exit code, stdout and stderr of `elbow ARGS` (run by [`common::elbow`]: pipes drained, time
/// bounded).
fn elbow(args: &[&str]) -> (i32, String, String) {
    let run = common::elbow(args);
    (run.code, run.stdout, run.stderr)
}

#[test]
fn solve_prints_both_branches_and_the_average() {
    let (code, out, _) = elbow(&["solve", "1.0", "0.8"]);
    assert_eq!(code, 0);
    for word in ["elbow-up", "elbow-down", "average", "reachable"] {
        assert!(out.contains(word), "{out}");
    }
    let (code, out, _) = elbow(&["solve", "1.0", "0.8", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["reachable"], true);
    assert!(v["rows"][0]["fk_error"].as_f64().unwrap() < 1e-6);
    assert!(v["rows"][2]["fk_error"].as_f64().unwrap() > 1e-2);
}

#[test]
fn unreachable_targets_are_said_so() {
    let (code, out, _) = elbow(&["solve", "--lengths", "1,0.5", "--", "-3", "0"]);
    assert_eq!(code, 0);
    assert!(out.contains("UNREACHABLE") && out.contains("beyond reach"), "{out}");
}

#[test]
fn bad_input_gets_a_clear_error_and_exit_code_2() {
    for (args, needle) in [
        (vec!["solve", "1", "nan"], "not a finite number"),
        (vec!["solve", "1", "1", "--lengths", "1,-2"], "must be > 0"),
        (vec!["train", "--head", "transformer"], "head must be one of"),
        (vec!["train", "--batch", "0", "--steps", "1"], "from 1 to 65536"),
        (vec!["train", "--region", "sector:50,10"], "FROM < TO"),
        (vec!["experiment", "degradation", "--noise", "0,-1"], "levels must be"),
        (vec!["train", "--steps", "1000000", "--out", "/nonexistent-dir/m.json"], "cannot write the model"),
    ] {
        let (code, _, err) = elbow(&args);
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn train_saves_a_model_that_loads() {
    let path = std::env::temp_dir().join(format!("elbow-cli-{}.json", std::process::id()));
    let p = path.to_str().unwrap();
    let (code, out, err) = elbow(&["train", "--head", "mse", "--steps", "200", "--quiet", "--out", p, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["fk_miss"]["mean"].as_f64().unwrap() > 0.0);
    assert!(v["fk_miss"]["p95"].as_f64().is_some() && v["fk_miss"]["median"].as_f64().is_some());
    assert!(elbow::LearnedModel::load(&path).is_ok());
    std::fs::remove_file(&path).ok();
}

#[test]
fn the_app_without_a_display_says_so_instead_of_panicking() {
    let mut app = common::command(&[]);
    app.env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY").env_remove("WAYLAND_SOCKET");
    let run = common::wait_limited(app.spawn().expect("runs"), "elbow (the app)", common::limit());
    let err = run.stderr;
    assert_eq!(run.code, 2, "{err}");
    assert!(err.contains("desktop app") && !err.contains("panicked"), "{err}");
}

#[test]
fn atlas_writes_a_png_and_an_svg_and_refuses_bad_names_and_paths() {
    let dir = std::env::temp_dir().join(format!("elbow-atlas-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("atlas.png");
    let svg = dir.join("atlas.svg");
    let (code, _, err) = elbow(&[
        "atlas",
        "--solver",
        "analytic",
        "--layer",
        "branch",
        "--resolution",
        "32",
        "--out",
        png.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    let (code, _, err) = elbow(&[
        "atlas",
        "--solver",
        "mse",
        "--train-steps",
        "50",
        "--layer",
        "silent",
        "--resolution",
        "16",
        "--out",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    for (args, needle) in [
        (vec!["atlas", "--solver", "nope", "--out", "a.png"], "solver must be one of"),
        (vec!["atlas", "--layer", "nope", "--out", "a.png"], "layer must be one of"),
        (vec!["atlas", "--out", "a.jpg"], ".png or .svg"),
        (vec!["atlas", "--out", "/no/such/dir/a.png"], "No such file"),
        (vec!["atlas", "--resolution", "0", "--out", "a.png"], "resolution"),
        (vec!["atlas", "--noise", "nan", "--out", "a.png"], "noise"),
    ] {
        let (code, _, err) = elbow(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // A model for another arm, or for a solver that has none, is refused.
    let model = dir.join("short-arm.json");
    let (code, _, err) = elbow(&[
        "train",
        "--head",
        "mdn",
        "--steps",
        "20",
        "--data-size",
        "64",
        "--eval-targets",
        "10",
        "--lengths",
        "1,0.5",
        "--quiet",
        "--out",
        model.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = elbow(&["atlas", "--solver", "mdn", "--model", model.to_str().unwrap(), "--out", "a.png"]);
    assert!(code == 2 && err.contains("trained for the arm `--lengths 1,0.5`"), "{err}");
    let (code, _, err) =
        elbow(&["atlas", "--solver", "analytic", "--model", model.to_str().unwrap(), "--out", "a.png"]);
    assert!(code == 2 && err.contains("learned head"), "{err}");
    // A refused run leaves a good file alone.
    let before = std::fs::read(&png).unwrap();
    let (code, _, _) =
        elbow(&["atlas", "--solver", "mdn", "--model", "/no/such/model.json", "--out", png.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(std::fs::read(&png).unwrap(), before);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn degradation_plots_loads_models_and_refuses_bad_paths_before_working() {
    let dir = std::env::temp_dir().join(format!("elbow-gap-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("mdn.json");
    let (code, _, err) =
        elbow(&["train", "--head", "mdn", "--steps", "30", "--quiet", "--out", model.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // Ten targets per setting: the plot and the JSON are whole, each run under a second.
    let small =
        ["experiment", "degradation", "--targets", "10", "--train-steps", "20", "--model", model.to_str().unwrap()];
    for name in ["gap.svg", "gap.png"] {
        let path = dir.join(name);
        let mut args = small.to_vec();
        args.extend(["--json", "--plot", path.to_str().unwrap()]);
        let (code, out, err) = elbow(&args);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["loaded"][0], "mdn", "heads are named by key in JSON");
        assert!(v["claims"].as_array().is_some_and(|c| !c.is_empty()));
        let bytes = std::fs::read(&path).unwrap();
        if name.ends_with("svg") {
            assert!(String::from_utf8_lossy(&bytes).contains("<svg"), "an SVG document");
        } else {
            assert_eq!(&bytes[..4], b"\x89PNG", "a PNG file");
        }
    }
    let (code, out, _) = elbow(&[&small[..], &["--csv", "--protocol", "exercise"]].concat());
    assert_eq!(code, 0);
    assert!(
        out.starts_with("protocol,solver,channel,level,split") && out.contains("exercise,envelope(residual),actuator")
    );
    for (extra, needle) in [
        (vec!["--plot", "gap.pdf"], "must end in .png or .svg"),
        (vec!["--plot", ".svg"], "needs a name before its .png or .svg"),
        (vec!["--plot", "/nonexistent-dir/gap.svg"], "/nonexistent-dir"),
        (vec!["--model", "/nonexistent-dir/m.json"], "model file"),
        (vec!["--targets", "900000", "--corrections", "10"], "above the limit"),
        (vec!["--protocol", "numpy"], "protocol must be one of"),
        (vec!["--corrections", "11"], "from 0 to 10"),
    ] {
        // A case that sets `--targets` replaces the small run's.
        let base: Vec<&str> = small
            .iter()
            .copied()
            .filter(|a| !(extra.contains(&"--targets") && (*a == "--targets" || *a == "10")))
            .collect();
        let (code, _, err) = elbow(&[&base[..], &extra[..]].concat());
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(needle), "{extra:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn degradation_names_empty_ood_sets_apart_from_those_that_ran() {
    // On the default arm (l1 = l2: no hole) trained on the whole annulus (no sector), only
    // `beyond` can have targets; with no OOD budget at all, not even that.
    let small = ["experiment", "degradation", "--targets", "20", "--train-steps", "10", "--protocol", "exercise"];
    for (fraction, ran, empty) in
        [("0.5", vec!["beyond"], vec!["hole", "sector"]), ("0", vec![], vec!["beyond", "hole", "sector"])]
    {
        let args = [&small[..], &["--ood", "beyond,hole,sector", "--ood-fraction", fraction, "--json"]].concat();
        let (code, out, err) = elbow(&args);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["config"]["ood"], serde_json::json!(ran), "fraction {fraction}: the config echoes what ran");
        assert_eq!(v["ood_empty"], serde_json::json!(empty), "fraction {fraction}");
        let splits: Vec<&str> = v["targets"].as_array().unwrap().iter().map(|t| t[0].as_str().unwrap()).collect();
        assert_eq!(splits, [&["in"][..], &ran[..]].concat(), "fraction {fraction}");
        let (code, out, err) =
            elbow(&[&small[..], &["--ood", "beyond,hole,sector", "--ood-fraction", fraction]].concat());
        assert_eq!(code, 0, "{err}");
        for kind in &empty {
            assert!(out.contains(&format!("OOD set {kind} asked for but empty, not run: ")), "{kind}: {out}");
        }
        assert!(!out.contains("OOD set beyond asked for") || empty.contains(&"beyond"), "{out}");
    }
}

#[test]
fn degradation_runs_on_a_chain_scaled_to_it_and_refuses_what_does_not_apply_there() {
    let small = [
        "experiment",
        "degradation",
        "--arm",
        "so101",
        "--targets",
        "6",
        "--train-steps",
        "40",
        "--protocol",
        "plant",
        "--quiet",
    ];
    let levels = ["--encoder", "0", "--actuator", "0", "--backlash", "0", "--mismatch-scale", "0", "--friction", "0"];
    let more = ["--flex", "0", "--latency", "0", "--camera-noise", "0", "--camera-period", "0", "--combined", "0"];
    let args = [&small[..], &levels, &more, &["--json"]].concat();
    let (code, out, err) = elbow(&args);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("null") && !out.contains("NaN"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["config"]["chain"]["name"], "so101");
    // The SO-101's defaults are scaled to its 0.41 m reach: a 1 cm tolerance, target noise to
    // 1 cm (not given, so the arm's levels), camera offset to 2.1 cm.
    assert_eq!(v["config"]["tolerance"], 0.01);
    assert_eq!(v["config"]["levels"]["target"], serde_json::json!([0.0, 0.0021, 0.0041, 0.01]));
    assert_eq!(v["config"]["levels"]["camera_offset"], serde_json::json!([0.0, 0.0021, 0.0062, 0.021]));
    let solvers: Vec<&str> = v["cells"].as_array().unwrap().iter().map(|c| c["solver"].as_str().unwrap()).collect();
    for key in ["dls", "mse", "mdn", "flow", "hybrid", "envelope(flow)"] {
        assert!(solvers.contains(&key), "{key}: {solvers:?}");
    }
    assert!(!solvers.contains(&"analytic"), "no closed form on a chain: {solvers:?}");
    let claims: Vec<&str> = v["claims"].as_array().unwrap().iter().map(|c| c["key"].as_str().unwrap()).collect();
    assert!(claims.contains(&"dls-graceful") && claims.contains(&"hybrid-worst-case-classical"), "{claims:?}");
    // Its failure catalog replays from the command line, bit for bit.
    let dir = chain_scratch("degradation");
    std::fs::create_dir_all(&dir).unwrap();
    let catalog = dir.join("c.jsonl");
    let catalog = catalog.to_str().unwrap();
    let (code, _, err) = elbow(&[&small[..], &levels, &more, &["--catalog", catalog, "--catalog-cap", "1"]].concat());
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = elbow(&["replay", catalog, "--index", "0"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(" on so101 (plant)") && out.contains("identical"), "{out}");
    // The app opens on the record's own chain: `--arm so101` names it (the app then needs a
    // display, which the test has none of); another arm is refused by the chain's name.
    let app = |args: &[&str]| {
        let mut app = common::command(args);
        app.env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY").env_remove("WAYLAND_SOCKET");
        common::wait_limited(app.spawn().expect("runs"), "elbow (the app)", common::limit())
    };
    for arm in [&[][..], &["--arm", "so101"]] {
        let run = app(&[arm, &["--replay", catalog, "--index", "0"]].concat());
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains("desktop app") && !run.stderr.contains("is of the arm"), "{arm:?}: {}", run.stderr);
    }
    let run = app(&["--arm", "3r", "--replay", catalog, "--index", "0"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("is of the arm `so101`, not of the one --arm"), "{}", run.stderr);
    // Two-link settings that would do nothing on a chain are refused in one sentence.
    let other = dir.join("d.jsonl");
    for (extra, needle) in [
        (&["--gravity"][..], "the gravity switch does not apply on so101"),
        (&["--link-mass", "1,1"][..], "link masses does not apply on so101"),
        (&["--region", "sector:0,90"][..], "a training region does not apply on so101"),
    ] {
        refused_in_one_line(&[&small[..], extra, &["--catalog", other.to_str().unwrap()]].concat(), needle);
    }
    assert!(!other.exists(), "nothing written");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_residual_head_never_fits_a_real_arm_it_silently_replaced() {
    // At the length bounds the default mismatch (upper arm 6 % long) leaves the supported range:
    // the residual head refuses in one sentence instead of fitting the nominal arm, which would
    // train it to correct nothing; heads that fit no real arm still train.
    for (lengths, link) in [("1e6,1e6", "l1"), ("1e-6,1e-6", "l2")] {
        for command in [
            &["train", "--head", "residual", "--steps", "20", "--quiet"][..],
            &["atlas", "--solver", "residual", "--train-steps", "20", "--out", "never.png"][..],
        ] {
            let args = [command, &["--lengths", lengths]].concat();
            let (code, out, err) = elbow(&args);
            assert_eq!(code, 2, "{args:?}: {out} {err}");
            assert!(err.contains("default mismatch") && err.contains(&format!("link length {link}")), "{err}");
        }
        let (code, _, err) = elbow(&[
            "train",
            "--head",
            "mdn",
            "--lengths",
            lengths,
            "--steps",
            "20",
            "--eval-targets",
            "10",
            "--quiet",
        ]);
        assert_eq!(code, 0, "{lengths}: {err}");
    }
    // The atlas's silent layer maps a real arm of its own mismatch: one that cannot exist for
    // these lengths is refused, not swapped for the nominal arm.
    let (code, _, err) = elbow(&["atlas", "--lengths", "1e6,1e6", "--length-error", "0.1,0", "--out", "never.png"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no usable real arm") && err.contains("link length l1"), "{err}");
}

#[test]
fn train_says_when_the_residual_head_drops_its_corrections() {
    // With a forearm a tenth of the upper arm, the upper arm's 6 % length error needs elbow
    // corrections of 0.5 to 1 rad on every target the real arm reaches: all above the head's
    // bound, so every answer keeps the analytic pose, and `train` says so. On the default arm
    // nearly every correction applies.
    let run = |lengths: &str, json: bool| {
        let mut args =
            vec!["train", "--head", "residual", "--lengths", lengths, "--steps", "2000", "--eval-targets", "2000"];
        args.extend(if json { &["--json"][..] } else { &["--quiet"][..] });
        let (code, out, err) = elbow(&args);
        assert_eq!(code, 0, "{lengths}: {err}");
        out
    };
    let share = |lengths: &str| {
        let v: serde_json::Value = serde_json::from_str(&run(lengths, true)).unwrap();
        (
            v["corrections_applied"].as_f64().unwrap(),
            v["fk_miss"]["mean"].as_f64().unwrap(),
            v["analytic_on_real_arm"]["mean"].as_f64().unwrap(),
        )
    };
    let (applied, miss, analytic) = share("1,0.1");
    assert!(applied < 0.01 && miss >= 0.99 * analytic, "1,0.1: applied {applied}, miss {miss} vs analytic {analytic}");
    assert!(run("1,0.1", false).contains("most corrections were dropped"));
    let (applied, miss, analytic) = share("1,0.8");
    assert!(applied > 0.95 && miss < 0.2 * analytic, "1,0.8: applied {applied}, miss {miss} vs analytic {analytic}");
    assert!(!run("1,0.8", false).contains("dropped"));
}

#[test]
fn json_outputs_name_absent_values_by_leaving_them_out_never_null() {
    // The degradation report has baseline rows (no channel) and pipelines without the envelope
    // (no envelope log); a training report for a head that fits no real arm has no analytic
    // comparison on it. Each is left out, never written as null.
    let degradation = ["experiment", "degradation", "--targets", "20", "--train-steps", "10", "--json"];
    for args in [&degradation[..], &["train", "--head", "mse", "--steps", "20", "--json"]] {
        let (code, out, err) = elbow(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap();
        assert!(!out.contains("null") && !out.contains("NaN"), "{args:?}: {out}");
    }
}

/// A fresh path under the system's temporary directory for this process.
fn chain_scratch(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("elbow-cli-chain-{}-{name}", std::process::id()))
}

/// `elbow ARGS` must fail with exit code 2 and one line of stderr containing `needle` (clap's
/// own errors add a usage hint after a blank line: their first line must say it all).
fn refused_in_one_line(args: &[&str], needle: &str) {
    let (code, out, err) = elbow(args);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert!(out.is_empty(), "{args:?}: {out}");
    let first = err.lines().next().unwrap_or_default();
    assert!(first.starts_with("error: ") && first.contains(needle), "{args:?}: {err}");
    let clap = err.contains("For more information, try '--help'.");
    assert!(clap || err.lines().count() == 1, "{args:?}: more than one line: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

#[test]
fn solve_on_a_chain_prints_every_method_and_says_when_a_target_is_out_of_reach() {
    let (code, out, err) =
        elbow(&["solve", "1.5", "0", "--arm", "rail3", "--train-steps", "30", "--samples", "3", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("null") && !out.contains("NaN"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["reachable"], true);
    assert_eq!(v["coordinates"].as_array().unwrap().len(), 4);
    let methods = v["methods"].as_array().unwrap();
    let keys: Vec<&str> = methods.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(keys, ["mse", "mdn", "flow", "dls", "hybrid", "exact"]);
    for m in methods {
        let n = if m["method"] == "mse" { 1 } else { 3 };
        assert_eq!(m["answers"].as_array().unwrap().len(), n, "{m}");
    }
    let by = |key: &str| methods.iter().find(|m| m["method"] == key).unwrap();
    // The exact sampler's answers and the converged DLS answers reach the target.
    for a in by("exact")["answers"].as_array().unwrap() {
        assert!(a["miss"].as_f64().unwrap() < 1e-9, "{a}");
    }
    assert_eq!(by("dls")["converged"], 3);
    assert!(by("hybrid")["iterations"].as_u64().is_some() && by("exact")["ess"].as_f64().unwrap() > 60.0);
    assert!(err.contains("elbow train --arm rail3 --out m.json"), "{err}");
    // Out of reach: said plainly, no exact samples, DLS not converged.
    let (code, out, err) = elbow(&["solve", "9", "0", "--arm", "3r", "--train-steps", "20", "--samples", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("UNREACHABLE") && out.contains("exact: no samples"), "{out}");
    assert!(out.contains("dls: 0 of 2 converged") && out.contains("did not converge"), "{out}");
}

/// `--arm 2r`, the default, changes nothing: the solve output of `docs/1-averaging-trap.md` byte
/// for byte, and the same atlas file with and without it.
#[test]
fn the_two_link_arm_is_unchanged_by_arm_2r() {
    let documented = "target (1, 0.8) on arm l1=1 l2=1
reachable
pose           shoulder°       elbow°             tip (x, y)   FK error m  in limits
elbow-up         88.8447    -100.3698   (1.000000, 0.800000)    2.220e-16       true
elbow-down      -11.5251     100.3698   (1.000000, 0.800000)    2.220e-16       true
average          38.6598       0.0000   (1.561738, 1.249390)     7.194e-1       true
";
    for extra in [&[][..], &["--arm", "2r"], &["--lengths", "1,1"]] {
        let (code, out, err) = elbow(&[&["solve", "1.0", "0.8"], extra].concat());
        assert_eq!(code, 0, "{err}");
        assert_eq!(out, documented, "{extra:?}");
    }
    let png = |name: &str, extra: &[&str]| {
        let path = chain_scratch(name);
        let p = path.to_str().unwrap();
        let args = [&["atlas", "--solver", "analytic", "--layer", "branch", "--resolution", "16", "--out", p], extra];
        let (code, _, err) = elbow(&args.concat());
        assert_eq!(code, 0, "{err}");
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).ok();
        bytes
    };
    assert_eq!(png("plain.png", &[]), png("2r.png", &["--arm", "2r"]));
}

#[test]
fn train_saves_a_chain_model_that_solve_and_atlas_load_and_other_arms_refuse() {
    let model = chain_scratch("3r.json");
    let m = model.to_str().unwrap();
    let tiny = ["--steps", "30", "--hidden", "8", "--depth", "1", "--components", "2", "--quiet"];
    let (code, out, err) = elbow(
        &[&["train", "--arm", "3r", "--eval-targets", "3", "--samples", "20", "--json", "--out", m], &tiny[..]]
            .concat(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("null") && !out.contains("NaN"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows: Vec<&str> = v["rows"].as_array().unwrap().iter().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(rows, ["mse", "mdn", "flow"]);
    let budget: Vec<&str> = v["budget"].as_array().unwrap().iter().map(|b| b["net"].as_str().unwrap()).collect();
    assert_eq!(budget, ["mse", "mdn", "flow"], "each net's training cost");
    assert!(v["rows"][0]["posterior_mmd"].as_f64().unwrap() > v["mmd_floor"]["mean"].as_f64().unwrap());
    assert_eq!(v["targets"], 3);
    let loaded = elbow::chain::ChainModel::load(&model).unwrap();
    assert!(loaded.mse.is_some() && loaded.mdn.is_some() && loaded.flow.is_some() && loaded.arm.name == "3r");
    // The table names what it measured.
    let (code, out, err) =
        elbow(&[&["train", "--arm", "3r", "--eval-targets", "2", "--samples", "10"], &tiny[..]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("held-out: 2 targets") && out.contains("mismatch") && out.contains("mdn"), "{out}");
    // Loaded back.
    let (code, out, err) = elbow(&["solve", "1.5", "0.3", "--arm", "3r", "--model", m, "--samples", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("nets from {m}")) && !err.contains("training"), "{out}\n{err}");
    let png = chain_scratch("3r.png");
    let (code, _, err) = elbow(&[
        "atlas",
        "--arm",
        "3r",
        "--layer",
        "mdn-resim",
        "--model",
        m,
        "--resolution",
        "6",
        "--samples",
        "2",
        "--out",
        png.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
    // Refused where it does not fit, saying what the file is.
    refused_in_one_line(
        &["solve", "1", "0", "--arm", "rail3", "--model", m],
        "is a chain model for 3r; this command runs on rail3",
    );
    refused_in_one_line(&["atlas", "--model", m, "--out", "a.png"], "is a chain model for 3r; this command runs on 2r");
    let two_link = chain_scratch("2r.json");
    let t = two_link.to_str().unwrap();
    let (code, _, err) = elbow(&[
        "train",
        "--head",
        "mse",
        "--steps",
        "20",
        "--data-size",
        "64",
        "--eval-targets",
        "1",
        "--quiet",
        "--out",
        t,
    ]);
    assert_eq!(code, 0, "{err}");
    refused_in_one_line(
        &["solve", "1", "0", "--arm", "3r", "--model", t],
        "is a two-link mse model for arm 1,1; this command runs on 3r",
    );
    std::fs::write(&two_link, b"{\"format\": \"elbow-chain-model\"").unwrap();
    refused_in_one_line(&["solve", "1", "0", "--arm", "3r", "--model", t], "not a valid Elbow model");
    for p in [&model, &two_link, &png] {
        std::fs::remove_file(p).ok();
    }
}

#[test]
fn atlas_maps_every_chain_layer() {
    let dir = chain_scratch("atlas");
    std::fs::create_dir_all(&dir).unwrap();
    for (arm, layer, ext) in
        [("rail3", "exact-spread", "png"), ("3r", "hybrid-success", "svg"), ("rail3", "mse-miss", "png")]
    {
        let path = dir.join(format!("{arm}-{layer}.{ext}"));
        let (code, _, err) = elbow(&[
            "atlas",
            "--arm",
            arm,
            "--layer",
            layer,
            "--resolution",
            "6",
            "--samples",
            "3",
            "--train-steps",
            "20",
            "--out",
            path.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{arm} {layer}: {err}");
        assert!(err.contains("reachable"), "{err}");
        let bytes = std::fs::read(&path).unwrap();
        assert!(if ext == "png" { &bytes[1..4] == b"PNG" } else { bytes.starts_with(b"<svg") }, "{arm} {layer}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_arm_values_get_one_sentence_and_exit_code_2() {
    for (args, needle) in [
        (&["solve", "1", "1", "--arm", "4r"][..], "arm must be one of 2r, 3r, rail3"),
        (&["train", "--arm", ""], "arm must be one of"),
        (&["atlas", "--arm", "rail4", "--out", "a.png"], "arm must be one of"),
        (&["solve", "1", "1", "--lengths", "1,1,0"], "link length 3"),
        (&["train", "--lengths", "1"], "at least 3 links"),
        (&["solve", "1", "1", "--lengths", "1,x,1"], "not a finite number"),
        (&["solve", "1", "1", "--arm", "3r", "--lengths", "1,1,1"], "cannot be used with"),
        (&["solve", "1", "1", "--arm", "rail3", "--samples", "0"], "from 1 to 1000"),
        (&["solve", "1", "1", "--arm", "rail3", "--samples", "1e9"], "from 1 to 1000"),
        (&["train", "--arm", "rail3", "--samples", "1"], "from 2 to 20000"),
        (
            &["atlas", "--arm", "rail3", "--layer", "exact-spread", "--samples", "1", "--out", "a.png"],
            "samples must be in 2..=",
        ),
        (&["solve", "1", "1", "--arm", "rail3", "--model", "/nonexistent/m.json"], "/nonexistent/m.json"),
        (&["solve", "1", "1", "--samples", "3"], "--samples is for chains"),
        (&["solve", "1", "1", "--arm", "2r", "--model", "m.json"], "--model is for chains"),
        (&["train", "--samples", "30"], "--samples is for chains"),
        (&["train", "--arm", "3r", "--head", "mse"], "--head is for the two-link arm"),
        (&["solve", "1", "1", "--arm", "3r", "--elbow-limits", "-10,10"], "--elbow-limits is for the two-link arm"),
        (&["atlas", "--arm", "2r", "--layer", "exact-spread", "--out", "a.png"], "layer exact-spread is for chains"),
        (&["atlas", "--layer", "hybrid-success", "--out", "a.png"], "layer hybrid-success is for chains"),
        (&["atlas", "--arm", "rail3", "--layer", "miss", "--out", "a.png"], "layer miss is for the two-link arm"),
        (
            &["atlas", "--arm", "3r", "--solver", "dls", "--out", "a.png"],
            "dls has no map on 3r; the solvers mapped there are mse, mdn, hybrid, exact",
        ),
        (&["atlas", "--arm", "3r", "--layer", "spread", "--out", "a.png"], "layer must be one of"),
    ] {
        refused_in_one_line(args, needle);
    }
}

/// Ctrl-C while the chain nets train: exit 130, nothing saved.
#[test]
fn ctrl_c_stops_chain_training_with_130_and_saves_nothing() {
    let path = chain_scratch("interrupted.json");
    let child =
        common::spawn(&["train", "--arm", "rail3", "--steps", "100000", "--quiet", "--out", path.to_str().unwrap()]);
    std::thread::sleep(common::unit());
    // SAFETY: signalling our own child by its id.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    // Six reference runs, and at least 2 s: on a loaded machine the chain's data set up before the
    // first step took longer than six (about 90 ms); uninterrupted, the run takes minutes.
    let limit = (common::unit() * 6).max(std::time::Duration::from_secs(2));
    let run = common::wait_limited(child, "train --arm rail3 after Ctrl-C", limit);
    assert_eq!(run.code, 130, "{}", run.stderr);
    assert!(run.stderr.contains("interrupted"), "{}", run.stderr);
    assert!(!path.exists());
}

#[test]
fn a_lesson_is_for_the_app_and_names_its_arm() {
    let (code, _, err) = elbow(&["--lesson", "bogus"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("averaging") && err.contains("seeds"), "lists the lessons: {err}");
    let (code, _, err) = elbow(&["--lesson", "noise", "--arm", "rail3"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the noise lesson runs on the two-link arm"), "{err}");
    let (code, _, err) = elbow(&["--lesson", "manifold", "--arm", "3r"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the manifold lesson runs on the rail3 chain"), "{err}");
    let (code, _, err) = elbow(&["--lesson", "noise", "solve", "1", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--lesson is for the app"), "{err}");
}

#[test]
fn bishop1994_prints_the_reports_figures_beside_ours_and_refuses_bad_sizes() {
    let (code, out, err) = elbow(&["experiment", "bishop1994", "--steps", "1500", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("null") && !out.contains("NaN"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let rows = v["rows"].as_array().expect("rows");
    let paper: Vec<f64> = rows.iter().filter_map(|r| r["paper_rms"].as_f64()).collect();
    assert_eq!(paper, [0.0578, 0.0053]);
    let (code, out, _) = elbow(&["experiment", "bishop1994", "--steps", "1500"]);
    assert_eq!(code, 0);
    assert!(out.contains("report's RMS") && out.contains("branch average"), "{out}");
    for bad in [&["--hidden", "0"][..], &["--train", "5"], &["--test", "-1"], &["--steps", "1.5"]] {
        let mut args = vec!["experiment", "bishop1994"];
        args.extend_from_slice(bad);
        let (code, _, err) = elbow(&args);
        assert_eq!(code, 2, "{bad:?}: {err}");
    }
}

#[test]
fn a_view_file_is_checked_before_the_app_opens() {
    let dir = std::env::temp_dir().join(format!("elbow-cli-view-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let missing = dir.join("missing.json");
    let (code, _, err) = elbow(&["--view", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("missing.json"), "{err}");
    let old = dir.join("old.json");
    std::fs::write(&old, r#"{"format": "elbow-view", "version": 0}"#).expect("write");
    let (code, _, err) = elbow(&["--view", old.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("version 0; this Elbow reads version 1"), "{err}");
    let junk = dir.join("junk.json");
    std::fs::write(&junk, "not json").expect("write");
    let (code, _, err) = elbow(&["--view", junk.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not a view file"), "{err}");
    let (code, _, err) = elbow(&["--view", "v.json", "solve", "1", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--view is for the app"), "{err}");
    let (code, _, err) = elbow(&["--view", "v.json", "--lesson", "noise"]);
    assert_eq!(code, 2, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn physical_quantities_are_refused_in_their_units_before_any_work() {
    for (args, needle) in [
        (
            &["experiment", "degradation", "--link-mass", "-1,0.05"][..],
            "--link-mass <LINK_MASS>': must be a number from 1e-6 to 1000 kg",
        ),
        (&["experiment", "degradation", "--link-mass", "0.05"][..], "--link-mass takes two masses"),
        (&["experiment", "degradation", "--kp", "0"][..], "--kp <KP>': must be a number from 0.001 to 1e6 N m/rad"),
        (&["experiment", "tracking", "--torque-limit", "inf"][..], "--torque-limit"),
        (&["experiment", "tracking", "--armature", "-0.1"][..], "armature"),
        (&["experiment", "tracking", "--latency", "nan"][..], "latency"),
        (&["experiment", "degradation", "--latency", "3.15e10"][..], "10000 ms"),
    ] {
        let (code, out, err) = elbow(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(err.lines().next().is_some_and(|l| l.contains(needle)), "{args:?}: the first line says it: {err}");
        assert!(out.is_empty(), "{args:?}: nothing ran: {out}");
    }
}

#[test]
fn the_help_names_every_lesson_and_the_window_size_flag_checks_its_value() {
    let (code, help, _) = elbow(&["--help"]);
    assert_eq!(code, 0);
    let listed = help.split("--lesson").nth(1).expect("a --lesson entry").split("--view").next().unwrap_or_default();
    for lesson in elbow::lessons::Lesson::ALL {
        assert!(listed.contains(lesson.key()), "--help omits the {} lesson:\n{listed}", lesson.key());
    }
    for bad in ["1280", "100x100", "1280x-720", "wide"] {
        let (code, _, err) = elbow(&["--size", bad]);
        assert_eq!(code, 2, "--size {bad}");
        assert!(err.contains("WIDTHxHEIGHT"), "--size {bad}: {err}");
    }
    let (code, _, err) = elbow(&["--size", "1280x720", "solve", "1", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("--size is for the app"), "{err}");
}

#[test]
fn degradation_flags_are_refused_in_the_users_terms() {
    let run = |args: &[&str]| {
        let all = [&["experiment", "degradation", "--targets", "5", "--train-steps", "10"][..], args].concat();
        elbow(&all)
    };
    // Numbers as typed, not 300 digits; one bound per quantity (the plant's, as randomization's).
    for (flag, level, says) in [
        ("--latency", "1e300", "at most 10000 ms, got 1e300"),
        ("--friction", "1e300", "got 1e300"),
        ("--backlash", "3.2", "backlash levels must be at most pi/4 rad"),
        ("--encoder", "1e300", "encoder levels must be at most pi rad, got 1e300"),
        ("--target-noise", "5000", "target levels must be at most 1000 m"),
    ] {
        let (code, _, err) = run(&[flag, &format!("0,{level}")]);
        assert_eq!(code, 2, "{flag} {level}");
        assert!(err.contains(says) && err.len() < 300, "{flag} {level}: {err}");
    }
    // A mismatch level is named by the flag that set it, with the largest that works.
    let (code, _, err) = run(&["--mismatch-scale", "0,30"]);
    assert_eq!(code, 2);
    assert!(err.contains("--mismatch-scale 30") && err.contains("the largest level is 24.9"), "{err}");
    // A valid camera period stays valid in the combined channel's fractions of it.
    let (code, _, err) = run(&["--camera-period", "0,0.0001", "--protocol", "exercise", "--csv"]);
    assert_eq!(code, 0, "{err}");
}

/// `--arm-file`: a URDF file as the arm, described value by value, solved on, and refused in one
/// sentence with exit code 2 when it makes no planar chain.
#[test]
fn an_arm_from_a_urdf_file_is_described_solved_on_and_refused_in_one_sentence() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/so101_pitch.urdf");
    let (code, out, err) = elbow(&["solve", "--arm-file", file, "--tip", "gripper_frame", "--describe"]);
    assert_eq!(code, 0, "{err}");
    for needle in [
        "3 kept joints (`shoulder_lift`, `elbow_flex`, `wrist_flex`)",
        "held: `shoulder_pan` at 0",
        "(from the file's <dynamics damping>)",
    ] {
        assert!(out.contains(needle), "{needle:?} not in {out}");
    }
    let held = ["--hold", "shoulder_pan=0,wrist_roll=-0.0", "--joints", "shoulder_lift,elbow_flex,wrist_flex"];
    let mut args = vec!["solve", "0.3", "0.1", "--arm-file", file, "--tip", "gripper_frame", "--train-steps", "20"];
    args.extend(held);
    args.extend(["--samples", "2", "--json"]);
    let (code, out, err) = elbow(&args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["reachable"].as_bool(), v["coordinates"].as_array().map(Vec::len)), (Some(true), Some(3)), "{out}");
    assert!(err.contains("elbow train --arm-file ..."), "{err}");

    let bad = chain_scratch("bad.urdf");
    std::fs::write(&bad, "<robot name=\"r\"><link name=\"a\"></robot>").unwrap();
    let bad = bad.to_str().unwrap();
    let png = chain_scratch("never.png").to_string_lossy().into_owned();
    for (args, needle) in [
        (vec!["solve", "1", "0", "--arm-file", bad], "is not a URDF file this lab reads"),
        (vec!["atlas", "--arm-file", bad, "--out", &png], "is not a URDF file this lab reads"),
        (vec!["solve", "1", "0", "--arm-file", "/nonexistent/arm.urdf"], "cannot read /nonexistent/arm.urdf"),
        (
            vec!["solve", "1", "0", "--arm-file", file],
            "several end links (`gripper_frame`, `camera_mount`, `moving_jaw`)",
        ),
        (
            vec![
                "solve",
                "1",
                "0",
                "--arm-file",
                file,
                "--tip",
                "gripper_frame",
                "--joints",
                "shoulder_pan,shoulder_lift",
            ],
            "are not parallel",
        ),
        (
            vec!["solve", "1", "0", "--arm-file", file, "--tip", "gripper_frame", "--hold", "wrist_roll"],
            "expected NAME=VALUE",
        ),
        (vec!["solve", "1", "0", "--arm-file", file, "--arm", "3r"], "cannot be used with"),
        (vec!["solve", "1", "0", "--tip", "gripper_frame"], "required arguments were not provided"),
        (vec!["solve", "--describe", "--arm", "3r"], "--describe needs --arm-file"),
        // The app's own --arm-file: a bad file is refused before any window opens, and before a
        // command it belongs to the app.
        (vec!["--arm-file", bad], "is not a URDF file this lab reads"),
        (vec!["--arm-file", file], "several end links"),
        (vec!["--arm-file", file, "--tip", "gripper_frame", "--arm", "so101"], "cannot be used with"),
        (vec!["--arm-file", file, "solve", "1", "0"], "--arm-file before a command is for the app"),
    ] {
        refused_in_one_line(&args, needle);
    }
    assert!(!std::path::Path::new(&png).exists(), "nothing written");
    let _ = std::fs::remove_file(bad);
}
