#!/usr/bin/env python3
"""MuJoCo reference traces for Elbow's plant on stiff servos, far stiffer than its 1 ms step.

Writes tests/data/mujoco/*_stiff_*.csv and stiff_summary.json, which `tests/plant_vs_mujoco.rs`
replays on our plant. The models are those of `mujoco_plant.py` (the 2r arm, the so101 pitch
chain, the backlash hinge) on two servos much stiffer than the SO-101's STS3215:

  issue:      the servo of issue 48, `--kp 1e6 --torque-limit 1e4` on the command line's body (the
              STS3215 without friction otherwise): kp 1e6 N m/rad, kv 2.731 N m s/rad, forcerange
              +-1e4 N m, damping 0.60 N m s/rad, armature 0.028 kg m^2, frictionloss 0. Its
              natural frequency on the armature alone is sqrt(kp / armature) = 6000 rad/s, six
              times what a 1 ms explicit step resolves, and almost undamped (ratio 0.01).
  industrial: the same with kv 400 N m s/rad, a stiff industrial drive's velocity loop (damping
              ratio about 0.6 on the 2r arm's shoulder).

The issue's servo is a relay oscillator: a 0.5 rad step crosses its 0.01 rad linear band at
290 rad/s and swings on past the goal, and the figure eight's 30 Hz goal jumps (about 0.02 rad)
leave the band too. Its traces are chaotic: 2r_issue_track_0ms's mean tip error moves 12 % at
2e-5 s and its largest 13 % at 5e-6 s. So the steps and two tracking runs are on the industrial
servo, whose traces converge, and 2r_issue_track_0ms is kept to show what the issue's servo does
(only its mean error, a time average, is compared, loosely).

Timestep 1e-5 s (sqrt(kp / armature) * dt = 0.06), integrator implicitfast, samples every 1 ms
(steps) or 5 ms (tracking).
Every scenario is rerun at 2e-5 s and 5e-6 s and the largest differences go into
stiff_summary.json's `timestep_check`.

Usage:  python3 reference/mujoco_stiff.py [--out tests/data/mujoco] [--no-dt-check]
"""

import argparse
import json
import math
import os
import sys

import mujoco
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mujoco_plant as mp  # noqa: E402

DT = 1e-5
DT_CHECKS = (2e-5, 5e-6)
# The steps are sampled every 1 ms (our plant's step), not 5 ms: these servos settle within a few
# ms. The tracking runs keep 5 ms (their metric is a mean over 4 s).
STEP_SAMPLE = 0.001
TRACK_SAMPLE = 0.005
ISSUE = dict(damping=0.60, frictionloss=0.0, armature=0.028, kp=1e6, kv=2.731, fmax=1e4)
INDUSTRIAL = dict(ISSUE, kv=400.0)


def servo_text(s):
    return ("servo kp %g N m/rad kv %g N m s/rad forcerange +-%g N m damping %g N m s/rad armature %g kg m^2 "
            "frictionloss %g N m" % (s["kp"], s["kv"], s["fmax"], s["damping"], s["armature"], s["frictionloss"]))


def step(arm, servo, q0, joint_goal, duration, gravity=False, backlash=False, settle=0.0, dt=DT):
    mp.SAMPLE = STEP_SAMPLE
    pl = mp.Plant(arm, dt=dt, gravity=gravity, backlash=backlash, servo=servo, frictionloss=servo["frictionloss"])
    pl.reset(q0, q0)
    if settle > 0:
        mp.run(pl, settle)
    goal = np.array(joint_goal, dtype=float)
    qs = pl.q()
    rows, sat = mp.run(pl, duration, {0: goal})
    t, Q = rows[:, 0], rows[:, 1:1 + arm.n]
    moved = [k for k in range(arm.n) if goal[k] != q0[k]]
    met = {"arm": arm.name, "goal": list(goal), "q_start": list(qs)}
    if len(moved) == 1:
        met["stepped_joint"] = moved[0] + 1
        met["stepped"] = mp.step_metrics(t, Q[:, moved[0]], qs[moved[0]], goal[moved[0]])
    else:
        met["stepped"] = {str(k + 1): mp.step_metrics(t, Q[:, k], qs[k], goal[k]) for k in moved}
    met.update({"final_error_rad": [float(v) for v in goal - Q[-1]],
           "final_tip_error_mm": mp.tip_err_mm(arm, Q[-1], goal),
           "saturated_time_s": [float(v) * pl.dt for v in sat]})
    if backlash:
        P = rows[:, 1 + arm.n:1 + 2 * arm.n]
        met["play_min_max_rad"] = [[float(P[:, k].min()), float(P[:, k].max())] for k in range(arm.n)]
    return rows, met


