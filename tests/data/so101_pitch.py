"""Writes so101_pitch.urdf: the SO-101's pitch chain as a URDF, from the published figures of
reference/so101.md (full precision: the constants of src/arm/so101.rs, which the registry's `so101`
is). Run from the repository root: `python3 tests/data/so101_pitch.py`.

The file exercises what a hand-written URDF has and the registry's arm does not: a base yaw joint
(`shoulder_pan`, held at 0), every frame turned by its own `rpy` (so each pitch axis is written in
a turned frame, yet all are the design frame's +y), out-of-plane offsets of the anchors and of
every centre of mass, full inertia tensors (off-diagonal terms, turned inertial frames), a wrist
roll joint (held at 0), and link 3's body split over four links: `wrist`, `gripper`, a fixed
`camera_mount` and a revolute `moving_jaw` (both side branches), whose masses, centres and
inertias lump back to the registry's (0.079 + 0.087 + 0.012 + 0.012 = 0.190 kg, as Menagerie
splits it). The tip is the fixed `gripper_frame` link.
"""
import numpy as np

LENGTHS = [0.11600002112068772, 0.13500018518505813, 0.15967668078285321]
ZERO_OFFSETS = [1.3270094336148002, -1.2884814367726616, 0.03653888702119626]
RANGES = [1.7453293, 1.69, 1.658063]
BODIES = [
    (0.103, (0.08921354229093649, 0.013553051497846814), 0.0001424870000000011),
    (0.104, (0.09812216732770915, -0.0005361131905174065), 0.00014529000000000115),
    (0.19, (0.06887990035401562, -0.00379849483320408), 0.0002092675517286675),
]


def rot(r, p, y):
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def num(x):
    return repr(float(x))


def f(v):
    return " ".join(num(x) for x in v)


# The design frame D is shoulder_link's (shoulder_pan at 0): x forward, y left, z up. A point of
# the plane (X forward, Y up from the shoulder_lift anchor) with an out-of-plane offset `off`:
A1 = np.array([0.0303992, -0.0182778, 0.0542])
def plane(X, Y, off=0.0):
    return A1 + np.array([X, off, Y])

phi = np.cumsum(ZERO_OFFSETS)
d = [np.array([np.cos(a), np.sin(a)]) for a in phi]
P = [np.zeros(2)]
for k in range(3):
    P.append(P[-1] + LENGTHS[k] * d[k])

# Link frames in D: (origin, rotation). Each joint's rpy relative to its parent's frame.
frames = {"shoulder_link": (np.zeros(3), np.eye(3))}
joints = []

def joint(name, kind, parent, child, pos, rpy, axis_d=None, limit=None, extra=""):
    po, pr = frames[parent]
    r = pr @ rot(*rpy)
    frames[child] = (pos, r)
    xyz = pr.T @ (pos - po)
    s = f'  <joint name="{name}" type="{kind}">\n    <origin xyz="{f(xyz)}" rpy="{f(rpy)}"/>\n'
    s += f'    <parent link="{parent}"/>\n    <child link="{child}"/>\n'
    if axis_d is not None:
        s += f'    <axis xyz="{f(r.T @ axis_d)}"/>\n'
    if limit is not None:
        s += f'    <limit lower="{num(limit[0])}" upper="{num(limit[1])}" effort="{num(limit[2])}" velocity="{num(limit[3])}"/>\n'
    s += extra + "  </joint>\n"
    joints.append(s)

Y = np.array([0.0, 1.0, 0.0])
joint("shoulder_lift", "revolute", "shoulder_link", "upper_arm", plane(0, 0), (-np.pi / 2, 0, 0), Y,
      (-RANGES[0], RANGES[0], 2.94, 4.7), '    <dynamics damping="0.6" friction="0.052"/>\n')
joint("elbow_flex", "revolute", "upper_arm", "lower_arm", plane(*P[1], -0.011), (0.3, -0.2, 1.1), Y,
      (-RANGES[1], RANGES[1], 0.0, 0.0))
joint("wrist_flex", "revolute", "lower_arm", "wrist", plane(*P[2], -0.007), (-0.7, 0.5, 0.2), Y,
      (-RANGES[2], RANGES[2], 0.0, 0.0))
u3 = np.array([d[2][0], 0.0, d[2][1]])
joint("wrist_roll", "revolute", "wrist", "gripper", plane(*(P[2] + 0.02 * d[2]), -0.0035), (0.1, 0.2, 0.3), u3,
      (-2.7, 2.7, 2.94, 4.7))
