//! `elbow train`: trains one head with a progress bar, reports its held-out FK miss, and saves
//! the model.

use super::{ArmArgs, Failure, count, learning_rate, print_json, seed, signals};
use clap::Args;
use elbow::kinematics::Region;
use elbow::learned::{
    AngleEncoding, HeadKind, MAX_EVAL_TARGETS, MAX_MODEL_FILE_BYTES, MAX_STEPS, TrainConfig, train_and_evaluate,
};
use elbow::nn::Activation;
use std::path::PathBuf;

/// The core's defaults, so the command line never re-types a training knob.
fn defaults() -> TrainConfig {
    TrainConfig::default()
}

/// Arguments of `elbow train`.
#[derive(Debug, Args)]
pub(crate) struct TrainArgs {
    /// Which head: mse, mdn, mode or residual.
    #[arg(long, default_value_t = defaults().head)]
    head: HeadKind,
    /// Minibatch updates, 1 to 10000000.
    #[arg(long, default_value_t = defaults().steps, value_parser = count::<1, MAX_STEPS>, allow_hyphen_values = true)]
    steps: usize,
    /// Samples per minibatch, 1 to 65536.
    #[arg(long, default_value_t = defaults().batch, value_parser = count::<1, 65_536>, allow_hyphen_values = true)]
    batch: usize,
    /// Width of each hidden layer, 1 to 4096.
    #[arg(long, default_value_t = defaults().hidden, value_parser = count::<1, 4096>, allow_hyphen_values = true)]
    hidden: usize,
    /// Number of hidden layers, 1 to 8.
    #[arg(long, default_value_t = defaults().depth, value_parser = count::<1, 8>, allow_hyphen_values = true)]
    depth: usize,
    /// MDN mixture components, 1 to 32.
    #[arg(long, default_value_t = defaults().components, value_parser = count::<1, 32>, allow_hyphen_values = true)]
    components: usize,
    /// Peak learning rate (cosine-decayed), in (0, 1).
    #[arg(long, default_value_t = defaults().lr, value_parser = learning_rate, allow_hyphen_values = true)]
    lr: f32,
    /// Hidden activation: tanh or relu.
    #[arg(long, default_value = "tanh")]
    activation: Activation,
    /// Output encoding: circular (shoulder as cos/sin, no wrap) or raw angles (wraps at ±180°).
    #[arg(long, default_value = "circular")]
    encoding: AngleEncoding,
    /// Training region: `annulus` or `sector:FROM,TO` in degrees.
    #[arg(long, default_value_t = defaults().region)]
    region: Region,
    /// Training targets, 16 to 10000000.
    #[arg(long, default_value_t = defaults().data_size, value_parser = count::<16, 10_000_000>, allow_hyphen_values = true)]
    data_size: usize,
    /// Held-out evaluation targets, 1 to 1000000.
    #[arg(long, default_value_t = 5_000, value_parser = count::<1, MAX_EVAL_TARGETS>, allow_hyphen_values = true)]
    eval_targets: usize,
    /// Seed of data, initialisation and batching.
    #[arg(long, default_value_t = defaults().seed, value_parser = seed, allow_hyphen_values = true)]
    seed: u64,
    #[command(flatten)]
    arm: ArmArgs,
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

impl TrainArgs {
    /// The training configuration these arguments describe; the residual head fits the default
    /// real arm (the default mismatch, [`super::fitted_real_arm`]).
    pub(crate) fn config(&self) -> Result<TrainConfig, String> {
        let arm = self.arm.arm()?;
        Ok(TrainConfig {
            head: self.head,
            arm,
            region: self.region,
            data_size: self.data_size,
            steps: self.steps,
            batch: self.batch,
            hidden: self.hidden,
            depth: self.depth,
            activation: self.activation,
            components: self.components,
            lr: self.lr,
            encoding: self.encoding,
            seed: self.seed,
            real: super::fitted_real_arm(self.head, &arm)?,
            ..TrainConfig::default()
        })
    }
}

/// Checks, before any training, that the model can be saved at `path`.
fn check_out(path: &std::path::Path, cfg: &TrainConfig) -> Result<(), String> {
    elbow::files::check_destination(path).map_err(|e| format!("cannot write the model to {}: {e}", path.display()))?;
    let size = cfg.model_file_estimate();
    if size > MAX_MODEL_FILE_BYTES as f64 {
        return Err(format!(
            "a model this large (about {size:.2e} bytes as JSON) would not fit the {MAX_MODEL_FILE_BYTES}-byte limit \
             on model files; use fewer or narrower hidden layers to save it"
        ));
    }
    Ok(())
}

/// `elbow train`.
pub(crate) fn run(args: &TrainArgs) -> Result<(), Failure> {
    let cfg = args.config()?;
    cfg.validate()?;
    if let Some(path) = &args.out {
        check_out(path, &cfg)?;
    }
    let bar = super::progress_bar(!args.quiet && !args.json, cfg.steps, "steps", format!("training {}", cfg.head));
    let polling = signals::Polling::start();
    let trained = train_and_evaluate(cfg, args.eval_targets, |step, loss| {
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
    if let Some(path) = &args.out {
        model.save(path).map_err(|e| e.to_string())?;
    }
    drop(polling);
    if args.json {
        return Ok(print_json(&report)?);
    }
    let s = report.fk_miss;
    outln!(
        "head {}: {} steps in {:.2} s ({:.0} samples/s), final loss {:.4}",
        report.head,
        report.steps,
        report.train_seconds,
        report.samples_per_second,
        report.final_loss
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
    if let Some(path) = &args.out {
        outln!("saved {}", path.display());
    }
    Ok(())
}
