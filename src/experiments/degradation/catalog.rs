//! The failure catalog: one self-contained [`FailureRecord`] per target on which a pipeline
//! failed silently, reported a failure, or raised a false alarm, and [`replay`], which re-runs
//! one record headlessly and says whether it reproduces bit for bit.
//!
//! Only the plant protocol is catalogued, on every arm: a chain's records carry its
//! configuration with the chain in it, and replay it through the chain's plant protocol
//! (a replay trace of sub-steps is the two-link arm's only). A record carries everything a replay needs: the run's
//! [`DegradationConfig`] (arm, levels, seed, tolerance, ticks, envelope...), the pipeline, the
//! setting and its seed, the split and the target's index in its set. The plant carries its
//! state from target to target, so a replay re-trains the pipeline's head from the
//! configuration's seed exactly as the run did, rebuilds the target set and its sensed
//! targets, and drives the whole sequence up to the record's index.
//!
//! A run finds many failures (up to targets x settings x pipelines), so the catalog keeps at
//! most a given number of records per cell (pipeline, setting, split) and per pair of verdicts
//! (encoder check, camera check), the first ones in target order. A tip error that is not a
//! finite number is left out; the cells still count it as a miss (a replay that re-derives one
//! writes it as `"NaN"`, `"inf"` or `"-inf"`, the project's rule for JSON, never `null`). A run
//! holds only a compact note of each failure and hands the records to a sink in catalog order as
//! it goes, so a catalog never sits in memory whole.
//!
//! Files are JSON Lines, one record per line ([`CatalogWriter`], which stops at
//! [`MAX_CATALOG_BYTES`]); [`read_record`] streams them, or a plain JSON array of records, up to
//! the record asked for and no further, each record at most [`MAX_RECORD_BYTES`], and refuses a
//! record of another [`CATALOG_VERSION`].
//!
//! A replay checks a record's set-up, then re-derives the rest of it and compares the two field
//! by field (floats bit for bit), so no field a record states goes unchecked. The set-up is what
//! a replay follows rather than re-derives: the configuration (the arm, the plant's parameters,
//! the channel levels, the mismatch, the protocol switches...), the pipeline, the target's index
//! and the setting's seed. An edit there (a friction loss one ulp off) could re-run to the very
//! same outputs, so each record carries [`FailureRecord::setup_digests`], a digest of every
//! set-up field's path and value made when it was written; a replay refuses a record whose
//! set-up no longer matches them, naming each edited field ([`setup_differences`]). The digests
//! catch edits, not forgery: anyone can recompute them. Everything else is re-derived from the
//! set-up: the seed names the setting and target set it drew (each setting's seed derives from
//! the configuration's), and the re-run gives the target, the sensed target, the tip error, the
//! reports, the verdicts and the tolerance.

use super::channels::{self, Channel, Perturbation, Setting, Split};
use super::config::{DegradationConfig, Protocol};
use super::proposals::Proposals;
use super::protocol::{self, Outcome, PlantTrace};
use crate::envelope::Envelope;
use crate::experiments::ExperimentError;
use crate::kinematics::{Point2, RealArm, TwoLinkArm};
use crate::learned::HeadKind;
use crate::lineup::{Lineup, Pipeline, Table};
use serde::{Deserialize, Serialize};

/// The format version of a catalog record; a reader refuses any other. Version 2 added
/// [`FailureRecord::setup_digests`].
pub const CATALOG_VERSION: u32 = 2;

/// The largest catalog, bytes (4 GiB): `elbow replay` reads no more, and a [`CatalogWriter`]
/// writes no more.
pub const MAX_CATALOG_BYTES: u64 = 4 << 30;

/// The longest record [`read_record`] reads, bytes (1 MiB): a line of JSON Lines (or an element
/// of a JSON array) past it is refused unread. A record takes a few kilobytes.
pub const MAX_RECORD_BYTES: usize = 1 << 20;

