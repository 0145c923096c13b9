//! Learned heads: the averaging trap, the MDN's way out, the mode-conditioned and residual heads,
//! model files, and robustness to any input.

use elbow::analytic::solve_branches;
use elbow::learned::{
    AngleEncoding, HeadKind, LearnedIk, LearnedModel, LearnedSolver, TrainConfig, Trainer, evaluate, held_out_targets,
};
use elbow::{ElbowMode, IkSolver, Point2, Pose, Region, SolveStatus, TwoLinkArm};
use proptest::prelude::*;
use std::sync::OnceLock;

fn trained(head: HeadKind) -> &'static LearnedModel {
    static MODELS: OnceLock<Vec<LearnedModel>> = OnceLock::new();
    let models = MODELS.get_or_init(|| {
        HeadKind::ALL
            .iter()
            .map(|&head| {
                let mut t = Trainer::new(TrainConfig { head, steps: 4000, ..TrainConfig::default() }).unwrap();
                t.run(|_, _| {}).unwrap();
                t.into_model()
            })
            .collect()
    });
    models.iter().find(|m| m.kind == head).unwrap()
}

fn held_out() -> Vec<Point2> {
    held_out_targets(&TwoLinkArm::default(), Region::Annulus, 2000, 0)
}

#[test]
fn mse_learns_the_invalid_average() {
    let arm = TwoLinkArm::default();
    let mse = trained(HeadKind::Mse);
    let (mut to_avg, mut to_branch, mut miss) = (0.0, 0.0, 0.0);
    let targets = held_out();
    for &t in &targets {
        let pose = mse.predict(t, ElbowMode::Down).pose;
        let b = solve_branches(&arm, t);
        to_avg += pose.max_joint_distance(b.average());
        to_branch += pose.max_joint_distance(b.up).min(pose.max_joint_distance(b.down));
        miss += arm.miss(pose, t);
    }
    let n = targets.len() as f64;
    let (to_avg, to_branch, miss) = (to_avg / n, to_branch / n, miss / n);
    assert!(to_avg < to_branch / 2.0, "MSE output should sit near the average: {to_avg} vs {to_branch} rad");
    assert!(miss > 0.2, "its FK should miss badly, mean {miss} m");
    // The average itself is the straight arm, tip on the outer rim.
    let avg_tip = arm.tip(solve_branches(&arm, Point2::new(1.0, 0.8)).average());
    assert!((avg_tip.norm() - arm.reach()).abs() < 1e-9);
}

#[test]
fn mdn_meets_the_accuracy_target() {
    let arm = TwoLinkArm::default();
    let stats = evaluate(trained(HeadKind::Mdn), &held_out());
    assert!(stats.mean < 0.01 * arm.reach(), "MDN mean FK miss {} m, over 1% of reach", stats.mean);
    let mse = evaluate(trained(HeadKind::Mse), &held_out());
    assert!(stats.mean * 10.0 < mse.mean, "MDN {} vs MSE {}", stats.mean, mse.mean);
    let p = trained(HeadKind::Mdn).predict(Point2::new(1.0, 0.8), ElbowMode::Down);
    assert_eq!(p.candidates.len(), 2);
    let total: f32 = p.candidates.iter().map(|c| c.weight).sum();
    assert!((total - 1.0).abs() < 1e-4);
    assert!(p.candidates[0].weight >= p.candidates[1].weight);
}

#[test]
fn mode_conditioned_net_gives_each_mode_its_branch() {
    let arm = TwoLinkArm::default();
    let model = trained(HeadKind::Mode);
    let mut right_mode = 0;
    let targets = held_out();
    for &t in &targets {
        for mode in ElbowMode::BOTH {
            let pose = model.predict(t, mode).pose;
            right_mode += usize::from(ElbowMode::of(pose) == mode);
        }
    }
    assert!(right_mode as f64 > 0.97 * (2 * targets.len()) as f64, "{right_mode} of {}", 2 * targets.len());
    let stats = evaluate(model, &targets);
    assert!(stats.mean < 0.02 * arm.reach(), "mode net mean miss {}", stats.mean);
}

