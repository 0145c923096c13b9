//! The chains' default training recipes are stable, not lucky: every net of `elbow experiment
//! chain` (MSE, MDN and the flow, their default settings) trains on rail3, 3r and so101 at seeds
//! 0 to 4 without one divergence roll-back, at the SIMD level this process runs
//! (`ELBOW_SIMD`). Minutes of training, so it is ignored by `cargo test` and run by CI in its own
//! phase at each level (`.ci/run`): `cargo test --release --test chain_recipes -- --ignored`.

use elbow::arm::ArmKind;
use elbow::chain::nets::{ChainNet, NetConfig, NetKind};
use rayon::prelude::*;

#[test]
#[ignore = "minutes of training: CI runs it in its own phase at each SIMD level"]
fn the_default_chain_recipes_train_without_a_rollback() {
    let runs: Vec<(ArmKind, u64, NetKind)> = [ArmKind::Rail3, ArmKind::ThreeR, ArmKind::So101]
        .into_iter()
        .flat_map(|arm| (0..5).flat_map(move |seed| NetKind::ALL.map(|kind| (arm, seed, kind))))
        .collect();
    let failures: Vec<String> = runs
        .par_iter()
        .filter_map(|&(arm, seed, kind)| {
            let cfg = NetConfig { seed, ..NetConfig::default() };
            match ChainNet::train_watched(&arm.arm(), kind, &cfg, |_, _, _| true) {
                Ok((_, rollbacks)) if rollbacks.is_empty() => None,
                Ok((_, rollbacks)) => Some(format!("{arm:?} seed {seed} {kind:?}: rolled back {rollbacks:?}")),
                Err(e) => Some(format!("{arm:?} seed {seed} {kind:?}: {e}")),
            }
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
