//! The failure catalog: one self-contained [`FailureRecord`] per target on which a pipeline
//! failed silently, reported a failure, or raised a false alarm, and [`replay`], which re-runs
//! one record headlessly and says whether it reproduces bit for bit.
//!
//! Only the plant protocol is catalogued. A record carries everything a replay needs: the run's
//! [`DegradationConfig`] (arm, levels, seed, tolerance, ticks, envelope...), the pipeline, the
//! setting and its seed, the split and the target's index in its set. The plant carries its
//! state from target to target, so a replay re-trains the pipeline's head from the
//! configuration's seed exactly as the run did, rebuilds the target set and its sensed
//! targets, and drives the whole sequence up to the record's index.
//!
//! A run finds many failures (up to targets x settings x pipelines), so the catalog keeps at
//! most a given number of records per cell (pipeline, setting, split) and per pair of verdicts
//! (encoder check, camera check), the first ones in target order. A tip error that is not a
//! finite number is left out (JSON has no NaN); the cells still count it as a miss. A run holds
//! only a compact note of each failure and hands the records to a sink in catalog order as it
//! goes, so a catalog never sits in memory whole.
//!
//! Files are JSON Lines, one record per line ([`CatalogWriter`], which stops at
//! [`MAX_CATALOG_BYTES`], the most a replay reads); [`parse_record`] reads them, or a plain JSON
//! array of records, and refuses a record of another [`CATALOG_VERSION`].
//!
//! A replay re-derives the whole record from its configuration, pipeline, seed and index and
//! compares it with the record field by field (floats bit for bit), so no field a record states
//! goes unchecked: the verdicts, the tolerance, the setting, the target, the tip error, the
//! reports. The configuration is the recipe; the seed names the setting and target set it drew
//! (each setting's seed derives from the configuration's), and the pipeline and index name
//! what to re-run.

use super::channels::{self, Perturbation, Setting, Split};
use super::config::{DegradationConfig, Protocol};
use super::proposals::Proposals;
use super::protocol::{self, Outcome, PlantTrace};
use crate::envelope::Envelope;
use crate::experiments::ExperimentError;
use crate::kinematics::{Point2, RealArm, TwoLinkArm};
use crate::learned::HeadKind;
use crate::lineup::{Lineup, Pipeline, Table};
use serde::{Deserialize, Serialize};

/// The format version of a catalog record; a reader refuses any other.
pub const CATALOG_VERSION: u32 = 1;

/// The largest catalog, bytes (4 GiB): `elbow replay` reads no more, and a [`CatalogWriter`]
/// writes no more.
pub const MAX_CATALOG_BYTES: u64 = 4 << 30;

/// What one check made of one move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Finding {
    /// Within the tolerance and not reported: nothing to catalogue.
    Ok,
    /// Missed (tip error above the tolerance, or not a number) without reporting it.
    Silent,
    /// Missed and reported.
    Reported,
    /// Reported although the tip was within the tolerance.
    FalseAlarm,
}

impl Finding {
    /// The finding of a move that `missed` and was (or was not) `reported`.
    pub fn of(missed: bool, reported: bool) -> Self {
        match (missed, reported) {
            (false, false) => Finding::Ok,
            (true, false) => Finding::Silent,
            (true, true) => Finding::Reported,
            (false, true) => Finding::FalseAlarm,
        }
    }

    /// The key in JSON and on screen.
    pub fn key(self) -> &'static str {
        match self {
            Finding::Ok => "ok",
            Finding::Silent => "silent",
            Finding::Reported => "reported",
            Finding::FalseAlarm => "false-alarm",
        }
    }
}

/// What the pipeline was expected to do: bring the tip within `tolerance` metres of the true
/// target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Expected {
    /// The tolerance, metres.
    pub tolerance: f64,
}

/// What happened on the move.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Happened {
    /// Tip error against the true target, metres (exact: JSON numbers round-trip).
    pub error: f64,
    /// Reported a failure by its status or the encoder check after the move.
    pub reported: bool,
    /// Reported a failure by its status or the camera check after the move.
    pub camera_reported: bool,
}

