//! Model files: one format for every arm. A file is JSON with a format tag (`elbow-model`) and
//! a version ([`VERSION`], 2), names its arm as an [`Arm`] value and holds its trained solvers
//! keyed by their [`SolverId`] key:
//!
//! ```text
//! {"format": "elbow-model", "version": 2, "arm": {...the Arm...},
//!  "net": {...},                   (a chain only: how its nets were built and trained)
//!  "solvers": {"mdn": {...}, ...}}
//! ```
//!
//! On an arm with a closed form (a two-link arm) the solvers are learned heads (`mse`, `mdn`,
//! `mode`, `residual`: one [`LearnedModel`] each, without its arm, which is the file's); on a
//! redundant chain they are its nets (`mse`, `mdn`, `flow`: one [`ChainNet`] each), together a
//! [`ChainModel`]. [`ModelFile`] is either, read and written here and nowhere else:
//!
//! - written atomically as version 2 ([`ModelFile::save`]; [`LearnedModel::save`] and
//!   [`ChainModel::save`] write a file of one head or of a chain's nets): the path holds the old
//!   file or the whole new one, and a model too large for [`MAX_MODEL_FILE_BYTES`] is refused;
//! - read only from a regular file (never a FIFO or device) of at most [`MAX_MODEL_FILE_BYTES`]
//!   ([`ModelFile::load`]), every field checked and the first bad one named by its path in the
//!   file (`solvers.mdn.mdn.sigma_min`, `arm.chain`, `version`);
//! - version 1 files still load, converted: a two-link head's (`elbow-model`, one head with its
//!   two-link arm) and a chain's (`elbow-chain-model`, its `mse`, `mdn` and `flow` nets at the
//!   top level), their fields named as those files name them. Any other version is refused
//!   naming the field (`version 3 is not supported (this build reads 1 and 2)`).
//!
//! A command given a file for another arm, or of another kind, says what the file is
//! ([`ModelFile::describe`], [`ModelError::OtherKind`]).

use super::data::AngleEncoding;
use super::head::HeadKind;
use super::model::{FieldError, LearnedModel, field_err};
use crate::arm::Arm;
use crate::chain::arm::{ChainError, Prior};
use crate::chain::model::ChainModel;
use crate::chain::nets::{ChainNet, NetConfig, NetKind};
use crate::kinematics::{RealArm, Region, TwoLinkArm};
use crate::lineup::SolverId;
use crate::nn::{MdnNll, Mlp};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The format tag of every model file this build writes.
pub const FORMAT: &str = "elbow-model";
/// The version this build writes; bumped whenever the layout changes.
pub const VERSION: u32 = 2;
/// The versions this build reads.
pub const READS: [u32; 2] = [1, 2];
/// The format tag of version-1 chain model files (`elbow train --arm` before version 2).
pub const CHAIN_V1_FORMAT: &str = "elbow-chain-model";

/// The largest model file [`ModelFile::load`] reads (and [`ModelFile::save`] writes), bytes:
/// 64 MiB, some 4 million parameters (the default two-link network's file is about 100 kB).
pub const MAX_MODEL_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Why a model file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The file could not be read or written (missing, not a regular file, too large, no
    /// space, no permission...).
    #[error("model file {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not a valid model (corrupt, truncated, or another format).
    #[error("model file {path} is not a valid Elbow model: {reason}")]
    Corrupt {
        /// The path.
        path: String,
        /// What was wrong.
        reason: String,
    },
    /// The file is a model of another kind than the one asked for (a chain model where a
    /// two-link head is needed).
    #[error("{path} is {found}, and {wanted} is needed here")]
    OtherKind {
        /// The path.
        path: String,
        /// What the file holds (`a chain model for rail3`).
        found: String,
        /// What was asked for.
        wanted: String,
    },
    /// The file parses but one field is unusable.
    #[error("model file {path} is not a valid Elbow model: {error}")]
    Field {
        /// The path.
        path: String,
        /// Which field, and what is wrong with it.
        error: FieldError,
    },
}

/// A model file: the trained solvers of one arm.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelFile {
    /// Learned heads of a two-link arm (`elbow train`), in the file's order, each of another
    /// kind, all for the same arm.
    TwoLink(Vec<LearnedModel>),
    /// The nets of a chain (`elbow train --arm 3r|rail3|so101`; boxed: three networks).
    Chain(Box<ChainModel>),
}

impl ModelFile {
    /// The arm the file's solvers answer for (a two-link file without heads: the default arm).
    pub fn arm(&self) -> Arm {
        match self {
            ModelFile::TwoLink(heads) => Arm::two_link(heads.first().map_or_else(TwoLinkArm::default, |h| h.arm)),
            ModelFile::Chain(m) => m.arm.clone(),
        }
    }

