#!/usr/bin/env python3
"""MuJoCo reference traces for Elbow's planar-arm plant.

Simulates our planar serial arms in MuJoCo and writes the CSV traces and summary.json under
tests/data/mujoco/ that the Rust tests compare our own plant against.

Servo parameters: MuJoCo Menagerie, robotstudio_so101/so101.xml at commit
191a7ba5e6d5ca0af05303bf725a644bcceffb0c (https://github.com/google-deepmind/mujoco_menagerie):
  class sts3215:  joint damping 0.60 N m s/rad, frictionloss 0.052 N m, armature 0.028 kg m^2;
                  position actuator kp 998.22 N m/rad, kv 2.731 N m s/rad, forcerange +-2.94 N m
  class backlash: joint damping 0.01, frictionloss 0, armature 0.01, range +-0.0087267 rad (0.5 deg)
The "so101" arm is the pitch chain (shoulder_lift -> elbow_flex -> wrist_flex -> gripperframe site)
of that same file, derived as described in reference/so101.md; `--menagerie PATH/so101.xml`
re-derives it from a local copy of the file (not part of this repository) and checks it.

Model (our plant implements exactly this): plane x-y, every hinge axis +z, gravity (when on) -y.
Link k has length l_k along its own x axis, mass m_k, COM (cx_k, cy_k) in the link frame and
rotational inertia i_k about z at the COM. Link k's frame is rotated by o_k + q_k relative to
link k-1's (link 0: the world, joint 1 at the origin). One position actuator per servo joint,
control unlimited. Integrator implicitfast, timestep 0.0002 s, samples every 5 ms.

Usage:  python3 reference/mujoco_plant.py [--out tests/data/mujoco] [--menagerie so101.xml]
                                           [--no-dt-check]
"""

import argparse
import json
import math
import os
import sys
import xml.etree.ElementTree as ET

import mujoco
import numpy as np

DT = 0.0002            # s, physics timestep of the reference traces
DT_CHECKS = (0.001, 0.0001)  # s, timesteps of the convergence check
SAMPLE = 0.005         # s, sampling period of the CSV files
STS3215 = dict(damping=0.60, frictionloss=0.052, armature=0.028, kp=998.22, kv=2.731, fmax=2.94)
BACKLASH = dict(damping=0.01, frictionloss=0.0, armature=0.01, range=0.0087267)
MENAGERIE = "MuJoCo Menagerie robotstudio_so101/so101.xml @ 191a7ba5e6d5ca0af05303bf725a644bcceffb0c"
GRAVITY = 9.81


class Arm:
    def __init__(self, name, lengths, masses, coms, izz, offsets, ranges=None):
        self.name, self.l, self.m = name, list(lengths), list(masses)
        self.com, self.izz, self.o = [tuple(c) for c in coms], list(izz), list(offsets)
        self.ranges = ranges
        self.n = len(self.l)

    def fk(self, q):
        """Tip (x, y) of the planar chain at our joint angles q."""
        x = y = th = 0.0
        for k in range(self.n):
            th += self.o[k] + q[k]
            x += self.l[k] * math.cos(th)
            y += self.l[k] * math.sin(th)
        return np.array([x, y])

    def describe(self):
        f = lambda v: "[" + ",".join("%.9g" % x for x in v) + "]"
        return ("l=%s m=%s com=%s izz=%s o=%s" %
                (f(self.l), f(self.m), "[" + ",".join("(%.9g,%.9g)" % c for c in self.com) + "]",
                 f(self.izz), f(self.o)))


ARM_2R = Arm("2r", [1.0, 1.0], [0.05, 0.05], [(0.5, 0.0), (0.5, 0.0)],
             [0.05 / 12, 0.05 / 12], [0.0, 0.0])

# Derived from the Menagerie XML (see reference/so101.md; `--menagerie` re-derives and compares).
SO101 = Arm(
    "so101",
    lengths=[0.11600002112068772, 0.13500018518505813, 0.15967668078285321],
    masses=[0.103, 0.104, 0.19],
    coms=[(0.08921354229093649, 0.013553051497846814), (0.09812216732770915, -0.0005361131905174065),
          (0.06887990035401562, -0.00379849483320408)],
    izz=[0.0001424870000000011, 0.00014529000000000115, 0.0002092675517286675],
    offsets=[1.3270094336148002, -1.2884814367726616, 0.03653888702119626],
    ranges=[(-1.7453293, 1.7453293), (-1.69, 1.69), (-1.658063, 1.658063)],
)


# ----------------------------------------------------------------------------------------------
# MJCF of our planar plant
# ----------------------------------------------------------------------------------------------

