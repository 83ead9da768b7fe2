"""Where a training script's time goes: env stepping, the rollout's forward passes and its bookkeeping, the advantages,
the update, its diagnostics, logging and checkpoints, as milliseconds per iteration and as a projection to a run.

    python -m benchmark.stages                                            # ppo_continuous.py, Hopper, Table 3
    python -m benchmark.stages --script ppo_atari.py                      # Breakout, Table 5, as the atari grid runs
    python -m benchmark.stages --script ppo_atari.py --network a3c --iterations 40
    python -m benchmark.stages --script trpo.py --env-id Walker2d-v4
    python -m benchmark.stages --base b9ccc8d                             # ppo_continuous.py as at that commit
    python -m benchmark.stages --script ppo_humanoid.py --resume CHECKPOINT   # from a run's trained state

It trains the script in this process, exactly as `python SCRIPT --save-model` would, with a timer around each stage's
function, around the env's step and reset calls in the rollout and around the rollout's forward passes of the policy
(`Agent.get_policy`, or `Agent.forward` for ppo_atari.py); nothing else changes. Each row is a stage's own time, less
the stages timed inside it, so "rollout: bookkeeping" is the rollout less its env calls and forward passes, and the
update's row leaves out the diagnostics it ends with; "the rest" is the loop's time less every stage timed. The first
--warmup iterations (allocations, kernel choice) are left out. The run is the script's own, with its default length
(its schedules anneal as in a real run), stopped after --warmup + --iterations iterations as Ctrl-C stops it; with
--resume, a copy of a run's checkpoint continues instead, with that run's flags (a trained policy can make the env
step slower or faster than an untrained one: RESULTS.md, §6.3).

Below the table, the rollout's forward pass per call as it ran in the rollout, and the same call on the same input
alone in a loop afterwards (the fastest of 5 blocks): a small network called once per env step, between the env's
steps, runs slower than alone (RESULTS.md, "Plain PyTorch"). Run it on an otherwise idle machine.
"""

import importlib
import importlib.util
import math
import os
import shutil
import signal
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Literal, Optional

import torch
import tyro

from benchmark.throughput import at_commit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# The stages, in the order of an iteration: (name, the function of the script it times)
STAGES = [
    ("rollout: bookkeeping", "collect_rollout"),
    ("advantages (bootstrap values, GAE)", "estimate_advantages"),
    ("batch", "flatten_batch"),
    ("update: the gradient steps", "update"),
    ("update: diagnostics over the batch", "diagnostics"),
    ("TensorBoard", "log_metrics"),
    ("checkpoints", "save_checkpoint"),
    ("progress line", "print_progress"),
]
# per script: the task it is timed on by default, what its env stepping is, and the run length of the projection
SCRIPTS = {
    "ppo_continuous.py": ("Hopper-v4", "env stepping (MuJoCo, gymnasium's wrappers, resets)", 1_000_000),
    "trpo.py": ("Hopper-v4", "env stepping (MuJoCo, gymnasium's wrappers, resets)", 1_000_000),
    "reinforce_baseline.py": ("Hopper-v4", "env stepping (MuJoCo, gymnasium's wrappers, resets)", 1_000_000),
    "ppo_atari.py": ("BreakoutNoFrameskip-v4", "env stepping (ale-py: emulators, preprocessing)", 10_000_000),
    "ppo_humanoid.py": ("humanoid_flagrun:HumanoidRun-v0", "env stepping (worker processes, both cores)", 50_000_000),
}


@dataclass
class Args:
    script: Literal[tuple(SCRIPTS)] = "ppo_continuous.py"  # type: ignore[valid-type]
    """the training script to time, at the top of the repo, with its defaults"""
    env_id: Optional[str] = None
    """the task (default: Hopper-v4 for the MuJoCo scripts, Breakout for ppo_atari.py, HumanoidRun for ppo_humanoid)"""
    iterations: int = 30
    """iterations timed (2,048 steps each with Table 3's settings, 1,024 with Table 5's, 16,384 with Table 4's)"""
    warmup: int = 3
    """iterations run first and not counted"""
    network: Optional[Literal["nature", "a3c"]] = None
    """ppo_atari.py's --network (default: its own, nature)"""
    seed: Optional[int] = None
    """the run's seed (default 1)"""
    alone_calls: int = 1000
    """calls of the rollout's forward pass timed alone in a loop after the run, in each of 5 blocks (fastest counts)"""
    resume: Optional[str] = None
    """continue a copy of this checkpoint of the script (its run's flags) instead of starting a run"""
    base: Optional[str] = None
    """time the script as it stood at this commit instead (taken with `git show` into a scratch folder)"""


