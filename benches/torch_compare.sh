#!/usr/bin/env bash
# `elbow bench` against the same MDN in PyTorch, one thread, back to back on one core.
#
# Needs a release build of the CLI and a Python with torch (installed by hand, outside the
# project's set-up: see the top of benches/torch_mdn.py):
#
#   cargo build --release --no-default-features --features cli
#   TORCH_PYTHON=/root/.cache/torch-venv/bin/python benches/torch_compare.sh
#
# Environment: ELBOW (the binary; default $CARGO_TARGET_DIR/release/elbow, else
# target/release/elbow), TORCH_PYTHON (default python3), CORE (default 0).
# Prints both sets of figures and the ratios ours / torch (throughputs; for single-target
# inference the ratio is torch's time over ours, so above 1 means ours is faster throughout).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
elbow="${ELBOW:-${CARGO_TARGET_DIR:-$here/../target}/release/elbow}"
py="${TORCH_PYTHON:-python3}"
core="${CORE:-0}"

if [[ ! -x "$elbow" ]]; then
    echo "error: no elbow binary at $elbow (build it with: cargo build --release --no-default-features --features cli, or set ELBOW)" >&2
    exit 2
fi
if ! "$py" -c 'import torch' 2>/dev/null; then
    echo "error: $py cannot import torch (install it as the top of benches/torch_mdn.py says, then set TORCH_PYTHON)" >&2
    exit 2
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
# Wall and CPU seconds of each program: on a shared core the share of it each one got.
TIMEFORMAT='%R %U %S'
{ time taskset -c "$core" "$elbow" bench --json >"$tmp/ours.json"; } 2>"$tmp/ours.time"
{ time taskset -c "$core" "$py" "$here/torch_mdn.py" --json >"$tmp/torch.json"; } 2>"$tmp/torch.time"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
cpu="$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1)"

"$py" - "$tmp" "$cpu" "$load_before" "$load_after" "$core" <<'EOF'
import json, sys
tmp, cpu, before, after, core = sys.argv[1:6]
ours, torch = (json.load(open(f"{tmp}/{n}.json")) for n in ("ours", "torch"))
def share(name):
    real, user, sys_ = (float(v) for v in open(f"{tmp}/{name}.time").read().split()[-3:])
    return (user + sys_) / real, real
(s_ours, w_ours), (s_torch, w_torch) = share("ours"), share("torch")
print(f"CPU: {cpu}, core {core}; load average {before} before, {after} after")
print(f"share of the core each got (CPU / wall time): ours {100 * s_ours:.0f} % of {w_ours:.1f} s, "
      f"torch {100 * s_torch:.0f} % of {w_torch:.1f} s")
print(f"ours: kernels {ours['simd_level']}, FMA peak {ours['fma_peak_gflops']:.1f} GFLOP/s ({ours['fma_kernel']})")
print(f"torch {torch['torch_version']}: cpu capability {torch['cpu_capability']}, {torch['threads']} thread, "
      f"Adam {torch['adam']}, inference in chunks of {torch['batch_chunk']}")
peak = ours["fma_peak_gflops"] or float("nan")
rows = [
    ("MDN training, M samples/s", ours["mdn_train_samples_per_second"] / 1e6, torch["mdn_train_samples_per_second"] / 1e6,
     ours["train_gflops"], torch["train_gflops"]),
    ("batched inference, M targets/s", ours["batch_inference_targets_per_second"] / 1e6,
     torch["batch_inference_targets_per_second"] / 1e6, ours["batch_inference_gflops"], torch["batch_inference_gflops"]),
]
print(f"{'':34} {'ours':>10} {'torch':>10} {'ours/torch':>11}   GFLOP/s ours, torch (% of peak)")
for name, a, b, ga, gb in rows:
    print(f"{name:34} {a:10.3f} {b:10.3f} {a / b:11.2f}   {ga:.1f}, {gb:.1f} ({100 * ga / peak:.0f} %, {100 * gb / peak:.0f} %)")
a, b = ours["mdn_inference_us"], torch["mdn_inference_us"]
print(f"{'single-target inference, µs':34} {a:10.3f} {b:10.3f} {b / a:11.2f}   (torch time / ours)")
EOF
