#!/usr/bin/env python3
"""The MDN of `elbow bench`, trained and run in PyTorch on one CPU thread, for comparison.

Not part of the build, the tests or CI: PyTorch is large and is installed once, by hand, in a
virtual environment of its own, outside the project's set-up. PyPI's default Linux wheel runs
on a CPU as it is, but it links against NVIDIA's CUDA libraries, so pip pulls those too (about
3 GB; none of them is used here):

    python3 -m venv /root/.cache/torch-venv
    /root/.cache/torch-venv/bin/pip install torch

(Where download.pytorch.org is reachable, `--index-url https://download.pytorch.org/whl/cpu`
gets the CPU-only wheel, about 200 MB.) Run it on the core `elbow bench` uses:

    taskset -c 0 /root/.cache/torch-venv/bin/python benches/torch_mdn.py [--json]

`benches/torch_compare.sh` runs `elbow bench` and this script back to back and prints the ratios.

What is measured matches `src/bench.rs` (the network of `TrainConfig::default()` with the MDN
head, see `src/learned/train.rs`, `src/learned/head.rs`, `src/nn/`):

- network 3-64-64-14: input the polar target `[cos, sin, r / reach]`, two hidden layers of 64
  with tanh, a linear output of `k (1 + 2 d)` = 14 values for k = 2 Gaussian components over the
  circular pose encoding (d = 3): 2 logits, 6 means, 6 log-sigmas floored at ln 0.01 and capped
  at 8;
- loss: the mixture's mean negative log-likelihood over a batch of 256;
- Adam (0.9, 0.999, eps 1e-8; `fused=True`, PyTorch's fastest Adam on a CPU: its default for
  CPU tensors, one tensor at a time, took about 15 % more per step here), gradients clipped to global norm 10, learning rate 3e-3 on the
  same cosine decay to 5 %;
- data: 20,000 targets drawn uniformly over the area of the unit-link arm's reach, each with both
  elbow branches; every step draws 256 of them (reshuffled each epoch) with a random branch each;
- training: 20 warm-up steps, then five timed blocks of `--train-steps / 5` steps; the median
  block is the figure (samples per second). FLOP per sample counts what `src/bench.rs` counts:
  2 FLOP per multiply-accumulate, one MAC per weight for the forward pass, one for every weight
  gradient and one for the input gradient of every layer but the first (30,720 FLOP);
- batched inference: a 256 x 256 grid of targets over the reach square (65,536), forward passes
  over chunks of `--chunk` targets (default 2048; `torch.inference_mode`), median of 7 after one
  warm-up, 2 FLOP per weight per target. Ours runs chunks of 256 inside `Mlp::forward_batch`.
  For PyTorch, 2048 was the best of 256, 2048, 8192 and 65,536 here (the whole grid in one call,
  its activations 16 MiB a layer, ran at a third to a half of the chunked rate; 256 at about two
  thirds);
- single-target inference: one forward pass of a 1 x 3 tensor built beforehand, median of five
  blocks of calls. Ours (`LearnedModel::predict`) also computes the features and decodes the
  components, so this comparison leans towards PyTorch.

One thread (`torch.set_num_threads(1)`, and one inter-op thread), float32, eager mode (no
`torch.compile`).
"""

import argparse
import json
import math
import statistics
import time

import torch

# The MDN of TrainConfig::default(): 3 inputs, depth 2 x 64 hidden, K = 2, d = 3.
INPUTS, HIDDEN, DEPTH, K, D = 3, 64, 2, 2, 3
OUTPUTS = K * (1 + 2 * D)
BATCH = 256
LR = 3e-3
SIGMA_MIN = 0.01
RAW_MAX = 8.0
CLIP_NORM = 10.0
DATA_SIZE = 20_000
REACH = 2.0  # unit links
LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
GRID_SIDE = 256


def build_net(gen):
    """3-64-64-14, tanh hidden, initialised as `Dense::new` and `spread_components` do."""
    sizes = [INPUTS] + [HIDDEN] * DEPTH + [OUTPUTS]
    layers = []
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        lin = torch.nn.Linear(n_in, n_out)
        with torch.no_grad():
            lin.weight.normal_(0.0, 1.0 / math.sqrt(n_in), generator=gen)
            lin.bias.zero_()
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(torch.nn.Tanh())
    net = torch.nn.Sequential(*layers)
    last = layers[-1]
    with torch.no_grad():
        last.weight.mul_(0.1)
        for i in range(K):
            t = 0.0 if K == 1 else i / (K - 1) * 2.0 - 1.0
            last.bias[K + i * D + D - 1] = 0.5 * t  # elbow means from one branch to the other
            for j in range(D):
                last.bias[K + K * D + i * D + j] = -1.0  # sigma about 0.37 to start
    return net