impl Happened {
    /// The verdict with the encoder check, for a `tolerance`.
    pub fn verdict(&self, tolerance: f64) -> Finding {
        Finding::of(missed(self.error, tolerance), self.reported)
    }

    /// The verdict with the camera check, for a `tolerance`.
    pub fn camera_verdict(&self, tolerance: f64) -> Finding {
        Finding::of(missed(self.error, tolerance), self.camera_reported)
    }
}

/// The miss rule of the cells: above the tolerance, or not a number.
fn missed(error: f64, tolerance: f64) -> bool {
    error.is_nan() || error > tolerance
}

/// One catalogued move, with everything needed to replay it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureRecord {
    /// The format version, [`CATALOG_VERSION`].
    pub version: u32,
    /// The nominal arm (lengths and joint limits); the configuration's arm.
    pub arm: TwoLinkArm,
    /// The solver and whether the envelope wraps it.
    pub pipeline: Pipeline,
    /// Always `plant`: only the plant protocol is catalogued.
    pub protocol: Protocol,
    /// The target set: `in` (held out) or an OOD set.
    pub split: Split,
    /// The channel swept (absent: the shared baseline), its level and every channel's value.
    pub setting: Setting,
    /// The target's index within its set (0-based).
    pub index: usize,
    /// The true target.
    pub target: Point2,
    /// The target as the arm's sensor saw it (the true one plus target noise).
    pub sensed: Point2,
    /// The seed of the setting's noise (sensed targets, encoders, actuators, camera).
    pub seed: u64,
    /// The run's configuration.
    pub config: DegradationConfig,
    /// What was expected.
    pub expected: Expected,
    /// What happened.
    pub happened: Happened,
    /// The verdict with the encoder check.
    pub verdict: Finding,
    /// The verdict with the camera check instead.
    pub camera_verdict: Finding,
}

/// The failures of one (setting, target set) job, compact: a [`FailureRecord`] is built from
/// each only when it is handed on ([`Found::records`]).
pub(crate) struct Found {
    /// The setting.
    setting: Setting,
    /// The target set.
    split: Split,
    /// The setting's seed.
    seed: u64,
    /// One per catalogued move, pipeline by pipeline, each in target order.
    hits: Vec<Hit>,
}

/// One catalogued move of a [`Found`].
struct Hit {
    pipeline: Pipeline,
    index: usize,
    target: Point2,
    sensed: Point2,
    happened: Happened,
    verdicts: (Finding, Finding),
}

impl Found {
    /// An empty note for the job of `setting` on `split`, seeded with `seed`.
    pub(crate) fn new(setting: Setting, split: Split, seed: u64) -> Self {
        Self { setting, split, seed, hits: Vec::new() }
    }

    /// Notes the failures of `pipeline`'s `outcome` (plant protocol, one per target, in order)
    /// on `targets`, sensed as `seen`: at most `cap` per pair of verdicts, the first in target
    /// order, none with a non-finite error.
    pub(crate) fn collect(
        &mut self,
        tolerance: f64,
        (targets, seen): (&[Point2], &[Point2]),
        pipeline: Pipeline,
        outcome: &Outcome,
        cap: usize,
    ) {
        let mut taken: std::collections::HashMap<(Finding, Finding), usize> = std::collections::HashMap::new();
        // Without a model a head answers nothing and the outcome skips targets; a run trains
        // every head, so the outcome covers the whole set, index for index.
        if outcome.errors.len() != targets.len() {
            return;
        }
        for (index, &error) in outcome.errors.iter().enumerate() {
            let happened =
                Happened { error, reported: outcome.reported[index], camera_reported: outcome.camera_reported[index] };
            let verdicts = (happened.verdict(tolerance), happened.camera_verdict(tolerance));
            if verdicts == (Finding::Ok, Finding::Ok) || !error.is_finite() {
                continue;
            }
            let n = taken.entry(verdicts).or_default();
            if *n >= cap {
                continue;
            }
            *n += 1;
            self.hits.push(Hit { pipeline, index, target: targets[index], sensed: seen[index], happened, verdicts });
        }
    }