    /// The solvers the file holds, in its order (a chain's: mse, mdn, flow).
    pub fn solvers(&self) -> Vec<SolverId> {
        match self {
            ModelFile::TwoLink(heads) => heads.iter().map(|h| SolverId::Learned(h.kind)).collect(),
            ModelFile::Chain(m) => NetKind::ALL.iter().filter(|&&k| m.net(k).is_some()).map(|k| k.solver()).collect(),
        }
    }

    /// The two-link head of `kind`, if the file holds one.
    pub fn head(&self, kind: HeadKind) -> Option<&LearnedModel> {
        match self {
            ModelFile::TwoLink(heads) => heads.iter().find(|h| h.kind == kind),
            ModelFile::Chain(_) => None,
        }
    }

    /// What the file holds, for messages: `a two-link mdn model for arm 1,1`, `a two-link
    /// model with the mse and mdn heads for arm 1,1`, or `a chain model for rail3`.
    pub fn describe(&self) -> String {
        match self {
            ModelFile::TwoLink(heads) => {
                let arm = heads.first().map_or_else(TwoLinkArm::default, |h| h.arm);
                let on = format!("for arm {},{}", arm.l1(), arm.l2());
                match heads.as_slice() {
                    [one] => format!("a two-link {} model {on}", one.kind),
                    _ => {
                        let keys: Vec<&str> = heads.iter().map(|h| h.kind.key()).collect();
                        format!("a two-link model with the {} heads {on}", keys.join(" and "))
                    }
                }
            }
            ModelFile::Chain(m) => m.describe(),
        }
    }

    /// Whether the file's solvers may answer for `arm`: `Err` says what the file is.
    pub fn check_arm(&self, arm: &Arm) -> Result<(), String> {
        if self.arm() == *arm {
            return Ok(());
        }
        Err(format!("it is {}, and this runs on {}", self.describe(), arm.name))
    }

    /// Writes the file as JSON, version 2, atomically (see [`crate::files::write_atomic`]): the
    /// path holds the old file or the whole new one, never a truncated one. Refused, writing
    /// nothing: a file with no solver, heads of one kind twice or for different arms, and a
    /// model too large for [`MAX_MODEL_FILE_BYTES`] (so every saved file loads back).
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        match self {
            ModelFile::TwoLink(heads) => save_heads(&heads.iter().collect::<Vec<_>>(), path),
            ModelFile::Chain(m) => m.save(path),
        }
    }

    /// Reads and fully validates a model file of any arm and of either version: it must be a
    /// regular file (never a FIFO or device) of at most [`MAX_MODEL_FILE_BYTES`], parse as a
    /// model file and pass every check; the error names the path and the first bad field.
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let bytes = crate::files::read_bounded(path, MAX_MODEL_FILE_BYTES)
            .map_err(|source| ModelError::Io { path: path.display().to_string(), source })?;
        Self::parse(path, &bytes)
    }

    /// Parses and validates the `bytes` of a model file read from `path` (named in errors).
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Self, ModelError> {
        let shown = || path.display().to_string();
        let corrupt = |e: serde_json::Error| ModelError::Corrupt { path: shown(), reason: e.to_string() };
        let field = |error: FieldError| ModelError::Field { path: shown(), error };
        let probe: Probe = serde_json::from_slice(bytes).map_err(corrupt)?;
        match (probe.format.as_str(), probe.version) {
            (FORMAT, 2) => {
                let Arm { chain, .. } = &serde_json::from_slice::<ArmProbe>(bytes).map_err(corrupt)?.arm;
                match TwoLinkArm::try_from(chain) {
                    Err(ChainError::NotTwoLink { .. }) => {
                        let file: FileIn<ChainNet> = serde_json::from_slice(bytes).map_err(corrupt)?;
                        file.into_chain().map_err(field)
                    }
                    _ => {
                        let file: FileIn<HeadIn> = serde_json::from_slice(bytes).map_err(corrupt)?;
                        file.into_heads().map_err(field)
                    }
                }
            }
            (FORMAT, 1) => {
                let head: HeadV1 = serde_json::from_slice(bytes).map_err(corrupt)?;
                let head = head.model();
                head.validate().map_err(field)?;
                Ok(ModelFile::TwoLink(vec![head]))
            }
            (CHAIN_V1_FORMAT, 1) => {
                let v1: ChainV1 = serde_json::from_slice(bytes).map_err(corrupt)?;
                let model = ChainModel { arm: v1.arm, net: v1.net, mse: v1.mse, mdn: v1.mdn, flow: v1.flow };
                validate_chain(&model, "").map_err(field)?;
                Ok(ModelFile::Chain(Box::new(model)))
            }
            (FORMAT, v) => Err(field(FieldError {
                field: "version".into(),
                reason: format!("version {v} is not supported (this build reads {} and {})", READS[0], READS[1]),
            })),
            (CHAIN_V1_FORMAT, v) => Err(field(FieldError {
                field: "version".into(),
                reason: format!(
                    "version {v} of `{CHAIN_V1_FORMAT}` is not supported (this build reads version 1 of it, and versions {} and {} of `{FORMAT}`)",
                    READS[0], READS[1]
                ),
            })),
            (other, _) => {
                Err(field(FieldError { field: "format".into(), reason: format!("is `{other}`, expected `{FORMAT}`") }))
            }
        }
    }
}

