//! The failure catalog and its replay as a user runs them: `elbow experiment degradation
//! --catalog FILE` writes JSON Lines records, `elbow replay FILE --index N` re-runs one and says
//! `identical` bit for bit; bad input is refused with one sentence and exit code 2.

mod common;

use elbow::experiments::degradation::catalog::{CatalogWriter, SETUP_FIELDS, setup_digests};
use elbow::experiments::degradation::{
    CatalogSink, FailureRecord, Progress, degradation_catalogued, replay, replay_traced,
};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

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
        assert_eq!(r["version"], 2);
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
fn a_traced_replay_scrubs_to_the_recorded_tip_bit_for_bit() {
    let (_, records) = catalog();
    for (pipeline, verdict, channel) in [("mse", "silent", "encoder"), ("analytic", "reported", "encoder")] {
        let i = find(pipeline, verdict, channel);
        let record: FailureRecord = serde_json::from_value(records[i].clone()).unwrap();
        let (outcome, trace) = replay_traced(&record, 2).expect("replays");
        assert!(outcome.identical(), "{:?}", outcome.differences);
        assert_eq!(trace.moves.len(), record.index + 1, "every move up to the record's");
        let last = trace.moves.last().unwrap();
        assert_eq!((last.index, last.target, last.sensed), (record.index, record.target, record.sensed));
        assert_eq!(last.error.to_bits(), record.happened.error.to_bits());
        assert_eq!(last.reported, record.happened.reported);
        // The last sub-step of the record's move is where the real tip ended: the recorded error.
        let end = last.ticks.last().expect("the record's move keeps its sub-steps");
        assert_eq!((end.tip() - record.target).norm().to_bits(), record.happened.error.to_bits());
        assert!(last.ticks.windows(2).all(|w| w[1].time > w[0].time), "sub-steps in time order");
        let kept = trace.moves.iter().filter(|m| !m.ticks.is_empty()).count();
        assert_eq!(kept, 2.min(record.index + 1), "only the last two moves keep their sub-steps");
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
    assert!(run.stdout.contains("DIFFERS: happened.error") && !run.stdout.contains("\nidentical"), "{}", run.stdout);
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
    refused(&["replay", &write("old.jsonl", format!("{old}\n")), "--index", "0"], "reads only version 2");
    let n = records.len().to_string();
    refused(&["replay", p, "--index", &n], "does not exist");
    let mut bad_arm = records[0].clone();
    bad_arm["arm"]["l1"] = serde_json::json!(-1.0);
    bad_arm["config"]["arm"]["l1"] = serde_json::json!(-1.0);
    refused(&["replay", &write("arm.jsonl", format!("{bad_arm}\n")), "--index", "0"], "set-up was edited");
    // With its digests made again (anyone can), the arm is still refused.
    let bad_arm = redigested(bad_arm);
    refused(&["replay", &write("arm.jsonl", format!("{bad_arm}\n")), "--index", "0"], "arm cannot be built");
    let mut other_arm = records[0].clone();
    other_arm["arm"]["l1"] = serde_json::json!(0.5);
    refused(&["replay", &write("other.jsonl", format!("{other_arm}\n")), "--index", "0"], "not the arm");
    // A catalog in a missing directory: refused before the run, nothing written anywhere.
    let missing = dir.join("no-such-dir").join("c.jsonl");
    refused(&[RUN, &["--catalog", missing.to_str().unwrap()]].concat(), "cannot write the catalog");
    assert!(!dir.join("no-such-dir").exists());
}

/// `record` with its set-up digests made again for what it states now.
fn redigested(record: Value) -> Value {
    let mut r: FailureRecord = serde_json::from_value(record).unwrap();
    r.setup_digests = setup_digests(&r);
    serde_json::to_value(r).unwrap()
}

/// Every leaf of `v` under `path`: its path as a replay names it (`setting.level`,
/// `target[0]`) and its JSON pointer.
fn leaves(v: &Value, path: &str, pointer: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, u) in m {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                leaves(u, &p, &format!("{pointer}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, u) in a.iter().enumerate() {
                leaves(u, &format!("{path}[{i}]"), &format!("{pointer}/{i}"), out);
            }
        }
        _ => out.push((path.to_string(), pointer.to_string())),
    }
}

