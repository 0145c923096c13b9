//! Drawing an arm whose answers form a manifold (a redundant chain): the outline of the reachable region (smooth closed loops, computed
//! once per arm), the rail, the fans (the exact posterior's, the MDN's and the flow's, faint,
//! each its own colour and joint mark), the few DLS and hybrid answers of this frame, the
//! squared-error answer as one solid arm with a line to where its tip lands, the simulated
//! chain as a wide band, gravity's direction where the plant has gravity, and the target.
//! Positions are in world units (metres); the marks' sizes are in logical pixels
//! ([`ViewScale`]), so they read the same on every arm.

use super::AppSet;
use super::camera::ViewScale;
use super::format::{PLANT_COLOR, TARGET_COLOR, solver_color};
use super::state::arm::Sim;
use super::state::arm::{Lab, manifold};
use super::state::manifold::{ChainAnswers, ChainView};
use super::state::solve::Command;
use super::state::view::Target;
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
        .insert_gizmo_config(AnswerGizmos, config(2.5))
        .insert_gizmo_config(ArmGizmos, config(4.0))
        .add_systems(Update, draw.in_set(AppSet::Draw).run_if(manifold).run_if(super::replay::not_replaying));
}

/// The simulated chain.
#[derive(Default, Reflect, GizmoConfigGroup)]
struct ChainPlantGizmos;

/// Thin lines: fans, the outline, the miss line.
#[derive(Default, Reflect, GizmoConfigGroup)]
struct FanGizmos;

/// The DLS and hybrid answers: a little wider than a fan's sketch, so the few of them stand
/// out of the fans.
#[derive(Default, Reflect, GizmoConfigGroup)]
struct AnswerGizmos;

/// Solid answers: the squared-error arm, the command, the gravity arrow, the target.
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

/// Cells along the longer side of the grid the reachable region is outlined on.
const OUTLINE_CELLS: usize = 160;
/// Poses drawn to find the reachable cells.
const OUTLINE_POSES: usize = 300_000;
/// The level of the smoothed occupancy the outline follows (half covered).
const OUTLINE_LEVEL: f32 = 0.5;
/// Loops enclosing less than this many cells are sampling noise, not a part of the region.
const OUTLINE_MIN_CELLS: f32 = 3.0;

/// The grid the reachable region is found on: square cells over the frame the camera shows
/// (the reach across, the reach plus the rail's travel along `y`), and which cells a tip hit.
struct Grid {
    /// Cells along `x` and along `y`.
    n: [usize; 2],
    /// Side of a cell, metres.
    cell: f64,
    /// The lower left corner, metres.
    origin: [f64; 2],
    /// Which cells a tip reached, row by row from the bottom.
    hit: Vec<bool>,
}

impl Grid {
    /// Whether cell `(i, j)` is reached (cells off the grid are not).
    fn filled(&self, i: isize, j: isize) -> bool {
        let [nx, ny] = self.n.map(|n| n as isize);
        (0..nx).contains(&i) && (0..ny).contains(&j) && self.hit[j as usize * self.n[0] + i as usize]
    }

    /// The world point of grid node `(i, j)` (a corner of cells), metres.
    fn node(&self, i: f64, j: f64) -> Vec2 {
        Vec2::new((self.origin[0] + i * self.cell) as f32, (self.origin[1] + j * self.cell) as f32)
    }
}

