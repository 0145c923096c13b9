//! The arm of `solve`, `train` and `atlas` (and of the app, [`super::Cli::app_lab`]): one parser
//! for `--arm 2r|3r|rail3`, `--lengths` with two values (a two-link arm) or three or more (a
//! chain from lengths), `--arm-file` (a URDF file, with `--tip`, `--joints` and `--hold`) and
//! `--elbow-limits` (two-link arms only).

use super::{AppArm, AppLengths, ArmArgs, Failure, parse_app_lengths, parse_range_deg};
use clap::Args;
use elbow::arm::urdf::{UrdfArm, UrdfOptions};
use elbow::arm::{Arm, ArmKind};
use elbow::chain::ChainModel;
use elbow::chain::nets::NetConfig;
use elbow::experiments::chain::{ChainConfig, Progress, train_nets};
use elbow::kinematics::TwoLinkArm;
use elbow::learned::{HeadKind, LearnedModel, ModelFile, TrainConfig, Trainer};
use elbow::lineup::SolverId;
use std::path::{Path, PathBuf};

/// `--arm`, `--lengths` and `--elbow-limits` of a command that runs on any arm.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ArmChoice {
    /// The arm: `2r` (two links, the default), `3r`, `rail3` or `so101` (redundant chains).
    #[arg(long, conflicts_with = "lengths")]
    pub(crate) arm: Option<ArmKind>,
    /// Link lengths in metres, each from 1e-6 to 1e6, the longest at most 1e4 times the shortest:
    /// two (`L1,L2`, default 1,1) for a two-link arm, three or more (`L1,L2,L3,...`) for a chain
    /// (shoulder ±90°, the other joints ±150°, uniform prior).
    #[arg(long, value_name = "L1,L2,...", value_parser = parse_app_lengths, allow_hyphen_values = true)]
    pub(crate) lengths: Option<AppLengths>,
    /// Elbow joint range `MIN,MAX` in degrees, within ±720 (default: unlimited; two-link arms only).
    #[arg(long, value_parser = parse_range_deg, allow_hyphen_values = true)]
    pub(crate) elbow_limits: Option<(f64, f64)>,
    /// `--arm-file` and its options.
    #[command(flatten)]
    pub(crate) file: ArmFile,
}

/// `--arm-file FILE` with `--tip`, `--joints` and `--hold`: an arm read from a URDF file, for a
/// command ([`ArmChoice`]) or the app.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ArmFile {
    /// A URDF file as the arm: its serial chain from the root to the tip link, the revolute
    /// joints with parallel axes kept, the others held (meshes are never read; `elbow solve
    /// --arm-file FILE --describe` lists what was read).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["arm", "lengths"])]
    pub(crate) arm_file: Option<PathBuf>,
    /// With --arm-file: the tip link (default: the only end link of the file's tree).
    #[arg(long, value_name = "LINK", requires = "arm_file")]
    pub(crate) tip: Option<String>,
    /// With --arm-file: the joints to keep, by name (default: the most revolute joints with
    /// parallel axes on the way to the tip).
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', requires = "arm_file")]
    pub(crate) joints: Option<Vec<String>>,
    /// With --arm-file: the values other joints are held at, radians or metres (default 0).
    #[arg(long, value_name = "NAME=VALUE,...", value_delimiter = ',', value_parser = parse_hold, requires = "arm_file", allow_hyphen_values = true)]
    pub(crate) hold: Option<Vec<(String, f64)>>,
}

/// One `--hold` entry, `NAME=VALUE`.
fn parse_hold(s: &str) -> Result<(String, f64), String> {
    let Some((name, value)) = s.split_once('=') else {
        return Err(format!("expected NAME=VALUE, got `{}`", super::shown(s)));
    };
    let value: f64 = value.trim().parse().map_err(|_| format!("`{}` is not a number", super::shown(value.trim())))?;
    if !value.is_finite() {
        return Err(format!("the value of {} must be finite", super::shown(name.trim())));
    }
    Ok((name.trim().to_string(), value))
}