impl LearnedModel {
    /// Writes the model as a model file holding this one head ([`ModelFile::save`]).
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        save_heads(&[self], path)
    }

    /// Reads a model file holding one two-link head ([`ModelFile::load`]): a chain model, or a
    /// file of several heads, is refused saying what it is. The app's load button and every
    /// two-link `--model FILE` of the experiments use this.
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        match ModelFile::load(path)? {
            ModelFile::TwoLink(mut heads) if heads.len() == 1 => Ok(heads.remove(0)),
            other => Err(ModelError::OtherKind {
                path: path.display().to_string(),
                wanted: if matches!(other, ModelFile::TwoLink(_)) { "a file of one head" } else { "a two-link model" }
                    .into(),
                found: other.describe(),
            }),
        }
    }
}

impl ChainModel {
    /// Writes the nets as a model file ([`ModelFile::save`]).
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        let solvers: Keyed<&ChainNet> = NetKind::ALL.iter().filter_map(|&k| Some((k.solver(), self.net(k)?))).collect();
        if solvers.0.is_empty() {
            return Err(unwritable(path, "the model holds no net".into()));
        }
        save_json(&FileOut::new(&self.arm, Some(&self.net), solvers), path)
    }

    /// Reads a chain model file ([`ModelFile::load`]); a two-link model file is refused saying
    /// what it is.
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        match ModelFile::load(path)? {
            ModelFile::Chain(m) => Ok(*m),
            other => Err(ModelError::OtherKind {
                path: path.display().to_string(),
                found: other.describe(),
                wanted: "a chain model".into(),
            }),
        }
    }
}

/// The error of a model that cannot be written to `path`, saying `why`.
fn unwritable(path: &Path, why: String) -> ModelError {
    ModelError::Io { path: path.display().to_string(), source: std::io::Error::other(why) }
}

/// Writes two-link `heads` as one file: refused, writing nothing, when there is no head, a
/// head of one kind twice, or heads for different arms.
fn save_heads(heads: &[&LearnedModel], path: &Path) -> Result<(), ModelError> {
    let Some(first) = heads.first() else { return Err(unwritable(path, "the model holds no head".into())) };
    if let Some(other) = heads.iter().find(|h| h.arm != first.arm) {
        return Err(unwritable(
            path,
            format!(
                "the {} head was trained for `{}` and the {} head for `{}`: one file holds one arm's heads",
                first.kind, first.arm, other.kind, other.arm
            ),
        ));
    }
    for (i, h) in heads.iter().enumerate() {
        if heads[..i].iter().any(|g| g.kind == h.kind) {
            return Err(unwritable(path, format!("the model holds two {} heads", h.kind)));
        }
    }
    let solvers = heads.iter().map(|h| (SolverId::Learned(h.kind), HeadOut::of(h))).collect();
    save_json(&FileOut::new(&Arm::two_link(first.arm), None, solvers), path)
}

/// Writes `value` as JSON at `path`, atomically, refusing more than [`MAX_MODEL_FILE_BYTES`].
fn save_json<T: Serialize>(value: &T, path: &Path) -> Result<(), ModelError> {
    let io = |source| ModelError::Io { path: path.display().to_string(), source };
    let json = serde_json::to_vec(value).map_err(|e| io(std::io::Error::other(e)))?;
    if json.len() as u64 > MAX_MODEL_FILE_BYTES {
        return Err(io(std::io::Error::other(format!(
            "the model is {} bytes as JSON, more than the {MAX_MODEL_FILE_BYTES} bytes a model file may hold",
            json.len()
        ))));
    }
    crate::files::write_atomic(path, &json).map_err(io)
}

/// The fields every model file has, read first to pick the layout.
#[derive(Deserialize)]
struct Probe {
    format: String,
    version: u64,
}

/// A version-2 file's arm, read before its solvers (whose layout depends on it).
#[derive(Deserialize)]
struct ArmProbe {
    arm: Arm,
}

/// A version-2 file as written.
#[derive(Serialize)]
struct FileOut<'a, T> {
    format: &'static str,
    version: u32,
    arm: &'a Arm,
    #[serde(skip_serializing_if = "Option::is_none")]
    net: Option<&'a NetConfig>,
    solvers: Keyed<T>,
}

