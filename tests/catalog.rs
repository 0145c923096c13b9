//! The failure catalog and its replay as a user runs them: `elbow experiment degradation
//! --catalog FILE` writes JSON Lines records, `elbow replay FILE --index N` re-runs one and says
//! `identical` bit for bit; bad input is refused with one sentence and exit code 2.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

/// A small plant-protocol run: encoder noise and target noise swept, held-out and beyond-reach
/// targets.
const RUN: &[&str] = &[
    "experiment",
    "degradation",
    "--protocol",
    "plant",
    "--targets",
    "200",
    "--train-steps",
    "300",
    "--encoder",
    "0,0.05",
    "--target-noise",
    "0,0.02",
    "--actuator",
    "0",
    "--backlash",
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
    "--json",
];

/// The catalog of [`RUN`], written once per test binary, and its records.
fn catalog() -> &'static (PathBuf, Vec<serde_json::Value>) {
    static CATALOG: OnceLock<(PathBuf, Vec<serde_json::Value>)> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let path = common::scratch().join("catalog.jsonl");
        let p = path.to_str().unwrap();
        let run = common::elbow(&[RUN, &["--catalog", p]].concat());
        assert_eq!(run.code, 0, "{}", run.stderr);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("null") && !text.contains("NaN"), "the catalog holds null or NaN");
        let records: Vec<serde_json::Value> =
            text.lines().map(|l| serde_json::from_str(l).expect("one JSON record per line")).collect();
        (path, records)
    })
}

/// The index of the first record past the first target of its set, under `channel`, of
/// `pipeline` with `verdict`: replaying it takes the seed and the carried-over plant state.
fn find(pipeline: &str, verdict: &str, channel: &str) -> usize {
    let (_, records) = catalog();
    records
        .iter()
        .position(|r| {
            r["pipeline"] == pipeline
                && r["verdict"] == verdict
                && r["setting"]["channel"] == channel
                && r["index"].as_u64().unwrap() > 0
        })
        .unwrap_or_else(|| panic!("no {verdict} record of {pipeline} under {channel} past target 0"))
}

#[test]
fn the_catalog_holds_silent_failures_of_a_bare_head_and_reported_ones_of_the_analytic_solver() {
    let (_, records) = catalog();
    for r in records {
        assert_eq!(r["version"], 1);
        assert_eq!(r["protocol"], "plant");
        assert!(["silent", "reported", "false-alarm", "ok"].contains(&r["verdict"].as_str().unwrap()));
        assert!(r["config"]["seed"].is_u64() && r["happened"]["error"].is_f64());
    }
    let has = |pipeline: &str, verdict: &str, split: &str| {
        records.iter().any(|r| r["pipeline"] == pipeline && r["verdict"] == verdict && r["split"] == split)
    };
    assert!(has("mse", "silent", "in"), "a bare head misses in distribution without a word");
    assert!(has("analytic", "reported", "beyond"), "the analytic solver says a target is out of reach");
    // Under encoder noise the encoder check reports good moves too.
    assert!(
        records.iter().any(|r| r["pipeline"] == "analytic"
            && r["verdict"] == "false-alarm"
            && r["setting"]["channel"] == "encoder")
    );
}

#[test]
fn a_silent_and_a_reported_record_replay_bit_for_bit() {
    let (path, records) = catalog();
    let p = path.to_str().unwrap();
    for (pipeline, verdict, channel) in
        [("mse", "silent", "encoder"), ("analytic", "reported", "encoder"), ("mdn", "silent", "target")]
    {
        let i = find(pipeline, verdict, channel);
        let run = common::elbow(&["replay", p, "--index", &i.to_string()]);
        assert_eq!(run.code, 0, "{pipeline} {verdict} #{i}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("\nidentical"), "{}", run.stdout);
        assert!(run.stdout.contains(&format!("verdict {verdict}")), "{}", run.stdout);
        let recorded = records[i]["happened"]["error"].as_f64().unwrap();
        let run = common::elbow(&["replay", p, "--index", &i.to_string(), "--json"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(!run.stdout.contains("null") && !run.stdout.contains("NaN"), "{}", run.stdout);
        let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(v["identical"], true);
        assert_eq!(v["replay"]["verdict"], verdict);
        let replayed = v["replay"]["happened"]["error"].as_f64().unwrap();
        assert_eq!(replayed.to_bits(), recorded.to_bits(), "{pipeline} {verdict} #{i}");
    }
}

#[test]
fn a_record_that_does_not_reproduce_is_said_so_with_exit_code_2() {
    let (_, records) = catalog();
    let i = find("analytic", "reported", "encoder");
    let mut r = records[i].clone();
    let error = r["happened"]["error"].as_f64().unwrap();
    r["happened"]["error"] = serde_json::json!(f64::from_bits(error.to_bits() + 1));
    let edited = common::scratch().join("edited.jsonl");
    std::fs::write(&edited, format!("{r}\n")).unwrap();
    let run = common::elbow(&["replay", edited.to_str().unwrap(), "--index", "0"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stdout.contains("DIFFERS: tip error") && !run.stdout.contains("\nidentical"), "{}", run.stdout);
    // A JSON array of records is read too.
    let array = common::scratch().join("array.json");
    std::fs::write(&array, serde_json::to_string(&[&records[i]]).unwrap()).unwrap();
    let run = common::elbow(&["replay", array.to_str().unwrap(), "--index", "0"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// One sentence on stderr, exit code 2, no panic.
fn refused(args: &[&str], needle: &str) {
    let run = common::elbow(args);
    assert_eq!(run.code, 2, "{args:?}: {}", run.stdout);
    let err = run.stderr.trim();
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(needle) && !err.contains("panicked"), "{args:?}: {err}");
    assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
}

#[test]
fn hostile_catalogs_and_paths_are_refused_with_one_sentence() {
    let (path, records) = catalog();
    let p = path.to_str().unwrap();
    let dir = common::scratch();
    let write = |name: &str, text: String| {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        f.to_str().unwrap().to_string()
    };
    refused(&["replay", dir.join("missing.jsonl").to_str().unwrap(), "--index", "0"], "cannot read the catalog");
    refused(&["replay", &write("garbage.jsonl", "not json\n".into()), "--index", "0"], "not JSON Lines");
    let mut old = records[0].clone();
    old["version"] = serde_json::json!(0);
    refused(&["replay", &write("old.jsonl", format!("{old}\n")), "--index", "0"], "reads only version 1");
    let n = records.len().to_string();
    refused(&["replay", p, "--index", &n], "does not exist");
    let mut bad_arm = records[0].clone();
    bad_arm["arm"]["l1"] = serde_json::json!(-1.0);
    bad_arm["config"]["arm"]["l1"] = serde_json::json!(-1.0);
    refused(&["replay", &write("arm.jsonl", format!("{bad_arm}\n")), "--index", "0"], "arm cannot be built");
    let mut other_arm = records[0].clone();
    other_arm["arm"]["l1"] = serde_json::json!(0.5);
    refused(&["replay", &write("other.jsonl", format!("{other_arm}\n")), "--index", "0"], "not the arm");
    // A catalog in a missing directory: refused before the run, nothing written anywhere.
    let missing = dir.join("no-such-dir").join("c.jsonl");
    refused(&[RUN, &["--catalog", missing.to_str().unwrap()]].concat(), "cannot write the catalog");
    assert!(!dir.join("no-such-dir").exists());
}
