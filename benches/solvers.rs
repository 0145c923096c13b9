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

criterion_group!(benches, solvers, learned);
criterion_main!(benches);
