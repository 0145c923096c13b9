//! `elbow bench`: headless speed figures, comparable with the criterion benches.
//!
//! Reports solves per second of the classical solvers, MDN training throughput (f32, batch 256,
//! 3-64-64-14) against this core's measured FMA peak, batched inference of a 256 x 256 grid of
//! targets against the same peak, single-target inference time, and the training time to the
//! MDN accuracy target; then the redundant chains' hot paths ([`ChainBench`]: flow sampling and
//! the flow's training step against the same peak, the exact sampler per target) and a plant
//! sub-step. Throughputs are medians of several timed blocks and the peak is the best
//! of three runs, so the ratios stay conservative on a busy machine. `ELBOW_SIMD=avx2` or
//! `baseline` measures the narrower code paths on a wider CPU (the peak stays the widest).

use crate::analytic::{AnalyticSolver, BranchChoice};
use crate::iterative::DlsSolver;
use crate::kinematics::{Pose, Region, SampleMode, TwoLinkArm};
use crate::learned::{HeadKind, LearnedIk, TrainConfig, Trainer};
use crate::lineup::SolverId;
use crate::rng::{Stream, rng};
use crate::solver::IkSolver;
use rand::RngExt;
use serde::Serialize;
use std::hint::black_box;
use std::time::Instant;

/// The figures.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// Analytic solve of both branches, the one nearest the seed answered, nanoseconds.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub analytic_ns: f64,
    /// Analytic solve of one fixed branch, nanoseconds.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub analytic_one_branch_ns: f64,
    /// DLS solve from a warm start 0.02 rad away, converged, nanoseconds.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub dls_warm_ns: f64,
    /// Mean DLS iterations for those solves.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub dls_warm_iterations: f64,
    /// MDN (K=2, circular encoding) training samples per second, f32, batch 256, one core.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub mdn_train_samples_per_second: f64,
    /// Floating-point operations per training sample (forward + backward GEMMs).
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub flops_per_sample: f64,
    /// Achieved GFLOP/s in MDN training.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub train_gflops: f64,
    /// This core's f32 FMA peak, measured with a register-only FMA loop, GFLOP/s.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub fma_peak_gflops: f64,
    /// Vector width used for the peak measurement.
    pub fma_kernel: &'static str,
    /// The same core's 8-lane (AVX2) FMA peak, GFLOP/s, for comparison (0 when unavailable).
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub fma_peak_avx2_gflops: f64,
    /// MDN single-target inference, microseconds.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub mdn_inference_us: f64,
    /// MSE single-target inference, microseconds.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub mse_inference_us: f64,
    /// Instruction set the kernels ran at (after `ELBOW_SIMD`).
    pub simd_level: &'static str,
    /// MDN training GFLOP/s as a percentage of `fma_peak_gflops`.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub train_percent_of_peak: f64,
    /// Targets in the batched-inference grid.
    pub batch_targets: usize,
    /// Batched inference (`Mlp::forward_batch`), targets per second.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub batch_inference_targets_per_second: f64,
    /// Batched inference GFLOP/s (2 FLOP per weight per target).
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub batch_inference_gflops: f64,
    /// Batched inference GFLOP/s as a percentage of `fma_peak_gflops`.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub batch_inference_percent_of_peak: f64,
    /// Training steps until the held-out mean FK miss first fell under 1% of the reach
    /// (checked every `ACCURACY_CHECK_EVERY` steps; `None` if the default run never got there).
    /// Absent from JSON when `None` (JSON holds no `null` for a number).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mdn_steps_to_target: Option<usize>,
    /// Training wall time of those steps, seconds (the held-out checks excluded; absent when
    /// `None`).
    #[serde(serialize_with = "crate::stats::json_numbers", skip_serializing_if = "Option::is_none")]
    pub mdn_seconds_to_target: Option<f64>,
    /// Cells per side of the timed atlas.
    pub atlas_resolution: usize,
    /// Wall time of an MDN atlas on one thread (miss, branch, confidence and envelope layers),
    /// ms.
    pub atlas_mdn_ms: f64,
    /// The same with the silent layer too (four noise samples per cell), ms.
    pub atlas_mdn_silent_ms: f64,
    /// The same on every thread of rayon's pool, ms.
    pub atlas_mdn_parallel_ms: f64,
    /// Threads in rayon's pool.
    pub atlas_threads: usize,
    /// Wall time of the same atlas for the analytic solver on one thread, ms.
    pub atlas_analytic_ms: f64,
    /// The hot paths of the redundant chains and the plant ([`ChainBench`]).
    pub chain: ChainBench,
}

