//! Drawing the chain lab in world units (metres): the outline of the reachable region, the rail,
//! the fans (the MDN's and the exact posterior's, faint, one colour each), the few DLS and
//! hybrid answers of this frame, the squared-error answer as one solid arm with a line to where
//! its tip lands, the simulated chain as a wide band, and the target.

use super::super::AppSet;
use super::super::format::{PLANT_COLOR, TARGET_COLOR, solver_color};
use super::super::state::arm::{Lab, chain_lab};
use super::super::state::view::Target;
use super::state::{ChainAnswers, ChainPlant, ChainView};
use bevy::prelude::*;
use elbow::Point2;
use elbow::arm::Arm;
use elbow::chain::Chain;
use elbow::learned::HeadKind;
use elbow::lineup::SolverId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Registers the chain's gizmo groups and its drawing system.
pub(crate) fn plugin(app: &mut App) {
    let config = |width: f32| GizmoConfig {
        line: GizmoLineConfig { width, joints: GizmoLineJoint::Round(6), ..default() },
        ..default()
    };
    app.insert_gizmo_config(ChainPlantGizmos, config(12.0))
        .insert_gizmo_config(FanGizmos, config(1.5))
        .insert_gizmo_config(ArmGizmos, config(4.0))
        .add_systems(Update, draw.in_set(AppSet::Draw).run_if(chain_lab).run_if(super::super::replay::not_replaying));
}

/// The simulated chain.
#[derive(Default, Reflect, GizmoConfigGroup)]
struct ChainPlantGizmos;

/// Thin lines: fans, the outline, the miss line.
#[derive(Default, Reflect, GizmoConfigGroup)]
struct FanGizmos;

/// Solid answers: the squared-error arm, DLS and hybrid answers, the target.
#[derive(Default, Reflect, GizmoConfigGroup)]
struct ArmGizmos;

/// World point of a core point.
fn v(p: Point2) -> Vec2 {
    Vec2::new(p.x as f32, p.y as f32)
}

/// Draws the chain in pose `x` as a polyline from the base to the tip, with the tip marked.
fn polyline<C: GizmoConfigGroup>(g: &mut Gizmos<C>, chain: &Chain, x: &[f64], color: Color, tip: f32) {
    if x.len() != chain.coords() || !x.iter().all(|v| v.is_finite()) {
        return;
    }
    let points: Vec<Vec2> = chain.points(x).into_iter().map(v).collect();
    g.linestrip_2d(points.iter().copied(), color);
    if tip > 0.0
        && let Some(&p) = points.last()
    {
        g.circle_2d(p, tip, color);
    }
}

/// Cells per side of the grid the reachable region is outlined on.
const OUTLINE_CELLS: usize = 64;
/// Poses drawn to find the reachable cells.
const OUTLINE_POSES: usize = 150_000;

/// The outline of the region the tip can reach, as segments between reachable and unreachable
/// cells of a grid over `±extent`. The poses are drawn within the ranges, each joint after the
/// first held straight (30 %) or at a bound (20 %) now and then: the rims of the region are
/// reached by stretched or folded arms, which uniform draws almost never give.
fn outline(arm: &Arm) -> Vec<[Vec2; 2]> {
    let chain = &arm.chain;
    let extent = 1.02 * arm.extent();
    let n = OUTLINE_CELLS;
    let cell = 2.0 * extent / n as f64;
    let mut hit = vec![false; n * n];
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut x = vec![0.0; chain.coords()];
    for _ in 0..OUTLINE_POSES {
        for (i, v) in x.iter_mut().enumerate() {
            let (lo, hi) = chain.range(i);
            let u: f64 = rand::RngExt::random(&mut rng);
            *v = if i <= chain.first_joint() || u >= 0.5 {
                rand::RngExt::random_range(&mut rng, lo..=hi)
            } else if u < 0.3 {
                0.0f64.clamp(lo, hi)
            } else if u < 0.4 {
                lo
            } else {
                hi
            };
        }
        let p = chain.tip(&x);
        let (i, j) = (((p.x + extent) / cell) as usize, ((p.y + extent) / cell) as usize);
        if i < n && j < n {
            hit[j * n + i] = true;
        }
    }
    let filled = |i: isize, j: isize| {
        i >= 0 && j >= 0 && (i as usize) < n && (j as usize) < n && hit[j as usize * n + i as usize]
    };
    // Cell centres in world units.
    let at = |i: f64, j: f64| Vec2::new(((i + 0.5) * cell - extent) as f32, ((j + 0.5) * cell - extent) as f32);
    let mut out = Vec::new();
    for j in -1..n as isize {
        for i in -1..n as isize {
            let corners = [filled(i, j), filled(i + 1, j), filled(i + 1, j + 1), filled(i, j + 1)];
            for [a, b] in marching_square(corners) {
                let (i, j) = (i as f64, j as f64);
                out.push([at(i + a[0], j + a[1]), at(i + b[0], j + b[1])]);
            }
        }
    }
    out
}

