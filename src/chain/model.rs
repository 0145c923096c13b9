//! Chain model files: the squared-error, mixture and flow nets of one chain arm, saved by
//! `elbow train --arm` and loaded back by every `--model FILE` (and the app).
//!
//! A file is JSON with a format tag and a version, like a two-link head's
//! ([`crate::learned::LearnedModel`]), and goes through the same writer and reader: written
//! atomically, read only from a regular file of at most [`crate::learned::MAX_MODEL_FILE_BYTES`], every field
//! checked. [`ModelFile`] tells the two kinds apart by their tag, so a command given the wrong
//! kind says what the file is.

use super::arm::Prior;
use super::nets::{ChainNet, NetConfig, NetKind};
use super::solve::{NetSet, Nets};
use crate::arm::Arm;
use crate::learned::model::{
    CHAIN_FORMAT, chain_model_description, field_err, format_tag, parse_model, read_model_bytes, save_json,
};
use crate::learned::{FieldError, LearnedModel, ModelError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Identifies a chain model file.
pub const FORMAT: &str = CHAIN_FORMAT;
/// Bumped whenever the layout changes.
pub const VERSION: u32 = 1;

/// The trained nets of one chain arm, with the arm and the settings they were trained with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainModel {
    /// File-format tag, always [`FORMAT`].
    pub format: String,
    /// File-format version.
    pub version: u32,
    /// The arm the nets answer for.
    pub arm: Arm,
    /// How the nets were built and trained.
    pub net: NetConfig,
    /// The squared-error net, if trained.
    pub mse: Option<ChainNet>,
    /// The mixture density network, if trained.
    pub mdn: Option<ChainNet>,
    /// The normalizing flow, if trained (files written before the flow have none).
    #[serde(default)]
    pub flow: Option<ChainNet>,
}

impl ChainModel {
    /// A model of these nets for `arm`.
    pub fn new(arm: Arm, net: NetConfig, mut nets: NetSet) -> Self {
        let (mse, mdn, flow) = (nets.take(NetKind::Mse), nets.take(NetKind::Mdn), nets.take(NetKind::Flow));
        Self { format: FORMAT.into(), version: VERSION, arm, net, mse, mdn, flow }
    }

    /// The net of `kind`, if the file holds one.
    pub fn net(&self, kind: NetKind) -> Option<&ChainNet> {
        match kind {
            NetKind::Mse => self.mse.as_ref(),
            NetKind::Mdn => self.mdn.as_ref(),
            NetKind::Flow => self.flow.as_ref(),
        }
    }

    /// The nets, as the solving code takes them.
    pub fn nets(&self) -> Nets<'_> {
        Nets::of(NetKind::ALL.iter().filter_map(|&k| self.net(k)))
    }

    /// The nets, owned.
    pub fn into_nets(self) -> NetSet {
        let mut set = NetSet::default();
        for (kind, net) in [(NetKind::Mse, self.mse), (NetKind::Mdn, self.mdn), (NetKind::Flow, self.flow)] {
            set.set(kind, net);
        }
        set
    }

    /// What the file holds, for messages: `a chain model for rail3`.
    pub fn describe(&self) -> String {
        chain_model_description(&self.arm.name)
    }

    /// Whether these nets may answer for `arm`: only for the arm they were trained on.
    pub fn check_fits(&self, arm: &Arm) -> Result<(), String> {
        if self.arm == *arm {
            return Ok(());
        }
        Err(format!("it is {}, and its nets answer only on that arm, not on {}", self.describe(), arm.name))
    }

    /// Checks every field a file could get wrong, naming the first bad one: format and version,
    /// the arm (its chain valid, its prior the one its marginals give on that chain, a named
    /// arm exactly that arm), at least one net, and each net ([`ChainNet::validate`]).
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.format != FORMAT {
            return field_err("format", format!("is `{}`, expected `{FORMAT}`", self.format));
        }
        if self.version != VERSION {
            return field_err(
                "version",
                format!("version {} is not supported (this build reads {VERSION})", self.version),
            );
        }
        let arm = &self.arm;
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
        if NetKind::ALL.iter().all(|&k| self.net(k).is_none()) {
            return field_err("mse", "the file holds no net (none of mse, mdn, flow)");
        }
        let coords = arm.coords();
        for kind in NetKind::ALL {
            if let Some(net) = self.net(kind) {
                net.validate(kind, coords, kind.key())?;
            }
        }
        Ok(())
    }

    /// Writes the model as JSON, atomically (the two-link model's writer): the path holds the
    /// old file or the whole new one.
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        save_json(self, path)
    }

    /// Reads and fully validates a chain model file; a two-link model file is refused saying
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

/// A model file of either kind.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelFile {
    /// A two-link head (`elbow train`; boxed like the chain's).
    TwoLink(Box<LearnedModel>),
    /// The nets of a chain (`elbow train --arm 3r|rail3`; boxed: three networks).
    Chain(Box<ChainModel>),
}