impl<'a, T> FileOut<'a, T> {
    /// The file of `solvers` for `arm` (and a chain's training settings `net`), stamped with
    /// [`FORMAT`] and [`VERSION`].
    fn new(arm: &'a Arm, net: Option<&'a NetConfig>, solvers: Keyed<T>) -> Self {
        Self { format: FORMAT, version: VERSION, arm, net, solvers }
    }
}

/// A version-2 file as read, its solvers of type `T` (two-link heads or chain nets).
#[derive(Deserialize)]
struct FileIn<T> {
    arm: Arm,
    #[serde(default)]
    net: Option<NetConfig>,
    solvers: Keyed<T>,
}

/// A JSON object of solvers in file order: written from `(SolverId, T)` pairs, read as its keys
/// as written (a key twice is kept twice, to be refused by name).
struct Keyed<T>(Vec<(KeyOf, T)>);

/// A solver's key: a [`SolverId`] when writing, the text of the file when reading.
enum KeyOf {
    Id(SolverId),
    Text(String),
}

impl<T> FromIterator<(SolverId, T)> for Keyed<T> {
    fn from_iter<I: IntoIterator<Item = (SolverId, T)>>(iter: I) -> Self {
        Keyed(iter.into_iter().map(|(k, v)| (KeyOf::Id(k), v)).collect())
    }
}

impl<T: Serialize> Serialize for Keyed<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            let key = match key {
                KeyOf::Id(id) => id.key(),
                KeyOf::Text(t) => t.as_str(),
            };
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Keyed<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Entries<T> {
            type Value = Keyed<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of trained solvers by key")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Keyed<T>, A::Error> {
                let mut out = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, T>()? {
                    out.push((KeyOf::Text(key), value));
                }
                Ok(Keyed(out))
            }
        }
        d.deserialize_map(Entries(std::marker::PhantomData))
    }
}

impl<T> Keyed<T> {
    /// The entries with their solvers: each key must name one of `allowed` (else the error names
    /// `solvers.KEY` and lists them) and appear once; at least one entry.
    fn solvers(self, allowed: &[SolverId], what: &str) -> Result<Vec<(SolverId, String, T)>, FieldError> {
        if self.0.is_empty() {
            return field_err("solvers", "the file holds no solver");
        }
        let mut out: Vec<(SolverId, String, T)> = Vec::with_capacity(self.0.len());
        for (key, value) in self.0 {
            let key = match key {
                KeyOf::Id(id) => id.key().to_string(),
                KeyOf::Text(t) => t,
            };
            let field = format!("solvers.{key}");
            let keys: Vec<&str> = allowed.iter().map(|s| s.key()).collect();
            let Some(id) = key.parse::<SolverId>().ok().filter(|id| allowed.contains(id)) else {
                return field_err(field, format!("is not {what} (they are {})", keys.join(", ")));
            };
            if out.iter().any(|(seen, ..)| *seen == id) {
                return field_err(field, format!("{id} appears twice"));
            }
            out.push((id, field, value));
        }
        Ok(out)
    }
}

/// The solvers of a chain file: its nets.
const CHAIN_NETS: [SolverId; 3] = [NetKind::Mse.solver(), NetKind::Mdn.solver(), NetKind::Flow.solver()];

impl FileIn<HeadIn> {
    /// The heads of a two-link file, checked.
    fn into_heads(self) -> Result<ModelFile, FieldError> {
        validate_arm(&self.arm)?;
        let arm = match TwoLinkArm::try_from(&self.arm.chain) {
            Ok(arm) => arm,
            Err(e) => return field_err("arm.chain", e.to_string()),
        };
        let named = Arm::two_link(arm);
        if named != self.arm {
            return field_err(
                "arm",
                format!("is a two-link arm but not as the lab names it (`{}` with a uniform prior)", named.name),
            );
        }
        if self.net.is_some() {
            return field_err("net", "a two-link arm's file holds no chain training settings");
        }
        let heads: Vec<SolverId> = HeadKind::ALL.iter().map(|&h| SolverId::Learned(h)).collect();
        let mut out = Vec::new();
        for (id, field, head) in self.solvers.solvers(&heads, "a learned head of a two-link arm")? {
            let model = head.model(arm);
            if Some(model.kind) != id.head() {
                return field_err(format!("{field}.kind"), format!("is {}, expected {id}", model.kind));
            }
            model.validate().map_err(|e| FieldError { field: format!("{field}.{}", e.field), reason: e.reason })?;
            out.push(model);
        }
        Ok(ModelFile::TwoLink(out))
    }
}