#[test]
fn residual_hybrid_corrects_the_gap_and_degrades_to_analytic() {
    let model = trained(HeadKind::Residual);
    let real = model.real.unwrap();
    let targets = held_out();
    let (mut with, mut without) = (0.0, 0.0);
    for &t in &targets {
        for mode in ElbowMode::BOTH {
            let on = model.predict_residual(t, mode, true);
            let off = model.predict_residual(t, mode, false);
            // Off: exactly the analytic answer on the nominal model.
            assert_eq!(off.pose, solve_branches(&model.arm, t).pose(mode));
            assert!(off.correction.is_none());
            with += real.miss(on.pose, t);
            without += real.miss(off.pose, t);
        }
    }
    assert!(with * 5.0 < without, "corrected {with} vs analytic {without}");
    // A rejected correction also returns the analytic answer exactly.
    let mut strict = model.clone();
    strict.max_correction = 0.0;
    let t = Point2::new(0.9, -0.7);
    let p = strict.predict_residual(t, ElbowMode::Up, true);
    assert_eq!(p.pose, solve_branches(&strict.arm, t).up);
    // Its solver passes the analytic solver's honesty through.
    let s = LearnedSolver::new(model).solve(Point2::new(5.0, 0.0), Pose::default());
    assert!(matches!(s.status, SolveStatus::Unreachable { .. }));
}