def quat_z(a):
    return "%.17g 0 0 %.17g" % (math.cos(a / 2), math.sin(a / 2))


def plant_xml(arm, gravity=False, dt=DT, frictionloss=STS3215["frictionloss"], backlash=False, servo=None):
    s = servo or STS3215
    g = -GRAVITY if gravity else 0.0
    bodies, close = [], []
    for k in range(arm.n):
        pos = "0 0 0" if k == 0 else "%.17g 0 0" % arm.l[k - 1]
        cx, cy = arm.com[k]
        i = arm.izz[k]
        joints = ('<joint name="j%d" type="hinge" axis="0 0 1" damping="%g" frictionloss="%.17g" '
                  'armature="%g"/>' % (k + 1, s["damping"], frictionloss, s["armature"]))
        if backlash:
            # The play hinge shares the link body with the servo hinge: the servo side is massless.
            b = BACKLASH
            joints += ('<joint name="p%d" type="hinge" axis="0 0 1" damping="%g" frictionloss="%g" '
                       'armature="%g" limited="true" range="%.17g %.17g"/>'
                       % (k + 1, b["damping"], b["frictionloss"], b["armature"], -b["range"], b["range"]))
        bodies.append('<body name="link%d" pos="%s" quat="%s">%s'
                      '<inertial pos="%.17g %.17g 0" mass="%.17g" diaginertia="1e-9 %.17g %.17g"/>'
                      % (k + 1, pos, quat_z(arm.o[k]), joints, cx, cy, arm.m[k], i, i))
        close.append("</body>")
    bodies.append('<site name="tip" pos="%.17g 0 0"/>' % arm.l[-1])
    acts = "".join('<position name="a%d" joint="j%d" kp="%g" kv="%g" ctrllimited="false" '
                   'forcelimited="true" forcerange="%g %g"/>'
                   % (k + 1, k + 1, s["kp"], s["kv"], -s["fmax"], s["fmax"]) for k in range(arm.n))
    return ('<mujoco model="elbow_%s"><compiler angle="radian" autolimits="false"/>'
            '<option timestep="%.17g" integrator="implicitfast" gravity="0 %g 0"/>'
            '<worldbody>%s%s</worldbody><actuator>%s</actuator></mujoco>'
            % (arm.name, dt, g, "".join(bodies), "".join(close), acts))


class Plant:
    def __init__(self, arm, dt=DT, **kw):
        self.arm, self.dt = arm, dt
        self.backlash = kw.get("backlash", False)
        self.fmax = (kw.get("servo") or STS3215)["fmax"]
        self.m = mujoco.MjModel.from_xml_string(plant_xml(arm, dt=dt, **kw))
        self.d = mujoco.MjData(self.m)
        self.qadr = [self.m.jnt_qposadr[self.m.joint("j%d" % (k + 1)).id] for k in range(arm.n)]
        self.padr = ([self.m.jnt_qposadr[self.m.joint("p%d" % (k + 1)).id] for k in range(arm.n)]
                     if self.backlash else [])
        self.tip = self.m.site("tip").id

    def reset(self, q, goal):
        mujoco.mj_resetData(self.m, self.d)
        self.d.qpos[self.qadr] = q
        self.d.ctrl[:] = goal
        mujoco.mj_forward(self.m, self.d)

    def q(self):
        return self.d.qpos[self.qadr].copy()

    def p(self):
        return self.d.qpos[self.padr].copy()

    def tip_xy(self):
        mujoco.mj_kinematics(self.m, self.d)
        return self.d.site_xpos[self.tip][:2].copy()


def run(plant, duration, goal_at_step=None, target=None):
    """Steps `duration` s from the current state; returns 5 ms samples (t from 0) and the number of
    physics steps each actuator spent at its force limit. goal_at_step: {step index: goal}, the goal
    is written to ctrl before the physics step with that index (start time index*dt)."""
    stride = int(round(SAMPLE / plant.dt))
    nsteps = int(round(duration / plant.dt))
    rows, sat = [], np.zeros(plant.arm.n, dtype=int)
    for n in range(nsteps + 1):
        t = n * plant.dt
        if n % stride == 0:
            row = [t] + list(plant.q()) + list(plant.p()) + list(plant.tip_xy())
            if target is not None:
                row += list(target(t))
            rows.append(row)
        if n == nsteps:
            break
        if goal_at_step and n in goal_at_step:
            plant.d.ctrl[:] = goal_at_step[n]
        mujoco.mj_step(plant.m, plant.d)
        sat += np.abs(plant.d.actuator_force) >= plant.fmax - 1e-9
    return np.array(rows), sat