/// Draws poses within the ranges and marks the cells their tips land in. Each joint after the
/// first is held straight (30 %) or at a bound (20 %) now and then, the rail and the first
/// joint at a bound (30 %): the rims of the region are reached by stretched or folded arms at
/// the ends of their travel, which uniform draws almost never give. Then closes the
/// pinholes a finite sample leaves inside the region (a cell is filled when it or a neighbour
/// was hit and every cell around it has a hit neighbour: a dilation, then an erosion).
fn reachable(arm: &Arm) -> Grid {
    let chain = &arm.chain;
    let half = [chain.reach(), arm.extent()].map(|h| 1.04 * h);
    let cell = 2.0 * half[0].max(half[1]) / OUTLINE_CELLS as f64;
    let n = half.map(|h| (2.0 * h / cell).ceil() as usize);
    let origin = half.map(|h| -h);
    let mut hit = vec![false; n[0] * n[1]];
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut x = vec![0.0; chain.coords()];
    for _ in 0..OUTLINE_POSES {
        for (i, v) in x.iter_mut().enumerate() {
            let (lo, hi) = chain.range(i);
            let u: f64 = rand::RngExt::random(&mut rng);
            // The rail and the first joint: a bound or anywhere; the others also straight.
            let u = if i <= chain.first_joint() { 0.3 + 0.7 * u } else { u };
            *v = if u >= 0.5 {
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
        let (i, j) = ((p.x - origin[0]) / cell, (p.y - origin[1]) / cell);
        if i >= 0.0 && j >= 0.0 && (i as usize) < n[0] && (j as usize) < n[1] {
            hit[j as usize * n[0] + i as usize] = true;
        }
    }
    let mut grid = Grid { n, cell, origin, hit };
    for keep in [false, true] {
        // Dilate (a cell with a filled neighbour fills), then erode (a cell with an empty
        // neighbour empties): together they fill holes a cell or two wide.
        let mut next = grid.hit.clone();
        for j in 0..n[1] as isize {
            for i in 0..n[0] as isize {
                let around = (-1..=1).flat_map(|dj| (-1..=1).map(move |di| (i + di, j + dj)));
                let cell = &mut next[j as usize * n[0] + i as usize];
                *cell = if keep {
                    around.clone().all(|(a, b)| grid.filled(a, b))
                } else {
                    around.clone().any(|(a, b)| grid.filled(a, b))
                };
            }
        }
        grid.hit = next;
    }
    grid
}

/// The outline of the region the tip can reach, as closed loops (each ends where it starts),
/// metres. The reached cells ([`reachable`]) become a smooth occupancy on the grid's nodes
/// (each node the mean of the four cells around it, then blurred once), the loops follow its
/// half level with each crossing interpolated along its grid edge (marching squares), and one
/// round of corner cutting takes off what is left of the grid's steps. Computed once per arm.
fn outline(arm: &Arm) -> Vec<Vec<Vec2>> {
    let grid = reachable(arm);
    // Nodes -1..=n+1 each way, so the outermost ring is empty and every loop closes.
    let [nx, ny] = grid.n.map(|n| n + 3);
    let idx = |i: usize, j: usize| j * nx + i;
    let mut field = vec![0.0f32; nx * ny];
    for j in 0..ny {
        for i in 0..nx {
            // Node (i - 1, j - 1) touches cells (i - 2 .. i - 1, j - 2 .. j - 1).
            let (ci, cj) = (i as isize - 2, j as isize - 2);
            let around = [(ci, cj), (ci + 1, cj), (ci, cj + 1), (ci + 1, cj + 1)];
            field[idx(i, j)] = around.iter().filter(|&&(a, b)| grid.filled(a, b)).count() as f32 / 4.0;
        }
    }
    // A 1-2-1 blur each way, twice, inside the empty ring.
    for step in [[1usize, 0usize], [0, 1], [1, 0], [0, 1]] {
        let old = field.clone();
        for j in 1..ny - 1 {
            for i in 1..nx - 1 {
                let (a, b) = (idx(i - step[0], j - step[1]), idx(i + step[0], j + step[1]));
                field[idx(i, j)] = 0.25 * old[a] + 0.5 * old[idx(i, j)] + 0.25 * old[b];
            }
        }
    }
    let inside = |i: usize, j: usize| field[idx(i, j)] > OUTLINE_LEVEL;
    // Where the level crosses the edge from node `a` to node `b` (`b` right of or above `a`):
    // the same point from both squares that share the edge.
    let crossing = |a: (usize, usize), b: (usize, usize)| {
        let (fa, fb) = (field[idx(a.0, a.1)], field[idx(b.0, b.1)]);
        let t = ((OUTLINE_LEVEL - fa) / (fb - fa)).clamp(0.0, 1.0);
        let (pa, pb) = (node_of(&grid, a), node_of(&grid, b));
        pa + (pb - pa) * t
    };
    // Each edge by a key: its lower left node and its direction (0 along x, 1 along y).
    let mut points: Vec<Vec2> = Vec::new();
    let mut segments: Vec<[(usize, usize, u8); 2]> = Vec::new();
    let mut at = std::collections::HashMap::new();
    for j in 0..ny - 1 {
        for i in 0..nx - 1 {
            let corners = [inside(i, j), inside(i + 1, j), inside(i + 1, j + 1), inside(i, j + 1)];
            let centre =
                0.25 * (field[idx(i, j)] + field[idx(i + 1, j)] + field[idx(i + 1, j + 1)] + field[idx(i, j + 1)]);
            for [a, b] in marching_square(corners, centre > OUTLINE_LEVEL) {
                let key = |e: usize| match e {
                    BOTTOM => (i, j, 0u8),
                    RIGHT => (i + 1, j, 1),
                    TOP => (i, j + 1, 0),
                    _ => (i, j, 1),
                };
                segments.push([key(a), key(b)]);
            }
        }
    }
    for &(i, j, dir) in segments.iter().flatten() {
        at.entry((i, j, dir)).or_insert_with(|| {
            let far = if dir == 0 { (i + 1, j) } else { (i, j + 1) };
            points.push(crossing((i, j), far));
            points.len() - 1
        });
    }
    // Walk the segments into loops: every crossing joins exactly two segments.
    let mut by_point: Vec<Vec<usize>> = vec![Vec::new(); points.len()];
    for (k, s) in segments.iter().enumerate() {
        for e in s {
            by_point[at[e]].push(k);
        }
    }
    let mut used = vec![false; segments.len()];
    let mut loops = Vec::new();
    for first in 0..segments.len() {
        if used[first] {
            continue;
        }
        used[first] = true;
        let start = at[&segments[first][0]];
        let mut here = at[&segments[first][1]];
        let mut ring = vec![start, here];
        while here != start {
            let Some(&next) = by_point[here].iter().find(|&&k| !used[k]) else { break };
            used[next] = true;
            let [a, b] = segments[next].map(|e| at[&e]);
            here = if a == here { b } else { a };
            ring.push(here);
        }
        let ring: Vec<Vec2> = ring.into_iter().map(|p| points[p]).collect();
        let cell = grid.cell as f32;
        if area(&ring).abs() >= OUTLINE_MIN_CELLS * cell * cell {
            loops.push(cut_corners(&relax(ring, 3)));
        }
    }
    loops
}

/// The world point of the outline field's node `(i, j)` (nodes start one before the grid's).
fn node_of(grid: &Grid, (i, j): (usize, usize)) -> Vec2 {
    grid.node(i as f64 - 1.0, j as f64 - 1.0)
}

/// The signed area a closed loop encloses (counter-clockwise positive), square metres.
fn area(ring: &[Vec2]) -> f32 {
    ring.windows(2).map(|w| w[0].perp_dot(w[1])).sum::<f32>() / 2.0
}

/// `rounds` rounds of moving each point of a closed loop (first point = last) halfway to the
/// mean of its neighbours: the sub-cell wobble a sampled rim keeps goes, the loop's shape stays.
fn relax(mut ring: Vec<Vec2>, rounds: usize) -> Vec<Vec2> {
    let n = ring.len().saturating_sub(1);
    if n < 3 {
        return ring;
    }
    for _ in 0..rounds {
        let old = ring.clone();
        for k in 0..n {
            ring[k] = 0.5 * old[k] + 0.25 * (old[(k + n - 1) % n] + old[(k + 1) % n]);
        }
        ring[n] = ring[0];
    }
    ring
}

/// One round of Chaikin's corner cutting on a closed loop (first point = last): each edge
/// gives its points a quarter and three quarters along, so corners round off and the loop
/// stays closed.
fn cut_corners(ring: &[Vec2]) -> Vec<Vec2> {
    let mut out: Vec<Vec2> = ring.windows(2).flat_map(|w| [w[0].lerp(w[1], 0.25), w[0].lerp(w[1], 0.75)]).collect();
    if let Some(&first) = out.first() {
        out.push(first);
    }
    out
}

/// The edges of a marching square, counter-clockwise from the bottom.
const BOTTOM: usize = 0;
/// The square's right edge.
const RIGHT: usize = 1;
/// The square's top edge.
const TOP: usize = 2;
/// The square's left edge.
const LEFT: usize = 3;

/// The outline's segments in one square of four grid nodes, `corners` counter-clockwise from
/// the lower left (inside or not), as pairs of the edges each segment joins (marching
/// squares): the rim runs across a corner instead of in steps. A saddle (two opposite corners
/// inside) joins its inside corners when the square's centre is inside (`centre`).
fn marching_square(corners: [bool; 4], centre: bool) -> Vec<[usize; 2]> {
    let case = corners.iter().enumerate().fold(0, |c, (k, &on)| c | (usize::from(on) << k));
    match case {
        0 | 15 => vec![],
        1 | 14 => vec![[LEFT, BOTTOM]],
        2 | 13 => vec![[BOTTOM, RIGHT]],
        3 | 12 => vec![[LEFT, RIGHT]],
        4 | 11 => vec![[RIGHT, TOP]],
        6 | 9 => vec![[BOTTOM, TOP]],
        7 | 8 => vec![[LEFT, TOP]],
        // Lower left and upper right inside: joined through the centre, or cut off apart.
        5 if centre => vec![[LEFT, TOP], [BOTTOM, RIGHT]],
        5 => vec![[LEFT, BOTTOM], [RIGHT, TOP]],
        _ if centre => vec![[LEFT, BOTTOM], [RIGHT, TOP]],
        _ => vec![[LEFT, TOP], [BOTTOM, RIGHT]],
    }
}

/// Arms of each fan drawn as lines (the rest as joint marks only).
const FAN_SKETCH: usize = 24;

/// Half-size of a fan's joint marks, logical pixels.
const FAN_MARK_PX: f32 = 3.5;

/// How opaque one arm of a fan's sketch is: faint enough that the sketches overlap into a
/// density under the joint marks and the few solid answers.
fn fan_alpha(n: usize) -> f32 {
    (4.0 / n.max(1) as f32).clamp(0.04, 0.5)
}

/// How each fan marks its joints, so fans that overlap stay apart by shape as well as colour.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mark {
    /// A ring: the exact posterior, the reference the others are judged by.
    Ring,
    /// An upright cross: the MDN.
    Plus,
    /// A diagonal cross: the flow.
    Cross,
}

/// Draws `mark` at `p`, `h` metres from its centre to its ends.
fn mark<C: GizmoConfigGroup>(g: &mut Gizmos<C>, mark: Mark, p: Vec2, h: f32, color: Color) {
    match mark {
        Mark::Ring => {
            g.circle_2d(p, 0.8 * h, color).resolution(8);
        }
        Mark::Plus => {
            g.line_2d(p - Vec2::X * h, p + Vec2::X * h, color);
            g.line_2d(p - Vec2::Y * h, p + Vec2::Y * h, color);
        }
        Mark::Cross => {
            let (a, b) = (Vec2::new(h, h) * 0.8, Vec2::new(h, -h) * 0.8);
            g.line_2d(p - a, p + a, color);
            g.line_2d(p - b, p + b, color);
        }
    }
}

/// Length of the gravity arrow, logical pixels.
const GRAVITY_PX: f32 = 46.0;
/// How far left of the arm's base the gravity arrow stands, logical pixels.
const GRAVITY_LEFT_PX: f32 = 34.0;
/// Colour of the gravity arrow and its label.
pub(crate) const GRAVITY_COLOR: Color = Color::srgb(0.75, 0.8, 0.9);

/// The gravity arrow (from, to), metres: pointing down (−y, gravity's direction in the arm's
/// vertical plane), [`GRAVITY_PX`] long, beside the base at `base`, when the plant has
/// `gravity`; none when it has not.
pub(crate) fn gravity_arrow(gravity: bool, base: Vec2, scale: &ViewScale) -> Option<[Vec2; 2]> {
    let top = base + Vec2::new(-scale.px(GRAVITY_LEFT_PX), scale.px(0.5 * GRAVITY_PX));
    gravity.then(|| [top, top - Vec2::Y * scale.px(GRAVITY_PX)])
}

/// Whether the simulated arm has gravity on (the SO-101's, in its vertical plane), and where
/// its base is.
pub(crate) fn plant_gravity(sim: &Sim) -> (bool, Vec2) {
    let gravity = sim.plant.config().gravity;
    let base = sim.plant.points().first().filter(|p| p.x.is_finite() && p.y.is_finite()).map_or(Vec2::ZERO, |p| v(*p));
    (gravity, base)
}

/// The drawing bundle of gizmo groups.
#[derive(bevy::ecs::system::SystemParam)]
struct Pens<'w, 's> {
    plant: Gizmos<'w, 's, ChainPlantGizmos>,
    fan: Gizmos<'w, 's, FanGizmos>,
    answer: Gizmos<'w, 's, AnswerGizmos>,
    arm: Gizmos<'w, 's, ArmGizmos>,
}

/// Draws one frame of the chain lab. Every mark is sized in logical pixels ([`ViewScale`]):
/// the SO-101 reaches 41 cm and rail3 3 m, and the marks read the same on both.
#[allow(clippy::too_many_arguments)]
fn draw(
    mut pens: Pens,
    lab: Res<Lab>,
    target: Res<Target>,
    view: Res<ChainView>,
    answers: Res<ChainAnswers>,
    sent: Res<Command>,
    sim: Res<Sim>,
    scale: Res<ViewScale>,
    mut outlined: Local<Option<(Arm, Vec<Vec<Vec2>>)>>,
) {
    let Some(arm) = lab.chain() else { return };
    let chain = &arm.chain;
    let d = arm.coords();
    let px = |n: f32| scale.px(n);
    if outlined.as_ref().is_none_or(|(a, _)| a != arm) {
        *outlined = Some((arm.clone(), outline(arm)));
    }
    let rim = Color::srgb(0.42, 0.45, 0.52);
    if let Some((_, loops)) = outlined.as_ref() {
        for ring in loops {
            pens.fan.linestrip_2d(ring.iter().copied(), rim);
        }
    }
    if let Some(t) = chain.rail() {
        let rail = Color::srgb(0.55, 0.57, 0.65);
        pens.arm.line_2d(Vec2::new(0.0, t.min as f32), Vec2::new(0.0, t.max as f32), rail.with_alpha(0.6));
    }

    // Fans first, the reference under the learned ones: a faint sketch of a few arms each, and
    // a mark at every joint of every arm, each fan its own shape and colour, so fans that
    // overlap stay apart (marks do not blend into one tint as lines do). Then the few
    // iterative answers, then the squared-error arm on top.
    for (m, set, shape) in [
        (SolverId::Exact, &answers.exact.x, Mark::Ring),
        (SolverId::Learned(HeadKind::Mdn), &answers.mdn, Mark::Plus),
        (SolverId::Flow, &answers.flow, Mark::Cross),
    ] {
        if view.shows(m) {
            let arms = set.len() / d.max(1);
            let color = solver_color(m);
            let every = (arms / FAN_SKETCH).max(1);
            for x in set.chunks_exact(d).step_by(every) {
                polyline(&mut pens.fan, chain, x, color.with_alpha(fan_alpha(arms.min(FAN_SKETCH))), 0.0);
            }
            let c = color.with_alpha(0.8);
            for x in set.chunks_exact(d).filter(|x| x.iter().all(|v| v.is_finite())) {
                for p in chain.points(x).iter().skip(1).map(|p| v(*p)) {
                    mark(&mut pens.fan, shape, p, px(FAN_MARK_PX), c);
                }
            }
        }
    }
    for (m, set) in [(SolverId::Iterative, &answers.dls), (SolverId::Hybrid, &answers.hybrid)] {
        if view.shows(m) {
            for x in set.chunks_exact(d) {
                polyline(&mut pens.answer, chain, x, solver_color(m).with_alpha(0.85), px(4.0));
            }
        }
    }
    let t = v(target.pos);
    if view.shows(SolverId::Learned(HeadKind::Mse))
        && let Some(x) = answers.mse.as_ref()
    {
        let color = solver_color(SolverId::Learned(HeadKind::Mse));
        polyline(&mut pens.arm, chain, x, color, px(5.0));
        pens.fan.line_2d(v(chain.tip(x)), t, color);
    }
    // The command on the model (thin), then the real arm as it is (thick: its droop, play, lag
    // and mismatch included) with its base on the rail: the gap between them is the plant's.
    if let Some(x) = sent.0.as_ref() {
        polyline(&mut pens.arm, chain, x, PLANT_COLOR.with_alpha(0.9), 0.0);
    }
    let real: Vec<Vec2> =
        sim.plant.points().into_iter().filter(|p| p.x.is_finite() && p.y.is_finite()).map(v).collect();
    pens.plant.linestrip_2d(real.iter().copied(), PLANT_COLOR.with_alpha(0.7));
    if let Some(&base) = real.first() {
        pens.plant.circle_2d(base, px(7.0), PLANT_COLOR.with_alpha(0.6));
    }
    // Which way gravity pulls, where it does (the SO-101 hangs in a vertical plane); labels.rs
    // writes the "g" beside it.
    let (gravity, base) = plant_gravity(&sim);
    if let Some([from, to]) = gravity_arrow(gravity, base, &scale) {
        pens.arm.arrow_2d(from, to, GRAVITY_COLOR.with_alpha(0.85)).with_tip_length(px(12.0));
    }

    let r = px(8.5);
    pens.arm.circle_2d(t, r, TARGET_COLOR);
    pens.arm.line_2d(t - Vec2::X * 1.8 * r, t + Vec2::X * 1.8 * r, TARGET_COLOR);
    pens.arm.line_2d(t - Vec2::Y * 1.8 * r, t + Vec2::Y * 1.8 * r, TARGET_COLOR);
}

#[cfg(test)]
mod tests {
    use super::{BOTTOM, LEFT, RIGHT, TOP, marching_square, outline};
    use elbow::arm::ArmKind;

    #[test]
    fn the_outline_cuts_corners_diagonally_and_leaves_uniform_squares_alone() {
        for centre in [false, true] {
            assert!(marching_square([false; 4], centre).is_empty() && marching_square([true; 4], centre).is_empty());
        }
        // One inside corner: one segment across it, not two axis-aligned steps.
        assert_eq!(marching_square([true, false, false, false], false), vec![[LEFT, BOTTOM]]);
        assert_eq!(marching_square([true, true, false, false], false), vec![[LEFT, RIGHT]]);
        // A saddle: two segments, joined through an inside centre or cut apart.
        assert_eq!(marching_square([true, false, true, false], true), vec![[LEFT, TOP], [BOTTOM, RIGHT]]);
        assert_eq!(marching_square([true, false, true, false], false), vec![[LEFT, BOTTOM], [RIGHT, TOP]]);
    }

    #[test]
    fn the_reachable_outline_is_closed_smooth_and_holds_the_reachable_tips() {
        for kind in [ArmKind::ThreeR, ArmKind::Rail3, ArmKind::So101] {
            let arm = kind.arm();
            let reach = arm.chain.reach() as f32;
            let loops = outline(&arm);
            assert!(!loops.is_empty(), "{kind}");
            let (mut turns, mut sharp) = (0usize, 0usize);
            for ring in &loops {
                assert!(ring.len() > 8 && ring.first() == ring.last(), "{kind}: a closed loop");
                for w in ring.windows(2) {
                    assert!(w[0].distance(w[1]) < reach / 40.0, "{kind}: a segment of {} m", w[0].distance(w[1]));
                }
                // The turn at every point (the loop wraps round its start).
                let body = &ring[..ring.len() - 1];
                for k in 0..body.len() {
                    let (a, b, c) = (body[(k + body.len() - 1) % body.len()], body[k], body[(k + 1) % body.len()]);
                    let turn = (b - a).angle_to(c - b).abs();
                    turns += 1;
                    sharp += usize::from(turn > 40f32.to_radians());
                }
            }
            // The grid's steps turn by 45° or 90° at every other point; a smooth rim barely turns.
            assert!((sharp as f64) < 0.02 * turns as f64, "{kind}: {sharp} of {turns} turns sharper than 40°");
            // Tips drawn afresh lie inside (an odd number of loops around them).
            let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(9);
            let mut x = vec![0.0; arm.coords()];
            let mut outside = 0;
            for _ in 0..5000 {
                for (i, v) in x.iter_mut().enumerate() {
                    let (lo, hi) = arm.chain.range(i);
                    *v = rand::RngExt::random_range(&mut rng, lo..=hi);
                }
                let p = arm.chain.tip(&x);
                let p = bevy::math::Vec2::new(p.x as f32, p.y as f32);
                let crossings: usize = loops
                    .iter()
                    .map(|ring| {
                        ring.windows(2)
                            .filter(|w| {
                                let (a, b) = (w[0], w[1]);
                                (a.y > p.y) != (b.y > p.y) && p.x < a.x + (p.y - a.y) / (b.y - a.y) * (b.x - a.x)
                            })
                            .count()
                    })
                    .sum();
                outside += usize::from(crossings.is_multiple_of(2));
            }
            assert!(outside <= 10, "{kind}: {outside} of 5000 reachable tips outside the outline");
            if kind == ArmKind::Rail3 {
                // Every point the rail's base reaches with links 2 m long in all: a stadium, the
                // rail's segment widened by 2 m. The outline keeps to it.
                let off = loops
                    .iter()
                    .flatten()
                    .map(|p| ((p.x.powi(2) + (p.y.abs() - 1.0).max(0.0).powi(2)).sqrt() - 2.0).abs())
                    .fold(0.0f32, f32::max);
                assert!(off < 0.03 * reach, "rail3: the outline strays {off} m from the stadium");
            }
        }
    }
}