def macs_per_sample(net):
    return sum(m.weight.numel() for m in net if isinstance(m, torch.nn.Linear))


def train_flops_per_sample(net):
    """As src/bench.rs: forward, dW of every layer, dX of all but the first; 2 FLOP per MAC."""
    first = next(m for m in net if isinstance(m, torch.nn.Linear)).weight.numel()
    return 2 * (3 * macs_per_sample(net) - first)


def features(x, y):
    """`LearnedModel::features` for the MDN: `[cos, sin, r / reach]` of the target."""
    r = torch.hypot(x, y)
    safe = torch.where(r > 0, r, torch.ones_like(r))
    c = torch.where(r > 0, x / safe, torch.ones_like(r))
    s = torch.where(r > 0, y / safe, torch.zeros_like(r))
    return torch.stack([c, s, r / REACH], dim=1).float()


def dataset(gen):
    """Targets uniform over the reach disc, both elbow branches each, circular encoding."""
    u = torch.rand(DATA_SIZE, generator=gen, dtype=torch.float64)
    theta = (torch.rand(DATA_SIZE, generator=gen, dtype=torch.float64) * 2.0 - 1.0) * math.pi
    r = REACH * torch.sqrt(u)
    x, y = r * torch.cos(theta), r * torch.sin(theta)
    c2 = ((r * r - 2.0) / 2.0).clamp(-1.0, 1.0)
    inputs, targets = [], []
    for sign in (1.0, -1.0):
        q2 = sign * torch.acos(c2)
        q1 = torch.atan2(y, x) - torch.atan2(torch.sin(q2), 1.0 + torch.cos(q2))
        targets.append(torch.stack([torch.cos(q1), torch.sin(q1), q2 / math.pi], dim=1).float())
        inputs.append(features(x, y))
    # Row 2 i + b is target i on branch b, as in the trainer.
    return torch.stack(inputs, 1).reshape(-1, INPUTS), torch.stack(targets, 1).reshape(-1, D)


def mdn_nll(out, y):
    """The mean mixture negative log-likelihood (`nn::MdnNll`)."""
    logits = out[:, :K]
    mu = out[:, K : K + K * D].reshape(-1, K, D)
    log_s = out[:, K + K * D :].reshape(-1, K, D).clamp(math.log(SIGMA_MIN), RAW_MAX)
    z = (y.unsqueeze(1) - mu) * torch.exp(-log_s)
    comp = -(0.5 * z * z + log_s + LOG_SQRT_2PI).sum(-1)
    return -torch.logsumexp(torch.log_softmax(logits, -1) + comp, -1).mean()


