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
//! finite number is left out (JSON has no NaN); the cells still count it as a miss.
//!
//! Files are JSON Lines, one record per line ([`to_json_lines`]); [`parse_record`] reads them,
//! or a plain JSON array of records, and refuses a record of another [`CATALOG_VERSION`].

use super::channels::{self, Perturbation, Setting, Split};
use super::config::{DegradationConfig, Protocol};
use super::proposals::Proposals;
use super::protocol::{self, Outcome};
use crate::envelope::Envelope;
use crate::experiments::ExperimentError;
use crate::kinematics::{Point2, RealArm, TwoLinkArm};
use crate::learned::HeadKind;
use crate::lineup::{Lineup, Pipeline, Table};
use serde::{Deserialize, Serialize};

/// The format version of a catalog record; a reader refuses any other.
pub const CATALOG_VERSION: u32 = 1;

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

/// Where one pipeline's outcome came from, for [`collect`].
pub(crate) struct Source<'a> {
    /// The run's configuration.
    pub cfg: &'a DegradationConfig,
    /// The setting.
    pub setting: Setting,
    /// The target set.
    pub split: Split,
    /// Its true targets.
    pub targets: &'a [Point2],
    /// Its sensed targets.
    pub seen: &'a [Point2],
    /// The setting's seed.
    pub seed: u64,
}

/// Appends to `out` the records of `outcome` (plant protocol, one per target, in order): at
/// most `cap` per pair of verdicts, the first in target order, none with a non-finite error.
pub(crate) fn collect(
    src: &Source<'_>,
    pipeline: Pipeline,
    outcome: &Outcome,
    cap: usize,
    out: &mut Vec<FailureRecord>,
) {
    let tolerance = src.cfg.tolerance;
    let mut taken: std::collections::HashMap<(Finding, Finding), usize> = std::collections::HashMap::new();
    // Without a model a head answers nothing and the outcome skips targets; a run trains every
    // head, so the outcome covers the whole set, index for index.
    if outcome.errors.len() != src.targets.len() {
        return;
    }
    for (i, &error) in outcome.errors.iter().enumerate() {
        let happened = Happened { error, reported: outcome.reported[i], camera_reported: outcome.camera_reported[i] };
        let pair = (happened.verdict(tolerance), happened.camera_verdict(tolerance));
        if pair == (Finding::Ok, Finding::Ok) || !error.is_finite() {
            continue;
        }
        let n = taken.entry(pair).or_default();
        if *n >= cap {
            continue;
        }
        *n += 1;
        out.push(FailureRecord {
            version: CATALOG_VERSION,
            arm: src.cfg.arm,
            pipeline,
            protocol: Protocol::Plant,
            split: src.split,
            setting: src.setting,
            index: i,
            target: src.targets[i],
            sensed: src.seen[i],
            seed: src.seed,
            config: src.cfg.clone(),
            expected: Expected { tolerance },
            happened,
            verdict: pair.0,
            camera_verdict: pair.1,
        });
    }
}

/// The records as JSON Lines: one compact JSON object per line.
pub fn to_json_lines(records: &[FailureRecord]) -> Result<String, serde_json::Error> {
    let mut out = String::new();
    for r in records {
        out += &serde_json::to_string(r)?;
        out.push('\n');
    }
    Ok(out)
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
    /// What differs from the record, in words (empty: identical, the tip error bit for bit).
    pub differences: Vec<String>,
}

impl ReplayOutcome {
    /// True when the re-run reproduced the record: the same tip error bit for bit, the same
    /// reports, the same sensed target.
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

/// Re-runs `record` headlessly: trains its pipeline's head (if any) from the configuration as
/// the run did, rebuilds its target set and sensed targets, and drives the plant through the
/// set up to the record's index with the record's seed (the plant carries its state from target
/// to target). Errors on a record that cannot be replayed (version, arm, configuration, a
/// target set or index the configuration does not make).
pub fn replay(record: &FailureRecord) -> Result<ReplayOutcome, ExperimentError> {
    check(record)?;
    let cfg = &record.config;
    let arm = cfg.arm;
    let sets = channels::target_sets(&arm, cfg.region, cfg.targets, cfg.ood_targets(), &cfg.ood, cfg.seed);
    let Some((_, targets)) = sets.iter().find(|(s, _)| *s == record.split) else {
        return Err(ExperimentError::Invalid(format!(
            "the record's configuration makes no `{}` target set",
            record.split.key()
        )));
    };
    let n = record.index;
    if n >= targets.len() {
        return Err(ExperimentError::Invalid(format!(
            "the record's target index {n} is past its `{}` set of {} targets",
            record.split.key(),
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
    let setting = record.setting;
    let real = real_at(setting.perturbation.mismatch)?;
    let seen = if setting.perturbation.target > 0.0 {
        protocol::sensed(targets, setting.perturbation.target, record.seed)
    } else {
        targets.clone()
    };
    let proposals = Proposals::new(&lineup, &seen);
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
    );
    let (Some(&error), Some(&reported), Some(&camera_reported)) =
        (outcome.errors.get(n), outcome.reported.get(n), outcome.camera_reported.get(n))
    else {
        return Err(ExperimentError::Invalid(format!(
            "the pipeline {} gave no answer for the target",
            record.pipeline
        )));
    };
    let happened = Happened { error, reported, camera_reported };
    let mut differences = Vec::new();
    if targets[n] != record.target {
        differences.push(format!("target: recorded {:?}, the configuration gives {:?}", record.target, targets[n]));
    }
    if seen[n] != record.sensed {
        differences.push(format!("sensed target: recorded {:?}, re-run {:?}", record.sensed, seen[n]));
    }
    let rec = record.happened;
    if error.to_bits() != rec.error.to_bits() {
        differences.push(format!("tip error: recorded {:e} m, re-run {:e} m", rec.error, error));
    }
    if reported != rec.reported {
        differences.push(format!("reported: recorded {}, re-run {reported}", rec.reported));
    }
    if camera_reported != rec.camera_reported {
        differences.push(format!("camera reported: recorded {}, re-run {camera_reported}", rec.camera_reported));
    }
    Ok(ReplayOutcome {
        sensed: seen[n],
        happened,
        verdict: happened.verdict(cfg.tolerance),
        camera_verdict: happened.camera_verdict(cfg.tolerance),
        differences,
    })
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