/// Speed of the redundant chains' hot paths and of the plant, on `rail3` with the chain
/// experiment's defaults (a flow of 8 coupling blocks of 2 ReLU layers of 64, the exact
/// sampler at an effective sample size of 20 times the 500 samples drawn).
#[derive(Debug, Clone, Serialize)]
pub struct ChainBench {
    /// 2,000 flow samples for one target (the chain experiment's `s/2000`, the demo target),
    /// best of five, ms.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub flow_sample_ms: f64,
    /// FLOP of one flow sample (2 per weight of every coupling network, the conditioning folded
    /// into the first layer's bias).
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub flow_sample_flops: f64,
    /// Flow sampling GFLOP/s as a percentage of the core's FMA peak.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub flow_sample_percent_of_peak: f64,
    /// One flow training step (batch 512: data, forward, backward, Adam), median of five
    /// blocks, ms.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub flow_train_step_ms: f64,
    /// FLOP of one flow training sample (forward, weight gradients, and input gradients of all
    /// but the conditioning network's first layer: 2 per multiply-add).
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub flow_train_flops_per_sample: f64,
    /// Flow training GFLOP/s as a percentage of the core's FMA peak.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub flow_train_percent_of_peak: f64,
    /// The exact sampler: 500 posterior samples for one target at an effective sample size of
    /// 10,000, median over eight targets drawn from the prior, ms.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub exact_sample_ms: f64,
    /// One sub-step ([`crate::plant::SUBSTEP`]) of the two-link plant (STS3215 servos with their
    /// friction, gravity, always moving), µs.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub plant_step_two_link_us: f64,
    /// One sub-step of the `rail3` plant (a rail and three joints, always moving), µs.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub plant_step_rail3_us: f64,
    /// One sub-step of the `so101` plant (its three pitch joints, always moving), µs.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub plant_step_so101_us: f64,
}

/// Median wall time of `runs` calls of `f`, milliseconds.
fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    )
}

/// Steps between held-out checks of the time-to-accuracy run.
pub const ACCURACY_CHECK_EVERY: usize = 250;
/// Held-out targets per check.
const ACCURACY_TARGETS: usize = 1000;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time_per_call(mut f: impl FnMut(usize), calls: usize) -> f64 {
    // One warm-up pass, then the timed one.
    for i in 0..calls / 10 {
        f(i);
    }
    let t = Instant::now();
    for i in 0..calls {
        f(i);
    }
    t.elapsed().as_secs_f64() / calls as f64
}

/// The accepted range of `train_steps` in [`measure`].
pub const TRAIN_STEPS_RANGE: (usize, usize) = (10, 200_000);