    /// The records, in order, for a run of `cfg`.
    pub(crate) fn records<'a>(&'a self, cfg: &'a DegradationConfig) -> impl Iterator<Item = FailureRecord> + 'a {
        self.hits.iter().map(move |h| FailureRecord {
            version: CATALOG_VERSION,
            arm: cfg.arm,
            pipeline: h.pipeline,
            protocol: Protocol::Plant,
            split: self.split,
            setting: self.setting,
            index: h.index,
            target: h.target,
            sensed: h.sensed,
            seed: self.seed,
            config: cfg.clone(),
            expected: Expected { tolerance: cfg.tolerance },
            happened: h.happened,
            verdict: h.verdicts.0,
            camera_verdict: h.verdicts.1,
        })
    }
}

/// What a [`CatalogWriter`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogSummary {
    /// Records written.
    pub records: usize,
    /// Bytes written.
    pub bytes: u64,
    /// Records left out because the next line would have passed the size limit (this one and
    /// every later one, so the file holds the catalog's first records).
    pub left_out: usize,
}

/// Writes failure records as JSON Lines, whole lines only, up to a size limit
/// ([`MAX_CATALOG_BYTES`] for a file a replay must read): the first record that would pass it,
/// and every later one, is left out and counted. After a write error nothing more is written,
/// the output is dropped at once (a temporary file frees its space) and [`CatalogWriter::finish`]
/// returns the error.
pub struct CatalogWriter<W: std::io::Write> {
    out: Option<W>,
    limit: u64,
    summary: CatalogSummary,
    error: Option<std::io::Error>,
}

impl<W: std::io::Write> CatalogWriter<W> {
    /// A writer into `out` of at most `limit` bytes.
    pub fn new(out: W, limit: u64) -> Self {
        Self { out: Some(out), limit, summary: CatalogSummary { records: 0, bytes: 0, left_out: 0 }, error: None }
    }

    /// Appends `record` as one line, or leaves it out (see [`CatalogWriter`]).
    pub fn push(&mut self, record: &FailureRecord) {
        if self.out.is_none() {
            return;
        }
        if self.summary.left_out > 0 {
            self.summary.left_out += 1;
            return;
        }
        let line = match serde_json::to_string(record) {
            Ok(mut line) => {
                line.push('\n');
                line
            }
            Err(e) => return self.fail(std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        };
        if self.summary.bytes + line.len() as u64 > self.limit {
            self.summary.left_out = 1;
            return;
        }
        if let Err(e) = self.out.as_mut().map_or(Ok(()), |out| out.write_all(line.as_bytes())) {
            return self.fail(e);
        }
        self.summary.records += 1;
        self.summary.bytes += line.len() as u64;
    }

    /// Keeps the first error and drops the output.
    fn fail(&mut self, e: std::io::Error) {
        self.out = None;
        self.error.get_or_insert(e);
    }

    /// The output, flushed, and what was written; or the first write error.
    pub fn finish(mut self) -> Result<(W, CatalogSummary), std::io::Error> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut out = self.out.take().expect("kept until an error");
        out.flush()?;
        Ok((out, self.summary))
    }
}

/// Why a catalog record could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CatalogError {
    /// The text is not JSON Lines nor a JSON array.
    #[error("the catalog is not JSON Lines nor a JSON array of records: {0}")]
    Json(String),
    /// The index is past the last record.
    #[error("record {index} does not exist: the catalog holds {count} record(s), numbered from 0")]
    Index {
        /// The index asked for.
        index: usize,
        /// Records in the catalog.
        count: usize,
    },
    /// The record is of another format version.
    #[error("record {index} is of catalog format version {found}, and this elbow reads only version {CATALOG_VERSION}")]
    Version {
        /// The record.
        index: usize,
        /// Its version, in words.
        found: String,
    },
    /// The record does not have the fields of a record.
    #[error("record {index} is not a failure record: {reason}")]
    Record {
        /// The record.
        index: usize,
        /// What is wrong.
        reason: String,
    },
}