# ----------------------------------------------------------------------------------------------
# Metrics (computed on the 5 ms samples that go into the CSV; crossing times interpolated)
# ----------------------------------------------------------------------------------------------

def crossing(t, x, i):
    """Linear interpolation of the time between samples i and i+1 where x crosses 0."""
    if i + 1 >= len(t) or x[i] == x[i + 1]:
        return float(t[i])
    return float(t[i] + (t[i + 1] - t[i]) * x[i] / (x[i] - x[i + 1]))


def step_metrics(t, q, q_start, goal):
    """q_start: the joint's value at the step (t = 0); goal: the new goal."""
    step = goal - q_start
    sgn = 1.0 if step >= 0 else -1.0
    prog = (q - q_start) / step                       # 0 -> 1
    out = {"step_rad": step}
    for frac, key in ((0.1, "t10_s"), (0.9, "t90_s")):
        idx = np.nonzero(prog >= frac)[0]
        out[key] = crossing(t, prog - frac, idx[0] - 1) if len(idx) and idx[0] > 0 else (0.0 if len(idx) else None)
    out["rise_time_s"] = (out["t90_s"] - out["t10_s"]) if out["t90_s"] is not None else None
    band = 0.02 * abs(step)
    err = np.abs(q - goal) - band
    outside = np.nonzero(err > 0)[0]
    out["settling_time_s"] = 0.0 if len(outside) == 0 else (
        None if outside[-1] == len(t) - 1 else crossing(t, err, outside[-1]))
    out["overshoot_rad"] = max(0.0, float(np.max(sgn * (q - goal))))
    out["final_error_rad"] = float(goal - q[-1])
    return out


def tip_err_mm(arm, q, goal):
    return float(np.linalg.norm(arm.fk(q) - arm.fk(goal)) * 1e3)


# ----------------------------------------------------------------------------------------------
# Scenarios
# ----------------------------------------------------------------------------------------------

Q0_2R = np.array([0.0, 1.5])
Q0_SO101 = np.array([0.0, 0.0, 0.0])        # Menagerie shoulder_lift = elbow_flex = wrist_flex = 0


def stretched_so101():
    q = -np.array(SO101.o)
    return np.array([min(max(v, lo), hi) for v, (lo, hi) in zip(q, SO101.ranges)])


def fig8(t):
    return np.array([1.2 + 0.4 * math.sin(2 * math.pi * t / 4), 0.3 * math.sin(4 * math.pi * t / 4)])


def ik_2r(p, l1=1.0, l2=1.0):
    x, y = p
    c2 = (x * x + y * y - l1 * l1 - l2 * l2) / (2 * l1 * l2)
    q2 = math.acos(min(1.0, max(-1.0, c2)))
    q1 = math.atan2(y, x) - math.atan2(l2 * math.sin(q2), l1 + l2 * math.cos(q2))
    return np.array([q1, q2])


def scenario_step(arm, q0, joint, delta, duration, gravity=False, frictionloss=None,
                  backlash=False, settle=0.0, dt=DT):
    kw = dict(gravity=gravity, backlash=backlash, dt=dt)
    if frictionloss is not None:
        kw["frictionloss"] = frictionloss
    pl = Plant(arm, **kw)
    pl.reset(q0, q0)
    if settle > 0:
        run(pl, settle)
    goal = np.array(q0, dtype=float)
    if joint is not None:
        goal[joint] += delta
    qs = pl.q()
    settled_qvel = float(np.max(np.abs(pl.d.qvel))) if settle > 0 else 0.0
    rows, sat = run(pl, duration, {0: goal})
    t, Q = rows[:, 0], rows[:, 1:1 + arm.n]
    met = {"arm": arm.name, "goal": list(goal), "q_start": list(qs)}
    if settle > 0:
        met["settled_max_abs_qvel"] = settled_qvel
    if joint is not None:
        met["stepped_joint"] = joint + 1
        met["stepped"] = step_metrics(t, Q[:, joint], qs[joint], goal[joint])
        met["other_joints_max_dev_rad"] = {str(k + 1): float(np.max(np.abs(Q[:, k] - qs[k])))
                                           for k in range(arm.n) if k != joint}
    met["final_error_rad"] = [float(v) for v in goal - Q[-1]]
    met["final_tip_error_mm"] = tip_err_mm(arm, Q[-1], goal)
    met["saturated_time_s"] = [float(v) * pl.dt for v in sat]
    if backlash:
        P = rows[:, 1 + arm.n:1 + 2 * arm.n]
        met["final_play_rad"] = [float(v) for v in P[-1]]
        met["play_min_max_rad"] = [[float(P[:, k].min()), float(P[:, k].max())] for k in range(arm.n)]
        met["final_tip_error_mm"] = float(np.linalg.norm(rows[-1, -2:] - arm.fk(goal)) * 1e3)
    return rows, met