/// Other values for the leaf at `pointer`: the next number up (the next float, bit for bit, or
/// the next integer), the other boolean, or another value the catalog holds there (and
/// `exercise`, the other protocol).
fn edits(pointer: &str, v: &Value) -> Vec<Value> {
    match v {
        Value::Bool(b) => vec![Value::Bool(!b)],
        Value::Number(n) if n.is_u64() => vec![serde_json::json!(n.as_u64().unwrap() + 1)],
        Value::Number(n) => vec![serde_json::json!(f64::from_bits(n.as_f64().unwrap().to_bits() + 1))],
        Value::String(_) => {
            let (_, records) = catalog();
            let mut seen: Vec<Value> = records.iter().filter_map(|r| r.pointer(pointer).cloned()).collect();
            seen.push(Value::String("exercise".into()));
            seen.dedup();
            seen.into_iter().filter(|u| u != v).collect()
        }
        _ => Vec::new(),
    }
}

/// Replays `record` edited at `pointer` to `value`, if it is still a record; the error or the
/// differing fields.
fn replay_edited(record: &Value, pointer: &str, value: Option<Value>) -> Option<Result<Vec<String>, String>> {
    let mut edited = record.clone();
    match value {
        Some(value) => *edited.pointer_mut(pointer).unwrap() = value,
        None => {
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            edited.pointer_mut(parent).unwrap().as_object_mut().unwrap().remove(key);
        }
    }
    let record: FailureRecord = serde_json::from_value(edited).ok()?;
    Some(match replay(&record) {
        Ok(out) => Ok(out.differences.into_iter().map(|d| d.field).collect()),
        Err(e) => Err(e.to_string()),
    })
}

#[test]
fn an_edit_of_any_field_a_record_states_is_refused_naming_the_field() {
    let (_, records) = catalog();
    // The analytic solver trains nothing, so each replay takes milliseconds.
    let original = &records[find("analytic", "reported", "encoder")];
    let mut all = Vec::new();
    leaves(original, "", "", &mut all);
    // The set-up (the configuration, the pipeline, the index, the seed) is what a replay
    // follows: an edit there, or to its digest, is refused before anything runs, naming it.
    let top = |path: &str| path.split(['.', '[']).next().unwrap().to_string();
    let set_up = |path: &str| SETUP_FIELDS.contains(&top(path).as_str());
    let mut unedited = Vec::new();
    for (path, pointer) in &all {
        let value = original.pointer(pointer).unwrap();
        let Some(outcome) = edits(pointer, value).into_iter().find_map(|v| replay_edited(original, pointer, Some(v)))
        else {
            unedited.push(path.as_str());
            continue;
        };
        let named = path.strip_prefix("setup_digests.").unwrap_or(path);
        match outcome {
            Err(e) if set_up(named) => {
                assert!(
                    e.contains(&format!(
                        "set-up was edited, so a replay would not re-run what the record saw: {named}: recorded"
                    )),
                    "{path}: {e}"
                );
            }
            // Refused outright: the message names the field.
            Err(e) => assert!(e.contains(&top(path)), "{path}: {e}"),
            Ok(fields) => {
                assert!(!set_up(named), "{path} edited replays: {fields:?}");
                assert_eq!(fields, [path.as_str()], "{path} edited");
            }
        }
    }
    // Every leaf but the few whose every other value is not a record: enums with one value in
    // the catalog, `exercise` none of theirs.
    let enums = ["config.envelope.fallback", "config.ood[0]", "config.ood[1]", "config.ood[2]", "config.region"];
    assert_eq!(unedited, enums, "only these leaves could not be edited");
    assert!(all.iter().filter(|(p, _)| p.starts_with("config.")).count() > 40, "the configuration's leaves are walked");
    // A field left out is a field that differs too.
    let dropped = replay_edited(original, "/setting/channel", None).unwrap();
    assert_eq!(dropped, Ok(vec!["setting.channel".to_string()]));
}