/// The top-level fields of a record that make its set-up: what a replay follows rather than
/// re-derives, so [`FailureRecord::setup_digests`] covers them.
pub const SETUP_FIELDS: [&str; 4] = ["config", "index", "pipeline", "seed"];

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
    /// Tip error against the true target, metres (exact: JSON numbers round-trip; one that is
    /// not finite is written `"NaN"`, `"inf"` or `"-inf"`).
    #[serde(serialize_with = "crate::stats::json_numbers", deserialize_with = "crate::stats::json_f64")]
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
    /// The nominal arm (lengths and joint limits); the configuration's arm (on a chain, the
    /// configuration's [`DegradationConfig::chain`] is the arm that ran).
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
    /// The set-up's digests ([`setup_digests`]): for each field under [`SETUP_FIELDS`], in the
    /// same shape, a digest of its path and value as the record was written. A replay refuses a
    /// record whose set-up no longer matches them.
    pub setup_digests: serde_json::Value,
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

    /// The records, in order, for a run of `cfg`, each with its set-up's digests.
    pub(crate) fn records<'a>(&'a self, cfg: &'a DegradationConfig) -> impl Iterator<Item = FailureRecord> + 'a {
        self.hits.iter().map(move |h| {
            let mut record = FailureRecord {
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
                setup_digests: serde_json::Value::Null,
            };
            record.setup_digests = setup_digests(&record);
            record
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
    /// A line (or array element) up to the record is longer than [`MAX_RECORD_BYTES`].
    #[error(
        "{what} is longer than {MAX_RECORD_BYTES} bytes, the most a record may take (a record takes a few kilobytes), so it was not read"
    )]
    TooLong {
        /// Which, in words (`line 3`, `record 2`).
        what: String,
    },
    /// The catalog could not be read.
    #[error("cannot read the catalog: {0}")]
    Read(String),
}

/// Record `index` (0-based) of a catalog held in `text`: [`read_record`] on its bytes.
pub fn parse_record(text: &str, index: usize) -> Result<FailureRecord, CatalogError> {
    read_record(text.as_bytes(), index)
}

/// Record `index` (0-based) of a catalog read from `input`: JSON Lines (blank lines skipped) or a
/// JSON array. Reads only up to the end of that record, whatever follows it, and each line (or
/// array element) up to it at most [`MAX_RECORD_BYTES`] long, so the memory it takes is flat in
/// the catalog's size; a longer one is refused without being read whole.
pub fn read_record(mut input: impl std::io::BufRead, index: usize) -> Result<FailureRecord, CatalogError> {
    let io = |e: std::io::Error| CatalogError::Read(e.to_string());
    // Leading whitespace tells nothing; the newlines in it still count as lines.
    let mut skipped_lines = 0;
    let first = loop {
        let buf = input.fill_buf().map_err(io)?;
        if buf.is_empty() {
            break None;
        }
        let blank = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
        skipped_lines += buf[..blank].iter().filter(|&&b| b == b'\n').count();
        if blank < buf.len() {
            let first = buf[blank];
            input.consume(blank);
            break Some(first);
        }
        input.consume(blank);
    };
    let value = if first == Some(b'[') { nth_of_array(input, index)? } else { nth_line(input, index, skipped_lines)? };
    match value.get("version") {
        Some(v) if v.as_u64() == Some(u64::from(CATALOG_VERSION)) => {}
        found => {
            let found = found.map_or_else(|| "none (no `version` field)".to_string(), |v| v.to_string());
            return Err(CatalogError::Version { index, found });
        }
    }
    serde_json::from_value(value).map_err(|e| CatalogError::Record { index, reason: e.to_string() })
}