impl ModelFile {
    /// Reads a model file of either kind (bounded, validated; see [`LearnedModel::load`]).
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let bytes = read_model_bytes(path)?;
        Self::parse(path, &bytes)
    }

    /// Parses and validates the `bytes` of a model file read from `path`, by its format tag.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Self, ModelError> {
        if format_tag(bytes).as_deref() == Some(FORMAT) {
            parse_model(path, bytes, ChainModel::validate).map(|m| Self::Chain(Box::new(m)))
        } else {
            parse_model(path, bytes, LearnedModel::validate).map(|m| Self::TwoLink(Box::new(m)))
        }
    }

    /// What the file holds, for messages: `a two-link mdn model for arm 1,1` or `a chain model
    /// for rail3`.
    pub fn describe(&self) -> String {
        match self {
            ModelFile::TwoLink(m) => format!("a two-link {} model for arm {},{}", m.kind, m.arm.l1(), m.arm.l2()),
            ModelFile::Chain(m) => m.describe(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::ArmKind;

    fn tiny(arm: &Arm) -> ChainModel {
        let mut cfg = NetConfig { hidden: 8, depth: 1, components: 2, steps: 5, batch: 16, ..NetConfig::default() };
        cfg.flow = crate::chain::nets::FlowSettings { blocks: 2, hidden: 8, features: 4, cond_hidden: 8, ..cfg.flow };
        let mut nets = NetSet::default();
        for kind in NetKind::ALL {
            nets.set(kind, Some(ChainNet::train(arm, kind, &cfg, |_, _| true).unwrap()));
        }
        ChainModel::new(arm.clone(), cfg, nets)
    }

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("elbow-chain-model-{}-{name}.json", std::process::id()))
    }

    #[test]
    fn a_model_round_trips_and_fits_only_its_arm() {
        let arm = ArmKind::Rail3.arm();
        let m = tiny(&arm);
        let path = temp("round");
        m.save(&path).unwrap();
        let back = ChainModel::load(&path).unwrap();
        assert_eq!(back, m);
        assert!(back.check_fits(&arm).is_ok());
        let e = back.check_fits(&ArmKind::ThreeR.arm()).unwrap_err();
        assert!(e.contains("a chain model for rail3") && e.contains("3r"), "{e}");
        // The two-link reader says what the file is.
        let e = LearnedModel::load(&path).unwrap_err().to_string();
        assert!(e.contains("is a chain model for rail3") && e.contains("two-link model is needed"), "{e}");
        // A file written before the flow (no `flow` field, no flow settings) loads with the nets
        // it has.
        let mut old = serde_json::to_value(&m).unwrap();
        old.as_object_mut().unwrap().remove("flow");
        old["net"].as_object_mut().unwrap().remove("flow");
        std::fs::write(&path, serde_json::to_vec(&old).unwrap()).unwrap();
        let back = ChainModel::load(&path).unwrap();
        assert!(back.flow.is_none() && back.mse == m.mse && back.mdn == m.mdn);
        assert_eq!(back.nets().get(NetKind::Flow).map(|n| n.kind), None);
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn corrupt_and_foreign_files_are_refused_naming_what_is_wrong() {
        let arm = ArmKind::ThreeR.arm();
        let m = tiny(&arm);
        let path = temp("bad");
        let write = |v: &serde_json::Value| std::fs::write(&path, serde_json::to_vec(v).unwrap()).unwrap();
        let good = serde_json::to_value(&m).unwrap();
        type Break = fn(&mut serde_json::Value);
        let cases: [(Break, &str); 10] = [
            (|v| v["version"] = 7.into(), "version"),
            (|v| v["flow"]["flow"]["shape"]["dims"] = 4.into(), "flow.flow.shape"),
            (|v| v["flow"]["flow"]["blocks"][1]["mix"][0] = 2.0.into(), "flow.flow"),
            (|v| v["mdn"] = v["flow"].clone(), "mdn.kind"),
            (|v| v["mse"]["kind"] = "Mdn".into(), "mse.kind"),
            (|v| v["mdn"]["output"][0][1] = (-1.0).into(), "mdn.output"),
            (|v| v["mse"]["net"]["layers"] = serde_json::json!([]), "mse.net.layers"),
            (|v| v["arm"]["name"] = "rail3".into(), "claims to be 3r"),
            (|v| v["arm"]["kind"] = "Rail3".into(), "arm"),
            (
                |v| {
                    v["mse"] = serde_json::Value::Null;
                    v["mdn"] = serde_json::Value::Null;
                    v["flow"] = serde_json::Value::Null;
                },
                "no net",
            ),
        ];
        for (break_it, needle) in cases {
            let mut v = good.clone();
            break_it(&mut v);
            write(&v);
            let e = ChainModel::load(&path).unwrap_err().to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
        std::fs::write(&path, b"{\"format\": \"elbow-chain-model\", \"version\": 1").unwrap();
        assert!(matches!(ChainModel::load(&path), Err(ModelError::Corrupt { .. })));
        std::fs::remove_file(&path).ok();
    }
}