def scenario_hold(arm, q0, duration, dt=DT):
    pl = Plant(arm, gravity=True, dt=dt)
    pl.reset(q0, q0)
    rows, sat = run(pl, duration)
    Q, tip = rows[:, 1:1 + arm.n], rows[:, -2:]
    tip0 = arm.fk(q0)
    dev = np.linalg.norm(tip - tip0, axis=1) * 1e3
    return rows, {"arm": arm.name, "goal": list(q0),
                  "final_sag_rad": [float(v) for v in Q[-1] - q0],
                  "final_tip_sag_mm": float(dev[-1]),
                  "final_tip_dy_mm": float((tip[-1, 1] - tip0[1]) * 1e3),
                  "max_tip_dev_mm": float(dev.max()),
                  "saturated_time_s": [float(v) * pl.dt for v in sat]}


def scenario_track(latency, duration=8.0, dt=DT):
    pl = Plant(ARM_2R, dt=dt)
    g0 = ik_2r(fig8(0.0))
    pl.reset(g0, g0)
    schedule = {}
    for k in range(int(duration * 30) + 1):
        tk = k / 30.0
        n = int(math.ceil((tk + latency) / dt - 1e-6))   # first step starting at >= tk + latency
        if n * dt < duration:
            schedule[n] = ik_2r(fig8(tk))
    rows, sat = run(pl, duration, schedule, target=fig8)
    t = rows[:, 0]
    e = np.linalg.norm(rows[:, 3:5] - rows[:, 5:7], axis=1)
    w = (t >= 4.0 - 1e-9) & (t <= 8.0 + 1e-9)
    return rows, {"arm": "2r", "latency_s": latency, "controller_hz": 30,
                  "mean_tip_error_mm_4_8s": float(e[w].mean() * 1e3),
                  "max_tip_error_mm_4_8s": float(e[w].max() * 1e3),
                  "saturated_time_s": [float(v) * pl.dt for v in sat]}


def arm_text(arm):
    return arm.describe()


SERVO_TEXT = ("servo sts3215: damping 0.60 N m s/rad, frictionloss %s N m, armature 0.028 kg m^2, "
              "position actuator kp 998.22 N m/rad kv 2.731 N m s/rad forcerange +-2.94 N m, ctrl unlimited")