def profile(script, args: Args) -> tuple[dict[str, float], float, object, Optional[tuple[float, int, float]]]:
    """Seconds per iteration of each stage (its own time) and of the whole iteration, over the iterations after the
    warm-up; the run's flags; and the rollout's forward pass: seconds per call in the rollout, calls per iteration, and
    seconds per call alone in a loop (None when the rollout calls none)."""
    iteration_ends = []  # print_progress closes each iteration: its end marks the iteration's end
    spent = defaultdict(lambda: defaultdict(float))  # stage -> iteration (0-based) -> seconds of its own
    active = []  # [name, seconds spent in timed calls inside it] of each timed call in progress, innermost last
    calls = defaultdict(lambda: defaultdict(int))  # stage -> iteration -> calls

    def in_rollout() -> bool:
        return any(stage == STAGES[0][0] for stage, _ in active)

    def timed(fn, name: str, only_in_rollout: bool = False):
        def wrapper(*a, **kw):
            if only_in_rollout and not in_rollout():
                return fn(*a, **kw)  # outside the rollout: part of the stage that called it
            active.append([name, 0.0])
            start = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                total = time.perf_counter() - start
                _, inner = active.pop()
                spent[name][len(iteration_ends)] += total - inner
                calls[name][len(iteration_ends)] += 1
                if active:
                    active[-1][1] += total

        return wrapper

    for name, function in STAGES:
        if hasattr(script, function):
            setattr(script, function, timed(getattr(script, function), name))
    make_envs = script.make_envs
    env_name = SCRIPTS[args.script][1]

    def timed_envs(*a, **kw):  # the env's own calls; the first reset, before the loop, is setup and not timed
        envs = make_envs(*a, **kw)
        for env in envs if isinstance(envs, list) else [envs]:
            for call in ("step", "reset"):  # ppo_humanoid.py's workers reset their envs within its step
                if hasattr(env, call):
                    setattr(env, call, timed(getattr(env, call), env_name, only_in_rollout=True))
        return envs

    method = "get_policy" if hasattr(script.Agent, "get_policy") else "forward"
    forward, last_call = getattr(script.Agent, method), []

    def rollout_forward(self, *a):  # the update's forward passes are in its own stage
        if in_rollout():  # the input the alone-in-a-loop timing repeats
            last_call[:] = [self, *a]
        return timed(forward, "rollout: forward passes", only_in_rollout=True)(self, *a)

    script.make_envs = timed_envs
    setattr(script.Agent, method, rollout_forward)
    print_progress = script.print_progress
    stop_lists, iterations = [], args.warmup + args.iterations
    catch_stop_signals = script.catch_stop_signals

    def end_iteration(*a, **kw):  # after the last iteration timed, stop the run as a Ctrl-C would
        print_progress(*a, **kw)
        iteration_ends.append(time.perf_counter())
        if len(iteration_ends) == iterations:
            stop_lists[-1].append(signal.SIGINT)

    def catch():  # the script's list of stop requests, which end_iteration adds to
        stop_lists.append(catch_stop_signals())
        return stop_lists[-1]

    script.print_progress, script.catch_stop_signals = end_iteration, catch
    with tempfile.TemporaryDirectory() as scratch:
        if args.resume:  # a copy: the run's own folder is left alone
            shutil.copy(args.resume, os.path.join(scratch, "checkpoint.pt"))
            ckpt = script.load_resumable(os.path.join(scratch, "checkpoint.pt"), [])
            run_args = replace(ckpt["args"], resume=os.path.join(scratch, "checkpoint.pt"))
            left = run_args.total_timesteps - ckpt["global_step"]
        else:
            seed, env_id = 1 if args.seed is None else args.seed, args.env_id or SCRIPTS[args.script][0]
            ckpt, run_args = None, script.Args(env_id=env_id, seed=seed)
            run_args.save_model = True
            if args.network is not None:
                run_args.network = args.network
            run_args.total_timesteps, left = max(run_args.total_timesteps, iterations * batch_of(run_args)), math.inf
        if left < iterations * batch_of(run_args):
            fail(f"--resume {args.resume}: {left} steps are left in its run, fewer than {iterations} iterations")
        script.validate(run_args)
        os.chdir(scratch)
        try:
            script.train(run_args, ckpt)
        except SystemExit as e:
            if e.code != 128 + signal.SIGINT:  # stopped otherwise than by the stop above
                raise
        finally:
            os.chdir(ROOT)
    counted = range(args.warmup, args.warmup + args.iterations)
    seconds = {name: sum(per[i] for i in counted) / args.iterations for name, per in spent.items()}
    loop = (iteration_ends[-1] - iteration_ends[args.warmup - 1]) / args.iterations
    forward_calls = sum(calls["rollout: forward passes"][i] for i in counted) / args.iterations
    if not forward_calls:  # a version of the script whose rollout computes the policy another way
        return seconds, loop, run_args, None
    blocks = []  # the fastest of 5 blocks of calls: a loop this short is easily slowed by the machine's other work
    with torch.inference_mode():  # as the rollout calls it
        for _ in range(min(100, args.alone_calls)):
            forward(*last_call)
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(args.alone_calls):
                forward(*last_call)
            blocks.append((time.perf_counter() - start) / args.alone_calls)
    alone = min(blocks)
    return seconds, loop, run_args, (seconds["rollout: forward passes"] / forward_calls, round(forward_calls), alone)


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def batch_of(run_args) -> int:
    return run_args.num_envs * run_args.num_steps