/// The `index`-th non-blank line of JSON Lines as JSON; `before` lines were skipped already.
fn nth_line(mut input: impl std::io::BufRead, index: usize, before: usize) -> Result<serde_json::Value, CatalogError> {
    use std::io::{BufRead, Read};
    let mut line = Vec::new();
    let (mut number, mut count) = (before, 0);
    loop {
        line.clear();
        // One byte past the limit tells a line that is too long from one that just fits.
        let read = (&mut input)
            .take(MAX_RECORD_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| CatalogError::Read(e.to_string()))?;
        if read == 0 {
            return Err(CatalogError::Index { index, count });
        }
        number += 1;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        if body.len() > MAX_RECORD_BYTES {
            return Err(CatalogError::TooLong { what: format!("line {number}") });
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if count == index {
            return serde_json::from_slice(body).map_err(|e| CatalogError::Json(format!("line {number}: {e}")));
        }
        count += 1;
    }
}

/// The `index`-th element of a JSON array as JSON, parsed as a stream: the elements before it
/// skipped without being kept, nothing after it read, the element itself at most
/// [`MAX_RECORD_BYTES`].
fn nth_of_array(input: impl std::io::BufRead, index: usize) -> Result<serde_json::Value, CatalogError> {
    use serde::de::{Deserializer, Error, IgnoredAny, SeqAccess, Visitor};
    use std::cell::{Cell, RefCell};
    /// The reader under the parser: while `budget` is `Some`, reads at most that many more bytes,
    /// then fails and sets `over`.
    struct Budgeted<'a, R> {
        inner: R,
        budget: &'a Cell<Option<usize>>,
        over: &'a Cell<bool>,
    }
    impl<R: std::io::Read> std::io::Read for Budgeted<'_, R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some(left) = self.budget.get() else { return self.inner.read(buf) };
            if left == 0 {
                self.over.set(true);
                return Err(std::io::Error::other("the record is too long"));
            }
            let n = buf.len().min(left);
            let read = self.inner.read(&mut buf[..n])?;
            self.budget.set(Some(left - read));
            Ok(read)
        }
    }
    /// Walks the array to element `index`: keeps it in `found` and stops there (an error the
    /// caller sees through), or counts the elements of a shorter array.
    struct Nth<'a> {
        index: usize,
        budget: &'a Cell<Option<usize>>,
        found: &'a RefCell<Option<serde_json::Value>>,
    }
    impl<'de> Visitor<'de> for Nth<'_> {
        type Value = usize;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON array of records")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
            for i in 0..self.index {
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    return Ok(i);
                }
            }
            self.budget.set(Some(MAX_RECORD_BYTES));
            let element = seq.next_element::<serde_json::Value>()?;
            self.budget.set(None);
            match element {
                Some(v) => {
                    *self.found.borrow_mut() = Some(v);
                    Err(A::Error::custom("found"))
                }
                None => Ok(self.index),
            }
        }
    }
    let (budget, over, found) = (Cell::new(None), Cell::new(false), RefCell::new(None));
    let reader = Budgeted { inner: input, budget: &budget, over: &over };
    let mut parser = serde_json::Deserializer::from_reader(reader);
    let walked = (&mut parser).deserialize_seq(Nth { index, budget: &budget, found: &found });
    if let Some(value) = found.into_inner() {
        return Ok(value);
    }
    match walked {
        _ if over.get() => Err(CatalogError::TooLong { what: format!("record {index}") }),
        Ok(count) => Err(CatalogError::Index { index, count }),
        Err(e) => Err(CatalogError::Json(e.to_string())),
    }
}

/// One field in which a record and its re-derivation differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// The field, as a JSON path (`verdict`, `setting.level`, `happened.error`,
    /// `config.body.servo.frictionloss`).
    pub field: String,
    /// Its value in the record, as JSON (`absent` when the record lacks it).
    pub recorded: String,
    /// Its value re-derived, as JSON (`absent` when the re-derived record lacks it). A set-up
    /// field is not re-derived: for one, the digest the record holds for it and the digest of
    /// its value now (`absent` where one side lacks the field).
    pub rederived: String,
    /// A field of the set-up ([`SETUP_FIELDS`]), which a replay follows: its value no longer
    /// matches the digest the record was written with, so it (or its digest) was edited.
    pub setup: bool,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.setup {
            write!(
                f,
                "{}: recorded {}, not the value the record was written with (set-up digest {})",
                self.field, self.recorded, self.rederived
            )
        } else {
            write!(f, "{}: recorded {}, re-derived {}", self.field, self.recorded, self.rederived)
        }
    }
}

/// The digests of `record`'s set-up, for [`FailureRecord::setup_digests`]: an object with the
/// fields under [`SETUP_FIELDS`] in their JSON shape, each value (a number, a string, a boolean)
/// replaced by a 32-bit digest, 8 hex digits, of its path (`config.body.servo.frictionloss`) and
/// its value (a float by its bits). The digest is FNV-1a (64-bit, folded), fixed here so that a
/// catalog checks the same on every machine and every build.
pub fn setup_digests(record: &FailureRecord) -> serde_json::Value {
    let parts: [(&str, serde_json::Value); 4] = [
        ("config", json_of(&record.config)),
        ("index", json_of(&record.index)),
        ("pipeline", json_of(&record.pipeline)),
        ("seed", json_of(&record.seed)),
    ];
    debug_assert!(parts.iter().map(|p| p.0).eq(SETUP_FIELDS));
    serde_json::Value::Object(parts.into_iter().map(|(key, v)| (key.to_string(), digests(&v, key))).collect())
}