/// Record `index` (0-based) of a catalog: JSON Lines (blank lines skipped) or a JSON array.
pub fn parse_record(text: &str, index: usize) -> Result<FailureRecord, CatalogError> {
    let trimmed = text.trim_start();
    let value = if trimmed.starts_with('[') {
        let mut all: Vec<serde_json::Value> =
            serde_json::from_str(trimmed).map_err(|e| CatalogError::Json(e.to_string()))?;
        let count = all.len();
        if index >= count {
            return Err(CatalogError::Index { index, count });
        }
        all.swap_remove(index)
    } else {
        let lines: Vec<(usize, &str)> = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).collect();
        let count = lines.len();
        let &(line, body) = lines.get(index).ok_or(CatalogError::Index { index, count })?;
        serde_json::from_str(body).map_err(|e| CatalogError::Json(format!("line {}: {e}", line + 1)))?
    };
    match value.get("version") {
        Some(v) if v.as_u64() == Some(u64::from(CATALOG_VERSION)) => {}
        found => {
            let found = found.map_or_else(|| "none (no `version` field)".to_string(), |v| v.to_string());
            return Err(CatalogError::Version { index, found });
        }
    }
    serde_json::from_value(value).map_err(|e| CatalogError::Record { index, reason: e.to_string() })
}

/// One field in which a record and its re-derivation differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// The field, as a JSON path (`verdict`, `setting.level`, `happened.error`).
    pub field: String,
    /// Its value in the record, as JSON (`absent` when the record lacks it).
    pub recorded: String,
    /// Its value re-derived, as JSON (`absent` when the re-derived record lacks it).
    pub rederived: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: recorded {}, re-derived {}", self.field, self.recorded, self.rederived)
    }
}

/// What a replay of one record found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayOutcome {
    /// The sensed target of the re-run.
    pub sensed: Point2,
    /// What happened in the re-run.
    pub happened: Happened,
    /// Its verdict with the encoder check.
    pub verdict: Finding,
    /// Its verdict with the camera check.
    pub camera_verdict: Finding,
    /// Every field in which the record differs from its re-derivation, ordered by JSON path
    /// (empty: identical, floats bit for bit).
    pub differences: Vec<Difference>,
}

impl ReplayOutcome {
    /// True when the re-run reproduced the record: every field it states, floats bit for bit.
    pub fn identical(&self) -> bool {
        self.differences.is_empty()
    }
}

/// Checks that `record` can be replayed: its version, its arm (buildable, the configuration's),
/// the protocol and the configuration.
fn check(record: &FailureRecord) -> Result<(), ExperimentError> {
    let bad = |s: String| Err(ExperimentError::Invalid(s));
    if record.version != CATALOG_VERSION {
        return bad(format!(
            "the record is of catalog format version {}, and this elbow reads only version {CATALOG_VERSION}",
            record.version
        ));
    }
    record.arm.validate().map_err(|e| ExperimentError::Invalid(format!("the record's arm cannot be built: {e}")))?;
    record
        .config
        .arm
        .validate()
        .map_err(|e| ExperimentError::Invalid(format!("the record's configured arm cannot be built: {e}")))?;
    if record.arm != record.config.arm {
        return bad("the record's arm is not the arm of its configuration".into());
    }
    if record.protocol != Protocol::Plant {
        return bad(format!("only plant-protocol records can be replayed, this one is `{}`", record.protocol));
    }
    record.config.validate()?;
    if !crate::experiments::degradation::pipelines().contains(&record.pipeline) {
        return bad(format!("pipeline {} is not one a degradation run measures", record.pipeline));
    }
    Ok(())
}

