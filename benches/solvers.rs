//! Criterion benches: solves per second of the classical solvers, MDN training throughput and
//! single-target inference, and the redundant chains' hot paths (flow sampling and its training
//! step, the exact sampler) and the plant's sub-step. `cargo bench` runs them; `elbow bench`
//! prints the same figures fast.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use elbow::learned::{HeadKind, LearnedIk, TrainConfig, Trainer};
use elbow::{AnalyticSolver, BranchChoice, DlsSolver, ElbowMode, IkSolver, Pose, Region, SampleMode, TwoLinkArm};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;

fn solvers(c: &mut Criterion) {
    let arm = TwoLinkArm::default();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let targets = arm.sample_targets(&mut rng, 1024, SampleMode::UniformArea, Region::Annulus);
    let analytic = AnalyticSolver::new(arm, BranchChoice::NearestToSeed);
    let mut g = c.benchmark_group("solve");
    g.throughput(Throughput::Elements(1));
    let mut i = 0;
    g.bench_function("analytic", |b| {
        b.iter(|| {
            i = (i + 1) & 1023; // targets.len() == 1024
            black_box(analytic.solve(black_box(targets[i]), Pose::default()))
        })
    });
    let one = AnalyticSolver::new(arm, BranchChoice::Fixed(ElbowMode::Down));
    g.bench_function("analytic_one_branch", |b| {
        b.iter(|| {
            i = (i + 1) & 1023; // targets.len() == 1024
            black_box(one.solve(black_box(targets[i]), Pose::default()))
        })
    });
    let dls = DlsSolver::new(arm);
    let warm: Vec<Pose> = targets
        .iter()
        .map(|&t| {
            let q = elbow::solve_branches(&arm, t).down;
            q + Pose::new(0.02, -0.02)
        })
        .collect();
    g.bench_function("dls_warm_start", |b| {
        b.iter(|| {
            i = (i + 1) & 1023; // targets.len() == 1024
            black_box(dls.solve(black_box(targets[i]), warm[i]))
        })
    });
    g.finish();
}

fn learned(c: &mut Criterion) {
    let cfg = TrainConfig { head: HeadKind::Mdn, ..TrainConfig::default() };
    let mut g = c.benchmark_group("mdn");
    g.throughput(Throughput::Elements(cfg.batch as u64));
    let mut t = Trainer::new(cfg).unwrap();
    g.bench_function("train_step_batch256", |b| b.iter(|| black_box(t.step().unwrap())));
    let model = t.into_model();
    let target = elbow::Point2::new(1.0, 0.8);
    g.throughput(Throughput::Elements(1));
    g.bench_function("inference", |b| b.iter(|| black_box(model.predict(black_box(target), ElbowMode::Down))));
    g.finish();
}

/// One product of the 3-64-64-14 MDN's training step at batch 256, with the layouts and the
/// epilogue the step uses: `A(i, p)` at `a[i * a_i + p * a_k]`, `B(p, j)` at `b[p * b_k + j * b_j]`,
/// `C` column-major.
struct Shape {
    name: &'static str,
    m: usize,
    k: usize,
    n: usize,
    a: (usize, usize),
    b: (usize, usize),
    epilogue: &'static str,
}

const SHAPES: [Shape; 8] = [
    // Forward: C = act(W · X + b), W column-major, X column-major.
    Shape { name: "fwd_64x3x256", m: 64, k: 3, n: 256, a: (1, 64), b: (1, 3), epilogue: "tanh" },
    Shape { name: "fwd_64x64x256", m: 64, k: 64, n: 256, a: (1, 64), b: (1, 64), epilogue: "tanh" },
    Shape { name: "fwd_14x64x256", m: 14, k: 64, n: 256, a: (1, 14), b: (1, 64), epilogue: "identity" },
    // Input gradient: C = act'(A) ⊙ (Wᵀ · D), W read transposed.
    Shape { name: "dX_64x14x256", m: 64, k: 14, n: 256, a: (14, 1), b: (1, 14), epilogue: "tanh'" },
    Shape { name: "dX_64x64x256", m: 64, k: 64, n: 256, a: (64, 1), b: (1, 64), epilogue: "tanh'" },
    // Weight gradient: C = D · Xᵀ, X read transposed.
    Shape { name: "dW_14x256x64", m: 14, k: 256, n: 64, a: (1, 14), b: (64, 1), epilogue: "plain" },
    Shape { name: "dW_64x256x64", m: 64, k: 256, n: 64, a: (1, 64), b: (64, 1), epilogue: "plain" },
    Shape { name: "dW_64x256x3", m: 64, k: 256, n: 3, a: (1, 64), b: (3, 1), epilogue: "plain" },
];