/// `v` as JSON; a value that cannot be written becomes a string saying so (never for a record's
/// own types, whose maps have string keys).
fn json_of(v: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or_else(|e| serde_json::Value::String(format!("cannot be written as JSON: {e}")))
}

/// `v` with every leaf under `path` replaced by its digest.
fn digests(v: &serde_json::Value, path: &str) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, u)| (k.clone(), digests(u, &format!("{path}.{k}")))).collect())
        }
        Value::Array(a) => {
            Value::Array(a.iter().enumerate().map(|(i, u)| digests(u, &format!("{path}[{i}]"))).collect())
        }
        leaf => Value::String(format!("{:08x}", leaf_digest(path, leaf))),
    }
}

/// The digest of the leaf `v` at `path`: FNV-1a over the path, a separator, the value's kind
/// and its bytes, folded to 32 bits.
fn leaf_digest(path: &str, v: &serde_json::Value) -> u32 {
    use serde_json::Value;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(path.as_bytes());
    eat(&[0]);
    match v {
        Value::Null => eat(b"n"),
        Value::Bool(b) => eat(&[b'b', u8::from(*b)]),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => (eat(b"u"), eat(&u.to_le_bytes())).1,
            (_, Some(i), _) => (eat(b"i"), eat(&i.to_le_bytes())).1,
            (_, _, f) => (eat(b"f"), eat(&f.map_or(u64::MAX, f64::to_bits).to_le_bytes())).1,
        },
        Value::String(s) => (eat(b"s"), eat(s.as_bytes())).1,
        // Containers are walked by `digests`; one here is digested by its text.
        other => (eat(b"j"), eat(other.to_string().as_bytes())).1,
    }
    ((h >> 32) ^ h) as u32
}

/// Every set-up field of `record` ([`SETUP_FIELDS`]) whose value no longer matches the digest
/// the record was written with, ordered by path. Each names the field (a leaf, or the array or
/// object whose shape changed), its value now and the two digests.
pub fn setup_differences(record: &FailureRecord) -> Vec<Difference> {
    let mut found = Vec::new();
    walk(&record.setup_digests, &setup_digests(record), "", &mut found);
    let whole = json_of(record);
    found
        .into_iter()
        .map(|d| {
            let recorded = at_path(&whole, &d.field).map_or_else(|| "absent".to_string(), serde_json::Value::to_string);
            let field = if d.field.is_empty() { "setup_digests".to_string() } else { d.field };
            Difference {
                field,
                recorded,
                rederived: format!("{}, this value's {}", d.recorded, d.rederived),
                setup: true,
            }
        })
        .collect()
}

/// The value at a path as [`walk`] writes it (`config.levels.encoder[1]`), if any.
fn at_path<'a>(v: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    if path.is_empty() {
        return Some(v);
    }
    path.split('.').try_fold(v, |v, segment| {
        let mut parts = segment.split('[');
        let key = parts.next()?;
        let v = if key.is_empty() { v } else { v.get(key)? };
        parts.try_fold(v, |v, i| v.get(i.strip_suffix(']')?.parse::<usize>().ok()?))
    })
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

