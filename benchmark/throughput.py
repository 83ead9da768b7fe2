"""Steps per second of the training scripts, against bare stepping of the same env with random actions.

Each script trains with its defaults (Table 3 for PPO) for --steps steps in a subprocess; its own "done:" line gives
the training loop's SPS (imports and env creation excluded). Bare stepping runs a random agent for the same number
of steps: `env.step(env.action_space.sample())`, resetting at episode ends. Measurements alternate, and the median
of --repeats rounds is reported, because these machines are shared and noisy.

    python benchmark/throughput.py --scripts ppo_continuous.py --env-id Hopper-v4
"""

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field

import gymnasium as gym
import tyro

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
warnings.filterwarnings("ignore", message=".*-v4 is out of date", category=DeprecationWarning)


@dataclass
class Args:
    scripts: list[str] = field(default_factory=lambda: ["ppo_continuous.py"])
    """training scripts at the top of the repo"""
    env_id: str = "Hopper-v4"
    """the task"""
    steps: int = 40960
    """environment steps per measurement (at least 20 PPO iterations of 2048)"""
    repeats: int = 3
    """rounds; the median is reported"""


def bare_sps(env_id: str, steps: int, seed: int = 0) -> float:
    env = gym.make(env_id)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def script_sps(script: str, env_id: str, steps: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, os.path.join(ROOT, script), "--env-id", env_id, "--total-timesteps", str(steps)]
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
    match = re.search(r"done: (\d+) steps in ([\d.]+) s", proc.stdout)
    if proc.returncode != 0 or match is None:
        sys.exit(f"error: {script} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    return int(match.group(1)) / float(match.group(2))


def main(args: Args) -> None:
    bare, trained = [], {script: [] for script in args.scripts}
    for _ in range(args.repeats):
        bare.append(bare_sps(args.env_id, args.steps))
        for script in args.scripts:
            trained[script].append(script_sps(script, args.env_id, args.steps))
    bare_median = statistics.median(bare)
    print(f"{args.env_id}, {args.steps} steps, median of {args.repeats} rounds\n")
    print("| what | SPS (median) | all rounds | share of bare stepping |\n|-|-|-|-|")
    print(f"| bare env.step, random actions | {bare_median:.0f} | {', '.join(f'{x:.0f}' for x in bare)} | 100% |")
    for script, values in trained.items():
        median = statistics.median(values)
        print(f"| {script} | {median:.0f} | {', '.join(f'{x:.0f}' for x in values)} | {median / bare_median:.0%} |")


if __name__ == "__main__":
    main(tyro.cli(Args))