/// Re-runs `record` headlessly and re-derives it whole: finds the plant-protocol job of its
/// configuration that its seed belongs to (the setting and target set), trains its pipeline's
/// head (if any) from the configuration as the run did, rebuilds the target set and sensed
/// targets, drives the plant through the set up to the record's index (the plant carries its
/// state from target to target), and compares every field of the record with the re-derived
/// one ([`differences`]). Errors on a record that cannot be replayed (version, arm,
/// configuration, a seed or index the configuration does not make).
pub fn replay(record: &FailureRecord) -> Result<ReplayOutcome, ExperimentError> {
    replay_traced(record, 0).map(|(outcome, _)| outcome)
}

/// [`replay`], tracing the plant run: every move up to the record's, and every plant sub-step
/// of the last `keep` moves (the record's own last), which is what the app's replay scrubs.
pub fn replay_traced(record: &FailureRecord, keep: usize) -> Result<(ReplayOutcome, PlantTrace), ExperimentError> {
    check(record)?;
    let cfg = &record.config;
    let arm = cfg.arm;
    let sets = channels::target_sets(&arm, cfg.region, cfg.targets, cfg.ood_targets(), &cfg.ood, cfg.seed);
    let job = super::jobs(cfg, sets.len()).into_iter().enumerate().find(|&(j, (protocol, ..))| {
        protocol == Protocol::Plant
            && crate::rng::subseed(cfg.seed, crate::rng::Stream::Setting, j as u64) == record.seed
    });
    let Some((_, (_, setting, set))) = job else {
        return Err(ExperimentError::Invalid(format!(
            "the record's seed {} is the seed of no plant-protocol setting of its configuration",
            record.seed
        )));
    };
    let (split, targets) = &sets[set];
    let n = record.index;
    if n >= targets.len() {
        return Err(ExperimentError::Invalid(format!(
            "the record's target index {n} is past its `{}` set of {} targets",
            split.key(),
            targets.len()
        )));
    }
    let real_at = |scale: f64| RealArm::with_mismatch(&arm, Perturbation::scaled(cfg.mismatch, scale));
    let model = match record.pipeline.solver.head() {
        Some(head) => Some(super::train_head(head, arm, cfg.region, real_at(1.0)?, cfg.train_steps, cfg.seed)?),
        None => None,
    };
    let models: Table<HeadKind, Option<&crate::learned::LearnedModel>> =
        Table::from_fn(|h| model.as_ref().filter(|m| m.kind == h));
    let mut lineup = Lineup::new(arm, models);
    lineup.envelope = Envelope { arm, config: cfg.envelope };
    let real = real_at(setting.perturbation.mismatch)?;
    let seen = if setting.perturbation.target > 0.0 {
        protocol::sensed(targets, setting.perturbation.target, record.seed)
    } else {
        targets.clone()
    };
    let proposals = Proposals::new(&lineup, &seen);
    let mut trace = PlantTrace::new(keep);
    let outcome = protocol::plant_run(
        &lineup,
        record.pipeline,
        real,
        &cfg.body,
        &setting,
        &targets[..=n],
        &seen[..=n],
        &proposals,
        cfg.corrections,
        cfg.tolerance,
        cfg.post_move_check,
        record.seed,
        Some(&mut trace),
    );
    if let Some(d) = outcome.diverged {
        return Err(super::diverged(record.pipeline, &setting, *split, d));
    }
    let (Some(&error), Some(&reported), Some(&camera_reported)) =
        (outcome.errors.get(n), outcome.reported.get(n), outcome.camera_reported.get(n))
    else {
        return Err(ExperimentError::Invalid(format!(
            "the pipeline {} gave no answer for the target",
            record.pipeline
        )));
    };
    let happened = Happened { error, reported, camera_reported };
    let rederived = FailureRecord {
        version: CATALOG_VERSION,
        arm,
        pipeline: record.pipeline,
        protocol: Protocol::Plant,
        split: *split,
        setting,
        index: n,
        target: targets[n],
        sensed: seen[n],
        seed: record.seed,
        config: cfg.clone(),
        expected: Expected { tolerance: cfg.tolerance },
        happened,
        verdict: happened.verdict(cfg.tolerance),
        camera_verdict: happened.camera_verdict(cfg.tolerance),
    };
    let outcome = ReplayOutcome {
        sensed: seen[n],
        happened,
        verdict: rederived.verdict,
        camera_verdict: rederived.camera_verdict,
        differences: differences(record, &rederived)?,
    };
    Ok((outcome, trace))
}