joint("gripper_frame_joint", "fixed", "gripper", "gripper_frame", plane(*P[3], -0.0035), (0.0, 0.0, 0.0))
joint("camera_mount_joint", "fixed", "gripper", "camera_mount", plane(*(P[2] + 0.05 * d[2]), 0.02), (0.5, 0.0, 0.0))
joint("gripper", "revolute", "gripper", "moving_jaw", plane(*(P[2] + 0.09 * d[2]), 0.01), (0.0, 0.4, 0.0),
      np.array([0.0, 0.0, 1.0]), (-0.17, 1.75, 2.94, 4.7))

# Bodies: (link, mass, COM in link k's in-plane frame, out-of-plane offset, izz about the normal).
def in_plane(k, c):
    c = np.asarray(c)
    return P[k] + c[0] * d[k] + c[1] * np.array([-d[k][1], d[k][0]])

parts = [("upper_arm", 0, BODIES[0][0], BODIES[0][1], 0.012, BODIES[0][2]),
         ("lower_arm", 1, BODIES[1][0], BODIES[1][1], -0.02, BODIES[1][2])]
m3, c3, i3 = BODIES[2]
c3 = np.array(c3)
split = [("wrist", 0.079, c3 + [0.004, 0.002], 0.003, 3e-5),
         ("gripper", 0.087, c3 + [-0.003, -0.002], -0.004, 3e-5),
         ("camera_mount", 0.012, c3 + [-0.005, 0.003], 0.02, 2e-6)]
jaw_m = m3 - sum(p[1] for p in split)
jaw_c = (m3 * c3 - sum(p[1] * np.asarray(p[2]) for p in split)) / jaw_m
rest = sum(p[4] + p[1] * np.sum((np.asarray(p[2]) - c3) ** 2) for p in split)
jaw_i = i3 - rest - jaw_m * np.sum((jaw_c - c3) ** 2)
assert jaw_i > 0, jaw_i
split.append(("moving_jaw", jaw_m, jaw_c, 0.01, jaw_i))
for name, m, c, off, izz in split:
    parts.append((name, 2, m, c, off, izz))

inertial = {}
for n, (name, k, m, c, off, izz) in enumerate(parts):
    com = plane(*in_plane(k, c), off)
    W = np.array([[3 * izz, 0.1 * izz, 0.2 * izz], [0.1 * izz, izz, -0.1 * izz], [0.2 * izz, -0.1 * izz, 2.5 * izz]])
    assert np.linalg.eigvalsh(W).min() > 0
    lo, lr = frames[name]
    rpy = (0.2 * n, -0.1 * n, 0.3)
    rw = lr @ rot(*rpy)
    t = rw.T @ W @ rw
    inertial[name] = (
        f'    <inertial>\n      <origin xyz="{f(lr.T @ (com - lo))}" rpy="{f(rpy)}"/>\n      <mass value="{num(m)}"/>\n'
        f'      <inertia ixx="{num(t[0,0])}" ixy="{num(t[0,1])}" ixz="{num(t[0,2])}" iyy="{num(t[1,1])}" iyz="{num(t[1,2])}" izz="{num(t[2,2])}"/>\n'
        "    </inertial>\n"
    )
# The links before the first pitch joint carry mass too (never part of the chain's body).
inertial["base_link"] = '    <inertial>\n      <mass value="0.147"/>\n      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/>\n    </inertial>\n'
inertial["shoulder_link"] = '    <inertial>\n      <origin xyz="0 0.01 0.03"/>\n      <mass value="0.1"/>\n      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/>\n    </inertial>\n'

links = ["base_link", "shoulder_link", "upper_arm", "lower_arm", "wrist", "gripper", "gripper_frame",
         "camera_mount", "moving_jaw"]
out = ['<?xml version="1.0"?>\n', "<!-- Written by tests/data/so101_pitch.py from reference/so101.md's figures; see it. -->\n",
       '<robot name="so101_pitch">\n']
for l in links:
    body = inertial.get(l)
    out.append(f'  <link name="{l}">\n{body}  </link>\n' if body else f'  <link name="{l}"/>\n')
out.append('  <joint name="shoulder_pan" type="revolute">\n    <origin xyz="0.0388353 0 0.0624" rpy="0 0 0.4"/>\n'
           '    <parent link="base_link"/>\n    <child link="shoulder_link"/>\n    <axis xyz="0 0 1"/>\n'
           '    <limit lower="-1.91986" upper="1.91986" effort="2.94" velocity="4.7"/>\n  </joint>\n')
out += joints
out.append("</robot>\n")
open("tests/data/so101_pitch.urdf", "w").write("".join(out))