def scenarios(dt):
    """Yields (file name, description, column names, rows, metrics)."""
    q2 = ["q1", "q2"]
    q3 = ["q1", "q2", "q3"]
    base2 = "2r arm " + arm_text(ARM_2R)
    for j in (0, 1):
        rows, met = scenario_step(ARM_2R, Q0_2R, j, 0.5, 2.0, dt=dt)
        yield ("2r_step_j%d.csv" % (j + 1),
               "%s; gravity off; %s; from rest at q=(0,1.5) goal (0,1.5); at t=0 goal of joint %d steps +0.5 rad; 2 s"
               % (base2, SERVO_TEXT % "0.052", j + 1), q2, rows, met)
    rows, met = large_move(dt)
    yield ("2r_large_move.csv",
           "%s; gravity off; %s; from rest at q=(0,1.5); at t=0 goal (1.0,0.5) on both joints; 3 s"
           % (base2, SERVO_TEXT % "0.052"), q2, rows, met)
    rows, met = scenario_hold(ARM_2R, np.array([0.0, 0.0]), 2.0, dt=dt)
    yield ("2r_gravity_hold.csv",
           "%s; gravity ON 9.81 m/s^2 along -y; %s; from rest at q=(0,0) goal (0,0); 2 s"
           % (base2, SERVO_TEXT % "0.052"), q2, rows, met)
    rows, met = scenario_step(ARM_2R, Q0_2R, 0, 0.2, 3.0, frictionloss=0.52, dt=dt)
    yield ("2r_friction.csv",
           "%s; gravity off; %s; from rest at q=(0,1.5) goal (0,1.5); at t=0 goal of joint 1 steps +0.2 rad; 3 s"
           % (base2, SERVO_TEXT % "0.52 (10x)"), q2, rows, met)
    for lat, name in ((0.0, "0ms"), (0.033, "33ms"), (0.133, "133ms")):
        rows, met = scenario_track(lat, dt=dt)
        yield ("2r_track_%s.csv" % name,
               "%s; gravity off; %s; target x=1.2+0.4 sin(2 pi t/4) y=0.3 sin(4 pi t/4); controller 30 Hz: "
               "at t_k=k/30 closed-form IK (q2=+acos) of the target at t_k, goal applied at the first physics step "
               "starting at >= t_k+%g s; start at rest on the t=0 goal; 8 s; target_x/target_y = target at the sample time"
               % (base2, SERVO_TEXT % "0.052", lat), q2 + ["target_x", "target_y"], rows, met)
    baseso = "so101 arm (reference/so101.md) " + arm_text(SO101)
    for j in range(3):
        rows, met = scenario_step(SO101, Q0_SO101, j, 0.5, 1.5, gravity=True, settle=1.0, dt=dt)
        yield ("so101_step_j%d.csv" % (j + 1),
               "%s; gravity ON 9.81 m/s^2 along -y; %s; held pose q0=(0,0,0) (Menagerie shoulder_lift=elbow_flex="
               "wrist_flex=0) from rest with goal q0, settled 1 s under gravity (not recorded), t reset to 0 at the "
               "settled state; at t=0 goal of joint %d steps +0.5 rad (goal q0+0.5 e%d); 1.5 s"
               % (baseso, SERVO_TEXT % "0.052", j + 1, j + 1), q3, rows, met)
    qs = stretched_so101()
    rows, met = scenario_hold(SO101, qs, 1.5, dt=dt)
    yield ("so101_gravity_hold.csv",
           "%s; gravity ON 9.81 m/s^2 along -y; %s; from rest at goal q=-o=(%.9g,%.9g,%.9g) (stretched forward "
           "horizontally, in range); 1.5 s" % ((baseso, SERVO_TEXT % "0.052") + tuple(qs)), q3, rows, met)
    rows, met = scenario_step(ARM_2R, Q0_2R, 0, 0.5, 2.0, backlash=True, dt=dt)
    yield ("2r_backlash.csv",
           "%s; gravity off; %s; backlash hinge after each servo joint (damping 0.01, frictionloss 0, armature 0.01, "
           "range +-0.0087267 rad, MuJoCo default limit solref/solimp; servo side massless: both hinges in the link "
           "body); p1,p2 = play angles, link k rotated by o_k+q_k+p_k; from rest at q=(0,1.5) p=0 goal (0,1.5); at t=0 "
           "goal of joint 1 steps +0.5 rad; 2 s" % (base2, SERVO_TEXT % "0.052"), q2 + ["p1", "p2"], rows, met)


def large_move(dt):
    pl = Plant(ARM_2R, dt=dt)
    pl.reset(Q0_2R, Q0_2R)
    goal = np.array([1.0, 0.5])
    rows, sat = run(pl, 3.0, {0: goal})
    t, Q = rows[:, 0], rows[:, 1:3]
    return rows, {"arm": "2r", "goal": list(goal), "q_start": list(Q0_2R),
                  "stepped": {str(k + 1): step_metrics(t, Q[:, k], Q0_2R[k], goal[k]) for k in range(2)},
                  "final_error_rad": [float(v) for v in goal - Q[-1]],
                  "final_tip_error_mm": tip_err_mm(ARM_2R, Q[-1], goal),
                  "saturated_time_s": [float(v) * pl.dt for v in sat]}


def write_csv(path, desc, cols, rows):
    with open(path, "w") as f:
        f.write("# %s; MuJoCo %s; timestep %g s; integrator implicitfast; samples every %g s\n"
                % (desc, mujoco.__version__, DT, SAMPLE))
        f.write(",".join(["t"] + order_cols(cols)) + "\n")
        for r in rows:
            f.write(",".join("%.6g" % v for v in r) + "\n")


def order_cols(cols):
    # rows are t, q..., p..., tip_x, tip_y, [target_x, target_y]
    qs = [c for c in cols if c.startswith("q")]
    ps = [c for c in cols if c.startswith("p")]
    tg = [c for c in cols if c.startswith("target")]
    return qs + ps + ["tip_x", "tip_y"] + tg


# ----------------------------------------------------------------------------------------------
# Timestep check
# ----------------------------------------------------------------------------------------------

FLOORS = {"_s": 1e-3, "_rad": 1e-4, "_mm": 1e-2}


def flat(d, prefix=""):
    out = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(flat(v, prefix + "." + k if prefix else k))
    elif isinstance(d, list) and d and not isinstance(d[0], str):
        for i, v in enumerate(d):
            out.update(flat(v, "%s[%d]" % (prefix, i)))
    elif isinstance(d, (int, float)) and not isinstance(d, bool):
        out[prefix] = float(d)
    return out


AUX_METRICS = ("t10_s", "t90_s", "saturated_time_s", "other_joints_max_dev_rad", "play_min_max_rad",
               "final_play_rad", "settled_max_abs_qvel", "max_tip_dev_mm", "final_tip_dy_mm")


