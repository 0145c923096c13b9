//! `elbow explain` as a user runs it: the averaging trap named for the MSE head, one mixture
//! component per branch for the MDN, the envelope's reason, JSON without null or NaN, and one
//! sentence with exit code 2 for bad input.

mod common;

/// Exit code, stdout and stderr of `elbow explain ARGS` with a short training run.
fn explain(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["explain", "--train-steps", "1500"];
    all.extend_from_slice(args);
    let run = common::elbow(&all);
    (run.code, run.stdout, run.stderr)
}

#[test]
fn the_mse_head_is_explained_as_the_averaging_trap_and_the_envelope_rejects_it() {
    let (code, out, err) = explain(&["--head", "mse", "--target", "1,0.8"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("averaging trap"), "{out}");
    assert!(out.contains("envelope: rejected: its tip misses the target"), "{out}");
    assert!(out.contains("fallback:"), "{out}");
}

#[test]
fn the_mdn_json_has_a_component_on_each_branch_and_no_null() {
    let (code, out, err) = explain(&["--head", "mdn", "--target", "1,0.8", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("null") && !out.contains("NaN"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let near: Vec<&str> =
        v["candidates"].as_array().expect("candidates").iter().map(|c| c["near"].as_str().unwrap()).collect();
    assert!(near.contains(&"up") && near.contains(&"down"), "{near:?}");
    assert_eq!(v["in_training_region"], true);
    assert!(v["density"]["count"].as_u64().unwrap() > 0, "{out}");
}

#[test]
fn beyond_the_reach_the_head_answers_anyway_and_the_residual_shows_its_correction() {
    let (code, out, err) = explain(&["--head", "mdn", "--target", "2.5,0"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("out of reach") && out.contains("reports nothing"), "{out}");
    assert!(out.contains("0 targets within"), "{out}");
    let (code, out, err) = explain(&["--head", "residual", "--target", "1,0.8", "--mode", "up"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("learned correction") && out.contains("trust region"), "{out}");
}

#[test]
fn bad_input_gets_one_sentence_and_exit_code_2() {
    for args in [
        &["--head", "mdn", "--target", "nan,1"][..],
        &["--head", "mdn", "--target", "1"],
        &["--head", "nope", "--target", "1,1"],
        &["--head", "mdn", "--target", "1,1", "--from", "100,0"],
        &["--head", "mdn", "--target", "1,1", "--mode", "sideways"],
        &["--head", "mdn", "--target", "1,1", "--model", "/nonexistent/model.json"],
        &["--head", "mdn", "--target", "1e308,1e308", "--lengths", "0,1"],
    ] {
        let (code, out, err) = explain(args);
        assert_eq!(code, 2, "{args:?}: {out} {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.contains("error"), "{args:?}: {err}");
    }
}

#[test]
fn a_model_for_another_head_is_refused() {
    let path = common::scratch().join("explain-mse.json");
    let path = path.to_str().expect("utf-8 path");
    let train = common::elbow(&["train", "--head", "mse", "--steps", "50", "--eval-targets", "10", "--out", path]);
    assert_eq!(train.code, 0, "{}", train.stderr);
    let (code, _, err) = explain(&["--head", "mdn", "--target", "1,1", "--model", path]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("holds a mse model, not mdn"), "{err}");
    let (code, out, err) = explain(&["--head", "mse", "--target", "1e9,-1e9", "--model", path]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("out of reach") && !out.contains("NaN") && !out.contains("inf"), "{out}");
    // Beyond ±1e9 m a distance would print as hundreds of digits or overflow: refused in range.
    let (code, _, err) = explain(&["--head", "mse", "--target", "1e308,-1e308", "--model", path]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("within ±1e9 m") && err.len() < 300, "{err}");
}

/// `elbow explain --arm rail3 --target X,Y`: a chain's net explained through the one entry
/// point, as a table and as JSON (the answer's four coordinates, the mixture's components, the
/// draws, the training data and the classical check; no null or NaN).
#[test]
fn a_chain_net_is_explained_as_a_table_and_as_json() {
    let base = ["explain", "--arm", "rail3", "--target", "1.5,0", "--train-steps", "200"];
    let text = common::elbow(&base);
    assert_eq!(text.code, 0, "{}", text.stderr);
    for needle in ["mdn net on rail3 for the target (1.5, 0) m:", "  component  weight", "draws: 400", "check (DLS"] {
        assert!(text.stdout.contains(needle), "{needle}: {}", text.stdout);
    }
    let json = common::elbow(&[&base[..], &["--solver", "mse", "--json"]].concat());
    assert_eq!(json.code, 0, "{}", json.stderr);
    assert!(!json.stdout.contains("null") && !json.stdout.contains("NaN"), "{}", json.stdout);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(v["solver"], "mse", "the net named by its solver's key: {v}");
    assert_eq!(v["answer"].as_array().map(Vec::len), Some(4), "{v}");
    assert_eq!(v["components"].as_array().map(Vec::len), Some(1), "the MSE net is one component: {v}");
    assert!(v["check"]["iterations"].as_u64().is_some() && v["density"]["count"].as_u64().is_some(), "{v}");
    assert!(v["summary"][1].as_str().is_some_and(|s| s.contains("mean of the posterior")), "{v}");
}

/// A solver not explained on the arm is refused in one sentence naming those that are, with
/// exit code 2, before any training; so are the two-link arm's flags on a chain.
#[test]
fn a_solver_the_arm_does_not_explain_is_refused_naming_those_it_does() {
    for (args, needle) in [
        (
            &["--arm", "rail3", "--solver", "dls"][..],
            "dls is not explained on rail3; the solvers explained there are mse, mdn, flow",
        ),
        (
            &["--arm", "3r", "--solver", "exact"],
            "exact is not explained on 3r; the solvers explained there are mse, mdn, flow",
        ),
        (
            &["--solver", "flow"],
            "flow is not explained on 2r; the solvers explained there are mse, mdn, mode, residual",
        ),
        (&["--arm", "so101", "--from", "0,1"], "--from is for the two-link arm; on so101 choose a net with --solver"),
    ] {
        let run = common::elbow(&[&["explain", "--target", "0.3,0.1"][..], args].concat());
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty() && run.stderr.lines().count() == 1, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(needle) && !run.stderr.contains("training"), "{args:?}: {}", run.stderr);
    }
}
