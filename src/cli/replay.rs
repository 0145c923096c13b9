//! `elbow replay FILE --index N`: reads one record of a failure catalog (from `elbow experiment
//! degradation --catalog`), streaming the file up to that record and no further, re-runs it
//! headlessly with the core's [`replay`], prints the outcome and says whether it reproduced the
//! record: its set-up checked against the digests it was written with (an edited set-up field
//! is refused, named, before anything runs), every other field re-derived and compared, floats
//! bit for bit (exit code 2 naming the first field that differs when it did not).

use super::{Failure, print_json};
use clap::Args;
use elbow::experiments::degradation::catalog::read_record as read_catalog;
use elbow::experiments::degradation::{FailureRecord, MAX_CATALOG_BYTES, ReplayOutcome, replay};
use std::path::PathBuf;

/// Arguments of `elbow replay`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The catalog: JSON Lines from `elbow experiment degradation --catalog` (a JSON array of
    /// records is read too).
    file: PathBuf,
    /// Which record, counted from 0.
    // Read as text and checked by `index`, so a negative one gets one sentence, not clap's tip
    // that would make it a file name.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    index: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Parses `--index`: a whole number from 0.
fn index(s: &str) -> Result<usize, String> {
    super::count::<0, { usize::MAX }>(s).map_err(|_| {
        format!("--index counts records from 0 (the first is 0), so it is a whole number 0 or more, got `{}`", s.trim())
    })
}

/// The record and its replay, for `--json`.
#[derive(serde::Serialize)]
struct Replayed<'a> {
    index: usize,
    record: &'a FailureRecord,
    replay: &'a ReplayOutcome,
    identical: bool,
}

/// Record `index` (as typed: checked here) of the catalog `file`, read as a stream up to that
/// record and no further; `Err` is one sentence.
pub(crate) fn read_record(file: &std::path::Path, index_text: &str) -> Result<(usize, FailureRecord), String> {
    let at = index(index_text)?;
    let name = file.display();
    let input = elbow::files::open_bounded(file, MAX_CATALOG_BYTES)
        .map_err(|e| format!("cannot read the catalog {name}: {e}"))?;
    let record = read_catalog(input, at).map_err(|e| format!("{name}: {e}"))?;
    Ok((at, record))
}

/// `elbow replay`.
pub(crate) fn run(a: &ReplayArgs) -> Result<(), Failure> {
    let (at, record) = read_record(&a.file, &a.index)?;
    let name = a.file.display();
    let out = replay(&record).map_err(|e| format!("cannot replay record {at} of {name}: {e}"))?;
    if a.json {
        print_json(&Replayed { index: at, record: &record, replay: &out, identical: out.identical() })?;
    } else {
        print_text(at, &record, &out)?;
    }
    if out.identical() {
        Ok(())
    } else {
        super::flush_stdout()?;
        let first = &out.differences[0];
        let more = match out.differences.len() - 1 {
            0 => String::new(),
            n => format!(", and {n} more field(s) differ"),
        };
        Err(format!("record {at} did not reproduce: {first}{more}").into())
    }
}

fn print_text(index: usize, r: &FailureRecord, out: &ReplayOutcome) -> Result<(), String> {
    let setting = match r.setting.channel {
        None => "baseline (perfect arm)".to_string(),
        Some(ch) => format!("{} {} {}", ch.key(), r.setting.level, ch.unit()),
    };
    outln!(
        "record {index}: {} on {} ({}), {} targets #{}, {setting}, seed {}",
        r.pipeline,
        r.config.chain.as_ref().map_or(r.arm.to_string(), |chain| chain.name.clone()),
        r.protocol,
        r.split.key(),
        r.index,
        r.seed
    );
    outln!(
        "  target ({}, {}), sensed ({}, {}); expected: tip within {} m of the target",
        r.target.x,
        r.target.y,
        r.sensed.x,
        r.sensed.y,
        r.expected.tolerance
    );
    let h = r.happened;
    outln!(
        "  recorded: error {}, reported {}, camera reported {}, verdict {}, camera verdict {}",
        metres(h.error),
        h.reported,
        h.camera_reported,
        r.verdict.key(),
        r.camera_verdict.key()
    );
    let h = out.happened;
    outln!(
        "  replayed: error {}, reported {}, camera reported {}, verdict {}, camera verdict {}",
        metres(h.error),
        h.reported,
        h.camera_reported,
        out.verdict.key(),
        out.camera_verdict.key()
    );
    if out.identical() {
        outln!("identical (every field re-derived, floats bit for bit)");
    } else {
        for d in &out.differences {
            outln!("DIFFERS: {d}");
        }
    }
    Ok(())
}

/// A tip error on screen: `0.25 m`, or in words when it is not a finite number.
fn metres(v: f64) -> String {
    if v.is_nan() {
        "not a number".into()
    } else if v.is_infinite() {
        "infinite".into()
    } else {
        format!("{v} m")
    }
}
