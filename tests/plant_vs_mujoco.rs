//! Our plant against MuJoCo: every scenario of `reference/mujoco_plant.py`, replayed on our own
//! plant and judged by the same metrics.
//!
//! The data: `tests/data/mujoco/*.csv` are MuJoCo 4.0.1 traces (implicitfast, 0.2 ms steps,
//! sampled every 5 ms) of exactly the model our plant implements, with the SO-101's STS3215 servo
//! of MuJoCo Menagerie; each file's `# ` line states its set-up, which the tests below check
//! before replaying it. `summary.json` holds MuJoCo's metrics of each trace and their
//! `definitions`. See `reference/README.md` and `reference/so101.md`.
//!
//! What is compared: each scenario is replayed on our plant ([`Plant`] for the two-link arm
//! "2r", the [`serial_model`] multibody for "so101"), sampled every 5 ms like the CSV, and the
//! metrics are computed from our trace exactly as `summary.json` defines them (crossing times
//! linearly interpolated between samples). The issue's tolerances: settling time and overshoot
//! within 10 % of MuJoCo's, final tip error (or gravity sag at the tip) within 0.5 mm, mean
//! tracking error within 15 %. Beyond them: each servo's time at its torque limit
//! (`saturated_time_s`) within 10 %, which is what sees an ignored torque limit in the tracking
//! runs with latency (their mean error moves only 7 % and 3 % without it), and each joint's
//! gravity sag within friction's stick band. Rise times and the like are printed, not judged.
//! `metrics_of_the_mujoco_traces_reproduce_the_summary` checks that the metric code here turns
//! MuJoCo's own CSV into `summary.json`'s numbers, so both sides are measured alike.
//!
//! Every test also replays its scenario on a deliberately broken plant (servo `kv` dropped to 0,
//! the torque limit raised to 1e6 N m so that it never acts, gravity off) and asserts the
//! comparison then fails: each tolerance is tight enough to see that parameter.
//!
//! Stiff servos (issue 48): `reference/mujoco_stiff.py` writes the same arms on a servo six times
//! stiffer than a 1 ms step resolves unsplit (twelve times our 2 ms sub-step) (kp 1e6 N m/rad, ±1e4 N m) and an industrial one
//! (the same with kv 400), in MuJoCo at 1e-5 s, with `stiff_summary.json`; the replays here
//! judge them within the same tolerances (steps sampled every 1 ms, replayed in 1 ms steps), and broken plants (kv
//! 2.731) fail them. Seen failing with the step's splitting switched off.
//!
//! One known difference is compared around, not through: MuJoCo's friction loss is a soft
//! constraint that creeps to the goal, ours sticks (at most loss / kp short). The backlash play's
//! stops are soft in both (MuJoCo's default joint limit), and match.
//!
//! `cargo test --release --no-default-features --test plant_vs_mujoco -- --nocapture` prints a
//! table of ours against MuJoCo for every metric. With `ELBOW_TRACE_DIR` set, every replay on the
//! unbroken plant also writes our trace, in the MuJoCo CSV's columns, to
//! `$ELBOW_TRACE_DIR/<scenario>.ours.csv` (for `reference/plot_vs_mujoco.py`); unset, nothing is
//! written.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::OnceLock;

use elbow::arm::so101;
use elbow::plant::dynamics::{Multibody, Servo, State};
use elbow::plant::{Plant, PlantConfig, SUBSTEP, serial_model};
use elbow::{Pose, TwoLinkArm};
use serde_json::Value;

/// The sample period of most CSVs, seconds (the stiff servos' steps are sampled every 1 ms; each
/// replay samples as its CSV does, [`Csv::sample`]).
const SAMPLE: f64 = 0.005;

/// Settling time and overshoot: within 10 % of MuJoCo's.
const REL: f64 = 0.10;
/// The absolute floor of the settling-time tolerance, seconds: one sample period, the resolution
/// of the samples the metric is read from (it only matters for a settling time under 10 sample
/// periods: the stiff servos' steps, sampled every 1 ms, settle in 3 to 14 ms).
const SETTLING_FLOOR: f64 = SAMPLE;
/// The absolute floor of the overshoot tolerance, rad: 0.1 mrad, twice the STS3215's stick band
/// (`frictionloss / kp` = 0.052 mrad), below which an overshoot is where friction happened to
/// hold the servo rather than a swing past the goal (it only matters for an overshoot under
/// 1 mrad, which no scenario has).
const OVERSHOOT_FLOOR: f64 = 1e-4;
/// The absolute floor of the saturated-time tolerance, seconds: one sample period (our sub-step
/// is 2 ms, MuJoCo's 0.2 ms, so a sub-step or two at the limit, as a servo that MuJoCo never
/// saturates may show, stay within it; 1 ms for the stiff servos' steps).
const SATURATION_FLOOR: f64 = SAMPLE;
/// Final tip error and gravity sag at the tip: within 0.5 mm of MuJoCo's.
const TIP_MM: f64 = 0.5;
/// Mean tracking error: within 15 % of MuJoCo's.
const TRACK_REL: f64 = 0.15;

/// The backlash scenario's play, ± rad (Menagerie's class `backlash`).
const BACKLASH: f64 = 0.0087267;
/// The friction scenario's friction loss, N m (ten times the STS3215's).
const FRICTION_10X: f64 = 0.52;

/// Every 2r file's set-up, as its `# ` line states it.
const TWO_LINK_SETUP: &[&str] = &[
    "2r arm l=[1,1] m=[0.05,0.05] com=[(0.5,0),(0.5,0)] izz=[0.00416666667,0.00416666667] o=[0,0]",
    "damping 0.60 N m s/rad",
    "armature 0.028 kg m^2",
    "kp 998.22 N m/rad kv 2.731 N m s/rad forcerange +-2.94 N m",
    "timestep 0.0002 s",
    "samples every 0.005 s",
];

/// Every so101 file's set-up, as its `# ` line states it (the model is `so101::BODIES` etc.,
/// checked against these numbers in `so101_constants_are_the_traces_model`).
const SO101_SETUP: &[&str] = &[
    "so101 arm (reference/so101.md) l=[0.116000021,0.135000185,0.159676681] m=[0.103,0.104,0.19]",
    "o=[1.32700943,-1.28848144,0.036538887]",
    "gravity ON 9.81 m/s^2 along -y",
    "frictionloss 0.052 N m",
    "damping 0.60 N m s/rad",
    "armature 0.028 kg m^2",
    "kp 998.22 N m/rad kv 2.731 N m s/rad forcerange +-2.94 N m",
    "samples every 0.005 s",
];

// ---------------------------------------------------------------------------------------------
// The data
// ---------------------------------------------------------------------------------------------

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/mujoco")
}

/// One MuJoCo trace: its `# ` line, column names and rows.
struct Csv {
    file: String,
    header: String,
    columns: Vec<String>,
    rows: Vec<Vec<f64>>,
}

impl Csv {
    fn load(file: &str) -> Csv {
        let text = std::fs::read_to_string(data_dir().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let (mut header, mut columns, mut rows) = (String::new(), Vec::new(), Vec::new());
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if let Some(comment) = line.strip_prefix('#') {
                header.push_str(comment.trim());
            } else if columns.is_empty() {
                columns = line.split(',').map(str::to_owned).collect();
            } else {
                let row: Vec<f64> =
                    line.split(',').map(|v| v.parse().unwrap_or_else(|e| panic!("{file}: {v:?}: {e}"))).collect();
                assert_eq!(row.len(), columns.len(), "{file}: {line}");
                rows.push(row);
            }
        }
        assert!(!rows.is_empty(), "{file}: no samples");
        Csv { file: file.to_owned(), header, columns, rows }
    }

