"""Where a ppo_atari.py run's time goes: env stepping, the rollout's forward passes, the update, the diagnostics,
logging and checkpoints, as seconds per iteration and as a projection to a 10M-step run.

    python -m benchmark.atari_profile                          # Breakout, Table 5's settings, as the atari grid runs
    python -m benchmark.atari_profile --network a3c --iterations 40

It trains ppo_atari.py in this process, exactly as `python ppo_atari.py --save-model` would, with a timer around each
stage's function, around the vector env's step and reset calls and around the network's forward passes in the
rollout; nothing else changes. The first --warmup iterations (allocations, kernel choice) are left out. "rollout:
bookkeeping" is the rollout's time less the env's and the forward passes', "the rest" is the loop's time less every
stage timed. Run it on an otherwise idle machine: both
cores are the run's.
"""

import os
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

import tyro

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import ppo_atari  # noqa: E402

# The stages, in the order of an iteration: (name, the function of ppo_atari.py it times)
STAGES = [
    ("rollout", "collect_rollout"),
    ("advantages (bootstrap values, GAE)", "estimate_advantages"),
    ("batch", "flatten_batch"),
    ("update: epochs of minibatch steps", "update"),
    ("update: diagnostics over the batch", "diagnostics"),
    ("TensorBoard", "log_metrics"),
    ("checkpoints", "save_checkpoint"),
    ("progress line", "print_progress"),
]
STEPS_10M = 10_000_000


@dataclass
class Args:
    env_id: str = "BreakoutNoFrameskip-v4"
    """the game"""
    iterations: int = 30
    """iterations timed (each 8 x 128 = 1,024 agent steps with Table 5's settings)"""
    warmup: int = 3
    """iterations run first and not counted"""
    network: Literal["nature", "a3c"] = "nature"
    """ppo_atari.py's --network"""
    seed: int = 1
    """the run's seed"""


def timed(fn, durations: list):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            durations.append(time.perf_counter() - start)

    return wrapper


def profile(args: Args) -> tuple[dict[str, list[float]], list[float], ppo_atari.Args]:
    """Per stage the duration of each call, the duration of each whole iteration, and the run's flags."""
    calls = defaultdict(list)
    for name, function in STAGES:
        setattr(ppo_atari, function, timed(getattr(ppo_atari, function), calls[name]))
    make_envs = ppo_atari.make_envs

    def timed_envs(*a, **kw):  # the vector env's own calls: the emulators, preprocessing, frame stacking
        envs = make_envs(*a, **kw)
        envs.step, envs.reset = timed(envs.step, calls["env.step"]), timed(envs.reset, calls["env.reset"])
        return envs

    ppo_atari.make_envs = timed_envs
    # the rollout's forward passes: Agent.forward while collect_rollout runs (the update's own are in its stage)
    forward, collect = ppo_atari.Agent.forward, ppo_atari.collect_rollout
    in_rollout = []

    def rollout_forward(self, obs):
        return timed(forward, calls["rollout forward"])(self, obs) if in_rollout else forward(self, obs)

    def marked_rollout(*a, **kw):
        in_rollout.append(True)
        try:
            return collect(*a, **kw)
        finally:
            in_rollout.clear()

    ppo_atari.Agent.forward, ppo_atari.collect_rollout = rollout_forward, marked_rollout
    iteration_ends = []  # print_progress closes each iteration: its end marks the iteration's end
    print_progress = ppo_atari.print_progress
    ppo_atari.print_progress = lambda *a, **kw: (print_progress(*a, **kw), iteration_ends.append(time.perf_counter()))
    run_args = ppo_atari.Args(env_id=args.env_id, network=args.network, seed=args.seed, save_model=True)
    run_args.total_timesteps = (args.warmup + args.iterations) * run_args.num_envs * run_args.num_steps
    ppo_atari.validate(run_args)
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        ppo_atari.train(run_args)
    iterations = [b - a for a, b in zip(iteration_ends[args.warmup - 1 :], iteration_ends[args.warmup :])]
    return calls, iterations, run_args


def per_iteration(durations: list[float], calls_per_iteration: int, warmup_calls: int) -> float:
    counted = durations[warmup_calls:]
    return sum(counted) / (len(counted) / calls_per_iteration)


def main(args: Args) -> None:
    if args.warmup < 1 or args.iterations < 1:
        print("error: --warmup and --iterations must be >= 1", file=sys.stderr)
        sys.exit(2)
    calls, iterations, run_args = profile(args)
    total = args.warmup + args.iterations
    batch = run_args.num_envs * run_args.num_steps
    seconds = {}
    for name, durations in calls.items():
        per_iter = len(durations) / total  # calls per iteration (env.step: num_steps; checkpoints: 1 in save_interval)
        seconds[name] = per_iteration(durations, per_iter, round(args.warmup * per_iter)) if durations else 0.0
    loop = sum(iterations) / len(iterations)
    env = seconds.pop("env.step") + seconds.pop("env.reset", 0.0)
    forwards = seconds.pop("rollout forward")
    rows = [
        ("env stepping (ale-py: emulators, preprocessing)", env),
        ("rollout: forward passes (π, V)", forwards),
        ("rollout: bookkeeping (buffers, sampling, lives)", seconds.pop("rollout") - env - forwards),
    ]
    update = seconds.pop("update: epochs of minibatch steps") - seconds["update: diagnostics over the batch"]
    rows += [(name, update if name.startswith("update: epochs") else seconds[name]) for name, _ in STAGES[1:]]
    rows.append(("the rest (loop bookkeeping, CSV)", loop - sum(value for _, value in rows)))
    hours = STEPS_10M / batch / 3600
    print(f"\n{run_args.env_id}, --network {run_args.network}, {args.iterations} iterations of {batch} steps after"
          f" {args.warmup} of warm-up: {batch / loop:.0f} SPS\n")  # fmt: skip
    print("| stage | ms per iteration | share | hours in a 10M-step run |\n|-|-|-|-|")
    for name, value in rows:
        print(f"| {name} | {value * 1e3:.0f} | {value / loop:.1%} | {value * hours:.2f} |")
    print(f"| **one iteration** | {loop * 1e3:.0f} | 100% | {loop * hours:.2f} |")


if __name__ == "__main__":
    main(tyro.cli(Args, description=__doc__))