impl ArmChoice {
    /// The arm these flags give: the two-link arm unless `--arm` names a chain or `--lengths`
    /// has three or more values.
    pub(crate) fn lab(&self) -> Result<AppArm, String> {
        if let Some(file) = self.urdf()? {
            if self.elbow_limits.is_some() {
                return Err(format!(
                    "--elbow-limits is for the two-link arm; arm {} has its own joint limits",
                    file.arm.name
                ));
            }
            return Ok(AppArm::Chain(file.arm));
        }
        let lab = match (self.arm, &self.lengths) {
            (Some(ArmKind::TwoR) | None, None) => AppArm::TwoLink(TwoLinkArm::default()),
            (_, Some(AppLengths::Two(a, b))) => AppArm::TwoLink(TwoLinkArm::new(*a, *b).map_err(|e| e.to_string())?),
            (_, Some(AppLengths::Chain(l))) => AppArm::Chain(Arm::from_lengths(l).map_err(|e| e.to_string())?),
            (Some(kind), None) => AppArm::Chain(kind.arm()),
        };
        match (lab, self.elbow_limits) {
            (AppArm::TwoLink(arm), limits) => {
                let (a, b) = (arm.l1(), arm.l2());
                ArmArgs { arm: None, lengths: (a, b), elbow_limits: limits }.arm().map(AppArm::TwoLink)
            }
            (AppArm::Chain(c), Some(_)) => {
                Err(format!("--elbow-limits is for the two-link arm; arm {} has its own joint limits", c.name))
            }
            (chain, None) => Ok(chain),
        }
    }
}

impl ArmChoice {
    /// The arm read from `--arm-file`, if one was given.
    pub(crate) fn urdf(&self) -> Result<Option<UrdfArm>, String> {
        self.file.urdf()
    }
}

impl ArmFile {
    /// The arm read from `--arm-file`, if one was given.
    pub(crate) fn urdf(&self) -> Result<Option<UrdfArm>, String> {
        let Some(path) = &self.arm_file else { return Ok(None) };
        let options = UrdfOptions {
            tip: self.tip.clone(),
            joints: self.joints.clone(),
            hold: self.hold.iter().flatten().cloned().collect(),
        };
        UrdfArm::load(path, &options).map(Some).map_err(|e| e.to_string())
    }
}

/// The arm's name as the messages give it: `2r` for the default two-link arm, else its lengths.
pub(crate) fn two_link_name(arm: &TwoLinkArm) -> String {
    if *arm == TwoLinkArm::default() { "2r".into() } else { format!("the two-link arm {},{}", arm.l1(), arm.l2()) }
}

/// The network settings of the command line's chain nets (`elbow train --arm`, and the nets
/// `solve` and `atlas` train when no `--model` is given): smaller than the chain experiment's,
/// so every net trains in seconds.
pub(crate) fn cli_net_defaults() -> NetConfig {
    NetConfig { hidden: 64, depth: 3, components: 8, steps: 2000, batch: 256, ..NetConfig::default() }
}

/// The chain model at `path` for `arm`: a two-link model, or a chain model for another arm, is
/// refused with one sentence saying what the file is.
pub(crate) fn load_chain_model(path: &Path, arm: &Arm) -> Result<ChainModel, String> {
    let shown = path.display();
    match ModelFile::load(path).map_err(|e| e.to_string())? {
        ModelFile::Chain(m) if m.arm == *arm => Ok(*m),
        other => Err(format!("{shown} is {}; this command runs on {}", other.describe(), arm.name)),
    }
}

/// The two-link `head` in the model file at `path`: a chain model, or a file without that head,
/// is refused with one sentence saying what the file is.
pub(crate) fn load_two_link_head(path: &Path, head: HeadKind, arm: &TwoLinkArm) -> Result<LearnedModel, String> {
    match ModelFile::load(path).map_err(|e| e.to_string())? {
        ModelFile::TwoLink(mut heads) => match heads.iter().position(|m| m.kind == head) {
            Some(i) => Ok(heads.swap_remove(i)),
            None if heads.len() == 1 => Err(format!("{}: holds a {} model, not {head}", path.display(), heads[0].kind)),
            None => Err(format!("{}: is {}, not {head}", path.display(), ModelFile::TwoLink(heads).describe())),
        },
        other => {
            Err(format!("{} is {}; this command runs on {}", path.display(), other.describe(), two_link_name(arm)))
        }
    }
}

