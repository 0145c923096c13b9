//! The simulated real arm, one for every arm in force: it takes this frame's command, steps by
//! the frame time, and is measured through noisy encoders; the rolling tip-error history is kept
//! for the plot. On an arm with a closed form, a command that changes elbow branch is logged.

use super::AppSet;
use super::state::arm::{HISTORY_SECS, Lab, MAX_FRAME_SECS, PlantSettings, Sim, TipHistory};
use super::state::solve::{BranchEvent, BranchLog, Command, Solutions};
use super::state::view::Target;
use bevy::prelude::*;
use elbow::Pose;
use elbow::learned::branch::is_branch_change;

/// Registers the systems that apply settings and drive the plant.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(
        Update,
        (apply_settings.run_if(resource_changed::<PlantSettings>), drive).chain().in_set(AppSet::Plant),
    );
}

/// Pushes changed settings into the plant: its channels, and the real arm they describe (the
/// mismatch and link masses).
fn apply_settings(lab: Res<Lab>, settings: Res<PlantSettings>, mut sim: ResMut<Sim>) {
    let (real, cfg) = settings.plant(lab.arm());
    sim.plant.set_config(cfg);
    sim.plant.set_real(real);
}

/// Why the command changed elbow branch when the driver picked no change (a solver without a
/// branch rule, or the envelope sending its fallback in place of the driver's answer).
pub(crate) fn unpicked_change(solutions: &Solutions) -> String {
    match solutions.intervention {
        Some(reason) => format!(
            "the safety envelope rejected the driver's answer ({}) and sent its fallback, which is on the other elbow branch",
            reason.label()
        ),
        None => format!("the driver ({}) answered on the other elbow branch", solutions.driver_name),
    }
}

/// Commands this frame's command, steps the plant by the frame time, reads the encoders and
/// records the tip error.
#[allow(clippy::too_many_arguments)]
pub(crate) fn drive(
    time: Res<Time>,
    lab: Res<Lab>,
    target: Res<Target>,
    command: Res<Command>,
    solutions: Res<Solutions>,
    mut sim: ResMut<Sim>,
    mut history: ResMut<TipHistory>,
    mut branches: ResMut<BranchLog>,
) {
    if let Some(x) = command.0.as_deref().filter(|x| x.len() == sim.plant.dim()) {
        if lab.closed_form().is_some() {
            let pose = Pose::of(x);
            if branches.last_command.is_some_and(|last| is_branch_change(last, pose)) {
                let why = solutions.branch_change.map_or_else(|| unpicked_change(&solutions), |c| c.describe());
                branches.count += 1;
                branches.latest = Some(BranchEvent { at: target.pos, when: time.elapsed_secs_f64(), why });
            }
            branches.last_command = Some(pose);
        }
        sim.plant.command(x);
    }
    let dt = time.delta_secs_f64().clamp(0.0, MAX_FRAME_SECS);
    sim.plant.step(dt);
    let read = sim.plant.measure();
    let d = sim.plant.dim();
    let read = if read[..d].iter().all(|v| v.is_finite()) { read } else { sim.plant.link() };
    sim.read_encoders(&read);
    let now = time.elapsed_secs_f64();
    let error = (sim.plant.tip() - target.pos).norm();
    if error.is_finite() {
        history.0.push_back([now, error]);
    }
    while history.0.front().is_some_and(|p| p[0] < now - HISTORY_SECS) {
        history.0.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A branch change the driver did not pick names who made it: the envelope's fallback, or
    /// the driver's own answer.
    #[test]
    fn an_unpicked_branch_change_names_who_made_it() {
        let mut s = Solutions { driver_name: "envelope(MDN)".into(), ..Solutions::default() };
        s.intervention = Some(elbow::envelope::Reason::JointLimit);
        let why = unpicked_change(&s);
        assert!(why.contains("safety envelope rejected") && why.contains("joint limit"), "{why}");
        s.intervention = None;
        assert_eq!(unpicked_change(&s), "the driver (envelope(MDN)) answered on the other elbow branch");
    }
}
