//! Tests of the degradation run on a chain ([`super::chain`]): the line-up and its cast of
//! claims, the catalog's bit-for-bit replay, the defaults scaled to the arm, and the two-link
//! settings refused there.

use super::chain::{beyond, checks_after_move, from_base, pipelines, target_sets};
use super::*;
use crate::arm::{Arm, ArmKind};
use crate::lineup::{Pipeline, SolverId};

/// A small run on `arm`: tiny nets, a few targets, one level of a few channels.
fn small(arm: &Arm) -> DegradationConfig {
    let levels = ChannelLevels::baseline()
        .with(Channel::Actuator, vec![0.0, 0.05])
        .with(Channel::Mismatch, vec![0.0, 2.0])
        .with(Channel::Flex, vec![0.0, 0.05]);
    DegradationConfig {
        targets: 12,
        ood_fraction: 0.5,
        train_steps: 150,
        protocol: Protocol::Plant,
        levels,
        ..DegradationConfig::on(arm)
    }
}

#[test]
fn a_chain_run_measures_its_line_up_and_judges_it_by_the_chains_cast() {
    let arm = ArmKind::Rail3.arm();
    let r = degradation(&small(&arm)).unwrap();
    assert_eq!(r.pipelines(), pipelines());
    let cell = |pipe: Pipeline, split: Split| r.cell(Protocol::Plant, pipe, Channel::Encoder, 0.0, split).unwrap();
    let beyond = Split::Ood(OodKind::Beyond);
    // Beyond the reach DLS, the hybrid and every enveloped net say so; the bare nets never do.
    for pipe in pipelines() {
        let c = cell(pipe, beyond);
        assert_eq!(c.missed, 1.0, "{pipe}: nothing beyond the reach is reached");
        let expected = if checks_after_move(pipe) { 1.0 } else { 0.0 };
        assert_eq!(c.reported, expected, "{pipe}");
    }
    // On the perfect arm DLS and the hybrid land on the held-out targets.
    for pipe in [Pipeline::plain(SolverId::Iterative), Pipeline::plain(SolverId::Hybrid)] {
        assert!(cell(pipe, Split::In).error.p95 < 1e-3, "{pipe}: {:?}", cell(pipe, Split::In).error);
    }
    // The envelope logs a decision per target.
    let env = cell(Pipeline::enveloped(SolverId::Flow), Split::In).envelope.unwrap();
    assert_eq!(env.accepted + env.interventions(), 12);
    let keys: Vec<&str> = r.claims.iter().map(|c| c.key).collect();
    assert_eq!(
        keys,
        [
            "dls-graceful",
            "classical-reports",
            "classical-reports-on-camera",
            "learned-degrades-faster",
            "learned-confident",
            "envelope-reports",
            "hybrid-worst-case-classical",
            "unseen-by-encoders-silent"
        ]
    );
    let confident = r.claims.iter().find(|c| c.key == "learned-confident").unwrap();
    assert!(confident.statement.contains("MSE, MDN, flow"), "{}", confident.statement);
}

#[test]
fn a_chains_failure_catalog_replays_bit_for_bit() {
    let arm = ArmKind::ThreeR.arm();
    let cfg = DegradationConfig { targets: 6, ..small(&arm) };
    let mut records = Vec::new();
    let mut sink = |r: &FailureRecord| records.push(r.clone());
    let catalog = CatalogSink { cap: 1, sink: &mut sink };
    let report = degradation_catalogued(&cfg, Vec::new(), &|_| {}, Some(catalog)).unwrap();
    assert!(!report.cells.is_empty());
    assert!(records.iter().all(|r| r.config.chain.as_ref() == Some(&arm)));
    // One record of a bare net (its net trained alone for the replay), one of the hybrid
    // (its seeds' net) and one of an enveloped net under mismatch.
    let pick = |f: &dyn Fn(&FailureRecord) -> bool| records.iter().find(|r| f(r)).cloned().unwrap();
    let chosen = [
        pick(&|r| r.pipeline == Pipeline::plain(SolverId::Flow)),
        pick(&|r| r.pipeline.solver == SolverId::Hybrid),
        pick(&|r| r.pipeline.envelope && r.setting.channel == Some(Channel::Mismatch)),
    ];
    for r in &chosen {
        let out = replay(r).unwrap();
        assert!(out.identical(), "{}: {:?}", r.pipeline, out.differences);
    }
    // The traced replay keeps every move and the last moves' sub-steps, each with every joint of
    // the real chain: the record's move ends where the real tip ended, bit for bit.
    let (out, trace) = replay_traced(&chosen[0], 2).unwrap();
    assert!(out.identical(), "{:?}", out.differences);
    assert_eq!(trace.moves.len(), chosen[0].index + 1);
    let last = trace.moves.last().unwrap();
    let end = last.ticks.last().expect("the record's move keeps its sub-steps");
    assert_eq!((end.tip() - chosen[0].target).norm().to_bits(), chosen[0].happened.error.to_bits());
    assert_eq!(end.points.len(), arm.chain.points(&arm.prior_center()).len(), "base, every joint, tip");
    assert_eq!((end.goal.len(), last.setpoint.len()), (arm.coords(), arm.coords()));
    // A result edited in the record is found, bit for bit.
    let mut edited = chosen[0].clone();
    edited.happened.error = f64::from_bits(edited.happened.error.to_bits() + 1);
    let out = replay(&edited).unwrap();
    assert_eq!(out.differences.len(), 1, "{:?}", out.differences);
}