impl FileIn<ChainNet> {
    /// The nets of a chain file, checked.
    fn into_chain(self) -> Result<ModelFile, FieldError> {
        validate_arm(&self.arm)?;
        let Some(net) = self.net else {
            return field_err("net", "a chain's file needs the settings its nets were trained with");
        };
        let mut model = ChainModel { arm: self.arm, net, mse: None, mdn: None, flow: None };
        for (id, _, net) in self.solvers.solvers(&CHAIN_NETS, "a net of a chain")? {
            let kind = NetKind::ALL.into_iter().find(|k| k.solver() == id).expect("one of the chain's nets");
            *model.net_mut(kind) = Some(net);
        }
        validate_chain(&model, "solvers.")?;
        Ok(ModelFile::Chain(Box::new(model)))
    }
}

/// Checks the arm of a file: its chain valid, its prior the one its marginals give on that
/// chain, a named arm exactly that arm.
fn validate_arm(arm: &Arm) -> Result<(), FieldError> {
    if let Err(e) = arm.chain.validate() {
        return field_err("arm.chain", e.to_string());
    }
    match Prior::new(arm.prior.marginals().to_vec(), &arm.chain) {
        Ok(p) if p == arm.prior => {}
        Ok(_) => return field_err("arm.prior", "its ranges are not the chain's"),
        Err(e) => return field_err("arm.prior", e.to_string()),
    }
    if let Some(kind) = arm.kind
        && kind.arm() != *arm
    {
        return field_err("arm", format!("claims to be {kind} but differs from it"));
    }
    Ok(())
}

/// Checks a chain's nets: the arm ([`validate_arm`]), at least one net, and each net
/// ([`ChainNet::validate`]), its fields named under `prefix` (`solvers.` in a version-2 file,
/// nothing in a version-1 file, whose nets were at the top level).
fn validate_chain(m: &ChainModel, prefix: &str) -> Result<(), FieldError> {
    validate_arm(&m.arm)?;
    if NetKind::ALL.iter().all(|&k| m.net(k).is_none()) {
        let field = if prefix.is_empty() { "mse" } else { "solvers" };
        return field_err(field, "the file holds no net (none of mse, mdn, flow)");
    }
    let coords = m.arm.coords();
    for kind in NetKind::ALL {
        if let Some(net) = m.net(kind) {
            net.validate(kind, coords, &format!("{prefix}{}", kind.key()))?;
        }
    }
    Ok(())
}

/// A two-link head in a version-2 file, as written: the model without its arm (the file's).
#[derive(Serialize)]
struct HeadOut<'a> {
    kind: HeadKind,
    net: &'a Mlp,
    region: Region,
    encoding: AngleEncoding,
    mdn: Option<MdnNll>,
    output_scale: f32,
    max_correction: f64,
    real: Option<RealArm>,
}

impl<'a> HeadOut<'a> {
    fn of(m: &'a LearnedModel) -> Self {
        Self {
            kind: m.kind,
            net: &m.net,
            region: m.region,
            encoding: m.encoding,
            mdn: m.mdn,
            output_scale: m.output_scale,
            max_correction: m.max_correction,
            real: m.real,
        }
    }
}

/// A two-link head in a version-2 file, as read.
#[derive(Deserialize)]
struct HeadIn {
    kind: HeadKind,
    net: Mlp,
    region: Region,
    encoding: AngleEncoding,
    mdn: Option<MdnNll>,
    output_scale: f32,
    max_correction: f64,
    real: Option<RealArm>,
}

impl HeadIn {
    fn model(self, arm: TwoLinkArm) -> LearnedModel {
        let HeadIn { kind, net, region, encoding, mdn, output_scale, max_correction, real } = self;
        LearnedModel { kind, net, arm, region, encoding, mdn, output_scale, max_correction, real }
    }
}

/// A version-1 two-link model file: one head with its arm, at the top level.
#[derive(Deserialize)]
struct HeadV1 {
    kind: HeadKind,
    net: Mlp,
    arm: TwoLinkArm,
    region: Region,
    encoding: AngleEncoding,
    mdn: Option<MdnNll>,
    output_scale: f32,
    max_correction: f64,
    real: Option<RealArm>,
}

impl HeadV1 {
    fn model(self) -> LearnedModel {
        let HeadV1 { kind, net, arm, region, encoding, mdn, output_scale, max_correction, real } = self;
        LearnedModel { kind, net, arm, region, encoding, mdn, output_scale, max_correction, real }
    }
}

/// A version-1 chain model file (`elbow-chain-model`): the nets at the top level (files from
/// before the flow have no `flow`).
#[derive(Deserialize)]
struct ChainV1 {
    arm: Arm,
    net: NetConfig,
    mse: Option<ChainNet>,
    mdn: Option<ChainNet>,
    #[serde(default)]
    flow: Option<ChainNet>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::ArmKind;
    use crate::chain::solve::NetSet;
    use crate::kinematics::{ElbowMode, Point2};
    use crate::learned::{LearnedIk, TrainConfig, Trainer};
    use serde_json::{Value, json};