/// Checks that `record` can be replayed: its version, its set-up (as written: [`setup_differences`]),
/// its arm (buildable, the configuration's), the protocol and the configuration.
fn check(record: &FailureRecord) -> Result<(), ExperimentError> {
    let bad = |s: String| Err(ExperimentError::Invalid(s));
    if record.version != CATALOG_VERSION {
        return bad(format!(
            "the record is of catalog format version {}, and this elbow reads only version {CATALOG_VERSION}",
            record.version
        ));
    }
    let edited = setup_differences(record);
    if let Some(first) = edited.first() {
        let more = match edited.len() - 1 {
            0 => String::new(),
            n => format!(", and {n} more set-up field(s) were edited"),
        };
        return bad(format!(
            "the record's set-up was edited, so a replay would not re-run what the record saw: {first}{more}"
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
    if !record.config.pipelines().contains(&record.pipeline) {
        return bad(format!("pipeline {} is not one a degradation run measures", record.pipeline));
    }
    Ok(())
}

/// Re-runs `record` headlessly and re-derives it whole: checks its set-up against the digests it
/// was written with ([`setup_differences`]), finds the plant-protocol job of its configuration
/// that its seed belongs to (the setting and target set), trains its pipeline's head (if any)
/// from the configuration as the run did, rebuilds the target set and sensed targets, drives the
/// plant through the set up to the record's index (the plant carries its state from target to
/// target), and compares every field of the record with the re-derived one ([`differences`]).
/// Errors on a record that cannot be replayed (version, an edited set-up field, named, arm,
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
    let sets = match &cfg.chain {
        Some(chain) => super::chain::target_sets(chain, cfg.targets, cfg.ood_targets(), &cfg.ood, cfg.seed),
        None => channels::target_sets(&arm, cfg.region, cfg.targets, cfg.ood_targets(), &cfg.ood, cfg.seed),
    };
    let (setting, set) = job_of(record, sets.len())?;
    let (split, targets) = &sets[set];
    let n = record.index;
    if n >= targets.len() {
        return Err(ExperimentError::Invalid(format!(
            "the record's target index {n} is past its `{}` set of {} targets",
            split.key(),
            targets.len()
        )));
    }
    if let Some(chain) = &cfg.chain {
        let mut trace = PlantTrace::new(keep);
        let (sensed, happened) = super::chain_replay_move(record, chain, &setting, targets, &mut trace)?;
        let (outcome, _) = rederive(record, *split, setting, targets[n], sensed, happened)?;
        return Ok((outcome, trace));
    }
    let real_at = |scale: f64| RealArm::with_mismatch(&arm, Perturbation::scaled(cfg.mismatch, scale));
    let model = match record.pipeline.solver.head() {
        Some(head) => Some(super::train_head(head, arm, cfg.region, real_at(1.0)?, cfg.train_steps, cfg.seed)?.0),
        None => None,
    };
    let models: Table<HeadKind, Option<&crate::learned::LearnedModel>> =
        Table::from_fn(|h| model.as_ref().filter(|m| m.kind == h));
    let mut lineup = Lineup::new(arm, models);
    lineup.envelope = Envelope { arm, config: cfg.envelope };
    let real = real_at(setting.perturbation[Channel::Mismatch])?;
    let seen = if setting.perturbation[Channel::Target] > 0.0 {
        protocol::sensed(targets, setting.perturbation[Channel::Target], record.seed)
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
    let (outcome, _) = rederive(record, *split, setting, targets[n], seen[n], happened)?;
    Ok((outcome, trace))
}

/// The plant-protocol job (setting, target set) of `record`'s configuration that its seed
/// belongs to, the configuration making `sets` target sets.
fn job_of(record: &FailureRecord, sets: usize) -> Result<(Setting, usize), ExperimentError> {
    let cfg = &record.config;
    let job = super::jobs(cfg, sets).into_iter().enumerate().find(|&(j, (protocol, ..))| {
        protocol == Protocol::Plant
            && crate::rng::subseed(cfg.seed, crate::rng::Stream::Setting, j as u64) == record.seed
    });
    let Some((_, (_, setting, set))) = job else {
        return Err(ExperimentError::Invalid(format!(
            "the record's seed {} is the seed of no plant-protocol setting of its configuration",
            record.seed
        )));
    };
    Ok((setting, set))
}

/// The record a re-run of `record` re-derives (the move on `target`, sensed as `sensed`, in
/// `setting` of the set `split`, which gave `happened`), and what the replay found.
fn rederive(
    record: &FailureRecord,
    split: Split,
    setting: Setting,
    target: Point2,
    sensed: Point2,
    happened: Happened,
) -> Result<(ReplayOutcome, FailureRecord), ExperimentError> {
    let cfg = &record.config;
    let mut rederived = FailureRecord {
        version: CATALOG_VERSION,
        arm: cfg.arm,
        pipeline: record.pipeline,
        protocol: Protocol::Plant,
        split,
        setting,
        index: record.index,
        target,
        sensed,
        seed: record.seed,
        config: cfg.clone(),
        expected: Expected { tolerance: cfg.tolerance },
        happened,
        verdict: happened.verdict(cfg.tolerance),
        camera_verdict: happened.camera_verdict(cfg.tolerance),
        setup_digests: serde_json::Value::Null,
    };
    rederived.setup_digests = setup_digests(&rederived);
    let outcome = ReplayOutcome {
        sensed,
        happened,
        verdict: rederived.verdict,
        camera_verdict: rederived.camera_verdict,
        differences: differences(record, &rederived)?,
    };
    Ok((outcome, rederived))
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
        Difference { field, recorded: show(a), rederived: show(b), setup: false }
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
        let e = parse_record("[{\"version\": 2}]", 0).unwrap_err();
        assert!(matches!(e, CatalogError::Record { .. }), "{e}");
        // Line numbers count blank lines, leading ones too.
        let e = parse_record("\n  \nnope\n", 0).unwrap_err();
        assert!(matches!(&e, CatalogError::Json(m) if m.starts_with("line 3:")), "{e}");
        let two = format!("{}\n\n{}\n", line(&sample()), line(&FailureRecord { index: 1, ..sample() }));
        assert_eq!(parse_record(&two, 1).unwrap().index, 1);
        assert!(matches!(parse_record(&two, 2).unwrap_err(), CatalogError::Index { index: 2, count: 2 }));
        let array = format!("[{}, {}]", line(&sample()), line(&FailureRecord { index: 1, ..sample() }));
        assert_eq!(parse_record(&array, 1).unwrap().index, 1);
        assert!(matches!(parse_record(&array, 2).unwrap_err(), CatalogError::Index { index: 2, count: 2 }));
    }

    /// A record of the default configuration, its digests made.
    fn sample() -> FailureRecord {
        let config = DegradationConfig::default();
        let mut r = FailureRecord {
            version: CATALOG_VERSION,
            arm: config.arm,
            pipeline: Pipeline::plain(crate::lineup::SolverId::Analytic),
            protocol: Protocol::Plant,
            split: Split::In,
            setting: channels::settings(&config.levels, &channels::Channel::ALL)[0],
            index: 0,
            target: Point2::new(1.25, 0.5),
            sensed: Point2::new(1.25, 0.5),
            seed: 7,
            expected: Expected { tolerance: config.tolerance },
            config,
            happened: Happened { error: 0.125, reported: true, camera_reported: true },
            verdict: Finding::Reported,
            camera_verdict: Finding::Reported,
            setup_digests: serde_json::Value::Null,
        };
        r.setup_digests = setup_digests(&r);
        r
    }

    /// `r` as one line of JSON.
    fn line(r: &FailureRecord) -> String {
        serde_json::to_string(r).unwrap()
    }

    /// A reader that counts the bytes read through it.
    struct Counted<R> {
        inner: R,
        read: usize,
    }

    impl<R: std::io::Read> std::io::Read for Counted<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read += n;
            Ok(n)
        }
    }

    #[test]
    fn a_record_is_read_up_to_its_end_and_no_further_and_a_huge_one_is_refused_unread() {
        use std::io::Read;
        const HUGE: u64 = 64 << 20;
        let record = sample();
        let first = line(&record) + "\n";
        // Record 0, then a 64 MiB line; and an array whose element 1 is a 64 MiB string.
        let lines = || first.as_bytes().chain(std::io::repeat(b'x').take(HUGE));
        let head = format!("[{},\"", line(&record));
        let array = || head.as_bytes().chain(std::io::repeat(b'x').take(HUGE)).chain(&b"\"]"[..]);
        let slack = 64 * 1024;
        for (which, at) in [("lines", 0), ("lines", 1), ("array", 0), ("array", 1)] {
            let inner: Box<dyn std::io::Read> = if which == "lines" { Box::new(lines()) } else { Box::new(array()) };
            let mut input = std::io::BufReader::new(Counted { inner, read: 0 });
            let got = read_record(&mut input, at);
            let read = input.get_ref().read;
            if at == 0 {
                assert_eq!(got.unwrap(), record, "{which}");
                assert!(read < first.len() + slack, "{which}: read {read} bytes for a record of {}", first.len());
            } else {
                let what = if which == "lines" { "line 2" } else { "record 1" };
                assert_eq!(got.unwrap_err(), CatalogError::TooLong { what: what.into() }, "{which}");
                assert!(read < first.len() + MAX_RECORD_BYTES + slack, "{which}: read {read} bytes");
            }
        }
    }

    #[test]
    fn a_non_finite_error_is_written_as_a_string_never_null_and_read_back() {
        for (error, name) in [(f64::NAN, "\"NaN\""), (f64::INFINITY, "\"inf\""), (f64::NEG_INFINITY, "\"-inf\"")] {
            let mut r = sample();
            r.happened.error = error;
            let text = line(&r);
            assert!(text.contains(&format!("\"error\":{name}")) && !text.contains("null"), "{text}");
            let back = parse_record(&text, 0).unwrap();
            assert_eq!(back.happened.error.is_nan(), error.is_nan());
            assert!(back.happened.error.is_nan() || back.happened.error == error);
            // A replay that re-derives it, or a record that states it, shows the string.
            let d = differences(&sample(), &r).unwrap();
            assert_eq!(d.len(), 1);
            assert_eq!(
                (d[0].field.as_str(), d[0].recorded.as_str(), d[0].rederived.as_str()),
                ("happened.error", "0.125", name)
            );
            let outcome = ReplayOutcome {
                sensed: r.sensed,
                happened: r.happened,
                verdict: r.verdict,
                camera_verdict: r.camera_verdict,
                differences: d,
            };
            let text = serde_json::to_string(&outcome).unwrap();
            assert!(text.contains(&format!("\"error\":{name}")) && !text.contains("null"), "{text}");
        }
    }

    #[test]
    fn an_edited_setup_field_is_named_by_its_digest() {
        assert_eq!(setup_differences(&sample()), []);
        let up = |v: f64| f64::from_bits(v.to_bits() + 1);
        type Edit = fn(&mut FailureRecord);
        let edits: [(&str, Edit); 9] = [
            ("config.body.servo.frictionloss", |r| r.config.body.servo.frictionloss = f64::from_bits(1)),
            ("config.body.servo.kp", |r| r.config.body.servo.kp = f64::from_bits(r.config.body.servo.kp.to_bits() + 1)),
            ("config.body.link_mass[1]", |r| r.config.body.link_mass[1] *= 1.0 + f64::EPSILON),
            ("config.post_move_check", |r| r.config.post_move_check = false),
            ("config.levels.encoder", |r| r.config.levels[Channel::Encoder].push(0.5)),
            ("index", |r| r.index = 1),
            ("pipeline", |r| r.pipeline = Pipeline::plain(crate::lineup::SolverId::Iterative)),
            ("seed", |r| r.seed = 8),
            ("config.mismatch.length_error[0]", |r| {
                r.config.mismatch.length_error[0] = -r.config.mismatch.length_error[0]
            }),
        ];
        for (field, edit) in edits {
            let mut r = sample();
            edit(&mut r);
            let d = setup_differences(&r);
            assert_eq!(d.iter().map(|d| d.field.as_str()).collect::<Vec<_>>(), [field]);
            assert!(d[0].setup && d[0].to_string().contains("not the value the record was written with"), "{}", d[0]);
            // Refused before anything runs, naming the field.
            let e = replay(&r).unwrap_err().to_string();
            assert!(
                e.contains(&format!(
                    "set-up was edited, so a replay would not re-run what the record saw: {field}: recorded"
                )),
                "{e}"
            );
        }
        let mut r = sample();
        r.config.body.servo.armature = up(r.config.body.servo.armature);
        assert!(
            setup_differences(&r)[0]
                .to_string()
                .starts_with("config.body.servo.armature: recorded 0.028000000000000004,")
        );
        // An edited digest is named by its field too.
        let mut r = sample();
        r.setup_digests["config"]["tolerance"] = serde_json::json!("00000000");
        assert_eq!(setup_differences(&r)[0].field, "config.tolerance");
        r.setup_digests = serde_json::json!(3);
        assert_eq!(setup_differences(&r)[0].field, "setup_digests");
    }
}
