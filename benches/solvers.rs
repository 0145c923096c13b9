//! Criterion benches: solves per second of the classical solvers, MDN training throughput and
//! single-target inference. `cargo bench` runs them; `elbow bench` prints the same figures fast.

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
    g.bench_function("train_step_batch256", |b| b.iter(|| black_box(t.step())));
    let model = t.into_model();
    let target = elbow::Point2::new(1.0, 0.8);
    g.throughput(Throughput::Elements(1));
    g.bench_function("inference", |b| b.iter(|| black_box(model.predict(black_box(target), ElbowMode::Down))));
    g.finish();
}

/// One product of the 3-64-64-14 training step: `C (m x n) = op(A) · op(B)`, column-major.
struct Shape {
    name: &'static str,
    m: usize,
    k: usize,
    n: usize,
    /// A is stored transposed (`k x m`), as `W` in the input gradient `Wᵀ · D`.
    ta: bool,
    /// B is stored transposed (`n x k`), as the input in the weight gradient `D · Xᵀ`.
    tb: bool,
}

const SHAPES: [Shape; 8] = [
    Shape { name: "fwd_64x64x256", m: 64, k: 64, n: 256, ta: false, tb: false },
    Shape { name: "fwd_64x3x256", m: 64, k: 3, n: 256, ta: false, tb: false },
    Shape { name: "fwd_14x64x256", m: 14, k: 64, n: 256, ta: false, tb: false },
    Shape { name: "dW_64x256x64", m: 64, k: 256, n: 64, ta: false, tb: true },
    Shape { name: "dW_14x256x64", m: 14, k: 256, n: 64, ta: false, tb: true },
    Shape { name: "dW_64x256x3", m: 64, k: 256, n: 3, ta: false, tb: true },
    Shape { name: "dX_64x64x256", m: 64, k: 64, n: 256, ta: true, tb: false },
    Shape { name: "dX_64x14x256", m: 64, k: 14, n: 256, ta: true, tb: false },
];

/// The GEMM shapes of one training step on three implementations: `matrixmultiply` (what
/// nalgebra uses), the `gemm` crate (faer's backend) and Elbow's own kernels (which transpose
/// `Wᵀ` into a buffer first, as the training step does). Throughput is in FLOP/s.
fn gemm_shapes(c: &mut Criterion) {
    use elbow::nn::kernels::{Epilogue, Gemm, gemm as elbow_gemm};
    let mut g = c.benchmark_group("gemm");
    for s in &SHAPES {
        let (m, k, n) = (s.m, s.k, s.n);
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 104_729) % 1000) as f32 * 1e-3 - 0.5).collect();
        let mut out = vec![0f32; m * n];
        // Strides (row, column) of op(A) and op(B) over their column-major storage.
        let (rsa, csa) = if s.ta { (k as isize, 1) } else { (1, m as isize) };
        let (rsb, csb) = if s.tb { (n as isize, 1) } else { (1, k as isize) };
        g.throughput(Throughput::Elements((2 * m * k * n) as u64));
        g.bench_function(format!("{}/matrixmultiply", s.name), |bch| {
            bch.iter(|| {
                // SAFETY: the strides address m x k, k x n and m x n column-major buffers.
                unsafe {
                    matrixmultiply::sgemm(
                        m,
                        k,
                        n,
                        1.0,
                        a.as_ptr(),
                        rsa,
                        csa,
                        b.as_ptr(),
                        rsb,
                        csb,
                        0.0,
                        out.as_mut_ptr(),
                        1,
                        m as isize,
                    );
                }
                black_box(&mut out);
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
                        csa,
                        rsa,
                        b.as_ptr(),
                        csb,
                        rsb,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        gemm::Parallelism::None,
                    );
                }
                black_box(&mut out);
            })
        });
        let mut at = vec![0f32; m * k];
        g.bench_function(format!("{}/elbow", s.name), |bch| {
            bch.iter(|| {
                let a_op: &[f32] = if s.ta {
                    for i in 0..m {
                        for p in 0..k {
                            at[i + p * m] = a[p + i * k];
                        }
                    }
                    &at
                } else {
                    &a
                };
                let (b_k, b_j) = (rsb as usize, csb as usize);
                let op = Gemm { m, n, k, a: a_op, lda: m, b: &b, b_k, b_j, ldc: m, epilogue: Epilogue::Plain };
                elbow_gemm(&op, &mut out);
                black_box(&mut out);
            })
        });
    }
    g.finish();
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

criterion_group!(benches, solvers, learned, gemm_shapes, batched);
criterion_main!(benches);
