//! `elbow train`: trains one head with a progress bar, reports its held-out FK miss, and saves
//! the model; on a chain (`--arm 3r|rail3`), trains its squared-error and mixture nets, reports
//! their re-simulation error and posterior mismatch against the exact sampler (the chain
//! experiment's evaluation), and saves a chain model.

use super::arm::cli_net_defaults;
use super::experiment::{print_budget, print_chain_rows};
use super::{AppArm, ArmChoice, Failure, count, learning_rate, print_json, seed, signals};
use clap::Args;
use elbow::arm::Arm;
use elbow::chain::ChainModel;
use elbow::chain::nets::NetConfig;
use elbow::experiments::chain::{ChainConfig, MAX_SAMPLES, Progress, evaluate, train_nets};
use elbow::kinematics::Region;
use elbow::learned::{
    AngleEncoding, HeadKind, MAX_EVAL_TARGETS, MAX_MODEL_FILE_BYTES, MAX_STEPS, TrainConfig, train_and_evaluate,
};
use elbow::lineup::SolverId;
use elbow::nn::Activation;
use std::path::PathBuf;

/// The core's defaults, so the command line never re-types a training knob.
fn defaults() -> TrainConfig {
    TrainConfig::default()
}

/// Arguments of `elbow train`.
#[derive(Debug, Args)]
pub(crate) struct TrainArgs {
    /// Two-link arm: which head, mse, mdn, mode or residual [default: mdn].
    #[arg(long)]
    head: Option<HeadKind>,
    /// Minibatch updates, 1 to 10000000 (on a chain, of each net).
    #[arg(long, default_value_t = defaults().steps, value_parser = count::<1, MAX_STEPS>, allow_hyphen_values = true)]
    steps: usize,
    /// Samples per minibatch, 1 to 65536.
    #[arg(long, default_value_t = defaults().batch, value_parser = count::<1, 65_536>, allow_hyphen_values = true)]
    batch: usize,
    /// Width of each hidden layer, 1 to 4096.
    #[arg(long, default_value_t = defaults().hidden, value_parser = count::<1, 4096>, allow_hyphen_values = true)]
    hidden: usize,
    /// Number of hidden layers, 1 to 8 [default: 2; on a chain 3].
    #[arg(long, value_parser = count::<1, 8>, allow_hyphen_values = true)]
    depth: Option<usize>,
    /// MDN mixture components, 1 to 32 [default: 2; on a chain 8, full covariance].
    #[arg(long, value_parser = count::<1, 32>, allow_hyphen_values = true)]
    components: Option<usize>,
    /// Peak learning rate (cosine-decayed), in (0, 1).
    #[arg(long, default_value_t = defaults().lr, value_parser = learning_rate, allow_hyphen_values = true)]
    lr: f32,
    /// Two-link arm: hidden activation, tanh or relu [default: tanh].
    #[arg(long)]
    activation: Option<Activation>,
    /// Two-link arm: output encoding, circular (shoulder as cos/sin, no wrap) or raw angles
    /// (wraps at ±180°) [default: circular].
    #[arg(long)]
    encoding: Option<AngleEncoding>,
    /// Two-link arm: training region, `annulus` or `sector:FROM,TO` in degrees [default: annulus].
    #[arg(long)]
    region: Option<Region>,
    /// Two-link arm: training targets, 16 to 10000000 [default: 20000].
    #[arg(long, value_parser = count::<16, 10_000_000>, allow_hyphen_values = true)]
    data_size: Option<usize>,
    /// Held-out evaluation targets, 1 to 1000000 [default: 5000; on a chain 200, each scored
    /// against the exact posterior].
    #[arg(long, value_parser = count::<1, MAX_EVAL_TARGETS>, allow_hyphen_values = true)]
    eval_targets: Option<usize>,
    /// Chains only: samples per held-out target and net, 2 to 20000 [default: 200].
    #[arg(long, value_parser = count::<2, MAX_SAMPLES>, allow_hyphen_values = true)]
    samples: Option<usize>,
    /// Seed of data, initialisation and batching.
    #[arg(long, default_value_t = defaults().seed, value_parser = seed, allow_hyphen_values = true)]
    seed: u64,
    #[command(flatten)]
    arm: ArmChoice,
    /// Save the trained model here (JSON). Checked before training; written atomically, so an
    /// existing file is only replaced by a whole new model.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// Held-out targets of a two-link head's evaluation by default.
const TWO_LINK_EVAL_TARGETS: usize = 5_000;
/// Held-out targets of a chain's evaluation by default.
const CHAIN_EVAL_TARGETS: usize = 200;
/// Samples per held-out target and net of a chain's evaluation by default.
const CHAIN_EVAL_SAMPLES: usize = 200;

impl TrainArgs {
    /// The training configuration these arguments describe on a two-link arm; the residual head
    /// fits the default real arm (the default mismatch, [`super::fitted_real_arm`]).
    pub(crate) fn config(&self) -> Result<TrainConfig, String> {
        let arm = match self.arm.lab()? {
            AppArm::TwoLink(arm) => arm,
            AppArm::Chain(c) => return Err(format!("arm {} is a chain, not a two-link arm", c.name)),
        };
        let d = defaults();
        let head = self.head.unwrap_or(d.head);
        Ok(TrainConfig {
            head,
            arm,
            region: self.region.unwrap_or(d.region),
            data_size: self.data_size.unwrap_or(d.data_size),
            steps: self.steps,
            batch: self.batch,
            hidden: self.hidden,
            depth: self.depth.unwrap_or(d.depth),
            activation: self.activation.unwrap_or(Activation::Tanh),
            components: self.components.unwrap_or(d.components),
            lr: self.lr,
            encoding: self.encoding.unwrap_or(AngleEncoding::Circular),
            seed: self.seed,
            real: super::fitted_real_arm(head, &arm)?,
            ..TrainConfig::default()
        })
    }