/// The outline's segments in one square of four cell centres, `corners` counter-clockwise from
/// the lower left, as offsets from that corner between the midpoints of the square's edges
/// (marching squares): the rim runs diagonally across a corner cell instead of in steps.
fn marching_square(corners: [bool; 4]) -> Vec<[[f64; 2]; 2]> {
    const BOTTOM: [f64; 2] = [0.5, 0.0];
    const RIGHT: [f64; 2] = [1.0, 0.5];
    const TOP: [f64; 2] = [0.5, 1.0];
    const LEFT: [f64; 2] = [0.0, 0.5];
    let case = corners.iter().enumerate().fold(0, |c, (k, &on)| c | (usize::from(on) << k));
    match case {
        0 | 15 => vec![],
        1 | 14 => vec![[LEFT, BOTTOM]],
        2 | 13 => vec![[BOTTOM, RIGHT]],
        3 | 12 => vec![[LEFT, RIGHT]],
        4 | 11 => vec![[RIGHT, TOP]],
        6 | 9 => vec![[BOTTOM, TOP]],
        7 | 8 => vec![[LEFT, TOP]],
        5 => vec![[LEFT, TOP], [BOTTOM, RIGHT]],
        _ => vec![[LEFT, BOTTOM], [RIGHT, TOP]],
    }
}

/// Arms of each fan drawn as lines (the rest as joint dots only).
const FAN_SKETCH: usize = 24;

/// Half-size of a fan's joint marks, metres.
const FAN_DOT: f32 = 0.012;

/// How opaque one arm of a fan is: faint enough that 200 overlap into a density.
fn fan_alpha(n: usize) -> f32 {
    (6.0 / n.max(1) as f32).clamp(0.04, 0.5)
}

/// The drawing bundle of gizmo groups.
#[derive(bevy::ecs::system::SystemParam)]
struct Pens<'w, 's> {
    plant: Gizmos<'w, 's, ChainPlantGizmos>,
    fan: Gizmos<'w, 's, FanGizmos>,
    arm: Gizmos<'w, 's, ArmGizmos>,
}