#[test]
fn an_edited_set_up_field_is_refused_naming_it_even_when_the_outputs_would_not_change() {
    let (_, records) = catalog();
    let i = find("analytic", "reported", "encoder");
    let up = |v: &Value| serde_json::json!(f64::from_bits(v.as_f64().unwrap().to_bits() + 1));
    let mut unchanged = 0;
    for (pointer, field) in [
        ("/config/body/servo/frictionloss", "config.body.servo.frictionloss"),
        ("/config/body/servo/kp", "config.body.servo.kp"),
        ("/config/body/servo/kv", "config.body.servo.kv"),
        ("/config/body/servo/armature", "config.body.servo.armature"),
        ("/config/body/link_mass/0", "config.body.link_mass[0]"),
        ("/config/mismatch/length_error/1", "config.mismatch.length_error[1]"),
        ("/config/post_move_check", "config.post_move_check"),
        ("/config/arm/l1", "config.arm.l1"),
    ] {
        let mut r = records[i].clone();
        let v = r.pointer(pointer).unwrap().clone();
        *r.pointer_mut(pointer).unwrap() = if v.is_boolean() { Value::Bool(!v.as_bool().unwrap()) } else { up(&v) };
        if field == "config.arm.l1" {
            r["arm"]["l1"] = r["config"]["arm"]["l1"].clone();
        }
        let edited = common::scratch().join("edited-set-up.jsonl");
        std::fs::write(&edited, format!("{r}\n")).unwrap();
        refused(
            &["replay", edited.to_str().unwrap(), "--index", "0"],
            &format!("set-up was edited, so a replay would not re-run what the record saw: {field}: recorded"),
        );
        // With fresh digests (anyone can make them) the edit is replayed: a nudge of the arm
        // shows in the tip error; a one-ulp nudge of a physical parameter may or may not reach
        // the tip's last bit, and some edits re-run to every output bit for bit, which is why the
        // set-up carries its digests.
        std::fs::write(&edited, format!("{}\n", redigested(r))).unwrap();
        let run = common::elbow(&["replay", edited.to_str().unwrap(), "--index", "0"]);
        assert!([0, 2].contains(&run.code), "{field}: {}", run.stderr);
        if field == "config.arm.l1" {
            assert_eq!(run.code, 2, "{field}: {}", run.stderr);
        }
        unchanged += usize::from(run.code == 0);
    }
    assert!(unchanged > 0, "every edit showed in the outputs: the digests would not be needed");
}

#[test]
fn a_non_finite_error_replays_as_its_string_never_null() {
    let (_, records) = catalog();
    let i = find("analytic", "reported", "encoder");
    let mut r = records[i].clone();
    r["happened"]["error"] = serde_json::json!("NaN");
    let edited = common::scratch().join("nan.jsonl");
    std::fs::write(&edited, format!("{r}\n")).unwrap();
    let run = common::elbow(&["replay", edited.to_str().unwrap(), "--index", "0", "--json"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("did not reproduce: happened.error: recorded \"NaN\", re-derived"), "{}", run.stderr);
    assert!(!run.stdout.contains("null"), "{}", run.stdout);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["record"]["happened"]["error"], "NaN");
    assert_eq!(v["replay"]["differences"][0]["recorded"], "\"NaN\"");
    // On screen, in words (the differing field quotes the record's JSON).
    let run = common::elbow(&["replay", edited.to_str().unwrap(), "--index", "0"]);
    assert!(run.stdout.contains("recorded: error not a number,"), "{}", run.stdout);
    assert!(run.stdout.contains("DIFFERS: happened.error: recorded \"NaN\""), "{}", run.stdout);
}