    /// The chain run these arguments describe on `arm`: every net, evaluated like the chain
    /// experiment on held-out targets.
    fn chain_config(&self, arm: &Arm) -> Result<ChainConfig, String> {
        let two_link_only = [
            ("--head", self.head.is_some()),
            ("--activation", self.activation.is_some()),
            ("--encoding", self.encoding.is_some()),
            ("--region", self.region.is_some()),
            ("--data-size", self.data_size.is_some()),
        ];
        if let Some((flag, _)) = two_link_only.iter().find(|(_, given)| *given) {
            return Err(format!(
                "{flag} is for the two-link arm; on {} `train` fits the squared-error net, the mixture net and the flow on prior draws",
                arm.name
            ));
        }
        let mut cfg = ChainConfig::new(arm.clone());
        cfg.methods = [SolverId::Learned(HeadKind::Mse), SolverId::Learned(HeadKind::Mdn), SolverId::Flow]
            .into_iter()
            .filter(|m| arm.methods().contains(m))
            .collect();
        let base = cli_net_defaults();
        cfg.net = NetConfig {
            steps: self.steps,
            batch: self.batch,
            hidden: self.hidden,
            depth: self.depth.unwrap_or(base.depth),
            components: self.components.unwrap_or(base.components),
            lr: self.lr,
            seed: self.seed,
            ..base
        };
        cfg.targets = self.eval_targets.unwrap_or(CHAIN_EVAL_TARGETS);
        cfg.samples = self.samples.unwrap_or(CHAIN_EVAL_SAMPLES);
        cfg.seed = self.seed;
        cfg.validate().map_err(|e| e.to_string())?;
        Ok(cfg)
    }
}

/// Checks, before any training, that a model of about `size` bytes can be saved at `path`.
fn check_out(path: &std::path::Path, size: f64) -> Result<(), String> {
    elbow::files::check_destination(path).map_err(|e| format!("cannot write the model to {}: {e}", path.display()))?;
    if size > MAX_MODEL_FILE_BYTES as f64 {
        return Err(format!(
            "a model this large (about {size:.2e} bytes as JSON) would not fit the {MAX_MODEL_FILE_BYTES}-byte limit \
             on model files; use fewer or narrower hidden layers to save it"
        ));
    }
    Ok(())
}

/// `elbow train`: a two-link head, or a chain's nets.
pub(crate) fn run(args: &TrainArgs) -> Result<(), Failure> {
    match args.arm.lab()? {
        AppArm::Chain(arm) => run_chain(args, &arm),
        AppArm::TwoLink(_) => {
            if args.samples.is_some() {
                return Err(
                    "--samples is for chains (--arm 3r or rail3, or three or more --lengths), scored against their exact posterior"
                        .to_string()
                        .into(),
                );
            }
            run_two_link(args)
        }
    }
}

/// `elbow train` on a two-link arm.
fn run_two_link(args: &TrainArgs) -> Result<(), Failure> {
    let cfg = args.config()?;
    cfg.validate()?;
    if let Some(path) = &args.out {
        check_out(path, cfg.model_file_estimate())?;
    }
    let bar = super::progress_bar(!args.quiet && !args.json, cfg.steps, "steps", format!("training {}", cfg.head));
    let polling = signals::Polling::start();
    let trained = train_and_evaluate(cfg, args.eval_targets.unwrap_or(TWO_LINK_EVAL_TARGETS), |step, loss| {
        if let Some(bar) = &bar
            && (step % 50 == 0 || step == cfg.steps)
        {
            bar.set_position(step as u64);
            bar.set_message(format!("loss {loss:.4}"));
        }
        !signals::interrupted()
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let (model, report) = trained?;
    if signals::interrupted() {
        // Interrupted during the evaluation: the user asked to stop, so nothing is saved.
        return Err(Failure { message: "interrupted; nothing was saved".into(), code: super::INTERRUPTED_EXIT });
    }
    // Saved first (a closed standard output does not lose the model), but a failure to save
    // is said only after the report, which it must not cost.
    let saved = args.out.as_ref().map(|path| model.save(path).map_err(|e| e.to_string()));
    drop(polling);
    if args.json {
        print_json(&report)?;
        return Ok(saved.unwrap_or(Ok(()))?);
    }
    let s = report.fk_miss;
    outln!(
        "head {}: {} steps in {:.2} s ({:.0} samples/s), final loss {:.4}, divergence roll-backs: {}",
        report.head,
        report.steps,
        report.train_seconds,
        report.samples_per_second,
        report.final_loss,
        elbow::learned::train::rollbacks_in_words(&report.rollbacks)
    );
    outln!(
        "held-out FK miss over {} answers: mean {:.4} m ({:.2}% of reach), median {:.4}, p95 {:.4}, max {:.4}",
        s.n,
        s.mean,
        report.mean_miss_percent_of_reach,
        s.median,
        s.p95,
        s.max
    );
    if let Some(a) = report.analytic_on_real_arm {
        outln!("analytic alone on the same real arm: mean {:.4} m, median {:.4}, p95 {:.4}", a.mean, a.median, a.p95);
    }
    if let Some(share) = report.corrections_applied {
        outln!(
            "correction applied to {:.1}% of answers (the others came out above the {} rad bound and kept the analytic answer)",
            100.0 * share,
            model.max_correction
        );
        if share < 0.5 {
            outln!(
                "most corrections were dropped: on this arm the mismatch is large against the shorter link, so the real arm needs corrections above the bound (the residual head cannot correct it)"
            );
        }
    }
    match (&args.out, saved) {
        (Some(path), Some(Ok(()))) => outln!("saved {}", path.display()),
        (_, Some(Err(e))) => return Err(e.into()),
        _ => {}
    }
    Ok(())
}

/// `elbow train` on a chain: every net side by side (the chain experiment's training), their
/// held-out figures (its evaluation), and the chain model saved.
fn run_chain(args: &TrainArgs, arm: &Arm) -> Result<(), Failure> {
    let cfg = args.chain_config(arm)?;
    if let Some(path) = &args.out {
        let size: f64 = cfg.nets().iter().map(|&k| cfg.net.model_file_estimate(k, arm.coords())).sum();
        check_out(path, size)?;
    }
    let started = std::time::Instant::now();
    let report = super::with_progress(!args.quiet && !args.json, "", &format!("training {}", arm.name), |update| {
        let progress = |p: Progress| match p {
            Progress::Training { done, total } => update("training the nets", done, total),
            Progress::Evaluating { done, total } => update("scoring against the exact posterior", done, total),
        };
        let nets = train_nets(&cfg, &progress)?;
        let train_seconds = started.elapsed().as_secs_f64();
        let mut report = evaluate(&cfg, nets.nets(), train_seconds, &progress)?;
        nets.time(&mut report);
        Ok::<_, elbow::experiments::ExperimentError>((nets, report))
    });
    if signals::interrupted() {
        return Err(Failure { message: "interrupted; nothing was saved".into(), code: super::INTERRUPTED_EXIT });
    }
    let (nets, report) = report?;
    let model = ChainModel::new(arm.clone(), cfg.net, nets.nets);
    let saved = args.out.as_ref().map(|path| model.save(path).map_err(|e| e.to_string()));
    if args.json {
        print_json(&report)?;
        return Ok(saved.unwrap_or(Ok(()))?);
    }
    outln!(
        "{}: squared-error net, mixture net and normalizing flow trained side by side in {:.1} s",
        arm.name,
        report.train_seconds
    );
    print_budget(&report)?;
    outln!(
        "held-out: {} targets y* = f(x), x from the prior, {} samples each, scored against the exact posterior in {:.1} s",
        report.targets,
        report.samples,
        report.eval_seconds
    );
    print_chain_rows(&report)?;
    outln!(
        "resim: mean squared distance of FK(sample) to y* (m²); mismatch: unbiased MMD² against the exact samples (floor {:.5}); success: within {} m",
        report.mmd_floor.mean,
        report.tolerance
    );
    match (&args.out, saved) {
        (Some(path), Some(Ok(()))) => outln!("saved {}", path.display()),
        (_, Some(Err(e))) => return Err(e.into()),
        _ => {}
    }
    Ok(())
}