/// A two-link `head` for a command on `arm`: loaded from `path` (it must hold that head, among
/// any others, for that arm), or trained here for `steps` steps from `seed`, with a note on stderr. Also returns the
/// training configuration its data comes from; a model file does not record its data, so for a
/// loaded model that is the default sampler over the model's own arm and region.
pub(crate) fn two_link_head(
    head: HeadKind,
    arm: TwoLinkArm,
    path: Option<&Path>,
    steps: usize,
    seed: u64,
) -> Result<(LearnedModel, TrainConfig), String> {
    if let Some(path) = path {
        let model = load_two_link_head(path, head, &arm)?;
        model.check_fits(&arm, None).map_err(|e| format!("{}: {e}", path.display()))?;
        let data = TrainConfig { head, arm: model.arm, region: model.region, ..TrainConfig::default() };
        return Ok((model, data));
    }
    // The residual head fits the default real arm of *this* arm, like `elbow train`.
    let real = super::fitted_real_arm(head, &arm)?;
    let cfg = TrainConfig { head, arm, real, steps, seed, ..TrainConfig::default() };
    super::note(format_args!("training {head} for {} steps…", cfg.steps));
    let mut trainer = Trainer::new(cfg).map_err(|e| e.to_string())?;
    // The command line's one progress bar (drawn on a terminal only); Ctrl-C still ends the
    // run at once, with nothing written.
    let bar = super::progress_bar(true, cfg.steps, "steps", format!("training {head}"));
    trainer
        .run(|step, _| {
            if let Some(bar) = &bar
                && (step % 50 == 0 || step == cfg.steps)
            {
                bar.set_position(step as u64);
            }
        })
        .map_err(|e| e.to_string())?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if !trainer.rollbacks().is_empty() {
        let words = elbow::learned::train::rollbacks_in_words(trainer.rollbacks());
        super::note(format_args!("training {head} diverged and was rolled back: {words}"));
    }
    Ok((trainer.into_model(), cfg))
}

/// The nets the `methods` need on `arm`: from `--model`, or trained here for `steps` steps
/// (`seed`) with a note on stderr saying how to train and keep better ones; Ctrl-C stops the
/// training with exit code 130 ([`super::with_progress`]).
pub(crate) fn chain_nets(
    arm: &Arm,
    model: Option<&Path>,
    methods: &[SolverId],
    steps: usize,
    seed: u64,
) -> Result<ChainModel, Failure> {
    if let Some(path) = model {
        return Ok(load_chain_model(path, arm)?);
    }
    let mut cfg = ChainConfig::new(arm.clone());
    cfg.methods = methods.to_vec();
    cfg.net = NetConfig { steps, seed, ..cli_net_defaults() };
    cfg.targets = 1;
    cfg.validate().map_err(|e| e.to_string())?;
    let learned: Vec<String> =
        methods.iter().filter(|m| m.family() == elbow::lineup::Family::Learned).map(|m| m.to_string()).collect();
    if learned.is_empty() {
        return Ok(ChainModel::new(arm.clone(), cfg.net, Default::default()));
    }
    let key = match arm.kind {
        Some(k) => format!("--arm {k}"),
        None if arm.body.is_some() => "--arm-file ...".to_string(),
        None => "--lengths ...".to_string(),
    };
    super::note(format_args!(
        "training small nets for {} ({steps} steps, no --model); `elbow train {key} --out m.json` trains and keeps them, then pass --model m.json",
        learned.join(", ")
    ));
    let trained = super::with_progress(true, "steps", "training", |update| {
        train_nets(&cfg, &|p| match p {
            Progress::Training { done, total } => update("", done, total),
            Progress::Evaluating { .. } => true,
        })
    });
    let nets = trained?;
    Ok(ChainModel::new(arm.clone(), cfg.net, nets.nets))
}