    fn col(&self, name: &str) -> Vec<f64> {
        let i = self.columns.iter().position(|c| c == name).unwrap_or_else(|| panic!("{}: no {name}", self.file));
        self.rows.iter().map(|r| r[i]).collect()
    }

    /// The trace's length, seconds.
    fn duration(&self) -> f64 {
        self.rows[self.rows.len() - 1][0]
    }

    /// The sample period, seconds (to the microsecond).
    fn sample(&self) -> f64 {
        ((self.rows[1][0] - self.rows[0][0]) * 1e6).round() * 1e-6
    }

    /// The length and the sample period, seconds.
    fn span(&self) -> (f64, f64) {
        (self.duration(), self.sample())
    }

    /// Panics unless the `# ` line states every one of `words`.
    fn expect_setup(&self, words: &[&str]) {
        for w in words {
            assert!(self.header.contains(w), "{}: the set-up line lacks {w:?}:\n{}", self.file, self.header);
        }
    }
}

fn summary() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| {
        let text = std::fs::read_to_string(data_dir().join("summary.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

/// `stiff_summary.json`: the stiff servos' files (`reference/mujoco_stiff.py`).
fn stiff_summary() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| {
        let text = std::fs::read_to_string(data_dir().join("stiff_summary.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

/// MuJoCo's metrics of `file`, from summary.json or stiff_summary.json.
fn expected(file: &str) -> &'static Value {
    let v = &summary()["files"][file];
    let v = if v.is_object() { v } else { &stiff_summary()["files"][file] };
    assert!(v.is_object(), "neither summary.json nor stiff_summary.json has {file}");
    v
}

/// A number of summary.json; `null` (never settles) is NaN.
fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn nums(v: &Value) -> Vec<f64> {
    v.as_array().unwrap_or_else(|| panic!("not a list: {v}")).iter().map(num).collect()
}

// ---------------------------------------------------------------------------------------------
// Metrics, as summary.json's `definitions` say (a port of `step_metrics` in the script)
// ---------------------------------------------------------------------------------------------

/// The time between samples `i` and `i + 1` where `x` crosses 0, linearly interpolated.
fn crossing(t: &[f64], x: &[f64], i: usize) -> f64 {
    if i + 1 >= t.len() || x[i] == x[i + 1] {
        return t[i];
    }
    t[i] + (t[i + 1] - t[i]) * x[i] / (x[i] - x[i + 1])
}

/// One stepped joint's response; NaN where the definition gives none (never settles).
#[derive(Debug, Clone, Copy)]
struct StepMetrics {
    rise: f64,
    settling: f64,
    overshoot: f64,
    final_error: f64,
}

fn step_metrics(t: &[f64], q: &[f64], q_start: f64, goal: f64) -> StepMetrics {
    let step = goal - q_start;
    let sign = if step >= 0.0 { 1.0 } else { -1.0 };
    let progress: Vec<f64> = q.iter().map(|&v| (v - q_start) / step).collect();
    let reach = |frac: f64| {
        let x: Vec<f64> = progress.iter().map(|p| p - frac).collect();
        match progress.iter().position(|&p| p >= frac) {
            Some(0) => 0.0,
            Some(i) => crossing(t, &x, i - 1),
            None => f64::NAN,
        }
    };
    let band = 0.02 * step.abs();
    let err: Vec<f64> = q.iter().map(|&v| (v - goal).abs() - band).collect();
    let settling = match err.iter().rposition(|&e| e > 0.0) {
        None => 0.0,
        Some(i) if i == t.len() - 1 => f64::NAN,
        Some(i) => crossing(t, &err, i),
    };
    let overshoot = q.iter().map(|&v| sign * (v - goal)).fold(0.0, f64::max);
    StepMetrics { rise: reach(0.9) - reach(0.1), settling, overshoot, final_error: goal - q[q.len() - 1] }
}

fn dist_mm(a: [f64; 2], b: [f64; 2]) -> f64 {
    (a[0] - b[0]).hypot(a[1] - b[1]) * 1e3
}

/// Mean and largest |tip − target| over the samples with 4 s ≤ t ≤ 8 s, mm.
fn tracking_error_mm(t: &[f64], tip: &[[f64; 2]], target: &[[f64; 2]]) -> (f64, f64) {
    let e: Vec<f64> = (0..t.len())
        .filter(|&i| t[i] >= 4.0 - 1e-9 && t[i] <= 8.0 + 1e-9)
        .map(|i| dist_mm(tip[i], target[i]))
        .collect();
    (e.iter().sum::<f64>() / e.len() as f64, e.iter().copied().fold(0.0, f64::max))
}

// ---------------------------------------------------------------------------------------------
// The comparison
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Tol {
    /// Within this fraction of MuJoCo's value, or this absolute floor when larger.
    Rel(f64, f64),
    /// Within this much.
    Abs(f64),
    /// Printed, not judged.
    Info,
}

#[derive(Debug, Clone)]
struct Check {
    metric: String,
    ours: f64,
    mujoco: f64,
    tol: Tol,
}

impl Check {
    fn new(metric: impl Into<String>, ours: f64, mujoco: f64, tol: Tol) -> Self {
        Self { metric: metric.into(), ours, mujoco, tol }
    }

    /// How far ours may be from MuJoCo's.
    fn allowed(&self) -> f64 {
        match self.tol {
            Tol::Rel(rel, floor) => (rel * self.mujoco.abs()).max(floor),
            Tol::Abs(a) => a,
            Tol::Info => f64::INFINITY,
        }
    }

    fn ok(&self) -> bool {
        match self.tol {
            Tol::Info => true,
            // Both "never settles" agree; one of them alone does not.
            _ if self.ours.is_nan() && self.mujoco.is_nan() => true,
            _ => (self.ours - self.mujoco).abs() <= self.allowed(),
        }
    }
}

/// Prints the table of `checks` under `title` (one write, so parallel tests do not interleave)
/// and returns the metrics outside their tolerance.
fn outside(title: &str, checks: &[Check]) -> Vec<String> {
    let mut table = format!(
        "\n== {title}\n{:<34} {:>13} {:>13} {:>11} {:>11}  \n",
        "metric", "ours", "MuJoCo", "|diff|", "allowed"
    );
    let mut bad = Vec::new();
    for c in checks {
        let verdict = match (c.tol, c.ok()) {
            (Tol::Info, _) => "info",
            (_, true) => "ok",
            (_, false) => "FAIL",
        };
        let allowed = if matches!(c.tol, Tol::Info) { "-".to_owned() } else { format!("{:.4e}", c.allowed()) };
        let _ = writeln!(
            table,
            "{:<34} {:>13.6e} {:>13.6e} {:>11.3e} {:>11}  {verdict}",
            c.metric,
            c.ours,
            c.mujoco,
            (c.ours - c.mujoco).abs(),
            allowed
        );
        if !c.ok() {
            bad.push(format!(
                "{}: ours {:.6e}, MuJoCo {:.6e}, allowed ±{:.3e}",
                c.metric,
                c.ours,
                c.mujoco,
                c.allowed()
            ));
        }
    }
    eprint!("{table}");
    bad
}

/// Asserts the unbroken plant passes: every metric within its tolerance.
fn assert_matches(title: &str, checks: &[Check]) {
    let bad = outside(title, checks);
    assert!(bad.is_empty(), "{title}: our plant differs from MuJoCo beyond tolerance:\n{}", bad.join("\n"));
}

/// Asserts a deliberately broken plant fails: the comparison can see the broken parameter.
fn assert_caught(title: &str, checks: &[Check]) {
    let bad = outside(title, checks);
    assert!(!bad.is_empty(), "{title}: the broken plant still matches MuJoCo, so the comparison cannot see it");
    eprintln!("   caught: {} metric(s) outside tolerance", bad.len());
}

/// The settling time and overshoot of a stepped joint, judged; its rise time, printed.
/// Floors in sample periods scale with the trace's (`sample` seconds).
fn stepped_checks(joint: &str, ours: StepMetrics, mujoco: &Value, sample: f64) -> Vec<Check> {
    vec![
        Check::new(
            format!("{joint} settling_time_s"),
            ours.settling,
            num(&mujoco["settling_time_s"]),
            Tol::Rel(REL, SETTLING_FLOOR * sample / SAMPLE),
        ),
        Check::new(
            format!("{joint} overshoot_rad"),
            ours.overshoot,
            num(&mujoco["overshoot_rad"]),
            Tol::Rel(REL, OVERSHOOT_FLOOR),
        ),
        Check::new(format!("{joint} rise_time_s"), ours.rise, num(&mujoco["rise_time_s"]), Tol::Info),
    ]
}

/// Each servo's time at its torque limit against summary.json's `saturated_time_s`.
fn saturation_checks(ours: &Trace, mujoco: &Value) -> Vec<Check> {
    nums(&mujoco["saturated_time_s"])
        .into_iter()
        .enumerate()
        .map(|(k, m)| {
            let floor = SATURATION_FLOOR * ours.sample / SAMPLE;
            Check::new(format!("saturated_time_s[{k}]"), ours.saturated[k], m, Tol::Rel(REL, floor))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Our runs
// ---------------------------------------------------------------------------------------------

/// Our trace, every 5 ms from t = 0: the servo angles, the tip, and (2r) the free play.
#[derive(Debug, Default)]
struct Trace {
    t: Vec<f64>,
    q: Vec<Vec<f64>>,
    tip: Vec<[f64; 2]>,
    /// Each joint's free play (2r; empty for so101).
    play: Vec<[f64; 2]>,
    /// The largest |free play| of any joint at any sub-step, rad.
    widest_play: f64,
    /// Time each servo spent at its torque limit (its torque clamped), seconds.
    saturated: Vec<f64>,
    /// The sample period, seconds.
    sample: f64,
}

impl Trace {
    fn joint(&self, k: usize) -> Vec<f64> {
        self.q.iter().map(|q| q[k]).collect()
    }

    fn last_q(&self) -> &[f64] {
        &self.q[self.q.len() - 1]
    }

    fn last_tip(&self) -> [f64; 2] {
        self.tip[self.tip.len() - 1]
    }
}

/// With `ELBOW_TRACE_DIR` set, writes `trace` (our replay of `file`) in `file`'s columns to
/// `$ELBOW_TRACE_DIR/<scenario>.ours.csv`; without it, nothing.
fn write_ours(file: &str, trace: &Trace) {
    let Some(dir) = std::env::var_os("ELBOW_TRACE_DIR") else { return };
    let columns = Csv::load(file).columns;
    let mut text =
        format!("# ours: Elbow's plant replaying {file}, samples every {} s\n{}\n", trace.sample, columns.join(","));
    for (i, &t) in trace.t.iter().enumerate() {
        let value = |c: &str| match c {
            "t" => t,
            "tip_x" => trace.tip[i][0],
            "tip_y" => trace.tip[i][1],
            "target_x" => fig8(t)[0],
            "target_y" => fig8(t)[1],
            _ => {
                let k: usize = c[1..].parse().unwrap_or_else(|_| panic!("{file}: column {c}"));
                if c.starts_with('p') { trace.play[i][k - 1] } else { trace.q[i][k - 1] }
            }
        };
        let row: Vec<String> = columns.iter().map(|c| value(c).to_string()).collect();
        text.push_str(&row.join(","));
        text.push('\n');
    }
    std::fs::create_dir_all(&dir).unwrap();
    let path = PathBuf::from(dir).join(file.replace(".csv", ".ours.csv"));
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// The replays' tick for samples every `sample` seconds: the sample period in equal parts no
/// longer than the plant's sub-step (the sub-step itself when it divides the period, as it
/// divides 5 ms).
fn tick(sample: f64) -> f64 {
    sample / (sample / SUBSTEP - 1e-9).ceil()
}

/// Ticks per sample of `sample` seconds.
fn stride(sample: f64) -> usize {
    (sample / tick(sample)).round() as usize
}

/// Ticks of `dt` seconds in `duration`.
fn ticks(duration: f64, dt: f64) -> usize {
    (duration / dt).round() as usize
}

/// The 2r arm on `servo` (gravity off, no play).
fn two_link(servo: Servo) -> PlantConfig {
    PlantConfig { servo, ..PlantConfig::ideal(TwoLinkArm::default()) }
}

fn xy(p: elbow::Point2) -> [f64; 2] {
    [p.x, p.y]
}

fn fk_2r(q: &[f64]) -> [f64; 2] {
    xy(TwoLinkArm::default().tip(Pose::new(q[0], q[1])))
}

/// Runs our plant `cfg` from rest at `start` for `duration` s sampled every `sample` s;
/// `goal_at(n)` is the goal sent just before tick `n` (which starts at `n · tick(sample)`), if any.
fn run_plant(
    cfg: PlantConfig,
    start: Pose,
    (duration, sample): (f64, f64),
    mut goal_at: impl FnMut(usize) -> Option<Pose>,
) -> Trace {
    let mut p = Plant::new(cfg.two_link_real(), cfg, &start.coords());
    let dt = tick(sample);
    let (n_end, stride) = (ticks(duration, dt), stride(sample));
    let mut trace = Trace { saturated: vec![0.0; 2], sample, ..Trace::default() };
    for n in 0..=n_end {
        let play = Pose::of(&p.actual()) - Pose::of(&p.link());
        trace.widest_play = trace.widest_play.max(play.max_abs());
        if n % stride == 0 {
            let q = Pose::of(&p.link());
            trace.t.push(n as f64 * dt);
            trace.q.push(vec![q.shoulder, q.elbow]);
            trace.tip.push(xy(p.tip()));
            trace.play.push([play.shoulder, play.elbow]);
        }
        if n == n_end {
            break;
        }
        if let Some(goal) = goal_at(n) {
            p.command(&goal.coords());
        }
        let (q, v) = (Pose::of(&p.link()), Pose::of(&p.speeds()));
        p.step(dt);
        // The goal this sub-step drove toward (delivered at its start), and the servo's torque
        // before the clamp, as the dynamics compute it from the state at the sub-step's start.
        let (goal, servo) = (Pose::of(&p.commanded()), p.config().servo);
        for (k, (goal, q, v)) in
            [(goal.shoulder, q.shoulder, v.shoulder), (goal.elbow, q.elbow, v.elbow)].into_iter().enumerate()
        {
            if (servo.kp * (goal - q) - servo.kv * v).abs() > servo.torque_limit {
                trace.saturated[k] += dt;
            }
        }
    }
    trace
}

/// The so101 model on `servo`.
fn so101_model(servo: &Servo, gravity: bool) -> Multibody {
    let (model, servos) = serial_model(&so101::LENGTHS, &so101::BODIES, &so101::ZERO_OFFSETS, servo, 0.0, gravity);
    assert_eq!(servos, [0, 1, 2]);
    model
}

fn so101_tip(model: &Multibody, q: &[f64]) -> [f64; 2] {
    let mut full = [0.0; elbow::plant::dynamics::MAX_DOF];
    full[..q.len()].copy_from_slice(q);
    model.tip(&full, so101::LENGTHS[2])
}

/// Runs the so101 model from rest at `q0` with its goal there: `settle` s unrecorded, then the
/// goal `goal` and `duration` s sampled every `sample` s (t = 0 at the settled state).
fn run_so101(model: &Multibody, q0: [f64; 3], settle: f64, goal: [f64; 3], (duration, sample): (f64, f64)) -> Trace {
    let mut state = State::at_rest(&q0);
    let dt = tick(sample);
    for _ in 0..ticks(settle, dt) {
        model.step(&mut state, &q0, dt);
    }
    let (n_end, stride) = (ticks(duration, dt), stride(sample));
    let mut trace = Trace { saturated: vec![0.0; 3], sample, ..Trace::default() };
    for n in 0..=n_end {
        if n % stride == 0 {
            trace.t.push(n as f64 * dt);
            trace.q.push(state.q[..3].to_vec());
            trace.tip.push(so101_tip(model, &state.q[..3]));
        }
        if n < n_end {
            for (k, sat) in trace.saturated.iter_mut().enumerate() {
                let (kp, kv, limit) = model.dofs()[k].actuator.expect("a servo hinge");
                if (kp * (goal[k] - state.q[k]) - kv * state.v[k]).abs() > limit {
                    *sat += dt;
                }
            }
            model.step(&mut state, &goal, dt);
        }
    }
    trace
}

// ---------------------------------------------------------------------------------------------
// Scenario families: each returns the checks of one scenario for a given plant
// ---------------------------------------------------------------------------------------------

/// A 2r step scenario (`2r_step_j*`, `2r_large_move`, `2r_friction`, `2r_backlash`) on our
/// plant `cfg`: the stepped joints' settling time and overshoot, and the final tip error. With
/// `servo_tip`, the tip error is that of the servo angles (the encoders' tip, as for backlash,
/// whose real tip depends on where the play floats); else, as summary.json's, that of the joint
/// angles, which are the tip's.
fn two_link_step_checks(file: &str, cfg: PlantConfig, servo_tip: bool) -> (Vec<Check>, Trace) {
    let csv = Csv::load(file);
    let exp = expected(file);
    let (start, goal) = (nums(&exp["q_start"]), nums(&exp["goal"]));
    let trace =
        run_plant(cfg, Pose::new(start[0], start[1]), csv.span(), |n| (n == 0).then(|| Pose::new(goal[0], goal[1])));
    let stepped: Vec<(usize, &Value)> = match exp.get("stepped_joint") {
        Some(j) => vec![(j.as_u64().unwrap() as usize - 1, &exp["stepped"])],
        None => (0..2).map(|k| (k, &exp["stepped"][(k + 1).to_string()])).collect(),
    };
    let mut checks = Vec::new();
    for (k, mujoco) in stepped {
        let ours = step_metrics(&trace.t, &trace.joint(k), start[k], goal[k]);
        checks.extend(stepped_checks(&format!("q{}", k + 1), ours, mujoco, csv.sample()));
    }
    checks.extend(saturation_checks(&trace, exp));
    let ours_tip = dist_mm(fk_2r(trace.last_q()), fk_2r(&goal));
    let mujoco_tip = if servo_tip {
        dist_mm(fk_2r(&[csv.col("q1")[csv.rows.len() - 1], csv.col("q2")[csv.rows.len() - 1]]), fk_2r(&goal))
    } else {
        num(&exp["final_tip_error_mm"])
    };
    let name = if servo_tip { "final_servo_tip_error_mm" } else { "final_tip_error_mm" };
    checks.push(Check::new(name, ours_tip, mujoco_tip, Tol::Abs(TIP_MM)));
    (checks, trace)
}

/// A gravity hold: the final sag at the tip and its y part and the largest tip excursion within
/// 0.5 mm; each joint's final sag within the friction's stick band, `frictionloss / kp` (plus
/// 10 % for the gravity torque's change across the band): MuJoCo's friction creeps to the pure
/// spring sag, ours may stick anywhere within that band of it.
fn hold_checks(ours: &Trace, goal: &[f64], tip_goal: [f64; 2], exp: &Value) -> Vec<Check> {
    let band = 1.1 * Servo::STS3215.frictionloss / Servo::STS3215.kp;
    let last = ours.last_tip();
    let mut checks = vec![
        Check::new("final_tip_sag_mm", dist_mm(last, tip_goal), num(&exp["final_tip_sag_mm"]), Tol::Abs(TIP_MM)),
        Check::new("final_tip_dy_mm", (last[1] - tip_goal[1]) * 1e3, num(&exp["final_tip_dy_mm"]), Tol::Abs(TIP_MM)),
        Check::new(
            "max_tip_dev_mm",
            ours.tip.iter().map(|&p| dist_mm(p, tip_goal)).fold(0.0, f64::max),
            num(&exp["max_tip_dev_mm"]),
            Tol::Abs(TIP_MM),
        ),
    ];
    for (k, mujoco) in nums(&exp["final_sag_rad"]).into_iter().enumerate() {
        checks.push(Check::new(format!("final_sag_rad[{k}]"), ours.last_q()[k] - goal[k], mujoco, Tol::Abs(band)));
    }
    checks
}

fn two_link_hold_checks(cfg: PlantConfig) -> (Vec<Check>, Trace) {
    let file = "2r_gravity_hold.csv";
    let csv = Csv::load(file);
    let exp = expected(file);
    let goal = nums(&exp["goal"]);
    let trace = run_plant(cfg, Pose::new(goal[0], goal[1]), csv.span(), |_| None);
    (hold_checks(&trace, &goal, fk_2r(&goal), exp), trace)
}

/// The figure eight of the tracking scenarios at time `t`.
fn fig8(t: f64) -> [f64; 2] {
    use std::f64::consts::PI;
    [1.2 + 0.4 * (2.0 * PI * t / 4.0).sin(), 0.3 * (4.0 * PI * t / 4.0).sin()]
}

/// The script's closed-form IK of the 2r arm, elbow `q2 = +acos`.
fn ik_2r(p: [f64; 2]) -> Pose {
    let [x, y] = p;
    let c2 = ((x * x + y * y - 2.0) / 2.0).clamp(-1.0, 1.0);
    let q2 = c2.acos();
    Pose::new(y.atan2(x) - q2.sin().atan2(1.0 + q2.cos()), q2)
}

/// A tracking scenario on our plant `cfg` (its latency set from the file): at `t_k = k/30` s the
/// controller solves the figure eight's target at `t_k` and sends the goal; MuJoCo applies it at
/// the first physics step starting at or after `t_k + latency`. Our goal is sent at the first
/// sub-step starting at or after `t_k` with the plant's `latency_ms` (a whole number of
/// sub-steps here), so it arrives at the first sub-step starting at or after `t_k + latency`.
fn tracking_checks(file: &str, latency_ms: f64, cfg: PlantConfig) -> (Vec<Check>, Trace) {
    let csv = Csv::load(file);
    let exp = expected(file);
    assert_eq!(num(&exp["latency_s"]), latency_ms * 1e-3, "{file}");
    assert_eq!(num(&exp["controller_hz"]), 30.0, "{file}");
    let duration = csv.duration();
    let dt = tick(csv.sample());
    let mut schedule = vec![None; ticks(duration, dt) + 1];
    for k in 0..=(duration * 30.0) as usize {
        let t_k = k as f64 / 30.0;
        let n = (t_k / dt - 1e-6).ceil() as usize;
        if n < schedule.len() {
            schedule[n] = Some(ik_2r(fig8(t_k)));
        }
    }
    let cfg = PlantConfig { latency_ms, ..cfg };
    let trace = run_plant(cfg, ik_2r(fig8(0.0)), csv.span(), |n| schedule[n]);
    let target: Vec<[f64; 2]> = trace.t.iter().map(|&t| fig8(t)).collect();
    let (mean, max) = tracking_error_mm(&trace.t, &trace.tip, &target);
    let mut checks = vec![
        Check::new("mean_tip_error_mm_4_8s", mean, num(&exp["mean_tip_error_mm_4_8s"]), Tol::Rel(TRACK_REL, 0.0)),
        Check::new("max_tip_error_mm_4_8s", max, num(&exp["max_tip_error_mm_4_8s"]), Tol::Info),
    ];
    checks.extend(saturation_checks(&trace, exp));
    (checks, trace)
}

/// An so101 step on `servo`: settled 1 s on the Menagerie zero under gravity, then joint `k`'s
/// goal +0.5 rad.
fn so101_step_checks(file: &str, servo: &Servo) -> (Vec<Check>, Trace) {
    let csv = Csv::load(file);
    let exp = expected(file);
    let k = exp["stepped_joint"].as_u64().unwrap() as usize - 1;
    let q0 = [0.0; 3];
    let mut goal = q0;
    goal[k] += 0.5;
    assert_eq!(nums(&exp["goal"]), goal.to_vec(), "{file}");
    let model = so101_model(servo, true);
    let trace = run_so101(&model, q0, 1.0, goal, csv.span());
    let start = trace.q[0].clone();
    let mut checks: Vec<Check> = (0..3)
        .map(|j| Check::new(format!("q_start[{j}] (settled sag)"), start[j], num(&exp["q_start"][j]), Tol::Info))
        .collect();
    let ours = step_metrics(&trace.t, &trace.joint(k), start[k], goal[k]);
    checks.extend(stepped_checks(&format!("q{}", k + 1), ours, &exp["stepped"], csv.sample()));
    checks.extend(saturation_checks(&trace, exp));
    let tip_goal = so101_tip(&model, &goal);
    checks.push(Check::new(
        "final_tip_error_mm",
        dist_mm(so101_tip(&model, trace.last_q()), tip_goal),
        num(&exp["final_tip_error_mm"]),
        Tol::Abs(TIP_MM),
    ));
    (checks, trace)
}

/// The so101 hold, stretched forward horizontally (q = −o), with or without gravity.
fn so101_hold_checks(gravity: bool) -> (Vec<Check>, Trace) {
    let file = "so101_gravity_hold.csv";
    let csv = Csv::load(file);
    let exp = expected(file);
    let goal = so101::ZERO_OFFSETS.map(|o| -o);
    for (ours, theirs) in goal.iter().zip(nums(&exp["goal"])) {
        assert!((ours - theirs).abs() < 1e-5, "{file}: goal {goal:?}");
    }
    let model = so101_model(&Servo::STS3215, gravity);
    let trace = run_so101(&model, goal, 0.0, goal, csv.span());
    (hold_checks(&trace, &goal, so101_tip(&model, &goal), exp), trace)
}

// ---------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------

fn without_kv() -> Servo {
    Servo { kv: 0.0, ..Servo::STS3215 }
}

fn without_torque_limit() -> Servo {
    Servo { torque_limit: 1e6, ..Servo::STS3215 }
}

#[test]
fn so101_constants_are_the_traces_model() {
    let s = Servo::STS3215;
    assert_eq!(
        (s.kp, s.kv, s.torque_limit, s.damping, s.armature, s.frictionloss),
        (998.22, 2.731, 2.94, 0.60, 0.028, 0.052)
    );
    // The header's 9 significant digits.
    let csv = Csv::load("so101_step_j1.csv");
    let fmt = |v: f64| format!("{v:.8e}").parse::<f64>().unwrap().to_string();
    for (k, b) in so101::BODIES.iter().enumerate() {
        for v in [so101::LENGTHS[k], so101::ZERO_OFFSETS[k], b.mass, b.com[0], b.com[1], b.inertia] {
            let short = fmt(v);
            assert!(csv.header.contains(&short), "so101 constant {v} ({short}) not in the set-up line");
        }
    }
}

#[test]
fn metrics_of_the_mujoco_traces_reproduce_the_summary() {
    // Our metric code on MuJoCo's own samples (rounded to 6 digits) gives summary.json's numbers.
    let close = |a: f64, b: f64, floor: f64| (a - b).abs() <= (2e-3 * b.abs()).max(floor);
    for file in [
        "2r_step_j1.csv",
        "2r_step_j2.csv",
        "2r_friction.csv",
        "2r_backlash.csv",
        "so101_step_j1.csv",
        "so101_step_j2.csv",
        "so101_step_j3.csv",
    ] {
        let csv = Csv::load(file);
        let exp = expected(file);
        let k = exp["stepped_joint"].as_u64().unwrap() as usize - 1;
        let (start, goal) = (nums(&exp["q_start"]), nums(&exp["goal"]));
        let m = step_metrics(&csv.col("t"), &csv.col(&format!("q{}", k + 1)), start[k], goal[k]);
        let s = &exp["stepped"];
        assert!(close(m.rise, num(&s["rise_time_s"]), 1e-4), "{file} rise {m:?}");
        assert!(close(m.settling, num(&s["settling_time_s"]), 1e-4), "{file} settling {m:?}");
        assert!(close(m.overshoot, num(&s["overshoot_rad"]), 1e-5), "{file} overshoot {m:?}");
        assert!(close(m.final_error, num(&s["final_error_rad"]), 1e-5), "{file} final error {m:?}");
    }
    let csv = Csv::load("2r_large_move.csv");
    let exp = expected("2r_large_move.csv");
    for k in 0..2 {
        let m = step_metrics(
            &csv.col("t"),
            &csv.col(&format!("q{}", k + 1)),
            nums(&exp["q_start"])[k],
            nums(&exp["goal"])[k],
        );
        let s = &exp["stepped"][(k + 1).to_string()];
        assert!(close(m.settling, num(&s["settling_time_s"]), 1e-4), "large move {m:?}");
        assert!(close(m.overshoot, num(&s["overshoot_rad"]), 1e-5), "large move {m:?}");
    }
    for file in ["2r_track_0ms.csv", "2r_track_33ms.csv", "2r_track_133ms.csv"] {
        let csv = Csv::load(file);
        let pairs = |a: &str, b: &str| csv.col(a).into_iter().zip(csv.col(b)).map(|(x, y)| [x, y]).collect::<Vec<_>>();
        let t = csv.col("t");
        // The target columns are the figure eight at the sample time.
        for (target, &ti) in pairs("target_x", "target_y").iter().zip(&t) {
            assert!(dist_mm(*target, fig8(ti)) < 1e-2, "{file} target at {ti}");
        }
        let (mean, max) = tracking_error_mm(&t, &pairs("tip_x", "tip_y"), &pairs("target_x", "target_y"));
        let exp = expected(file);
        assert!(close(mean, num(&exp["mean_tip_error_mm_4_8s"]), 1e-2), "{file} mean {mean}");
        assert!(close(max, num(&exp["max_tip_error_mm_4_8s"]), 1e-2), "{file} max {max}");
    }
    let csv = Csv::load("2r_gravity_hold.csv");
    let n = csv.rows.len() - 1;
    let sag = dist_mm([csv.col("tip_x")[n], csv.col("tip_y")[n]], [2.0, 0.0]);
    assert!(close(sag, num(&expected("2r_gravity_hold.csv")["final_tip_sag_mm"]), 1e-2), "{sag}");
}

#[test]
fn two_link_steps_and_large_move_match_mujoco() {
    for (file, joint) in [("2r_step_j1.csv", 1), ("2r_step_j2.csv", 2)] {
        let csv = Csv::load(file);
        csv.expect_setup(TWO_LINK_SETUP);
        csv.expect_setup(&[
            "gravity off",
            "frictionloss 0.052 N m",
            "from rest at q=(0,1.5) goal (0,1.5)",
            &format!("at t=0 goal of joint {joint} steps +0.5 rad; 2 s"),
        ]);
        let (checks, trace) = two_link_step_checks(file, two_link(Servo::STS3215), false);
        write_ours(file, &trace);
        assert_matches(file, &checks);
        let (broken, _) = two_link_step_checks(file, two_link(without_kv()), false);
        assert_caught(&format!("{file}, broken: kv = 0"), &broken);
    }
    let file = "2r_large_move.csv";
    let csv = Csv::load(file);
    csv.expect_setup(TWO_LINK_SETUP);
    csv.expect_setup(&[
        "gravity off",
        "frictionloss 0.052 N m",
        "from rest at q=(0,1.5); at t=0 goal (1.0,0.5) on both joints; 3 s",
    ]);
    let (checks, trace) = two_link_step_checks(file, two_link(Servo::STS3215), false);
    write_ours(file, &trace);
    assert_matches(file, &checks);
    let (broken, _) = two_link_step_checks(file, two_link(without_torque_limit()), false);
    assert_caught(&format!("{file}, broken: torque limit 1e6 N m (ignored)"), &broken);
}

#[test]
fn two_link_gravity_hold_matches_mujoco() {
    let csv = Csv::load("2r_gravity_hold.csv");
    csv.expect_setup(TWO_LINK_SETUP);
    csv.expect_setup(&[
        "gravity ON 9.81 m/s^2 along -y",
        "frictionloss 0.052 N m",
        "from rest at q=(0,0) goal (0,0); 2 s",
    ]);
    let cfg = PlantConfig { gravity: true, ..two_link(Servo::STS3215) };
    let (checks, trace) = two_link_hold_checks(cfg);
    write_ours("2r_gravity_hold.csv", &trace);
    assert_matches("2r_gravity_hold.csv", &checks);
    assert_caught(
        "2r_gravity_hold.csv, broken: gravity off",
        &two_link_hold_checks(PlantConfig { gravity: false, ..cfg }).0,
    );
}

/// MuJoCo's friction loss is a soft constraint: the error creeps to the goal (1.5e-11 rad at
/// 3 s), where ours sticks for good once the servo's pull, `kp · error`, is within the loss. So
/// the final joint error is not compared (ours is up to `frictionloss / kp` = 0.52 mrad, MuJoCo's
/// 0); the servo's swing (settling, overshoot) and the final tip error within 0.5 mm are, and
/// ours must stop short by at most `frictionloss / kp`.
#[test]
fn two_link_friction_matches_mujoco() {
    let file = "2r_friction.csv";
    let csv = Csv::load(file);
    csv.expect_setup(TWO_LINK_SETUP);
    csv.expect_setup(&["gravity off", "frictionloss 0.52 (10x) N m", "at t=0 goal of joint 1 steps +0.2 rad; 3 s"]);
    let servo = Servo { frictionloss: FRICTION_10X, ..Servo::STS3215 };
    let (checks, trace) = two_link_step_checks(file, two_link(servo), false);
    write_ours(file, &trace);
    assert_matches(file, &checks);
    let goal = nums(&expected(file)["goal"]);
    let short = trace.last_q().iter().zip(&goal).map(|(q, g)| (g - q).abs()).fold(0.0, f64::max);
    let most = servo.frictionloss / servo.kp;
    eprintln!("   {file}: ours stops short by {short:.3e} rad (at most frictionloss/kp = {most:.3e})");
    assert!(short <= most * 1.0001, "{file}: stops short by {short} rad, more than frictionloss / kp = {most}");
    let (broken, _) = two_link_step_checks(file, two_link(Servo { kv: 0.0, ..servo }), false);
    assert_caught(&format!("{file}, broken: kv = 0"), &broken);
}

#[test]
fn two_link_tracking_matches_mujoco() {
    for (file, latency_ms) in [("2r_track_0ms.csv", 0.0), ("2r_track_33ms.csv", 33.0), ("2r_track_133ms.csv", 133.0)] {
        let csv = Csv::load(file);
        csv.expect_setup(TWO_LINK_SETUP);
        csv.expect_setup(&[
            "gravity off",
            "frictionloss 0.052 N m",
            "target x=1.2+0.4 sin(2 pi t/4) y=0.3 sin(4 pi t/4)",
            "controller 30 Hz: at t_k=k/30 closed-form IK (q2=+acos) of the target at t_k",
            &format!("goal applied at the first physics step starting at >= t_k+{} s", latency_ms * 1e-3),
            "start at rest on the t=0 goal; 8 s",
        ]);
        let (checks, trace) = tracking_checks(file, latency_ms, two_link(Servo::STS3215));
        write_ours(file, &trace);
        assert_matches(file, &checks);
        let (broken, _) = tracking_checks(file, latency_ms, two_link(without_torque_limit()));
        assert_caught(&format!("{file}, broken: torque limit 1e6 N m (ignored)"), &broken);
    }
}

#[test]
fn so101_steps_match_mujoco() {
    for (file, joint) in [("so101_step_j1.csv", 1), ("so101_step_j2.csv", 2), ("so101_step_j3.csv", 3)] {
        let csv = Csv::load(file);
        csv.expect_setup(SO101_SETUP);
        csv.expect_setup(&[
            "held pose q0=(0,0,0)",
            "settled 1 s under gravity (not recorded), t reset to 0 at the settled state",
            &format!("at t=0 goal of joint {joint} steps +0.5 rad (goal q0+0.5 e{joint}); 1.5 s"),
        ]);
        let (checks, trace) = so101_step_checks(file, &Servo::STS3215);
        write_ours(file, &trace);
        assert_matches(file, &checks);
        assert_caught(&format!("{file}, broken: kv = 0"), &so101_step_checks(file, &without_kv()).0);
    }
}

#[test]
fn so101_gravity_hold_matches_mujoco() {
    let csv = Csv::load("so101_gravity_hold.csv");
    csv.expect_setup(SO101_SETUP);
    csv.expect_setup(&["from rest at goal q=-o=(-1.32700943,1.28848144,-0.036538887)", "1.5 s"]);
    let (checks, trace) = so101_hold_checks(true);
    write_ours("so101_gravity_hold.csv", &trace);
    assert_matches("so101_gravity_hold.csv", &checks);
    assert_caught("so101_gravity_hold.csv, broken: gravity off", &so101_hold_checks(false).0);
}

/// The play hinges' stops are soft, as MuJoCo's default joint limits are (solref 0.02 s, solimp
/// 0.9-0.95): during the saturated swing the play runs past its ±0.0087 rad range (MuJoCo's to
/// 0.023 rad), and at rest it floats inside with no restoring force, so where it ends up is
/// chaotic. The servo joint is compared (settling time, overshoot, the tip of the servo angles),
/// and the widest play with MuJoCo's.
#[test]
fn two_link_backlash_matches_mujoco_at_the_servo() {
    let file = "2r_backlash.csv";
    let csv = Csv::load(file);
    csv.expect_setup(TWO_LINK_SETUP);
    csv.expect_setup(&[
        "gravity off",
        "frictionloss 0.052 N m",
        "backlash hinge after each servo joint (damping 0.01, frictionloss 0, armature 0.01, range +-0.0087267 rad",
        "at t=0 goal of joint 1 steps +0.5 rad; 2 s",
    ]);
    let cfg = PlantConfig { backlash: BACKLASH, ..two_link(Servo::STS3215) };
    let (checks, trace) = two_link_step_checks(file, cfg, true);
    write_ours(file, &trace);
    let mujoco_widest = csv.col("p1").into_iter().chain(csv.col("p2")).map(f64::abs).fold(0.0, f64::max);
    eprintln!(
        "   {file}: widest play ours {:.4e} rad, MuJoCo {mujoco_widest:.4e} rad, range ±{BACKLASH}",
        trace.widest_play
    );
    let widest = (trace.widest_play - mujoco_widest).abs() / mujoco_widest;
    assert!(widest <= 0.10, "widest play ours {} against MuJoCo's {mujoco_widest}", trace.widest_play);
    let (broken, _) = two_link_step_checks(file, PlantConfig { servo: without_kv(), ..cfg }, true);
    assert_caught(&format!("{file}, broken: kv = 0"), &broken);
    assert_matches(file, &checks);
}

// ---------------------------------------------------------------------------------------------
// A chain with a rail: `reference/mujoco_rail.py`, replayed on `Plant::chain`
// ---------------------------------------------------------------------------------------------

/// The rail3 files' set-up, as their `# ` line states it (`RAIL_SERVO`, the carriage, the rods).
const RAIL3_SETUP: &[&str] = &[
    "rail kp 20000 kv 150 force +-40 damping 20 armature 0.5 carriage 0.3 kg",
    "links l=[0.5,0.5,1] rods 0.05 kg/m",
    "sts3215 without friction",
    "gravity ON 9.81",
    "timestep 0.0002 s",
];

/// The rail3 arm as our plant builds it, with `rail` as its rail's servo, under gravity on the
/// STS3215 without friction.
fn rail3_plant(rail: Servo, gravity: bool, x0: &[f64]) -> Plant {
    use elbow::plant::{RAIL_CARRIAGE_MASS, RAIL_SERVO, RealChain};
    let chain = elbow::arm::ArmKind::Rail3.arm().chain;
    let real = RealChain::rods(chain);
    assert_eq!((real.rail_servo, real.carriage_mass), (RAIL_SERVO, RAIL_CARRIAGE_MASS));
    let real = RealChain { rail_servo: rail, ..real };
    let cfg = PlantConfig { gravity, ..PlantConfig::ideal(TwoLinkArm::default()) };
    Plant::new(real, cfg, x0)
}

/// Our trace of the rail3 plant from rest at `x0` (goal there), the goal `goal` from t = 0.
fn run_rail3(mut plant: Plant, goal: &[f64], duration: f64) -> Trace {
    plant.command(goal);
    let dt = tick(SAMPLE);
    let (n_end, stride) = (ticks(duration, dt), stride(SAMPLE));
    let mut trace = Trace { sample: SAMPLE, ..Trace::default() };
    for n in 0..=n_end {
        if n % stride == 0 {
            trace.t.push(n as f64 * dt);
            trace.q.push(plant.link()[..4].to_vec());
            trace.tip.push(xy(plant.tip()));
        }
        if n < n_end {
            plant.step(dt);
        }
    }
    trace
}

/// The rail3 step on our plant (rail servo `rail`): the rail's and joint 2's settling time and
/// overshoot, the final tip, and the tip all along, against MuJoCo's trace.
fn rail3_step_checks(rail: Servo) -> Vec<Check> {
    let file = "rail3_step.csv";
    let csv = Csv::load(file);
    csv.expect_setup(RAIL3_SETUP);
    let (x0, goal) = ([0.0, 0.3, 0.6, -0.4], [0.2, 0.3, 1.1, -0.4]);
    csv.expect_setup(&["x0=(0,0.3,0.6,-0.4)", "goal (0.2,0.3,1.1,-0.4)"]);
    let ours = run_rail3(rail3_plant(rail, true, &x0), &goal, csv.duration());
    assert_eq!(ours.t.len(), csv.rows.len(), "{file}: sample count");
    let mut checks = Vec::new();
    for (k, name) in [(0, "x1"), (2, "x3")] {
        let theirs = step_metrics(&csv.col("t"), &csv.col(name), x0[k], goal[k]);
        let mine = step_metrics(&ours.t, &ours.joint(k), x0[k], goal[k]);
        checks.push(Check::new(
            format!("{name} settling_time_s"),
            mine.settling,
            theirs.settling,
            Tol::Rel(REL, SETTLING_FLOOR),
        ));
        // The rail's overshoot is a position: judged as the tip is, within 0.5 mm. It is the one
        // metric here that feels the step: MuJoCo itself gives 6.71 mm at our 1 ms sub-step
        // against 6.37 mm at its 0.2 ms.
        let tol = if k == 0 { Tol::Abs(TIP_MM * 1e-3) } else { Tol::Rel(REL, OVERSHOOT_FLOOR) };
        checks.push(Check::new(format!("{name} overshoot"), mine.overshoot, theirs.overshoot, tol));
        checks.push(Check::new(format!("{name} rise_time_s"), mine.rise, theirs.rise, Tol::Info));
    }
    let (tx, ty) = (csv.col("tip_x"), csv.col("tip_y"));
    let last = csv.rows.len() - 1;
    checks.push(Check::new("final tip x (mm)", ours.last_tip()[0] * 1e3, tx[last] * 1e3, Tol::Abs(TIP_MM)));
    checks.push(Check::new("final tip y (mm)", ours.last_tip()[1] * 1e3, ty[last] * 1e3, Tol::Abs(TIP_MM)));
    let apart = (0..ours.tip.len()).map(|i| dist_mm(ours.tip[i], [tx[i], ty[i]])).fold(0.0, f64::max);
    checks.push(Check::new("largest tip gap between the traces (mm)", apart, 0.0, Tol::Info));
    checks
}

/// The rail3 hold at x = 0 under gravity (or, broken, without): the carriage's sag and each
/// joint's, and the tip's, against MuJoCo's.
fn rail3_hold_checks(gravity: bool) -> Vec<Check> {
    let file = "rail3_gravity_hold.csv";
    let csv = Csv::load(file);
    csv.expect_setup(RAIL3_SETUP);
    let x0 = [0.0; 4];
    let ours = run_rail3(rail3_plant(elbow::plant::RAIL_SERVO, gravity, &x0), &x0, csv.duration());
    let last = csv.rows.len() - 1;
    let mut checks =
        vec![Check::new("rail sag (mm)", -ours.last_q()[0] * 1e3, -csv.col("x1")[last] * 1e3, Tol::Abs(0.01))];
    for (k, name) in ["x2", "x3", "x4"].iter().enumerate() {
        // The frictionless servos settle on the pure spring sag: within 2 % of MuJoCo's.
        let theirs = csv.col(name)[last];
        checks.push(Check::new(format!("{name} sag (rad)"), ours.last_q()[k + 1], theirs, Tol::Rel(0.02, 1e-6)));
    }
    let ty = csv.col("tip_y")[last];
    checks.push(Check::new("final tip y (mm)", ours.last_tip()[1] * 1e3, ty * 1e3, Tol::Abs(TIP_MM)));
    checks
}

#[test]
fn a_chain_on_a_rail_matches_mujoco() {
    assert_matches("rail3 step (ours vs MuJoCo)", &rail3_step_checks(elbow::plant::RAIL_SERVO));
    assert_matches("rail3 gravity hold (ours vs MuJoCo)", &rail3_hold_checks(true));
    // Broken: the rail servo without its velocity gain rings; without gravity nothing sags.
    let no_kv = Servo { kv: 0.0, ..elbow::plant::RAIL_SERVO };
    assert_caught("rail3 step, rail kv = 0", &rail3_step_checks(no_kv));
    assert_caught("rail3 hold, gravity off", &rail3_hold_checks(false));
}

// ---------------------------------------------------------------------------------------------
// Stiff servos: `reference/mujoco_stiff.py`, far stiffer than the 1 ms step, which our plant
// splits into sub-steps (`Multibody::splits`)
// ---------------------------------------------------------------------------------------------

/// The servo of issue 48, `--kp 1e6 --torque-limit 1e4` on the command line's body (the STS3215
/// without friction otherwise): six times stiffer than a 1 ms explicit step resolves, and almost
/// undamped.
const ISSUE_SERVO: Servo =
    Servo { kp: 1e6, kv: 2.731, torque_limit: 1e4, damping: 0.60, armature: 0.028, frictionloss: 0.0 };
/// The same with a stiff industrial drive's velocity gain.
const INDUSTRIAL_SERVO: Servo = Servo { kv: 400.0, ..ISSUE_SERVO };

/// Every stiff file's set-up, as its `# ` line states it (and its servo's, below).
const STIFF_SETUP: &[&str] = &["timestep 1e-05 s", "integrator implicitfast"];
const TWO_LINK_ARM: &str =
    "2r arm l=[1,1] m=[0.05,0.05] com=[(0.5,0),(0.5,0)] izz=[0.00416666667,0.00416666667] o=[0,0]; gravity off";
const ISSUE_SETUP: &str = "issue servo: servo kp 1e+06 N m/rad kv 2.731 N m s/rad forcerange +-10000 N m damping 0.6 N m s/rad armature 0.028 kg m^2 frictionloss 0 N m";
const INDUSTRIAL_SETUP: &str = "industrial servo: servo kp 1e+06 N m/rad kv 400 N m s/rad forcerange +-10000 N m damping 0.6 N m s/rad armature 0.028 kg m^2 frictionloss 0 N m";

/// The industrial servo with the issue's velocity gain: it rings where the industrial one is
/// damped.
fn issue_kv() -> Servo {
    Servo { kv: ISSUE_SERVO.kv, ..INDUSTRIAL_SERVO }
}

#[test]
fn two_link_steps_on_a_stiff_servo_match_mujoco() {
    for (file, setup) in [
        ("2r_stiff_step_j1.csv", "at t=0 goal of joint 1 steps +0.5 rad; 1 s"),
        ("2r_stiff_large_move.csv", "at t=0 goal (1.0,0.5) on both joints; 1 s"),
        ("2r_stiff_backlash.csv", "backlash hinge after each servo joint (damping 0.01, frictionloss 0, armature 0.01"),
    ] {
        let csv = Csv::load(file);
        csv.expect_setup(STIFF_SETUP);
        csv.expect_setup(&[TWO_LINK_ARM, INDUSTRIAL_SETUP, setup, "samples every 0.001 s"]);
        let backlash = if file.contains("backlash") { BACKLASH } else { 0.0 };
        let cfg = PlantConfig { backlash, ..two_link(INDUSTRIAL_SERVO) };
        let (checks, trace) = two_link_step_checks(file, cfg, backlash > 0.0);
        write_ours(file, &trace);
        assert_matches(file, &checks);
        let broken = PlantConfig { servo: issue_kv(), ..cfg };
        assert_caught(&format!("{file}, broken: kv = 2.731"), &two_link_step_checks(file, broken, backlash > 0.0).0);
    }
}

/// The time at the torque limit is printed, not judged: each 30 Hz goal jump saturates the
/// industrial servo for about 0.16 ms (MuJoCo: 0.039 s over 240 jumps), and ours is counted per
/// replay tick (the plant's sub-step) from the state at its start (the replay sees no finer), so
/// it reads a whole tick a jump.
/// The largest tip error is judged instead, within 10 % (MuJoCo's own moves under 0.01 % between
/// timesteps): at 133 ms the latency dominates the mean error, not the servo.
#[test]
fn two_link_tracking_on_a_stiff_servo_matches_mujoco() {
    let stiff_tolerances = |checks: Vec<Check>| -> Vec<Check> {
        let retol = |c: Check| match c.metric.as_str() {
            m if m.starts_with("saturated_time_s") => Check { tol: Tol::Info, ..c },
            "max_tip_error_mm_4_8s" => Check { tol: Tol::Rel(REL, 0.0), ..c },
            _ => c,
        };
        checks.into_iter().map(retol).collect()
    };
    for (file, latency_ms) in [("2r_stiff_track_0ms.csv", 0.0), ("2r_stiff_track_133ms.csv", 133.0)] {
        let csv = Csv::load(file);
        csv.expect_setup(STIFF_SETUP);
        csv.expect_setup(&[
            TWO_LINK_ARM,
            INDUSTRIAL_SETUP,
            &format!("goal applied at the first physics step starting at >= t_k+{} s", latency_ms * 1e-3),
        ]);
        let (checks, trace) = tracking_checks(file, latency_ms, two_link(INDUSTRIAL_SERVO));
        write_ours(file, &trace);
        assert_matches(file, &stiff_tolerances(checks));
        let (broken, _) = tracking_checks(file, latency_ms, two_link(issue_kv()));
        assert_caught(&format!("{file}, broken: kv = 2.731"), &stiff_tolerances(broken));
    }
}

#[test]
fn so101_step_on_a_stiff_servo_matches_mujoco() {
    let file = "so101_stiff_step_j2.csv";
    let csv = Csv::load(file);
    csv.expect_setup(STIFF_SETUP);
    csv.expect_setup(&[
        INDUSTRIAL_SETUP,
        "gravity ON 9.81 m/s^2 along -y",
        "settled 1 s under gravity (not recorded)",
        "at t=0 goal of joint 2 steps +0.5 rad; 1 s",
    ]);
    let (checks, trace) = so101_step_checks(file, &INDUSTRIAL_SERVO);
    write_ours(file, &trace);
    assert_matches(file, &checks);
    assert_caught(&format!("{file}, broken: kv = 2.731"), &so101_step_checks(file, &issue_kv()).0);
}

/// The issue's servo is a relay oscillator on the figure eight (each 30 Hz goal jump leaves its
/// 0.01 rad linear band), and chaotic: MuJoCo's own mean error moves 12 % between timesteps of
/// 1e-5 and 2e-5 s. So only the mean error is judged, within twice the tracking tolerance, and
/// every sample must be finite.
#[test]
fn the_issues_servo_tracks_finitely_and_rings_as_mujoco_does() {
    let file = "2r_issue_track_0ms.csv";
    let csv = Csv::load(file);
    csv.expect_setup(STIFF_SETUP);
    csv.expect_setup(&[TWO_LINK_ARM, ISSUE_SETUP]);
    let (checks, trace) = tracking_checks(file, 0.0, two_link(ISSUE_SERVO));
    write_ours(file, &trace);
    assert!(trace.q.iter().flatten().chain(trace.tip.iter().flatten()).all(|v| v.is_finite()));
    let mean = checks.iter().find(|c| c.metric == "mean_tip_error_mm_4_8s").expect("the mean error");
    let loose = Check { tol: Tol::Rel(2.0 * TRACK_REL, 0.0), ..mean.clone() };
    assert_matches(file, &[loose]);
}