def main(args: Args) -> None:
    if args.warmup < 1 or args.iterations < 1 or args.alone_calls < 1:
        fail("--warmup, --iterations and --alone-calls must be >= 1")
    if args.network is not None and args.script != "ppo_atari.py":
        fail(f"--network is ppo_atari.py's; {args.script} has no such flag")
    if args.resume and (args.env_id or args.network or args.seed is not None):
        fail("--resume continues the checkpoint's run with its flags; drop --env-id, --network and --seed")
    if args.base:
        with tempfile.TemporaryDirectory() as scratch:
            spec = importlib.util.spec_from_file_location("base_script", at_commit(args.script, args.base, scratch))
            script = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(script)
    else:
        script = importlib.import_module(args.script.removesuffix(".py"))
    seconds, loop, run_args, forward = profile(script, args)
    batch = batch_of(run_args)
    env_name, project_steps = SCRIPTS[args.script][1:]
    rows = [
        (env_name, seconds.pop(env_name, 0.0)),
        ("rollout: forward passes", seconds.get("rollout: forward passes", 0)),
    ]
    rows += [(name, seconds.get(name, 0.0)) for name, _ in STAGES]
    rows.append(("the rest (loop bookkeeping, CSV)", loop - sum(value for _, value in rows)))
    hours = project_steps / batch / 3600
    network = f", --network {run_args.network}" if hasattr(run_args, "network") else ""
    title = f"{args.script}@{args.base}" if args.base else args.script
    title += f" from {args.resume}" if args.resume else ""
    print(f"\n{title}, {run_args.env_id}{network}, {args.iterations} iterations of {batch} steps after"
          f" {args.warmup} of warm-up: {batch / loop:.0f} SPS\n")  # fmt: skip
    print(f"| stage | ms per iteration | share | hours in a {project_steps:,}-step run |\n|-|-|-|-|")
    for name, value in rows:
        print(f"| {name} | {value * 1e3:.0f} | {value / loop:.1%} | {value * hours:.2f} |")
    print(f"| **one iteration** | {loop * 1e3:.0f} | 100% | {loop * hours:.2f} |")
    if forward is None:
        print("\nno forward pass timed in the rollout (this version computes the policy another way): its time is in"
              " the rollout's bookkeeping")  # fmt: skip
        return
    in_rollout, forward_calls, alone = forward
    print(f"\nthe rollout's forward pass ({forward_calls} calls per iteration): {in_rollout * 1e6:.1f} us per call in"
          f" the rollout, {alone * 1e6:.1f} us alone in a loop ({in_rollout / alone:.1f}x)")  # fmt: skip


if __name__ == "__main__":
    main(tyro.cli(Args, description=__doc__))
