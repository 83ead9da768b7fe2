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


def profile(args: Args) -> tuple[dict[str, float], float, ppo_atari.Args]:
    """Seconds per iteration of each stage and of the whole iteration, over the iterations after the warm-up; and the
    run's flags."""
    iteration_ends = []  # print_progress closes each iteration: its end marks the iteration's end
    spent = defaultdict(lambda: defaultdict(float))  # stage -> iteration (0-based) -> seconds

    def timed(fn, name: str):
        def wrapper(*a, **kw):
            start = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent[name][len(iteration_ends)] += time.perf_counter() - start

        return wrapper

    for name, function in STAGES:
        setattr(ppo_atari, function, timed(getattr(ppo_atari, function), name))
    make_envs, forward, collect = ppo_atari.make_envs, ppo_atari.Agent.forward, ppo_atari.collect_rollout
    in_rollout = []  # non-empty while collect_rollout runs: the calls timed as the rollout's own

    def in_the_rollout(fn, name: str):
        return lambda *a, **kw: timed(fn, name)(*a, **kw) if in_rollout else fn(*a, **kw)

    def timed_envs(*a, **kw):  # the vector env's own calls: the emulators, preprocessing, frame stacking
        envs = make_envs(*a, **kw)  # (the first reset, before the loop, is setup: not timed)
        envs.step, envs.reset = in_the_rollout(envs.step, "env"), in_the_rollout(envs.reset, "env")
        return envs

    def rollout_forward(self, obs):  # the update's forward passes are in its own stage
        return in_the_rollout(forward, "rollout forward")(self, obs)

    def marked_rollout(*a, **kw):
        in_rollout.append(True)
        try:
            return collect(*a, **kw)
        finally:
            in_rollout.clear()

    ppo_atari.make_envs = timed_envs
    ppo_atari.Agent.forward, ppo_atari.collect_rollout = rollout_forward, marked_rollout
    print_progress = ppo_atari.print_progress
    ppo_atari.print_progress = lambda *a, **kw: (print_progress(*a, **kw), iteration_ends.append(time.perf_counter()))
    run_args = ppo_atari.Args(env_id=args.env_id, network=args.network, seed=args.seed, save_model=True)
    run_args.total_timesteps = (args.warmup + args.iterations) * run_args.num_envs * run_args.num_steps
    ppo_atari.validate(run_args)
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        ppo_atari.train(run_args)
    counted = range(args.warmup, args.warmup + args.iterations)
    seconds = {name: sum(per[i] for i in counted) / args.iterations for name, per in spent.items()}
    loop = (iteration_ends[-1] - iteration_ends[args.warmup - 1]) / args.iterations
    return seconds, loop, run_args


def main(args: Args) -> None:
    if args.warmup < 1 or args.iterations < 1:
        print("error: --warmup and --iterations must be >= 1", file=sys.stderr)
        sys.exit(2)
    seconds, loop, run_args = profile(args)
    batch = run_args.num_envs * run_args.num_steps
    env, forwards = seconds.pop("env"), seconds.pop("rollout forward")
    rows = [
        ("env stepping (ale-py: emulators, preprocessing)", env),
        ("rollout: forward passes (π, V)", forwards),
        ("rollout: bookkeeping (buffers, sampling, lives)", seconds.pop("rollout") - env - forwards),
    ]
    diagnostics = seconds.get("update: diagnostics over the batch", 0.0)  # called inside update()
    rows += [(name, seconds.get(name, 0.0) - (diagnostics if name.startswith("update: epochs") else 0.0))
             for name, _ in STAGES[1:]]  # fmt: skip
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