/// Measures every figure (takes a few seconds); `train_steps` must lie in
/// [`TRAIN_STEPS_RANGE`].
pub fn measure(train_steps: usize) -> Result<BenchReport, String> {
    let (lo, hi) = TRAIN_STEPS_RANGE;
    if !(lo..=hi).contains(&train_steps) {
        return Err(format!("train steps must be in {lo}..={hi}, got {train_steps}"));
    }
    let arm = TwoLinkArm::default();
    let mut rng = rng(1, Stream::Bench, 0);
    let targets = arm.sample_targets(&mut rng, 4096, SampleMode::UniformArea, Region::Annulus);
    let analytic = AnalyticSolver::new(arm, BranchChoice::NearestToSeed);
    let analytic_ns = 1e9
        * time_per_call(
            |i| {
                black_box(analytic.solve(black_box(targets[i % 4096]), Pose::default()));
            },
            2_000_000,
        );
    let one = AnalyticSolver::new(arm, BranchChoice::Fixed(crate::ElbowMode::Down));
    let analytic_one_branch_ns = 1e9
        * time_per_call(
            |i| {
                black_box(one.solve(black_box(targets[i % 4096]), Pose::default()));
            },
            2_000_000,
        );
    let dls = DlsSolver::new(arm);
    let warm: Vec<(crate::Point2, Pose)> = targets
        .iter()
        .map(|&t| {
            let q = crate::solve_branches(&arm, t).down;
            let jitter = Pose::new(q.shoulder + rng.random_range(-0.02..0.02), q.elbow + rng.random_range(-0.02..0.02));
            (t, jitter)
        })
        .collect();
    let iterations: u32 = warm.iter().map(|&(t, s)| dls.solve(t, s).iterations).sum();
    let dls_warm_ns = 1e9
        * time_per_call(
            |i| {
                let (t, s) = warm[i % 4096];
                black_box(dls.solve(black_box(t), s));
            },
            500_000,
        );

    let cfg = TrainConfig { head: HeadKind::Mdn, steps: train_steps, ..TrainConfig::default() };
    let mut trainer = Trainer::new(cfg).map_err(|e| e.to_string())?;
    for _ in 0..20 {
        trainer.step().map_err(|e| e.to_string())?;
    }
    // Five timed blocks; the median block is the figure.
    let block = cfg.steps.div_ceil(5);
    let rates = (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..block {
                trainer.step().map_err(|e| e.to_string())?;
            }
            Ok((block * cfg.batch) as f64 / t.elapsed().as_secs_f64())
        })
        .collect::<Result<Vec<f64>, String>>()?;
    let samples_per_second = median(rates);
    let net = &trainer.model().net;
    // One MAC per weight per sample: forward, dW for every layer, dX for all but the first.
    let macs = net.macs_per_sample() * 3 - net.layers[0].w.len();
    let flops_per_sample = 2.0 * macs as f64;
    let (fma_peak_gflops, fma_kernel) =
        (0..3).map(|_| fma_peak_gflops()).max_by(|a, b| a.0.total_cmp(&b.0)).expect("three runs");
    let fma_peak_avx2_gflops = (0..3).map(|_| fma_peak_avx2_gflops()).fold(0.0, f64::max);
    let train_gflops = samples_per_second * flops_per_sample / 1e9;

    // Batched inference: a 256 x 256 grid over the reach square, one fused GEMM per layer.
    let model = trainer.model();
    let side = 256;
    let reach = arm.reach();
    let mut inputs = vec![0f32; side * side * model.input_dims()];
    for (idx, x) in inputs.chunks_exact_mut(model.input_dims()).enumerate() {
        let (i, j) = (idx % side, idx / side);
        let p = crate::Point2::new(
            -reach + 2.0 * reach * (i as f64 + 0.5) / side as f64,
            -reach + 2.0 * reach * (j as f64 + 0.5) / side as f64,
        );
        model.features(p, crate::ElbowMode::Down, x);
    }
    let mut outputs = vec![0f32; side * side * model.output_dims()];
    let mut batch_scratch = crate::nn::BatchScratch::default();
    model.net.forward_batch(&inputs, &mut outputs, &mut batch_scratch);
    let batch_secs = median(
        (0..7)
            .map(|_| {
                let t = Instant::now();
                model.net.forward_batch(black_box(&inputs), &mut outputs, &mut batch_scratch);
                black_box(&outputs);
                t.elapsed().as_secs_f64()
            })
            .collect(),
    );
    let batch_targets = side * side;
    let batch_inference_gflops = (2 * model.net.macs_per_sample() * batch_targets) as f64 / batch_secs / 1e9;

    // Time to the accuracy target: the default MDN run, checked on held-out targets.
    let acc_cfg = TrainConfig { head: HeadKind::Mdn, ..TrainConfig::default() };
    let held_out = crate::learned::held_out_targets(&acc_cfg.arm, acc_cfg.region, ACCURACY_TARGETS, acc_cfg.seed);
    let mut acc_trainer = Trainer::new(acc_cfg).map_err(|e| e.to_string())?;
    let (mut train_secs, mut reached) = (0.0, None);
    while acc_trainer.steps_done() < acc_cfg.steps {
        let t = Instant::now();
        for _ in 0..ACCURACY_CHECK_EVERY {
            acc_trainer.step().map_err(|e| e.to_string())?;
        }
        train_secs += t.elapsed().as_secs_f64();
        let miss = crate::learned::evaluate(acc_trainer.model(), &held_out).mean;
        if miss < 0.01 * acc_cfg.arm.reach() {
            reached = Some((acc_trainer.steps_done(), train_secs));
            break;
        }
    }

    let mdn = trainer.model().clone();
    let mdn_inference_us = 1e6
        * time_per_call(
            |i| {
                black_box(mdn.predict(black_box(targets[i % 4096]), crate::ElbowMode::Down));
            },
            200_000,
        );
    let mse_cfg = TrainConfig { head: HeadKind::Mse, steps: 10, ..TrainConfig::default() };
    let mse = Trainer::new(mse_cfg).map_err(|e| e.to_string())?.into_model();
    let mse_inference_us = 1e6
        * time_per_call(
            |i| {
                black_box(mse.predict(black_box(targets[i % 4096]), crate::ElbowMode::Down));
            },
            200_000,
        );
    // The workspace atlas the app draws: every layer of a 256 x 256 grid.
    let atlas_cfg = crate::atlas::AtlasConfig { resolution: side, samples: 0, ..Default::default() };
    let silent_cfg = crate::atlas::AtlasConfig { resolution: side, ..Default::default() };
    let mut trained = crate::atlas::Trained::default();
    trained.heads[HeadKind::Mdn] = Some(&mdn);
    let atlas_arm = crate::arm::Arm::two_link(arm);
    let map = |solver, cfg: &crate::atlas::AtlasConfig| {
        crate::atlas::compute(&atlas_arm, solver, trained.clone(), cfg, &|_, _| true)
            .expect("the default atlas is valid")
    };
    let atlas_ms = |solver| {
        median_ms(5, || {
            black_box(map(solver, &atlas_cfg));
        })
    };
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().map_err(|e| e.to_string())?;
    let mdn_id = crate::SolverId::Learned(HeadKind::Mdn);
    let atlas_mdn_ms = one_thread.install(|| atlas_ms(mdn_id));
    let atlas_analytic_ms = one_thread.install(|| atlas_ms(crate::SolverId::Analytic));
    let atlas_mdn_parallel_ms = atlas_ms(mdn_id);
    let atlas_mdn_silent_ms = one_thread.install(|| {
        median_ms(5, || {
            black_box(map(mdn_id, &silent_cfg));
        })
    });
    let chain = measure_chain(fma_peak_gflops)?;
    Ok(BenchReport {
        chain,
        atlas_resolution: side,
        atlas_mdn_ms,
        atlas_mdn_parallel_ms,
        atlas_mdn_silent_ms,
        atlas_threads: rayon::current_num_threads(),
        atlas_analytic_ms,
        analytic_ns,
        analytic_one_branch_ns,
        dls_warm_ns,
        dls_warm_iterations: iterations as f64 / warm.len() as f64,
        mdn_train_samples_per_second: samples_per_second,
        flops_per_sample,
        train_gflops,
        fma_peak_gflops,
        fma_kernel,
        fma_peak_avx2_gflops,
        mdn_inference_us,
        mse_inference_us,
        simd_level: crate::simd::level(),
        train_percent_of_peak: 100.0 * train_gflops / fma_peak_gflops.max(1e-9),
        batch_targets,
        batch_inference_targets_per_second: batch_targets as f64 / batch_secs,
        batch_inference_gflops,
        batch_inference_percent_of_peak: 100.0 * batch_inference_gflops / fma_peak_gflops.max(1e-9),
        mdn_steps_to_target: reached.map(|r| r.0),
        mdn_seconds_to_target: reached.map(|r| r.1),
    })
}