#[test]
fn replay_reads_up_to_its_record_and_refuses_a_huge_line_before_it() {
    let (path, _) = catalog();
    let text = std::fs::read_to_string(path).unwrap();
    let first = text.lines().next().unwrap();
    // Record 0, then 16 MiB of garbage on one line.
    let huge = common::scratch().join("huge-tail.jsonl");
    let mut bytes = format!("{first}\n").into_bytes();
    bytes.resize(bytes.len() + (16 << 20), b'x');
    std::fs::write(&huge, bytes).unwrap();
    let h = huge.to_str().unwrap();
    let run = common::elbow(&["replay", h, "--index", "0"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\nidentical"), "{}", run.stdout);
    refused(&["replay", h, "--index", "1"], "line 2 is longer than 1048576 bytes");
}

#[test]
fn an_edited_verdict_tolerance_or_setting_fails_the_replay_naming_the_field_in_one_line() {
    let (_, records) = catalog();
    let i = find("mse", "silent", "encoder");
    for (pointer, value, field) in [
        ("/verdict", serde_json::json!("reported"), "verdict"),
        ("/camera_verdict", serde_json::json!("reported"), "camera_verdict"),
        ("/expected/tolerance", serde_json::json!(0.5), "expected.tolerance"),
        ("/setting/channel", serde_json::json!("target"), "setting.channel"),
        ("/setting/level", serde_json::json!(0.02), "setting.level"),
    ] {
        let mut r = records[i].clone();
        *r.pointer_mut(pointer).unwrap() = value;
        let edited = common::scratch().join("edited-field.jsonl");
        std::fs::write(&edited, format!("{r}\n")).unwrap();
        let run = common::elbow(&["replay", edited.to_str().unwrap(), "--index", "0"]);
        assert_eq!(run.code, 2, "{field}: {}", run.stdout);
        let err = run.stderr.trim();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("did not reproduce: {field}: recorded")), "{field}: {err}");
        assert!(run.stdout.contains(&format!("DIFFERS: {field}")), "{}", run.stdout);
    }
}

#[test]
fn a_negative_index_is_refused_saying_records_count_from_0() {
    let (path, _) = catalog();
    for index in ["-1", "-0.5", "x"] {
        refused(&["replay", path.to_str().unwrap(), "--index", index], "counts records from 0");
        refused(&["replay", "--index", index, path.to_str().unwrap()], "counts records from 0");
    }
}

#[test]
fn an_exercise_only_run_is_refused_a_catalog_and_the_old_one_kept() {
    let old = common::scratch().join("kept.jsonl");
    std::fs::write(&old, "a good catalog\n").unwrap();
    let exercise: Vec<&str> = RUN
        .iter()
        .map(|&a| if a == "plant" { "exercise" } else { a })
        .chain(["--catalog", old.to_str().unwrap()])
        .collect();
    refused(&exercise, "plant-protocol records only");
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "a good catalog\n");
}

#[test]
fn a_catalog_streams_while_the_run_goes_and_stops_whole_at_its_size_limit() {
    let (path, records) = catalog();
    let lines: Vec<String> = std::fs::read_to_string(path).unwrap().lines().map(|l| format!("{l}\n")).collect();
    let cfg = serde_json::from_value(records[0]["config"].clone()).unwrap();
    // A limit that holds a few records but not the next one.
    let limit = (lines[..5].concat().len() + lines[5].len() / 2) as u64;
    let mut writer = CatalogWriter::new(Vec::new(), limit);
    let done = AtomicUsize::new(0);
    let mut first_at = None;
    let progress = |p: Progress| {
        if let Progress::Evaluating { done: n, .. } = p {
            done.fetch_max(n, Ordering::SeqCst);
        }
    };
    let mut push = |r: &FailureRecord| {
        first_at.get_or_insert(done.load(Ordering::SeqCst));
        writer.push(r);
    };
    // One thread: windows of four jobs.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let report = pool
        .install(|| degradation_catalogued(&cfg, Vec::new(), &progress, Some(CatalogSink { cap: 3, sink: &mut push })))
        .unwrap();
    let total = report.cells.len() / elbow::experiments::degradation::pipelines().len();
    let first_at = first_at.expect("records were handed on");
    assert!(first_at < total, "the first record was handed on after job {first_at} of {total}, not while the run went");
    let (bytes, summary) = writer.finish().unwrap();
    assert!(bytes.len() as u64 <= limit && summary.bytes == bytes.len() as u64);
    // Whole lines, the catalog's first ones, the rest counted.
    assert_eq!(String::from_utf8(bytes).unwrap(), lines[..5].concat());
    assert_eq!((summary.records, summary.left_out), (5, lines.len() - 5));
    // The file limit is the replay's read limit, 4 GiB.
    assert_eq!(elbow::experiments::degradation::MAX_CATALOG_BYTES, 4 << 30);
}