    fn tiny_head(head: HeadKind, arm: TwoLinkArm) -> LearnedModel {
        let cfg =
            TrainConfig { head, arm, steps: 3, data_size: 64, batch: 16, hidden: 4, depth: 1, ..Default::default() };
        let cfg = TrainConfig { real: crate::kinematics::Mismatch::DEFAULT.real_arm(&arm), ..cfg };
        let mut t = Trainer::new(cfg).unwrap();
        t.run(|_, _| {}).unwrap();
        t.into_model()
    }

    fn tiny_chain(arm: &Arm) -> ChainModel {
        let mut cfg = NetConfig { hidden: 8, depth: 1, components: 2, steps: 5, batch: 16, ..NetConfig::default() };
        cfg.flow = crate::chain::nets::FlowSettings { blocks: 2, hidden: 8, features: 4, cond_hidden: 8, ..cfg.flow };
        let mut nets = NetSet::default();
        for kind in NetKind::ALL {
            nets.set(kind, Some(ChainNet::train(arm, kind, &cfg, |_, _| true).unwrap()));
        }
        ChainModel::new(arm.clone(), cfg, nets)
    }

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("elbow-model-file-{}-{name}.json", std::process::id()))
    }

    fn write(path: &Path, v: &Value) {
        std::fs::write(path, serde_json::to_vec(v).unwrap()).unwrap();
    }

    fn read(path: &Path) -> Value {
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    /// The field a refused file names.
    fn field_of(path: &Path) -> String {
        match ModelFile::load(path) {
            Err(ModelError::Field { error, .. }) => error.field,
            other => panic!("refused naming a field expected, got {other:?}"),
        }
    }

    /// A head's version-1 file, as `elbow train` wrote it before version 2: the model's fields at
    /// the top level, its two-link arm among them.
    fn head_v1(m: &LearnedModel) -> Value {
        json!({
            "format": "elbow-model",
            "version": 1,
            "kind": m.kind,
            "net": m.net,
            "arm": m.arm,
            "region": m.region,
            "encoding": m.encoding,
            "mdn": m.mdn,
            "output_scale": m.output_scale,
            "max_correction": m.max_correction,
            "real": m.real,
        })
    }

    /// A chain's version-1 file, as `elbow train --arm` wrote it before version 2.
    fn chain_v1(m: &ChainModel) -> Value {
        json!({
            "format": "elbow-chain-model",
            "version": 1,
            "arm": m.arm,
            "net": m.net,
            "mse": m.mse,
            "mdn": m.mdn,
            "flow": m.flow,
        })
    }

    #[test]
    fn version_1_two_link_files_load_and_answer_as_before() {
        let path = temp("head-v1");
        for head in [HeadKind::Mdn, HeadKind::Residual] {
            let m = tiny_head(head, TwoLinkArm::default());
            write(&path, &head_v1(&m));
            let back = LearnedModel::load(&path).unwrap();
            assert_eq!(back, m, "{head}");
            for t in [Point2::new(0.3, 1.2), Point2::new(-1.4, -0.2)] {
                assert_eq!(back.predict(t, ElbowMode::Up), m.predict(t, ElbowMode::Up), "{head}");
            }
            assert_eq!(ModelFile::load(&path).unwrap().solvers(), [SolverId::Learned(head)]);
            // Its fields are named as version 1 names them; saved again, it is version 2.
            let mut bad = head_v1(&m);
            bad["output_scale"] = json!(-1.0);
            write(&path, &bad);
            assert_eq!(field_of(&path), "output_scale");
            back.save(&path).unwrap();
            assert_eq!(read(&path)["version"], 2);
        }
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn version_1_chain_files_load_with_the_nets_they_have() {
        let arm = ArmKind::Rail3.arm();
        let m = tiny_chain(&arm);
        let path = temp("chain-v1");
        write(&path, &chain_v1(&m));
        assert_eq!(ChainModel::load(&path).unwrap(), m);
        // A file written before the flow (no `flow` field, no flow settings) loads with the nets
        // it has.
        let mut old = chain_v1(&m);
        old.as_object_mut().unwrap().remove("flow");
        old["net"].as_object_mut().unwrap().remove("flow");
        write(&path, &old);
        let back = ChainModel::load(&path).unwrap();
        assert!(back.flow.is_none() && back.mse == m.mse && back.mdn == m.mdn);
        assert_eq!(ModelFile::load(&path).unwrap().solvers(), [NetKind::Mse.solver(), NetKind::Mdn.solver()]);
        // Its fields are named as version 1 names them.
        let mut bad = chain_v1(&m);
        bad["mse"]["kind"] = "Mdn".into();
        write(&path, &bad);
        assert_eq!(field_of(&path), "mse.kind");
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn version_2_files_round_trip_bit_for_bit_on_every_arm() {
        let path = temp("v2");
        // One head, as `elbow train` saves it, on a limited arm.
        let arm = TwoLinkArm::new(1.0, 0.5)
            .unwrap()
            .with_limits(crate::kinematics::JointLimits::FULL, crate::kinematics::JointLimits { min: -2.0, max: 2.5 })
            .unwrap();
        let mdn = tiny_head(HeadKind::Mdn, arm);
        mdn.save(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let v = read(&path);
        assert_eq!((v["format"].as_str(), v["version"].as_u64()), (Some(FORMAT), Some(2)));
        assert_eq!(serde_json::from_value::<Arm>(v["arm"].clone()).unwrap(), Arm::two_link(arm));
        assert_eq!(v["solvers"].as_object().unwrap().keys().collect::<Vec<_>>(), ["mdn"]);
        let back = LearnedModel::load(&path).unwrap();
        assert_eq!(back, mdn);
        back.save(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "saved again, the same bytes");
        // Several heads of one arm share a file, in its order.
        let both = ModelFile::TwoLink(vec![tiny_head(HeadKind::Mse, arm), mdn.clone()]);
        both.save(&path).unwrap();
        let loaded = ModelFile::load(&path).unwrap();
        assert_eq!(loaded, both);
        assert_eq!(loaded.arm(), Arm::two_link(arm));
        assert_eq!(loaded.head(HeadKind::Mdn), Some(&mdn));
        assert_eq!(loaded.describe(), "a two-link model with the mse and mdn heads for arm 1,0.5");
        let e = LearnedModel::load(&path).unwrap_err().to_string();
        assert!(e.contains("a file of one head is needed"), "{e}");
        // A chain's nets.
        let chain = tiny_chain(&ArmKind::ThreeR.arm());
        chain.save(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let v = read(&path);
        assert_eq!(v["solvers"].as_object().unwrap().keys().collect::<Vec<_>>(), ["flow", "mdn", "mse"]);
        assert_eq!(v["version"], 2);
        let back = ChainModel::load(&path).unwrap();
        assert_eq!(back, chain);
        ModelFile::Chain(Box::new(back)).save(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "saved again, the same bytes");
        // What a file cannot hold is not written.
        for refused in [
            ModelFile::TwoLink(vec![]),
            ModelFile::TwoLink(vec![mdn.clone(), mdn.clone()]),
            ModelFile::TwoLink(vec![mdn.clone(), tiny_head(HeadKind::Mse, TwoLinkArm::default())]),
            ModelFile::Chain(Box::new(ChainModel::new(chain.arm.clone(), chain.net, NetSet::default()))),
        ] {
            assert!(refused.save(&path).is_err(), "{refused:?}");
            assert_eq!(std::fs::read(&path).unwrap(), bytes);
        }
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn an_unknown_version_is_refused_naming_the_field() {
        let path = temp("version");
        tiny_head(HeadKind::Mse, TwoLinkArm::default()).save(&path).unwrap();
        let good = read(&path);
        for version in [0, 3, 99] {
            let mut v = good.clone();
            v["version"] = version.into();
            write(&path, &v);
            let e = ModelFile::load(&path).unwrap_err().to_string();
            assert!(
                e.contains(&format!("field `version`: version {version} is not supported (this build reads 1 and 2)")),
                "{e}"
            );
        }
        let mut v = chain_v1(&tiny_chain(&ArmKind::ThreeR.arm()));
        v["version"] = 2.into();
        write(&path, &v);
        let e = ModelFile::load(&path).unwrap_err().to_string();
        assert!(e.contains("field `version`: version 2 of `elbow-chain-model` is not supported"), "{e}");
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn a_file_for_another_arm_is_refused_saying_what_it_is() {
        let rail3 = ArmKind::Rail3.arm();
        let chain = temp("other-chain");
        tiny_chain(&rail3).save(&chain).unwrap();
        let head = temp("other-head");
        tiny_head(HeadKind::Mse, TwoLinkArm::default()).save(&head).unwrap();
        // Another kind.
        let e = LearnedModel::load(&chain).unwrap_err().to_string();
        assert!(e.contains("is a chain model for rail3, and a two-link model is needed here"), "{e}");
        let e = ChainModel::load(&head).unwrap_err().to_string();
        assert!(e.contains("is a two-link mse model for arm 1,1, and a chain model is needed here"), "{e}");
        // Another arm.
        let e = ModelFile::load(&chain).unwrap().check_arm(&ArmKind::ThreeR.arm()).unwrap_err();
        assert_eq!(e, "it is a chain model for rail3, and this runs on 3r");
        let e = ModelFile::load(&head).unwrap().check_arm(&rail3).unwrap_err();
        assert_eq!(e, "it is a two-link mse model for arm 1,1, and this runs on rail3");
        let half = Arm::two_link(TwoLinkArm::new(1.0, 0.5).unwrap());
        assert!(ModelFile::load(&head).unwrap().check_arm(&half).unwrap_err().contains("lengths 1,0.5"));
        assert!(ModelFile::load(&head).unwrap().check_arm(&ArmKind::TwoR.arm()).is_ok());
        std::fs::remove_file(&chain).ok();
        std::fs::remove_file(&head).ok();
    }

    #[test]
    fn corrupt_and_foreign_chain_files_are_refused_naming_what_is_wrong() {
        let arm = ArmKind::ThreeR.arm();
        let m = tiny_chain(&arm);
        let path = temp("bad-chain");
        m.save(&path).unwrap();
        let good = read(&path);
        type Break = fn(&mut Value);
        let cases: [(Break, &str); 14] = [
            (|v| v["solvers"]["flow"]["flow"]["shape"]["dims"] = 4.into(), "solvers.flow.flow.shape"),
            (|v| v["solvers"]["flow"]["flow"]["blocks"][1]["mix"][0] = 2.0.into(), "solvers.flow.flow"),
            (|v| v["solvers"]["mdn"] = v["solvers"]["flow"].clone(), "solvers.mdn.kind"),
            (|v| v["solvers"]["mse"]["kind"] = "Mdn".into(), "solvers.mse.kind"),
            (|v| v["solvers"]["mdn"]["output"][0][1] = (-1.0).into(), "solvers.mdn.output"),
            (|v| v["solvers"]["mse"]["net"]["layers"] = json!([]), "solvers.mse.net.layers"),
            (|v| v["arm"]["name"] = "rail3".into(), "claims to be 3r"),
            (|v| v["arm"]["kind"] = "Rail3".into(), "field `arm`"),
            (|v| v["arm"]["chain"]["links"][0]["length"] = (-1.0).into(), "field `arm.chain`"),
            (|v| v["solvers"] = json!({}), "field `solvers`: the file holds no solver"),
            (|v| v["solvers"]["exact"] = v["solvers"]["mse"].clone(), "field `solvers.exact`: is not a net"),
            (|v| v["solvers"]["nope"] = v["solvers"]["mse"].clone(), "field `solvers.nope`"),
            (|v| v.as_object_mut().unwrap().remove("net").map(drop).unwrap(), "field `net`"),
            (|v| v["format"] = "other".into(), "field `format`: is `other`, expected `elbow-model`"),
        ];
        for (break_it, needle) in cases {
            let mut v = good.clone();
            break_it(&mut v);
            write(&path, &v);
            let e = ChainModel::load(&path).unwrap_err().to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
        // A key twice.
        let text = String::from_utf8(std::fs::read(&path).unwrap()).unwrap();
        let mut v = good.clone();
        v["solvers"].as_object_mut().unwrap().retain(|k, _| k == "mse");
        let one = serde_json::to_string(&v["solvers"]["mse"]).unwrap();
        let twice =
            serde_json::to_string(&v).unwrap().replace("\"solvers\":{", &format!("\"solvers\":{{\"mse\":{one},"));
        std::fs::write(&path, twice).unwrap();
        let e = ChainModel::load(&path).unwrap_err().to_string();
        assert!(e.contains("field `solvers.mse`: mse appears twice"), "{e}\n{}", &text[..80]);
        std::fs::write(&path, b"{\"format\": \"elbow-model\", \"version\": 2").unwrap();
        assert!(matches!(ChainModel::load(&path), Err(ModelError::Corrupt { .. })));
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn corrupt_two_link_files_are_refused_naming_the_field() {
        let path = temp("bad-head");
        tiny_head(HeadKind::Mdn, TwoLinkArm::default()).save(&path).unwrap();
        let good = read(&path);
        type Break = fn(&mut Value);
        let cases: [(Break, &str); 7] = [
            (|v| v["solvers"]["mdn"]["mdn"]["sigma_min"] = (-1.0).into(), "solvers.mdn.mdn.sigma_min"),
            (|v| v["solvers"]["mdn"]["kind"] = "mse".into(), "solvers.mdn.kind"),
            (|v| v["solvers"]["dls"] = v["solvers"]["mdn"].clone(), "solvers.dls"),
            (|v| v["arm"]["name"] = "lengths 1,1".into(), "arm"),
            (|v| v["arm"]["chain"]["links"][1]["limits"]["max"] = 1e20.into(), "arm.chain"),
            (|v| v["net"] = serde_json::to_value(NetConfig::default()).unwrap(), "net"),
            (|v| v["solvers"] = json!({}), "solvers"),
        ];
        for (break_it, field) in cases {
            let mut v = good.clone();
            break_it(&mut v);
            write(&path, &v);
            assert_eq!(field_of(&path), field);
        }
        std::fs::remove_file(&path).ok();
    }
}