def compare_metrics(a, b, exclude=()):
    """Largest relative difference over metric leaves, with an absolute floor per unit."""
    fa, fb = flat(a), flat(b)
    worst = (0.0, None)
    for k, va in fa.items():
        if k not in fb or k.startswith(("goal", "q_start", "arm", "latency", "controller", "stepped_joint")):
            continue
        if any(x in k for x in exclude):
            continue
        floor = next((f for suf, f in FLOORS.items() if k.split("[")[0].split(".")[-1].endswith(suf) or suf in k), 1e-6)
        rel = abs(va - fb[k]) / max(abs(va), floor)
        if rel > worst[0]:
            worst = (rel, k)
    return worst


# ----------------------------------------------------------------------------------------------
# Menagerie derivation and checks (optional)
# ----------------------------------------------------------------------------------------------

PITCH = ["shoulder_lift", "elbow_flex", "wrist_flex"]
LINK_BODIES = [["upper_arm"], ["lower_arm"], ["wrist", "gripper", "camera_mount", "moving_jaw_so101_v1"]]


def stripped_xml(path, weld_others=False, camera="boxes"):
    """Menagerie so101.xml without assets, meshes and collision geoms; the camera mount's 0.012 kg
    goes on its two collision boxes (split by volume) or, camera="origin", a point at its mesh
    geom's origin. weld_others removes shoulder_pan, wrist_roll and gripper (welded at 0)."""
    root = ET.parse(path).getroot()
    for tag in ("asset", "visual"):
        for e in root.findall(tag):
            root.remove(e)
    for d in root.iter("default"):
        for e in d.findall("mesh"):
            d.remove(e)
    for body in root.iter("body"):
        cam_mesh = None
        for g in list(body.findall("geom")):
            if body.get("name") == "camera_mount" and g.get("mass") is not None:
                cam_mesh = g
            if not (camera == "boxes" and body.get("name") == "camera_mount"
                    and g.get("name") in ("camera_box1", "camera_box2")):
                body.remove(g)
        for c in body.findall("camera"):
            body.remove(c)
        if body.get("name") == "camera_mount":
            mass = float(cam_mesh.get("mass"))
            if camera == "boxes":
                boxes = body.findall("geom")
                vol = [np.prod([float(v) for v in g.get("size").split()]) for g in boxes]
                for g, v in zip(boxes, vol):
                    g.set("mass", "%.17g" % (mass * v / sum(vol)))
                    g.set("contype", "0"); g.set("conaffinity", "0")
            else:
                ET.SubElement(body, "inertial", pos=cam_mesh.get("pos"), mass=repr(mass),
                              diaginertia="1e-9 1e-9 1e-9")
        if weld_others:
            for j in list(body.findall("joint")):
                if j.get("name") not in PITCH:
                    body.remove(j)
    if weld_others:
        for act in root.findall("actuator"):
            for a in list(act):
                if a.get("joint") not in PITCH:
                    act.remove(a)
    return root


def derive_so101(root):
    m = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    axes = np.array([d.xaxis[m.joint(n).id] for n in PITCH])
    ex, ey = np.array([1.0, 0, 0]), np.array([0, 0, 1.0])      # forward, up
    ez = np.cross(ex, ey)
    a0 = d.xanchor[m.joint(PITCH[0]).id].copy()
    P = lambda p: np.array([(p - a0) @ ex, (p - a0) @ ey])
    pts = [P(d.xanchor[m.joint(n).id]) for n in PITCH] + [P(d.site("gripperframe").xpos)]
    th = [math.atan2(*(pts[k + 1] - pts[k])[::-1]) for k in range(3)]
    lengths = [float(np.linalg.norm(pts[k + 1] - pts[k])) for k in range(3)]
    offsets = [th[0], th[1] - th[0], th[2] - th[1]]
    signs = [float(np.sign(a @ ez)) for a in axes]
    axis = axes[0]
    masses, coms, izz = [], [], []
    for k, group in enumerate(LINK_BODIES):
        ids = [m.body(b).id for b in group]
        ms = np.array([m.body_mass[i] for i in ids])
        cs = [P(d.xipos[i]) for i in ids]
        M = ms.sum()
        C = sum(mi * ci for mi, ci in zip(ms, cs)) / M
        I = 0.0
        for i, mi, ci in zip(ids, ms, cs):
            R = d.ximat[i].reshape(3, 3)
            I += axis @ R @ np.diag(m.body_inertia[i]) @ R.T @ axis + mi * np.sum((ci - C) ** 2)
        c, s = math.cos(th[k]), math.sin(th[k])
        r = C - pts[k]
        masses.append(float(M)); izz.append(float(I))
        coms.append((float(c * r[0] + s * r[1]), float(-s * r[0] + c * r[1])))
    ranges = []
    for n, sg in zip(PITCH, signs):
        lo, hi = m.jnt_range[m.joint(n).id]
        ranges.append(tuple(sorted((float(sg * lo), float(sg * hi)))))
    arm = Arm("so101", lengths, masses, coms, izz, offsets, ranges)
    return arm, signs, axes, m, d, a0