/// The products of one training step on our kernels at every SIMD level the CPU has (with their
/// fused epilogues, and once more without at the widest level: `elbow-plain`) and on two crates,
/// which pick their own level (the widest; neither can be capped) and compute the bare product:
/// `matrixmultiply` (what nalgebra uses) and the `gemm` crate (faer's backend; AVX-512 through
/// its `x86-v4` feature). The crates are measured only with `--features compare-gemm` (see
/// Cargo.toml for why they are not dev-dependencies). Throughput is in FLOP/s; `docs/4-speed.md`
/// holds the ratios.
fn gemm_shapes(c: &mut Criterion) {
    use elbow::nn::Activation;
    use elbow::nn::kernels::{Epilogue, Gemm, gemm as elbow_gemm};
    use elbow::simd::{Level, at_level};
    let mut g = c.benchmark_group("gemm");
    g.warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    for s in &SHAPES {
        let (m, k, n) = (s.m, s.k, s.n);
        let (a_i, a_k) = s.a;
        let (b_k, b_j) = s.b;
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 104_729) % 1000) as f32 * 1e-3 - 0.5).collect();
        let bias: Vec<f32> = (0..m).map(|i| (i as f32 * 0.1).sin()).collect();
        let act: Vec<f32> = (0..m * n).map(|i| (i as f32 * 0.01).sin()).collect();
        let epilogue = match s.epilogue {
            "tanh" => Epilogue::BiasAct(&bias, Activation::Tanh),
            "identity" => Epilogue::BiasAct(&bias, Activation::Identity),
            "tanh'" => Epilogue::ActGrad(&act, Activation::Tanh),
            _ => Epilogue::Plain,
        };
        let mut out = vec![0f32; m * n];
        g.throughput(Throughput::Elements((2 * m * k * n) as u64));
        let op = Gemm { m, n, k, a: &a, a_i, a_k, b: &b, b_k, b_j, ldc: m, epilogue };
        for level in Level::ALL {
            if at_level(level, || ()).is_none() {
                println!("skipping gemm/{}/elbow-{}: this CPU lacks it", s.name, level.name());
                continue;
            }
            g.bench_function(format!("{}/elbow-{}", s.name, level.name()), |bch| {
                at_level(level, || bch.iter(|| elbow_gemm(&op, black_box(&mut out))));
            });
        }
        if !matches!(epilogue, Epilogue::Plain) {
            // The bare product at the widest level, to set against the crates' bare products.
            let plain = Gemm { epilogue: Epilogue::Plain, ..op };
            g.bench_function(format!("{}/elbow-plain", s.name), |bch| {
                bch.iter(|| elbow_gemm(&plain, black_box(&mut out)))
            });
        }
        #[cfg(feature = "compare-gemm")]
        crates(&mut g, s, &a, &b, &mut out);
    }
    g.finish();
}

