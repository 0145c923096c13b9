#!/usr/bin/env python3
"""MuJoCo reference traces for Elbow's plant on a chain with a rail (the `rail3` arm).

Writes tests/data/mujoco/rail3_*.csv, which `tests/plant_vs_mujoco.rs` replays on our plant
(`Plant::chain`). The model is the one our plant builds for `rail3` (src/plant/mod.rs):
plane x-y, gravity -y; a prismatic joint along +y (the rail) carrying a carriage of 0.3 kg, on
a position servo of kp 20000 N/m, kv 150 N s/m, force limit +-40 N, damping 20 N s/m, armature
0.5 kg (RAIL_SERVO); then three hinges about +z with uniform rods of 0.05 kg per metre, lengths
0.5, 0.5, 1.0 m, each on the SO-101's STS3215 servo of MuJoCo Menagerie without friction
(damping 0.60, armature 0.028, kp 998.22, kv 2.731, forcerange +-2.94). Integrator
implicitfast, timestep 0.0002 s, samples every 5 ms.

Usage:  python3 reference/mujoco_rail.py [--out tests/data/mujoco]
"""

import argparse
import math
import os

import mujoco
import numpy as np

DT = 0.0002
SAMPLE = 0.005
GRAVITY = 9.81
STS3215 = dict(damping=0.60, armature=0.028, kp=998.22, kv=2.731, fmax=2.94)
RAIL = dict(damping=20.0, armature=0.5, kp=20000.0, kv=150.0, fmax=40.0, carriage=0.3)
LENGTHS = [0.5, 0.5, 1.0]
PER_METRE = 0.05


def xml():
    s, r = STS3215, RAIL
    bodies, close = [], []
    for k, l in enumerate(LENGTHS):
        m = PER_METRE * l
        pos = "0 0 0" if k == 0 else "%.17g 0 0" % LENGTHS[k - 1]
        bodies.append(
            '<body name="link%d" pos="%s"><joint name="j%d" type="hinge" axis="0 0 1" damping="%g" '
            'armature="%g"/><inertial pos="%.17g 0 0" mass="%.17g" diaginertia="1e-9 %.17g %.17g"/>'
            % (k + 1, pos, k + 1, s["damping"], s["armature"], l / 2, m, m * l * l / 12, m * l * l / 12))
        close.append("</body>")
    bodies.append('<site name="tip" pos="%.17g 0 0"/>' % LENGTHS[-1])
    carriage = ('<body name="carriage"><joint name="rail" type="slide" axis="0 1 0" damping="%g" '
                'armature="%g"/><inertial pos="0 0 0" mass="%g" diaginertia="1e-9 1e-9 1e-9"/>'
                % (r["damping"], r["armature"], r["carriage"]))
    acts = ('<position name="rail" joint="rail" kp="%g" kv="%g" ctrllimited="false" forcelimited="true" '
            'forcerange="%g %g"/>' % (r["kp"], r["kv"], -r["fmax"], r["fmax"]))
    acts += "".join('<position name="a%d" joint="j%d" kp="%g" kv="%g" ctrllimited="false" '
                    'forcelimited="true" forcerange="%g %g"/>'
                    % (k + 1, k + 1, s["kp"], s["kv"], -s["fmax"], s["fmax"]) for k in range(3))
    return ('<mujoco model="elbow_rail3"><compiler angle="radian" autolimits="false"/>'
            '<option timestep="%.17g" integrator="implicitfast" gravity="0 %g 0"/>'
            '<worldbody>%s%s%s</body></worldbody><actuator>%s</actuator></mujoco>'
            % (DT, -GRAVITY, carriage, "".join(bodies), "".join(close), acts))


def run(x0, goal, duration):
    m = mujoco.MjModel.from_xml_string(xml())
    d = mujoco.MjData(m)
    names = ["rail", "j1", "j2", "j3"]
    adr = [m.jnt_qposadr[m.joint(n).id] for n in names]
    d.qpos[adr] = x0
    d.ctrl[:] = goal
    mujoco.mj_forward(m, d)
    tip = m.site("tip").id
    rows = []
    steps = int(round(duration / DT))
    every = int(round(SAMPLE / DT))
    for i in range(steps + 1):
        if i % every == 0:
            rows.append([i * DT] + list(d.qpos[adr]) + list(d.site_xpos[tip][:2]))
        mujoco.mj_step(m, d)
    return rows


SCENARIOS = {
    # From rest at x0 with the goal there (gravity pulls the carriage down and the links round),
    # then at t = 0 the rail steps up 0.2 m and joint 2 turns +0.5 rad.
    "rail3_step": ([0.0, 0.3, 0.6, -0.4], [0.2, 0.3, 1.1, -0.4], 2.0),
    # Rest at x0 with the goal there: the sag of carriage and links under gravity.
    "rail3_gravity_hold": ([0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], 1.5),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data", "mujoco"))
    args = ap.parse_args()
    for name, (x0, goal, duration) in SCENARIOS.items():
        rows = run(x0, goal, duration)
        path = os.path.join(args.out, name + ".csv")
        with open(path, "w") as f:
            f.write("# rail3 (reference/mujoco_rail.py) rail kp %g kv %g force +-%g damping %g armature %g carriage %g kg; "
                    "links l=[0.5,0.5,1] rods 0.05 kg/m; sts3215 without friction; gravity ON %g m/s^2 along -y; "
                    "rest at x0=(%s) with goal x0 (rail m, joints rad), at t=0 goal (%s); %g s; MuJoCo %s; "
                    "timestep %g s; integrator implicitfast; samples every %g s\n"
                    % (RAIL["kp"], RAIL["kv"], RAIL["fmax"], RAIL["damping"], RAIL["armature"], RAIL["carriage"],
                       GRAVITY, ",".join("%g" % v for v in x0), ",".join("%g" % v for v in goal), duration,
                       mujoco.__version__, DT, SAMPLE))
            f.write("t,x1,x2,x3,x4,tip_x,tip_y\n")
            for r in rows:
                f.write(",".join("%.6g" % v for v in r) + "\n")
        print("wrote", path, len(rows), "samples; final", ["%.6g" % v for v in rows[-1][1:]])


if __name__ == "__main__":
    main()