def menagerie_checks(path):
    print("== Menagerie derivation from %s" % path)
    arm, signs, axes, m, d, a0 = derive_so101(stripped_xml(path))
    par = max(np.linalg.norm(np.cross(axes[0], a)) for a in axes)
    print("pitch axes (world):", axes.tolist(), "max |cross| with shoulder_lift axis: %.2e" % par)
    print("signs (Menagerie axis . our +z):", signs)
    print("derived:", arm.describe(), "ranges", arm.ranges)
    diffs = [abs(a - b) for a, b in zip(arm.l + arm.m + arm.izz + arm.o, SO101.l + SO101.m + SO101.izz + SO101.o)]
    diffs += [abs(a - b) for ca, cb in zip(arm.com, SO101.com) for a, b in zip(ca, cb)]
    print("max |derived - embedded SO101 constants| = %.2e" % max(diffs))
    # FK check at random joint values within range (full model, other joints at 0).
    rng = np.random.default_rng(1)
    qadr = [m.jnt_qposadr[m.joint(n).id] for n in PITCH]
    worst, ydev = 0.0, 0.0
    y0 = d.site("gripperframe").xpos[1]
    for _ in range(20):
        q = np.array([rng.uniform(lo, hi) for lo, hi in SO101.ranges])
        d.qpos[:] = 0
        d.qpos[qadr] = np.array(signs) * q
        mujoco.mj_kinematics(m, d)
        p = d.site("gripperframe").xpos
        mj = np.array([p[0] - a0[0], p[2] - a0[2]])
        worst = max(worst, float(np.linalg.norm(mj - SO101.fk(q))))
        ydev = max(ydev, abs(p[1] - y0))
    print("FK check, 20 random in-range poses: max |planar FK - MuJoCo gripperframe| = %.3e m "
          "(out-of-plane drift %.1e m) -> %s" % (worst, ydev, "OK" if worst < 1e-9 else "FAIL"))
    # Camera mount sensitivity.
    alt = derive_so101(stripped_xml(path, camera="origin"))[0]
    print("camera-mount mass at its mesh origin instead of its boxes: link-3 COM (%.6f, %.6f) vs (%.6f, %.6f), "
          "izz %.4e vs %.4e" % (alt.com[2] + SO101.com[2] + (alt.izz[2], SO101.izz[2])))
    # Dynamics cross-check: stripped 3D model with the other joints welded vs the planar MJCF.
    root = stripped_xml(path, weld_others=True)
    opt = root.find("option")
    for k in list(opt.attrib):
        del opt.attrib[k]
    opt.set("timestep", repr(DT)); opt.set("integrator", "implicitfast")
    m3 = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))
    d3 = mujoco.MjData(m3)
    adr3 = [m3.jnt_qposadr[m3.joint(n).id] for n in PITCH]
    sg = np.array(signs)
    pl = Plant(SO101, gravity=True)
    for j in range(3):
        goal = Q0_SO101.copy(); goal[j] += 0.5
        pl.reset(Q0_SO101, Q0_SO101)
        mujoco.mj_resetData(m3, d3)
        d3.qpos[adr3] = sg * Q0_SO101
        d3.ctrl[:] = sg * Q0_SO101
        worst = 0.0
        for n in range(int(round(2.5 / DT))):
            if n == int(round(1.0 / DT)):
                pl.d.ctrl[:] = goal
                d3.ctrl[:] = sg * goal
            mujoco.mj_step(pl.m, pl.d)
            mujoco.mj_step(m3, d3)
            worst = max(worst, float(np.max(np.abs(pl.q() - sg * d3.qpos[adr3]))))
        print("3D stripped Menagerie model vs planar MJCF, so101 step j%d (settle 1 s + 1.5 s): max |dq| = %.2e rad"
              % (j + 1, worst))