/// The bare product of one shape on the two crates (`--features compare-gemm`).
#[cfg(feature = "compare-gemm")]
fn crates(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    s: &Shape,
    a: &[f32],
    b: &[f32],
    out: &mut [f32],
) {
    let (m, k, n) = (s.m, s.k, s.n);
    let (a_i, a_k) = s.a;
    let (b_k, b_j) = s.b;
    g.bench_function(format!("{}/matrixmultiply", s.name), |bch| {
        bch.iter(|| {
            // SAFETY: the strides address the m x k, k x n and m x n buffers above.
            unsafe {
                matrixmultiply::sgemm(
                    m,
                    k,
                    n,
                    1.0,
                    a.as_ptr(),
                    a_i as isize,
                    a_k as isize,
                    b.as_ptr(),
                    b_k as isize,
                    b_j as isize,
                    0.0,
                    out.as_mut_ptr(),
                    1,
                    m as isize,
                );
            }
            black_box(&mut *out);
        })
    });
    g.bench_function(format!("{}/gemm_crate", s.name), |bch| {
        bch.iter(|| {
            // SAFETY: as above; the destination is not read (read_dst false).
            unsafe {
                gemm::gemm(
                    m,
                    n,
                    k,
                    out.as_mut_ptr(),
                    m as isize,
                    1,
                    false,
                    a.as_ptr(),
                    a_k as isize,
                    a_i as isize,
                    b.as_ptr(),
                    b_j as isize,
                    b_k as isize,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
            black_box(&mut *out);
        })
    });
}

/// Batched inference of a 256 x 256 grid of targets (65,536) through the trained MDN net, and
/// the FLOP/s it reaches.
fn batched(c: &mut Criterion) {
    let cfg = TrainConfig { head: HeadKind::Mdn, steps: 10, ..TrainConfig::default() };
    let model = Trainer::new(cfg).unwrap().into_model();
    let net = &model.net;
    let n = 65_536;
    let inputs: Vec<f32> = (0..n * 3)
        .map(|i| match i % 3 {
            0 => ((i / 3) as f32 * 0.01).cos(),
            1 => ((i / 3) as f32 * 0.01).sin(),
            _ => (i / 3) as f32 / n as f32,
        })
        .collect();
    let mut outputs = vec![0f32; n * net.outputs()];
    let mut scratch = elbow::nn::BatchScratch::default();
    let mut g = c.benchmark_group("inference");
    g.throughput(Throughput::Elements((2 * net.macs_per_sample() * n) as u64));
    g.bench_function("forward_batch_65536_flops", |b| {
        b.iter(|| {
            net.forward_batch(black_box(&inputs), &mut outputs, &mut scratch);
            black_box(&outputs);
        })
    });
    g.finish();
}

/// The chains' hot paths on `rail3` with the chain experiment's defaults: 2,000 flow samples of
/// one target, the flow's forward and backward pass on a batch of 512, 500 exact posterior
/// samples at an effective sample size of 10,000, and a plant sub-step (two-link, rail3, so101).
fn chains(c: &mut Criterion) {
    use elbow::arm::ArmKind;
    use elbow::chain::nets::{ChainNet, NetConfig, NetKind};
    use elbow::chain::{ExactSampler, NetSet, SolveSettings};
    use elbow::lineup::SolverId;
    use elbow::nn::{Flow, FlowWork, Trainable};
    use rand::RngExt;
    let arm = ArmKind::Rail3.arm();
    let cfg = NetConfig { steps: 50, ..NetConfig::default() };
    let net = ChainNet::train(&arm, NetKind::Flow, &cfg, |_, _| true).unwrap();
    let mut nets = NetSet::default();
    nets.set(NetKind::Flow, Some(net));
    let settings = SolveSettings::default();
    let (target, mut rng, mut out) = (arm.demo_target(), ChaCha8Rng::seed_from_u64(3), Vec::new());
    let mut g = c.benchmark_group("chain");
    g.sample_size(20);
    g.throughput(Throughput::Elements(2000));
    g.bench_function("flow_sample_2000", |b| {
        b.iter(|| {
            let nets = nets.nets();
            elbow::chain::solve::solutions(&arm, nets, &settings, SolverId::Flow, target, 2000, &mut rng, &mut out)
                .unwrap();
            black_box(&out);
        })
    });
    let flow = Flow::new(cfg.flow_shape(arm.coords()), &mut rng);
    let (batch, d) = (cfg.batch, arm.coords());
    let y = nalgebra::DMatrix::from_fn(2, batch, |_, _| rng.random_range(-1.0..1.0f32));
    let x = nalgebra::DMatrix::from_fn(d, batch, |_, _| rng.random_range(-1.5..1.5f32));
    let mut work = FlowWork::new(&flow);
    g.throughput(Throughput::Elements(batch as u64));
    g.bench_function("flow_loss_and_grads_batch512", |b| b.iter(|| black_box(flow.loss_and_grads(&mut work, &y, &x))));
    let mut sampler = ExactSampler::new(&arm);
    sampler.ess_factor = settings.ess_factor;
    g.throughput(Throughput::Elements(1));
    g.bench_function("exact_sample_500_ess10000", |b| b.iter(|| black_box(sampler.sample(target, 500, &mut rng))));
    g.finish();
    let mut g = c.benchmark_group("plant");
    g.throughput(Throughput::Elements(1));
    let so101 = elbow::arm::ArmKind::So101.arm();
    for (name, chain) in [("substep_two_link", None), ("substep_rail3", Some(&arm)), ("substep_so101", Some(&so101))] {
        let mut plant = elbow::bench::timed_plant(chain);
        let goals: Vec<Vec<f64>> =
            (0..64).map(|_| (0..plant.dim()).map(|_| rng.random_range(-0.8..0.8)).collect()).collect();
        let mut tick = 0usize;
        // A new goal every 20 ms of plant time: the plant never rests (where a sub-step does
        // nothing).
        let every = (0.02 / elbow::plant::SUBSTEP).round() as usize;
        g.bench_function(name, |b| {
            b.iter(|| {
                if tick.is_multiple_of(every) {
                    plant.command(&goals[(tick / every) % 64]);
                }
                tick += 1;
                plant.step(elbow::plant::SUBSTEP);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, solvers, learned, gemm_shapes, batched, chains);
criterion_main!(benches);