def track(servo, latency, duration=8.0, dt=DT):
    mp.SAMPLE = TRACK_SAMPLE
    pl = mp.Plant(mp.ARM_2R, dt=dt, servo=servo, frictionloss=servo["frictionloss"])
    g0 = mp.ik_2r(mp.fig8(0.0))
    pl.reset(g0, g0)
    schedule = {}
    for k in range(int(duration * 30) + 1):
        tk = k / 30.0
        n = int(math.ceil((tk + latency) / dt - 1e-6))
        if n * dt < duration:
            schedule[n] = mp.ik_2r(mp.fig8(tk))
    rows, sat = mp.run(pl, duration, schedule, target=mp.fig8)
    t = rows[:, 0]
    e = np.linalg.norm(rows[:, 3:5] - rows[:, 5:7], axis=1)
    w = (t >= 4.0 - 1e-9) & (t <= 8.0 + 1e-9)
    return rows, {"arm": "2r", "latency_s": latency, "controller_hz": 30,
                  "mean_tip_error_mm_4_8s": float(e[w].mean() * 1e3),
                  "max_tip_error_mm_4_8s": float(e[w].max() * 1e3),
                  "saturated_time_s": [float(v) * pl.dt for v in sat]}


def scenarios(dt):
    """Yields (file name, description, column names, rows, metrics)."""
    q0 = mp.Q0_2R
    base2 = "2r arm " + mp.ARM_2R.describe() + "; gravity off"
    for servo, kind, lat, name in ((INDUSTRIAL, "industrial", 0.0, "stiff_track_0ms"),
                                   (INDUSTRIAL, "industrial", 0.133, "stiff_track_133ms"),
                                   (ISSUE, "issue", 0.0, "issue_track_0ms")):
        rows, met = track(servo, lat, dt=dt)
        yield ("2r_%s.csv" % name,
               "%s; %s servo: %s; target x=1.2+0.4 sin(2 pi t/4) y=0.3 sin(4 pi t/4); controller 30 Hz: at t_k=k/30 "
               "closed-form IK (q2=+acos) of the target at t_k, goal applied at the first physics step starting at "
               ">= t_k+%g s; start at rest on the t=0 goal; 8 s" % (base2, kind, servo_text(servo), lat),
               ["q1", "q2", "target_x", "target_y"], rows, met)
    rows, met = step(mp.ARM_2R, INDUSTRIAL, q0, [0.5, 1.5], 1.0, dt=dt)
    yield ("2r_stiff_step_j1.csv",
           "%s; industrial servo: %s; from rest at q=(0,1.5) goal (0,1.5); at t=0 goal of joint 1 steps +0.5 rad; 1 s"
           % (base2, servo_text(INDUSTRIAL)), ["q1", "q2"], rows, met)
    rows, met = step(mp.ARM_2R, INDUSTRIAL, q0, [1.0, 0.5], 1.0, dt=dt)
    yield ("2r_stiff_large_move.csv",
           "%s; industrial servo: %s; from rest at q=(0,1.5); at t=0 goal (1.0,0.5) on both joints; 1 s"
           % (base2, servo_text(INDUSTRIAL)), ["q1", "q2"], rows, met)
    rows, met = step(mp.ARM_2R, INDUSTRIAL, q0, [0.5, 1.5], 1.0, backlash=True, dt=dt)
    yield ("2r_stiff_backlash.csv",
           "%s; industrial servo: %s; backlash hinge after each servo joint (damping 0.01, frictionloss 0, armature "
           "0.01, range +-0.0087267 rad, MuJoCo default limit solref/solimp; servo side massless); p1,p2 = play angles; "
           "from rest at q=(0,1.5) p=0 goal (0,1.5); at t=0 goal of joint 1 steps +0.5 rad; 1 s"
           % (base2, servo_text(INDUSTRIAL)), ["q1", "q2", "p1", "p2"], rows, met)
    rows, met = step(mp.SO101, INDUSTRIAL, mp.Q0_SO101, [0.0, 0.5, 0.0], 1.0, gravity=True, settle=1.0, dt=dt)
    yield ("so101_stiff_step_j2.csv",
           "so101 arm (reference/so101.md) %s; gravity ON 9.81 m/s^2 along -y; industrial servo: %s; held pose "
           "q0=(0,0,0) from rest with goal q0, settled 1 s under gravity (not recorded), t reset to 0 at the settled "
           "state; at t=0 goal of joint 2 steps +0.5 rad; 1 s" % (mp.SO101.describe(), servo_text(INDUSTRIAL)),
           ["q1", "q2", "q3"], rows, met)