# ----------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "data", "mujoco"))
    ap.add_argument("--menagerie", help="path to a local Menagerie robotstudio_so101/so101.xml")
    ap.add_argument("--no-dt-check", action="store_true", help="skip the 0.001 s and 0.0001 s convergence runs")
    args = ap.parse_args()
    print("MuJoCo", mujoco.__version__)
    if args.menagerie:
        menagerie_checks(args.menagerie)
    os.makedirs(args.out, exist_ok=True)
    summary = {"mujoco_version": mujoco.__version__, "timestep_s": DT, "integrator": "implicitfast",
               "sample_period_s": SAMPLE, "servo_source": MENAGERIE,
               "definitions": {
                   "metrics": "computed on the 5 ms samples in each CSV; crossing times linearly interpolated",
                   "t10_s/t90_s": "first time the stepped joint covers 10 % / 90 % of (goal - q_start)",
                   "rise_time_s": "t90_s - t10_s",
                   "settling_time_s": "last time |q - goal| leaves the band 0.02*|goal - q_start| (null: never settles)",
                   "overshoot_rad": "max of sign(step)*(q - goal), at least 0",
                   "final_error_rad": "goal - q at the last sample",
                   "final_tip_error_mm": "|tip at the last sample - FK(goal)|",
                   "final_sag_rad": "q at the last sample - goal",
                   "final_tip_sag_mm": "|tip at the last sample - FK(goal)|; final_tip_dy_mm its y part",
                   "mean/max_tip_error_mm_4_8s": "|tip - target| over samples with 4 <= t <= 8 s",
                   "saturated_time_s": "physics time each actuator spent at |force| = 2.94 N m",
                   "q_start": "joint angles at t = 0 (for so101 steps: the settled state)"},
               "files": {}}
    check = {}
    for fname, desc, cols, rows, met in scenarios(DT):
        write_csv(os.path.join(args.out, fname), desc, cols, rows)
        summary["files"][fname] = met
        print("%-24s %s" % (fname, brief(met)))
    if not args.no_dt_check:
        summary["timestep_check"] = {
            "what": "every scenario rerun at another timestep; per file the largest relative metric difference "
                    "|a - b| / max(|a|, floor) (floor 1e-3 s, 1e-4 rad, 1e-2 mm) over the requested metrics "
                    "(rise/settling, overshoot, final error, sag, tracking error) and over all metrics, and the "
                    "largest |difference| of the CSV columns"}
        for dtc in DT_CHECKS:
            check = {}
            for (fname, _, _, rows_b, met_b), m_a in zip(scenarios(dtc), summary["files"].values()):
                rows_a = np.loadtxt(os.path.join(args.out, fname), delimiter=",", skiprows=2)
                dq = float(np.max(np.abs(rows_a[:, 1:] - rows_b[:, 1:])))
                req = compare_metrics(m_a, met_b, exclude=AUX_METRICS)
                anym = compare_metrics(m_a, met_b)
                check[fname] = {"requested": {"max_rel_diff": req[0], "metric": req[1]},
                                "all": {"max_rel_diff": anym[0], "metric": anym[1]},
                                "max_abs_column_diff": dq}
                print("dt %g vs %g  %-24s requested metrics max rel diff %.3g%% (%s); all %.3g%% (%s); "
                      "max |column diff| %.2e" % (dtc, DT, fname, 100 * req[0], req[1], 100 * anym[0], anym[1], dq))
            summary["timestep_check"]["%g" % dtc] = check
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(round_floats(summary), f, indent=1)
        f.write("\n")


def round_floats(x):
    if isinstance(x, float):
        return float("%.6g" % x)
    if isinstance(x, dict):
        return {k: round_floats(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [round_floats(v) for v in x]
    if isinstance(x, np.floating):
        return float("%.6g" % x)
    return x


def brief(met):
    parts = []
    if "stepped" in met:
        st = met["stepped"]
        items = st.items() if "step_rad" not in st else [(str(met["stepped_joint"]), st)]
        for k, s in items:
            parts.append("j%s rise %s settle %s os %.4g fe %.3g" % (
                k, fmt(s["rise_time_s"]), fmt(s["settling_time_s"]), s["overshoot_rad"], s["final_error_rad"]))
    for key in ("final_tip_error_mm", "final_tip_sag_mm", "mean_tip_error_mm_4_8s", "max_tip_error_mm_4_8s"):
        if key in met:
            parts.append("%s %.4g" % (key, met[key]))
    if "final_sag_rad" in met:
        parts.append("sag " + ",".join("%.3g" % v for v in met["final_sag_rad"]))
    if any(met.get("saturated_time_s", [])):
        parts.append("sat " + ",".join("%.3g" % v for v in met["saturated_time_s"]))
    return "; ".join(parts)


def fmt(v):
    return "None" if v is None else "%.4g" % v


if __name__ == "__main__":
    sys.exit(main())