class Trainer:
    """One minibatch step: batch draw, cosine learning rate, forward, loss, backward, clip, Adam."""

    def __init__(self, steps, gen, adam_impl):
        self.net = build_net(gen)
        self.inputs, self.targets = dataset(gen)
        kw = {"default": {}, "single": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}[adam_impl]
        self.adam = torch.optim.Adam(self.net.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-8, **kw)
        self.steps, self.step_no, self.gen = steps, 0, gen
        self.order, self.cursor = None, DATA_SIZE

    def batch_rows(self):
        if self.cursor + BATCH > DATA_SIZE:
            self.order, self.cursor = torch.randperm(DATA_SIZE, generator=self.gen), 0
        pick = self.order[self.cursor : self.cursor + BATCH]
        self.cursor += BATCH
        return 2 * pick + torch.randint(0, 2, (BATCH,), generator=self.gen)

    def step(self):
        rows = self.batch_rows()
        x, y = self.inputs[rows], self.targets[rows]
        t = min(self.step_no / max(self.steps, 1), 1.0)
        self.adam.param_groups[0]["lr"] = LR * (0.05 + 0.95 * 0.5 * (1.0 + math.cos(math.pi * t)))
        self.adam.zero_grad(set_to_none=False)
        loss = mdn_nll(self.net(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.net.parameters(), CLIP_NORM)
        self.adam.step()
        self.step_no += 1
        return loss.detach()


def measure(train_steps, adam_impl, chunk):
    gen = torch.Generator().manual_seed(1)
    trainer = Trainer(train_steps, gen, adam_impl)
    for _ in range(20):
        trainer.step()
    block = -(-train_steps // 5)
    rates = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(block):
            loss = trainer.step()
        rates.append(block * BATCH / (time.perf_counter() - t))
    samples_per_second = statistics.median(rates)
    net = trainer.net
    flops = train_flops_per_sample(net)
    final_loss = float(loss)

    # Batched inference over a 256 x 256 grid of the reach square.
    axis = -REACH + 2.0 * REACH * (torch.arange(GRID_SIDE, dtype=torch.float64) + 0.5) / GRID_SIDE
    gy, gx = torch.meshgrid(axis, axis, indexing="ij")
    grid = features(gx.reshape(-1), gy.reshape(-1)).contiguous()
    chunks = grid.split(chunk)
    with torch.inference_mode():
        for c in chunks:
            net(c)
        times = []
        for _ in range(7):
            t = time.perf_counter()
            for c in chunks:
                net(c)
            times.append(time.perf_counter() - t)
    batch_secs = statistics.median(times)
    targets = GRID_SIDE * GRID_SIDE

    # Single-target inference: one 1 x 3 forward pass.
    one = grid[12345:12346].clone()
    calls = 20_000
    with torch.inference_mode():
        for _ in range(calls // 10):
            net(one)
        blocks = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(calls // 5):
                net(one)
            blocks.append((time.perf_counter() - t) / (calls // 5))
    return {
        "torch_version": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "adam": adam_impl,
        "train_steps": train_steps,
        "final_loss": final_loss,
        "mdn_train_samples_per_second": samples_per_second,
        "flops_per_sample": flops,
        "train_gflops": samples_per_second * flops / 1e9,
        "mdn_train_steps_per_second": samples_per_second / BATCH,
        "batch_targets": targets,
        "batch_chunk": chunk,
        "batch_inference_targets_per_second": targets / batch_secs,
        "batch_inference_gflops": 2 * macs_per_sample(net) * targets / batch_secs / 1e9,
        "mdn_inference_us": 1e6 * statistics.median(blocks),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--train-steps", type=int, default=2000, help="timed training steps (as `elbow bench`)")
    p.add_argument(
        "--adam",
        choices=["default", "single", "foreach", "fused"],
        default="fused",
        help="torch.optim.Adam implementation: fused (the fastest on a CPU, the default here), "
        "default (PyTorch's own choice for CPU tensors: one tensor at a time), single, foreach",
    )
    p.add_argument("--chunk", type=int, default=2048, help="targets per forward pass of the batched inference")
    args = p.parse_args()
    if not 10 <= args.train_steps <= 200_000:
        p.error(f"train steps must be in 10..=200000, got {args.train_steps}")
    if not 1 <= args.chunk <= GRID_SIDE * GRID_SIDE:
        p.error(f"chunk must be in 1..={GRID_SIDE * GRID_SIDE}, got {args.chunk}")
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    r = measure(args.train_steps, args.adam, args.chunk)
    if args.json:
        print(json.dumps(r))
        return
    print(f"torch {r['torch_version']} ({r['cpu_capability']}, {r['threads']} thread, Adam {r['adam']})")
    print(
        f"MDN training (f32, b256) {r['mdn_train_samples_per_second'] / 1e6:10.2f} M samples/s  = "
        f"{r['train_gflops']:.1f} GFLOP/s ({r['flops_per_sample']} FLOP/sample, "
        f"{r['mdn_train_steps_per_second']:.0f} steps/s, last loss {r['final_loss']:.2f})"
    )
    print(
        f"batched inference        {r['batch_inference_targets_per_second'] / 1e6:10.2f} M targets/s = "
        f"{r['batch_inference_gflops']:.1f} GFLOP/s ({r['batch_targets']} targets, "
        f"chunks of {r['batch_chunk']})"
    )
    print(f"MDN inference            {r['mdn_inference_us']:10.3f} µs   (network forward only)")


if __name__ == "__main__":
    main()