def write_csv(path, desc, cols, rows):
    sample = rows[1][0] - rows[0][0]
    with open(path, "w") as f:
        f.write("# %s; MuJoCo %s; timestep %g s; integrator implicitfast; samples every %g s\n"
                % (desc, mujoco.__version__, DT, round(sample, 9)))
        f.write(",".join(["t"] + mp.order_cols(cols)) + "\n")
        for r in rows:
            f.write(",".join("%.6g" % v for v in r) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "data", "mujoco"))
    ap.add_argument("--no-dt-check", action="store_true", help="skip the 2e-5 s and 5e-6 s convergence runs")
    args = ap.parse_args()
    print("MuJoCo", mujoco.__version__)
    os.makedirs(args.out, exist_ok=True)
    summary = {"mujoco_version": mujoco.__version__, "timestep_s": DT, "integrator": "implicitfast",
               "sample_period_s": {"steps": STEP_SAMPLE, "tracking": TRACK_SAMPLE}, "servos": {"issue": ISSUE, "industrial": INDUSTRIAL},
               "definitions": "as summary.json's; saturated_time_s: physics time at |force| = the servo's forcerange",
               "files": {}}
    for fname, desc, cols, rows, met in scenarios(DT):
        write_csv(os.path.join(args.out, fname), desc, cols, rows)
        summary["files"][fname] = met
        print("%-26s %s" % (fname, mp.brief(met)))
    if not args.no_dt_check:
        summary["timestep_check"] = {
            "what": "every scenario rerun at another timestep; per file the largest relative metric difference "
                    "(as summary.json's) and the largest |difference| of the CSV columns"}
        for dtc in DT_CHECKS:
            check = {}
            for (fname, _, _, rows_b, met_b), m_a in zip(scenarios(dtc), summary["files"].values()):
                rows_a = np.loadtxt(os.path.join(args.out, fname), delimiter=",", skiprows=2)
                dq = float(np.max(np.abs(rows_a[:, 1:] - rows_b[:, 1:])))
                req = mp.compare_metrics(m_a, met_b, exclude=mp.AUX_METRICS)
                anym = mp.compare_metrics(m_a, met_b)
                check[fname] = {"requested": {"max_rel_diff": req[0], "metric": req[1]},
                                "all": {"max_rel_diff": anym[0], "metric": anym[1]},
                                "max_abs_column_diff": dq}
                print("dt %g vs %g  %-26s requested metrics max rel diff %.3g%% (%s); all %.3g%% (%s); "
                      "max |column diff| %.2e" % (dtc, DT, fname, 100 * req[0], req[1], 100 * anym[0], anym[1], dq))
            summary["timestep_check"]["%g" % dtc] = check
    with open(os.path.join(args.out, "stiff_summary.json"), "w") as f:
        json.dump(mp.round_floats(summary), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