/// Measures [`ChainBench`] against a core of `peak_gflops`.
pub fn measure_chain(peak_gflops: f64) -> Result<ChainBench, String> {
    use crate::arm::ArmKind;
    use crate::chain::ExactSampler;
    use crate::chain::nets::{Body, ChainNet, NetConfig, NetKind};
    use crate::chain::solve::{NetSet, SolveSettings, solutions};
    let arm = ArmKind::Rail3.arm();
    // The flow's training step: five timed blocks of 40 steps after 20 untimed ones.
    let (warm, block, blocks) = (20, 40, 5);
    let cfg = NetConfig { steps: warm + block * blocks, ..NetConfig::default() };
    let mut marks = Vec::with_capacity(blocks + 1);
    let net = ChainNet::train(&arm, NetKind::Flow, &cfg, |step, _| {
        if step >= warm && (step - warm).is_multiple_of(block) {
            marks.push(Instant::now());
        }
        true
    })
    .map_err(|e| e.to_string())?;
    let flow_train_step_ms =
        median(marks.windows(2).map(|w| (w[1] - w[0]).as_secs_f64() * 1e3 / block as f64).collect());
    let Body::Flow { flow } = &net.body else { return Err("a flow net holds a flow".into()) };
    let blocks_macs: usize = flow.blocks.iter().map(|b| b.net.macs_per_sample()).sum();
    let cond_macs = flow.cond.macs_per_sample();
    let train_macs = 3 * (blocks_macs + cond_macs) - flow.cond.layers[0].w.len();
    let flow_train_flops_per_sample = 2.0 * train_macs as f64;
    let train_gflops = flow_train_flops_per_sample * cfg.batch as f64 / (flow_train_step_ms * 1e-3) / 1e9;
    // Sampling folds the conditioning into each block's first-layer bias: only the coupling
    // networks run per sample, their first layers on the kept coordinates alone.
    let shape = flow.shape;
    let folded = shape.blocks * shape.features * shape.hidden;
    let flow_sample_flops = 2.0 * (blocks_macs - folded) as f64;
    let mut nets = NetSet::default();
    nets.set(NetKind::Flow, Some(net));
    let settings = SolveSettings::default();
    let target = arm.demo_target();
    let mut out = Vec::new();
    let mut draw = rng(1, Stream::Bench, 1);
    let mut times = Vec::new();
    for _ in 0..6 {
        let t = Instant::now();
        solutions(&arm, nets.nets(), &settings, SolverId::Flow, target, 2000, &mut draw, &mut out)
            .map_err(|e| e.to_string())?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let flow_sample_ms = times[1..].iter().copied().fold(f64::INFINITY, f64::min);
    let flow_gflops = flow_sample_flops * 2000.0 / (flow_sample_ms * 1e-3) / 1e9;
    // The exact sampler on targets the experiment would draw.
    let mut sampler = ExactSampler::new(&arm);
    sampler.ess_factor = settings.ess_factor;
    let mut x = [0.0; crate::chain::arm::MAX_COORDS];
    let d = arm.coords();
    let exact_sample_ms = median(
        (0..8)
            .map(|_| {
                arm.prior.sample(&mut draw, &mut x[..d]);
                let target = arm.chain.tip(&x[..d]);
                let t = Instant::now();
                black_box(sampler.sample(target, 500, &mut draw));
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    );
    Ok(ChainBench {
        flow_sample_ms,
        flow_sample_flops,
        flow_sample_percent_of_peak: 100.0 * flow_gflops / peak_gflops.max(1e-9),
        flow_train_step_ms,
        flow_train_flops_per_sample,
        flow_train_percent_of_peak: 100.0 * train_gflops / peak_gflops.max(1e-9),
        exact_sample_ms,
        plant_step_two_link_us: plant_step_us(None),
        plant_step_rail3_us: plant_step_us(Some(&arm)),
        plant_step_so101_us: plant_step_us(Some(&crate::arm::ArmKind::So101.arm())),
    })
}

/// Wall times of the plant experiments' default runs, as a user runs them (every core).
#[derive(Debug, Clone, Serialize)]
pub struct ExperimentTimes {
    /// `elbow experiment degradation`, default settings, seconds.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub degradation_s: f64,
    /// `elbow experiment randomization`, default settings, seconds.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub randomization_s: f64,
    /// `elbow experiment tracking`, default settings, seconds.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub tracking_s: f64,
    /// The worker threads they ran on.
    pub threads: usize,
}

/// Runs the degradation, randomization and tracking experiments at their defaults and times
/// each (about a minute on two cores); `keep_going` is asked between the randomization's stages.
pub fn measure_experiments(mut keep_going: impl FnMut() -> bool) -> Result<ExperimentTimes, String> {
    use crate::experiments::randomization::{RandomizationConfig, randomization};
    use crate::experiments::{DegradationConfig, TrackingConfig, degradation, tracking};
    let timed = |run: &mut dyn FnMut() -> Result<(), String>| -> Result<f64, String> {
        let t = Instant::now();
        run()?;
        Ok(t.elapsed().as_secs_f64())
    };
    let degradation_s = timed(&mut || degradation(&DegradationConfig::default()).map(drop).map_err(|e| e.to_string()))?;
    let randomization_s = timed(&mut || {
        randomization(&RandomizationConfig::default(), |_, _| keep_going()).map(drop).map_err(|e| e.to_string())
    })?;
    let tracking_s = timed(&mut || tracking(&TrackingConfig::default()).map(drop).map_err(|e| e.to_string()))?;
    Ok(ExperimentTimes { degradation_s, randomization_s, tracking_s, threads: rayon::current_num_threads() })
}

/// The plant whose sub-step the benches time: the two-link arm on the SO-101's servos (with
/// their friction) under gravity, or `chain`'s plant on the same servos, at rest near zero.
pub fn timed_plant(chain: Option<&crate::arm::Arm>) -> crate::plant::Plant {
    use crate::plant::dynamics::Servo;
    use crate::plant::{Plant, PlantConfig};
    let cfg = PlantConfig { gravity: true, servo: Servo::STS3215, ..PlantConfig::ideal(TwoLinkArm::default()) };
    match chain {
        Some(arm) => Plant::new(arm.real(), cfg, &vec![0.1; arm.coords()]),
        None => Plant::new(cfg.two_link_real(), cfg, &[0.3, 0.6]),
    }
}

/// Microseconds per sub-step of a plant that keeps moving: the two-link plant on the SO-101's
/// servos under gravity, or `chain`'s plant, commanded to a new pose every 20 ms of plant time
/// (so it never comes to rest, where a sub-step skips the dynamics).
fn plant_step_us(chain: Option<&crate::arm::Arm>) -> f64 {
    let mut plant = timed_plant(chain);
    let dim = plant.dim();
    let mut draw = rng(2, Stream::Bench, 2);
    let (moves, substeps) = (2000, (0.02 / crate::plant::SUBSTEP).round() as usize);
    let t = Instant::now();
    for _ in 0..moves {
        let goal: Vec<f64> = (0..dim).map(|_| draw.random_range(-0.8..0.8)).collect();
        plant.command(&goal);
        for _ in 0..substeps {
            plant.step(crate::plant::SUBSTEP);
        }
    }
    black_box(plant.tip());
    1e6 * t.elapsed().as_secs_f64() / (moves * substeps) as f64
}

/// Measures the f32 fused-multiply-add peak of one core with independent register accumulators.
pub fn fma_peak_gflops() -> (f64, &'static str) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU supports AVX-512F (checked just above).
        return (unsafe { peak::avx512() }, "avx512 (16 lanes)");
    }
    let avx2 = fma_peak_avx2_gflops();
    if avx2 > 0.0 { (avx2, "avx2+fma (8 lanes)") } else { (0.0, "unmeasured (no x86 FMA)") }
}

/// The 8-lane (AVX2 + FMA) peak of one core, GFLOP/s; 0 where the CPU lacks them.
pub fn fma_peak_avx2_gflops() -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { peak::avx2() };
        }
    }
    0.0
}