/// Draws one frame of the chain lab.
fn draw(
    mut pens: Pens,
    lab: Res<Lab>,
    target: Res<Target>,
    view: Res<ChainView>,
    answers: Res<ChainAnswers>,
    plant: Res<ChainPlant>,
    mut outlined: Local<Option<(String, Vec<[Vec2; 2]>)>>,
) {
    let Some(arm) = lab.chain() else { return };
    let chain = &arm.chain;
    let d = arm.coords();
    if outlined.as_ref().is_none_or(|(name, _)| *name != arm.name) {
        *outlined = Some((arm.name.clone(), outline(arm)));
    }
    let rim = Color::srgb(0.42, 0.45, 0.52);
    if let Some((_, segments)) = outlined.as_ref() {
        for [a, b] in segments {
            pens.fan.line_2d(*a, *b, rim);
        }
    }
    if let Some(t) = chain.rail() {
        let rail = Color::srgb(0.55, 0.57, 0.65);
        pens.arm.line_2d(Vec2::new(0.0, t.min as f32), Vec2::new(0.0, t.max as f32), rail.with_alpha(0.6));
    }

    // Fans first: a faint sketch of a few arms each, and a mark at every joint of every arm,
    // so fans that overlap stay apart by colour (marks do not blend into one tint as lines do).
    // Then the few iterative answers, then the squared-error arm on top.
    for (m, set) in [
        (SolverId::Exact, &answers.exact.x),
        (SolverId::Learned(HeadKind::Mdn), &answers.mdn),
        (SolverId::Flow, &answers.flow),
    ] {
        if view.shows(m) {
            let arms = set.len() / d.max(1);
            let color = solver_color(m);
            let every = (arms / FAN_SKETCH).max(1);
            for x in set.chunks_exact(d).step_by(every) {
                polyline(&mut pens.fan, chain, x, color.with_alpha(fan_alpha(arms.min(FAN_SKETCH))), 0.0);
            }
            for x in set.chunks_exact(d).filter(|x| x.iter().all(|v| v.is_finite())) {
                for p in chain.points(x).iter().skip(1).map(|p| v(*p)) {
                    // A small cross: two segments, cheap enough for thousands a frame.
                    let c = color.with_alpha(0.75);
                    pens.fan.line_2d(p - Vec2::X * FAN_DOT, p + Vec2::X * FAN_DOT, c);
                    pens.fan.line_2d(p - Vec2::Y * FAN_DOT, p + Vec2::Y * FAN_DOT, c);
                }
            }
        }
    }
    for (m, set) in [(SolverId::Iterative, &answers.dls), (SolverId::Hybrid, &answers.hybrid)] {
        if view.shows(m) {
            for x in set.chunks_exact(d) {
                polyline(&mut pens.fan, chain, x, solver_color(m).with_alpha(0.8), 0.03);
            }
        }
    }
    let t = v(target.pos);
    if view.shows(SolverId::Learned(HeadKind::Mse))
        && let Some(x) = answers.mse.as_ref()
    {
        let color = solver_color(SolverId::Learned(HeadKind::Mse));
        polyline(&mut pens.arm, chain, x, color, 0.04);
        pens.fan.line_2d(v(chain.tip(x)), t, color);
    }
    // The command on the model (thin), then the real arm as it is (thick: its droop, play, lag
    // and mismatch included) with its base on the rail: the gap between them is the plant's.
    if let Some(x) = answers.command.as_ref() {
        polyline(&mut pens.arm, chain, x, PLANT_COLOR.with_alpha(0.9), 0.0);
    }
    let real: Vec<Vec2> = plant.points().into_iter().filter(|p| p.x.is_finite() && p.y.is_finite()).map(v).collect();
    pens.plant.linestrip_2d(real.iter().copied(), PLANT_COLOR.with_alpha(0.7));
    if let Some(&base) = real.first() {
        pens.plant.circle_2d(base, 0.05, PLANT_COLOR.with_alpha(0.6));
    }

    let r = 0.06;
    pens.arm.circle_2d(t, r, TARGET_COLOR);
    pens.arm.line_2d(t - Vec2::X * 1.8 * r, t + Vec2::X * 1.8 * r, TARGET_COLOR);
    pens.arm.line_2d(t - Vec2::Y * 1.8 * r, t + Vec2::Y * 1.8 * r, TARGET_COLOR);
}

#[cfg(test)]
mod tests {
    use super::marching_square;

    #[test]
    fn the_outline_cuts_corners_diagonally_and_leaves_uniform_squares_alone() {
        assert!(marching_square([false; 4]).is_empty() && marching_square([true; 4]).is_empty());
        // One filled corner: one diagonal segment, not two axis-aligned steps.
        let one = marching_square([true, false, false, false]);
        assert_eq!(one.len(), 1);
        let [a, b] = one[0];
        assert!(a[0] != b[0] && a[1] != b[1], "diagonal: {one:?}");
        assert_eq!(marching_square([true, true, false, false]), vec![[[0.0, 0.5], [1.0, 0.5]]]);
        assert_eq!(marching_square([true, false, true, false]).len(), 2, "a saddle");
    }
}