#[test]
fn models_save_load_and_refuse_bad_files() {
    let dir = std::env::temp_dir().join(format!("elbow-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = trained(HeadKind::Mdn);
    let path = dir.join("mdn.json");
    model.save(&path).unwrap();
    let back = LearnedModel::load(&path).unwrap();
    assert_eq!(&back, model);
    let t = Point2::new(-0.4, 1.1);
    assert_eq!(back.predict(t, ElbowMode::Up), model.predict(t, ElbowMode::Up));
    // The head is named by its key; a file from before, with the variant's spelling, loads.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"kind\":\"mdn\""), "{}", &text[..100]);
    let old = dir.join("old.json");
    std::fs::write(&old, text.replace("\"kind\":\"mdn\"", "\"kind\":\"Mdn\"")).unwrap();
    assert_eq!(&LearnedModel::load(&old).unwrap(), model);

    let corrupt = dir.join("corrupt.json");
    std::fs::write(&corrupt, "{\"format\": \"elbow-model\", \"version\": 1, \"kind\": ").unwrap();
    let err = LearnedModel::load(&corrupt).unwrap_err().to_string();
    assert!(err.contains("not a valid Elbow model"), "{err}");

    let mut mismatched = model.clone();
    mismatched.net.layers.pop();
    let bad = dir.join("mismatched.json");
    mismatched.save(&bad).unwrap();
    let err = LearnedModel::load(&bad).unwrap_err().to_string();
    assert!(err.contains("needs"), "{err}");

    let mut future: serde_json::Value = serde_json::from_str(&text).unwrap();
    future["version"] = 99.into();
    std::fs::write(&bad, future.to_string()).unwrap();
    assert!(LearnedModel::load(&bad).unwrap_err().to_string().contains("version 99"));

    let missing = LearnedModel::load(&dir.join("nope.json")).unwrap_err().to_string();
    assert!(missing.contains("nope.json"), "{missing}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn raw_angles_wrap_where_the_sector_avoids_it() {
    // With raw angles the shoulder wraps at +-pi somewhere in the full annulus; restricted to the
    // right half-plane (no wrap for unit links) the same net does much better.
    let arm = TwoLinkArm::default();
    let sector: Region = "sector:-80,80".parse().unwrap();
    let run = |region| {
        let cfg = TrainConfig {
            head: HeadKind::Mode,
            encoding: AngleEncoding::Raw,
            region,
            steps: 2500,
            ..TrainConfig::default()
        };
        let mut t = Trainer::new(cfg).unwrap();
        t.run(|_, _| {}).unwrap();
        evaluate(t.model(), &held_out_targets(&arm, region, 1000, 5)).mean
    };
    let (full, half) = (run(Region::Annulus), run(sector));
    assert!(half * 2.0 < full, "sector {half} vs full annulus {full}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn learned_heads_never_return_nan(x in proptest::num::f64::ANY, y in proptest::num::f64::ANY, seed_q in proptest::num::f64::ANY) {
        for head in HeadKind::ALL {
            let model = trained(head);
            let s = LearnedSolver::new(model).solve(Point2::new(x, y), Pose::new(seed_q, seed_q));
            prop_assert!(s.pose.is_finite(), "{head}: {s:?}");
            for c in model.predict(Point2::new(x, y), ElbowMode::Up).candidates {
                prop_assert!(c.pose.is_finite() && c.weight.is_finite());
            }
        }
    }
}

fn tiny(kind: HeadKind) -> LearnedModel {
    let cfg = TrainConfig { head: kind, steps: 1, data_size: 64, batch: 16, hidden: 4, depth: 1, ..Default::default() };
    Trainer::new(cfg).unwrap().into_model()
}

fn field_of(m: &LearnedModel) -> String {
    m.validate().unwrap_err().field
}

#[test]
fn validation_names_the_bad_field() {
    let good = tiny(HeadKind::Mdn);
    assert!(good.validate().is_ok());
    type Edit = fn(&mut LearnedModel);
    let cases: [(&str, Edit); 9] = [
        ("mdn.sigma_min", |m| m.mdn.as_mut().unwrap().sigma_min = -1.0),
        ("mdn.sigma_min", |m| m.mdn.as_mut().unwrap().sigma_min = 1e30),
        ("mdn.k", |m| m.mdn.as_mut().unwrap().k = usize::MAX / 5),
        ("mdn.d", |m| m.mdn.as_mut().unwrap().d = 9),
        ("net.layers[0].w", |m| m.net.layers[0].w[0] = f32::INFINITY),
        ("net.layers[1].b", |m| m.net.layers[1].b[0] = f32::NAN),
        ("net.layers", |m| m.net.layers.clear()),
        ("output_scale", |m| m.output_scale = -1.0),
        ("max_correction", |m| m.max_correction = f64::NAN),
    ];
    for (field, edit) in cases {
        let mut m = good.clone();
        edit(&mut m);
        assert_eq!(field_of(&m), field);
    }
    let mut r = tiny(HeadKind::Residual);
    r.real = None;
    assert_eq!(field_of(&r), "real");
}

#[test]
fn saves_are_atomic_and_loads_bounded() {
    let dir = std::env::temp_dir().join(format!("elbow-model-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.json");
    let m = tiny(HeadKind::Mse);
    m.save(&path).unwrap();
    assert_eq!(LearnedModel::load(&path).unwrap(), m);
    // A failed save (a directory in the way) changes nothing.
    assert!(m.save(&dir).is_err());
    assert_eq!(LearnedModel::load(&path).unwrap(), m);
    let mut bad = m.clone();
    bad.mdn = Some(elbow::nn::MdnNll { k: 2, d: 3, sigma_min: -1.0 });
    bad.kind = HeadKind::Mdn;
    bad.save(&path).unwrap();
    let e = LearnedModel::load(&path).unwrap_err();
    assert!(
        matches!(&e, elbow::learned::ModelError::Field { error, .. } if error.field == "solvers.mdn.mdn.sigma_min"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_caller_turns_a_learned_answer_into_the_same_solution() {
    use elbow::experiments::degradation::proposals::Proposals;
    use elbow::learned::PredictScratch;
    use elbow::{Lineup, SolverId, Table};
    let arm = TwoLinkArm::default();
    // Reachable targets, the base, beyond the rim and non-finite: every status the rule gives.
    let mut targets: Vec<Point2> =
        (0..40).map(|i| Point2::new(0.2 + 0.045 * i as f64, 0.3 - 0.02 * i as f64)).collect();
    targets.extend([Point2::new(5.0, 0.0), Point2::new(0.0, 0.0), Point2::new(f64::NAN, 1.0)]);
    let branches: Vec<_> = targets.iter().map(|&t| solve_branches(&arm, t)).collect();
    let mut statuses = std::collections::HashSet::new();
    for head in HeadKind::ALL {
        let cfg = TrainConfig { head, steps: 30, data_size: 256, hidden: 8, depth: 1, ..TrainConfig::default() };
        let mut t = Trainer::new(cfg).unwrap();
        t.run(|_, _| {}).unwrap();
        let trained = t.into_model();
        // The same head with every correction refused: the analytic answer, unchanged.
        let strict = LearnedModel { max_correction: 0.0, ..trained.clone() };
        for model in [&trained, &strict] {
            let mut models = Table::default();
            models[head] = Some(model);
            let lineup = Lineup::new(arm, models);
            let id = SolverId::Learned(head);
            let proposals = Proposals::new(&lineup, &targets);
            let atlas =
                elbow::atlas::answers(&lineup, id, &targets, &branches, &mut PredictScratch::default()).unwrap();
            for (i, &t) in targets.iter().enumerate() {
                for mode in ElbowMode::BOTH {
                    // The app and the CLI's line-up, from an arm on that branch (which the
                    // branch pose itself is not for targets on or beyond the rim: straight).
                    let single = lineup.solve(id, t, Pose::new(0.0, mode.sign())).unwrap();
                    let mut others = vec![("proposals", proposals.get(head, i, mode).unwrap())];
                    if mode == ElbowMode::Down {
                        others.push(("atlas", atlas[i].0));
                    }
                    for (caller, s) in others {
                        assert_eq!(s.status, single.status, "{caller}, {head}, {t:?}, {mode:?}");
                        assert!(
                            s.pose.max_joint_distance(single.pose) < 1e-4,
                            "{caller}, {head}, {t:?}, {s:?} vs {single:?}"
                        );
                        assert_eq!((s.residual, s.iterations), (single.residual, single.iterations), "{caller}");
                    }
                    statuses.insert(single.status.label());
                }
            }
        }
    }
    assert_eq!(statuses.len(), 3, "{statuses:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// A model file with finite extremes (#39): a trained head with one layer's weights scaled up
    /// by any power of ten is either refused when loaded, naming its network, or answers every
    /// target, near or far, with finite poses and weights.
    #[test]
    fn a_scaled_network_is_refused_or_answers_finitely(
        exp in 0i32..40,
        layer in 0usize..4,
        x in -1e7..1e7f64,
        y in -1e7..1e7f64,
    ) {
        for head in HeadKind::ALL {
            let mut m = trained(head).clone();
            let l = layer % m.net.layers.len();
            let scale = 10f32.powi(exp);
            m.net.layers[l].w.iter_mut().for_each(|w| *w *= scale);
            match m.validate() {
                Err(e) => prop_assert!(e.field.starts_with("net"), "{head} x1e{exp} at layer {l}: {e:?}"),
                Ok(()) => {
                    // What loading promises: no value the net computes passes the bound.
                    let mut input = [0f32; 4];
                    m.features(Point2::new(x, y), ElbowMode::Up, &mut input);
                    let out = m.net.forward_one(&input[..m.input_dims()]);
                    let largest = out.iter().fold(0f64, |a, v| a.max(f64::from(v.abs())));
                    prop_assert!(largest <= elbow::learned::model::MAX_ACTIVATION, "{head} x1e{exp} at layer {l}: {largest:e}");
                    let p = m.predict(Point2::new(x, y), ElbowMode::Up);
                    prop_assert!(p.pose.is_finite(), "{head} x1e{exp} at layer {l}: {p:?}");
                    for c in &p.candidates {
                        prop_assert!(c.pose.is_finite() && c.weight.is_finite(), "{head} x1e{exp}: {c:?}");
                        // Not the stand-in `predict` puts where the net's answer was not finite.
                        prop_assert!(c.weight != 0.0 || c.pose != Pose::default(), "{head} x1e{exp} at layer {l}: {c:?}");
                    }
                }
            }
        }
    }
}
