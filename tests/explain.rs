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