#[cfg(target_arch = "x86_64")]
mod peak {
    use std::arch::x86_64::*;
    use std::time::Instant;

    const ITERS: usize = 20_000_000;

    /// 16 independent 16-lane FMA chains.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512() -> f64 {
        let a = _mm512_set1_ps(0.999_999);
        let b = _mm512_set1_ps(1e-7);
        let mut acc = [_mm512_set1_ps(1.0); 16];
        let t = Instant::now();
        for _ in 0..ITERS {
            for x in acc.iter_mut() {
                *x = _mm512_fmadd_ps(*x, a, b);
            }
        }
        let secs = t.elapsed().as_secs_f64();
        let mut sum = _mm512_setzero_ps();
        for x in acc {
            sum = _mm512_add_ps(sum, x);
        }
        std::hint::black_box(sum);
        (ITERS * 16 * 16 * 2) as f64 / secs / 1e9
    }

    /// 12 independent 8-lane FMA chains (AVX2 has 16 vector registers: 12 chains and the two
    /// constants fit without spilling).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn avx2() -> f64 {
        let a = _mm256_set1_ps(0.999_999);
        let b = _mm256_set1_ps(1e-7);
        let mut acc = [_mm256_set1_ps(1.0); 12];
        let t = Instant::now();
        for _ in 0..ITERS {
            for x in acc.iter_mut() {
                *x = _mm256_fmadd_ps(*x, a, b);
            }
        }
        let secs = t.elapsed().as_secs_f64();
        let mut sum = _mm256_setzero_ps();
        for x in acc {
            sum = _mm256_add_ps(sum, x);
        }
        std::hint::black_box(sum);
        (ITERS * 12 * 8 * 2) as f64 / secs / 1e9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chain rows count the default rail3 flow's work from its shape, as worked out by
    /// hand here, and every figure is a finite positive number.
    #[test]
    fn the_chain_rows_count_the_flows_work_and_are_finite() {
        let c = measure_chain(100.0).unwrap();
        // Sampling: 8 blocks of kept coordinates (2) -> 64 -> 64 -> 4, the features folded in.
        assert_eq!(c.flow_sample_flops, 2.0 * 8.0 * (2.0 * 64.0 + 64.0 * 64.0 + 64.0 * 4.0));
        // Training: each block sees (2 + 32 features) -> 64 -> 64 -> 4, the conditioning net
        // 2 -> 128 -> 128 -> 128 -> 32; forward, dW and dX, less the conditioning input's dX.
        let blocks = 8.0 * (34.0 * 64.0 + 64.0 * 64.0 + 64.0 * 4.0);
        let cond = 2.0 * 128.0 + 2.0 * 128.0 * 128.0 + 128.0 * 32.0;
        assert_eq!(c.flow_train_flops_per_sample, 2.0 * (3.0 * (blocks + cond) - 2.0 * 128.0));
        let json = serde_json::to_value(&c).unwrap();
        for (field, v) in json.as_object().unwrap() {
            let v = v.as_f64().unwrap();
            assert!(v.is_finite() && v > 0.0, "{field}: {v}");
        }
    }
}