/// Every field in which `recorded` and `rederived` differ, compared as JSON (so a field added to
/// [`FailureRecord`] later is compared too), leaves only, ordered by path; numbers compare bit
/// for bit.
pub fn differences(recorded: &FailureRecord, rederived: &FailureRecord) -> Result<Vec<Difference>, ExperimentError> {
    let json = |r: &FailureRecord| {
        serde_json::to_value(r)
            .map_err(|e| ExperimentError::Invalid(format!("the record cannot be written as JSON: {e}")))
    };
    let mut out = Vec::new();
    walk(&json(recorded)?, &json(rederived)?, "", &mut out);
    Ok(out)
}

/// Appends to `out` the leaves under `path` in which `a` (recorded) and `b` (re-derived) differ.
fn walk(a: &serde_json::Value, b: &serde_json::Value, path: &str, out: &mut Vec<Difference>) {
    use serde_json::Value;
    let join = |key: &str| if path.is_empty() { key.to_string() } else { format!("{path}.{key}") };
    let differ = |field: String, a: Option<&Value>, b: Option<&Value>| {
        let show = |v: Option<&Value>| v.map_or_else(|| "absent".to_string(), Value::to_string);
        Difference { field, recorded: show(a), rederived: show(b) }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                match (x.get(key), y.get(key)) {
                    (Some(u), Some(v)) => walk(u, v, &join(key), out),
                    (u, v) => out.push(differ(join(key), u, v)),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                walk(u, v, &format!("{path}[{i}]"), out);
            }
        }
        (Value::Number(x), Value::Number(y)) if same_number(x, y) => {}
        (Value::Number(_), Value::Number(_)) => out.push(differ(path.to_string(), Some(a), Some(b))),
        _ if a == b => {}
        _ => out.push(differ(path.to_string(), Some(a), Some(b))),
    }
}

/// Two JSON numbers are the same: equal integers, or floats equal bit for bit (so `0.0` and
/// `-0.0` differ).
fn same_number(x: &serde_json::Number, y: &serde_json::Number) -> bool {
    if let (Some(i), Some(j)) = (x.as_u64(), y.as_u64()) {
        return i == j;
    }
    if let (Some(i), Some(j)) = (x.as_i64(), y.as_i64()) {
        return i == j;
    }
    match (x.as_f64(), y.as_f64()) {
        (Some(u), Some(v)) => u.to_bits() == v.to_bits(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_are_the_cells_rates() {
        assert_eq!(Finding::of(true, false), Finding::Silent);
        assert_eq!(Finding::of(true, true), Finding::Reported);
        assert_eq!(Finding::of(false, true), Finding::FalseAlarm);
        assert_eq!(Finding::of(false, false), Finding::Ok);
        assert_eq!(serde_json::to_string(&Finding::FalseAlarm).unwrap(), "\"false-alarm\"");
        let h = Happened { error: f64::NAN, reported: false, camera_reported: true };
        assert_eq!((h.verdict(0.05), h.camera_verdict(0.05)), (Finding::Silent, Finding::Reported));
    }

    #[test]
    fn records_are_read_from_lines_or_an_array_and_other_versions_refused() {
        let e = parse_record("{\"version\": 99}\n", 0).unwrap_err();
        assert!(matches!(e, CatalogError::Version { .. }), "{e}");
        assert!(matches!(parse_record("\n\n", 0).unwrap_err(), CatalogError::Index { index: 0, count: 0 }));
        assert!(matches!(parse_record("[]", 3).unwrap_err(), CatalogError::Index { index: 3, count: 0 }));
        assert!(matches!(parse_record("nope", 0).unwrap_err(), CatalogError::Json(_)));
        let e = parse_record("[{\"version\": 1}]", 0).unwrap_err();
        assert!(matches!(e, CatalogError::Record { .. }), "{e}");
    }
}
