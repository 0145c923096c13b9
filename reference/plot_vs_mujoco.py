#!/usr/bin/env python3
"""Figure of our plant's step responses over MuJoCo's: assets/plant-vs-mujoco.png.

Outside the build and CI: nothing in Cargo or the tests runs this script; it needs numpy and
matplotlib (`pip install numpy matplotlib`). It reads MuJoCo's traces (tests/data/mujoco/*.csv,
written by reference/mujoco_plant.py) and our own replays of the same scenarios, which
tests/plant_vs_mujoco.rs writes when ELBOW_TRACE_DIR is set:

    ELBOW_TRACE_DIR=/tmp/ours cargo test --release --no-default-features --test plant_vs_mujoco
    python3 reference/plot_vs_mujoco.py --ours /tmp/ours

Panels: the 2r arm's joint-1 step (q1), its large move (q1 and q2), the so101's joint-1 step (q1)
and the 2r figure-eight tracking with 133 ms latency (tip error). Ours: solid lines; MuJoCo:
black dashes on top.
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
OURS_COLOR = ("tab:blue", "tab:orange")
MUJOCO_STYLE = dict(color="black", linestyle=(0, (4, 3)), linewidth=1.6)


def load(path):
    """Columns of one trace CSV (`# ` lines skipped, then a header line) as {name: array}."""
    with open(path) as f:
        lines = [line for line in f if line.strip() and not line.startswith("#")]
    names = lines[0].strip().split(",")
    rows = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    return {n: rows[:, i] for i, n in enumerate(names)}


def pair(scenario, ours_dir, mujoco_dir):
    ours = load(os.path.join(ours_dir, scenario + ".ours.csv"))
    theirs = load(os.path.join(mujoco_dir, scenario + ".csv"))
    assert np.allclose(ours["t"], theirs["t"]), scenario + ": the two traces' sample times differ"
    return ours, theirs


def note(ax, text):
    ax.text(0.98, 0.04, text, transform=ax.transAxes, ha="right", va="bottom", fontsize=11,
            bbox=dict(boxstyle="round,pad=0.35", facecolor="white", edgecolor="0.7", alpha=0.9))


def step_panel(ax, ours, theirs, joints, goals, title):
    """Joint angles against time; the goals dotted; max |ours - MuJoCo| per joint in a note."""
    diffs = []
    for (k, goal), color in zip(zip(joints, goals), OURS_COLOR):
        q = "q%d" % k
        ax.axhline(goal, color=color, linestyle=":", linewidth=1.2, alpha=0.8)
        ax.plot(ours["t"], ours[q], color=color, linewidth=2.6, label="%s ours" % q)
        ax.plot(theirs["t"], theirs[q], **MUJOCO_STYLE, label="MuJoCo" if k == joints[-1] else None)
        diffs.append("%s: %.1f mrad" % (q, 1e3 * np.max(np.abs(ours[q] - theirs[q]))))
    ax.plot([], [], color="0.4", linestyle=":", label="goal")
    note(ax, "max |ours − MuJoCo|\n" + "\n".join(diffs))
    ax.set_title(title)
    ax.set_xlabel("time t (s)")
    ax.set_ylabel("joint angle (rad)")
    ax.set_xlim(0, ours["t"][-1])


def tracking_panel(ax, ours, theirs, title):
    def err_mm(d):
        return 1e3 * np.hypot(d["tip_x"] - d["target_x"], d["tip_y"] - d["target_y"])

    t = ours["t"]
    e_ours, e_mj = err_mm(ours), err_mm(theirs)
    window = (t >= 4.0 - 1e-9) & (t <= 8.0 + 1e-9)
    ax.axvspan(4.0, 8.0, color="0.92", zorder=0, label="scored window 4–8 s")
    ax.plot(t, e_ours, color=OURS_COLOR[0], linewidth=2.0, label="ours")
    ax.plot(t, e_mj, **MUJOCO_STYLE, label="MuJoCo")
    gap = 1e3 * np.hypot(ours["tip_x"] - theirs["tip_x"], ours["tip_y"] - theirs["tip_y"])
    note(ax, "mean error 4–8 s: ours %.2f mm, MuJoCo %.2f mm\nmax |tip ours − tip MuJoCo|: %.1f mm"
         % (e_ours[window].mean(), e_mj[window].mean(), gap.max()))
    ax.set_title(title)
    ax.set_xlabel("time t (s)")
    ax.set_ylabel("|tip − target| (mm)")
    ax.set_xlim(0, t[-1])
    ax.set_ylim(0, 1.3 * max(e_ours.max(), e_mj.max()))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", default=os.environ.get("ELBOW_TRACE_DIR", "/tmp/ours"),
                    help="folder of our *.ours.csv traces (default: $ELBOW_TRACE_DIR, else /tmp/ours)")
    ap.add_argument("--mujoco", default=os.path.join(ROOT, "tests", "data", "mujoco"))
    ap.add_argument("--out", default=os.path.join(ROOT, "assets", "plant-vs-mujoco.png"))
    args = ap.parse_args()

    plt.rcParams.update({"font.size": 13, "axes.titlesize": 14, "axes.labelsize": 13,
                         "legend.fontsize": 11.5, "axes.grid": True, "grid.alpha": 0.3})
    fig, axes = plt.subplots(2, 2, figsize=(14, 10), dpi=100)
    p = lambda s: pair(s, args.ours, args.mujoco)  # noqa: E731

    ax = axes[0, 0]
    step_panel(ax, *p("2r_step_j1"), [1], [0.5], "2r arm (two 1 m links): joint 1 steps +0.5 rad")
    ax.legend(loc="upper right")

    ax = axes[0, 1]
    step_panel(ax, *p("2r_large_move"), [1, 2], [1.0, 0.5], "2r arm: large move (0, 1.5) → (1.0, 0.5) rad")
    ax.legend(loc="center right", ncol=2)

    ax = axes[1, 0]
    ours, theirs = p("so101_step_j1")
    step_panel(ax, ours, theirs, [1], [0.5], "SO-101 arm, gravity on: joint 1 (shoulder) steps +0.5 rad")
    ax.legend(loc="upper right")

    ax = axes[1, 1]
    tracking_panel(ax, *p("2r_track_133ms"), "2r arm: figure-eight tracking, 30 Hz goals, 133 ms latency")
    ax.legend(loc="upper center", ncol=3)

    fig.suptitle("Our plant (solid) against MuJoCo 4.0.1 (black dashes), same model and STS3215 servos; "
                 "5 ms samples", fontsize=15)
    fig.tight_layout(rect=(0, 0, 1, 0.965))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