#[test]
fn the_so101_run_is_scaled_to_its_size() {
    let arm = ArmKind::So101.arm();
    let cfg = DegradationConfig::on(&arm);
    assert_eq!(cfg.tolerance, 0.01, "2.5 % of its 0.411 m reach");
    assert_eq!(cfg.levels.of(Channel::Target), [0.0, 0.0021, 0.0041, 0.01]);
    assert_eq!(cfg.levels.of(Channel::Encoder), ChannelLevels::default().of(Channel::Encoder));
    assert_eq!(cfg.envelope.max_fk_miss, 0.01 * arm.chain.reach());
    cfg.validate().unwrap();
    // Held-out targets are reached by their own draw; beyond ones by nothing.
    let targets = target_sets(&arm, cfg.targets, cfg.ood_targets(), &cfg.ood, cfg.seed);
    assert_eq!(
        targets.iter().map(|(s, t)| (*s, t.len())).collect::<Vec<_>>(),
        [(Split::In, 200), (Split::Ood(OodKind::Beyond), 40)]
    );
    for p in &targets[1].1 {
        assert!(from_base(&arm, *p) >= 1.05 * arm.chain.reach(), "{p:?}");
    }
    let rail = ArmKind::Rail3.arm();
    for p in beyond(&rail, 200, 3) {
        let d = from_base(&rail, p) / rail.chain.reach();
        assert!((1.05..=1.5).contains(&d), "{p:?} at {d} reaches");
    }
}

#[test]
fn a_chain_configuration_is_json_without_null_and_reads_back() {
    for arm in [ArmKind::Rail3.arm(), Arm::from_lengths(&[1.0, 0.8, 0.6]).unwrap()] {
        let cfg = DegradationConfig::on(&arm);
        let json = serde_json::to_string(&cfg).unwrap();
        assert!(!json.contains("null"), "{json}");
        let back: DegradationConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, cfg);
    }
}

#[test]
fn two_link_settings_that_do_nothing_on_a_chain_are_refused_by_name() {
    let arm = ArmKind::ThreeR.arm();
    let cfg = DegradationConfig::on(&arm);
    let refused = |c: DegradationConfig| match c.validate() {
        Err(ConfigError::NotOnChain { what, .. }) => what,
        other => panic!("{other:?}"),
    };
    let sector = crate::kinematics::Region::Sector { from: 0.0, to: 1.0 };
    assert_eq!(refused(DegradationConfig { region: sector, ..cfg.clone() }), "a training region");
    let heavy = crate::plant::Body { link_mass: [1.0, 1.0], ..cfg.body };
    assert_eq!(refused(DegradationConfig { body: heavy, ..cfg.clone() }), "link masses");
    let vertical = crate::plant::Body { gravity: true, ..cfg.body };
    assert_eq!(refused(DegradationConfig { body: vertical, ..cfg.clone() }), "the gravity switch");
    let analytic = crate::envelope::EnvelopeConfig { fallback: crate::envelope::Fallback::Analytic, ..cfg.envelope };
    assert_eq!(refused(DegradationConfig { envelope: analytic, ..cfg.clone() }), "the analytic fallback");
    // A mismatch level whose real chain cannot exist is refused with the largest that can.
    let levels = cfg.levels.clone().with(Channel::Mismatch, vec![0.0, 30.0]);
    let e = DegradationConfig { levels, ..cfg }.validate().unwrap_err().to_string();
    assert!(e.contains("--mismatch-scale 30") && e.contains("largest level is 24.98"), "{e}");
}

#[test]
fn a_chain_run_on_given_nets_is_the_run_that_trained_them() {
    let arm = ArmKind::Rail3.arm();
    let cfg =
        DegradationConfig { levels: ChannelLevels::baseline().with(Channel::Encoder, vec![0.0, 0.01]), ..small(&arm) };
    let trained = degradation(&cfg).unwrap();
    let (nets, _) = super::chain::train(&arm, cfg.train_steps, cfg.seed).unwrap();
    let given = degradation_with_nets(&cfg, &nets.nets).unwrap();
    let json = |r: &DegradationReport| serde_json::to_string(&(&r.cells, &r.claims)).unwrap();
    assert!(json(&given) == json(&trained), "the same nets give the same cells and verdicts");
    let (other, _) = super::chain::train(&arm, cfg.train_steps, cfg.seed + 1).unwrap();
    let on_other = degradation_with_nets(&cfg, &other.nets).unwrap();
    assert!(json(&on_other) != json(&trained), "the run is on the nets it is given");
    // A net missing, or nets for a two-link run, are refused in one sentence.
    let mut partial = nets.nets.clone();
    partial.set(crate::chain::nets::NetKind::Flow, None);
    let e = degradation_with_nets(&cfg, &partial).unwrap_err().to_string();
    assert!(e.contains("waiting for the flow net"), "{e}");
    let e = degradation_with_nets(&DegradationConfig::default(), &nets.nets).unwrap_err().to_string();
    assert!(e.contains("two-link run takes the heads' model files"), "{e}");
}
