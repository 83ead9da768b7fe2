"""Steps per second of the training scripts, against bare stepping of the same env with random actions.

Each script trains with its defaults (Table 3 for the MuJoCo scripts, Table 5 for ppo_atari.py) for --steps steps in
a subprocess; its own "done:" line gives the training loop's SPS (imports and env creation excluded). Bare stepping
runs a random agent for the same number of steps: for MuJoCo `env.step(env.action_space.sample())` on one env,
resetting at episode ends; for Atari ale-py's AtariVectorEnv with the script's 8 envs and settings; for
ppo_humanoid.py its own worker processes (one per core) stepping its 32 envs (--humanoid-envs), as its rollout does.
Measurements alternate, and the median of --repeats rounds is reported, because these machines are shared and noisy.

    python benchmark/throughput.py --scripts ppo_continuous.py trpo.py reinforce_baseline.py ppo_atari.py
    python benchmark/throughput.py --scripts ppo_continuous.py --base 5bbc273~2   # old against new, in one run
    python benchmark/throughput.py --scripts ppo_humanoid.py --humanoid-envs 128 --humanoid-env-id \
        humanoid_flagrun:HumanoidFlagrun-v0                                        # §6.3, both cores

With --base, each script is also timed as it stood at that commit (taken with `git show` into a scratch folder),
in the same rounds, so that old and new are measured side by side on the same machine at the same time.
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
from typing import Optional

import gymnasium as gym
import numpy as np
import tyro

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
warnings.filterwarnings("ignore", message=".*-v4 is out of date", category=DeprecationWarning)


@dataclass
class Args:
    scripts: list[str] = field(default_factory=lambda: ["ppo_continuous.py"])
    """training scripts at the top of the repo"""
    env_id: str = "Hopper-v4"
    """the MuJoCo task"""
    steps: int = 40960
    """environment steps per measurement of a MuJoCo script (at least 20 PPO iterations of 2048)"""
    atari_env_id: str = "BreakoutNoFrameskip-v4"
    """the game for ppo_atari.py"""
    atari_steps: int = 10240
    """agent steps per measurement of ppo_atari.py (10 iterations of 8 x 128)"""
    humanoid_env_id: str = "humanoid_flagrun:HumanoidRun-v0"
    """the task for ppo_humanoid.py (§6.3)"""
    humanoid_envs: int = 32
    """actors of ppo_humanoid.py (Table 4: 32 running, 128 flagrun)"""
    humanoid_steps: int = 163840
    """steps per measurement of ppo_humanoid.py (10 iterations of 32 x 512)"""
    repeats: int = 3
    """rounds; the median is reported"""
    base: Optional[str] = None
    """also time each script as it stands at this git commit, in the same rounds (old against new)"""


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


def bare_atari_sps(env_id: str, steps: int, seed: int = 0) -> float:
    sys.path.insert(0, ROOT)
    import ppo_atari

    envs = ppo_atari.make_envs(ppo_atari.Args(env_id=env_id), run_dir="")
    envs.reset(seed=seed)
    actions = np.random.default_rng(seed).integers(
        0, envs.single_action_space.n, (steps // envs.num_envs, envs.num_envs)
    )
    start = time.perf_counter()
    for action in actions:
        envs.step(action)
    return actions.size / (time.perf_counter() - start)


def bare_humanoid_sps(env_id: str, steps: int, num_envs: int, seed: int = 0) -> float:
    """ppo_humanoid.py's N envs in its worker processes (one per core), stepped with uniform random actions."""
    sys.path.insert(0, ROOT)
    import ppo_humanoid

    args = ppo_humanoid.Args(env_id=env_id, num_envs=num_envs)
    envs = ppo_humanoid.make_envs(args, run_dir="")
    envs.call(ppo_humanoid.reset_env, [seed + i for i in range(num_envs)])
    space = envs.action_space
    actions = np.random.default_rng(seed).uniform(space.low, space.high, (steps // num_envs, num_envs, *space.shape))
    start = time.perf_counter()
    for action in actions.astype(space.dtype):
        envs.step(action)
    sps = actions.shape[0] * num_envs / (time.perf_counter() - start)
    envs.close()
    return sps


def script_sps(script: str, env_id: str, steps: int, *flags: str) -> float:
    """SPS of the training loop of `script` (a path, or a name at the top of the repo), by its own "done:" line."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, os.path.join(ROOT, script), "--env-id", env_id, "--total-timesteps", str(steps), *flags]
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
    match = re.search(r"done: (\d+) steps in ([\d.]+) s", proc.stdout)
    if proc.returncode != 0 or match is None:
        sys.exit(f"error: {script} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    return int(match.group(1)) / float(match.group(2))


def at_commit(script: str, commit: str, folder: str) -> str:
    """The script as it stood at `commit`, written into `folder`; its path."""
    proc = subprocess.run(["git", "show", f"{commit}:{script}"], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: --base {commit}: {proc.stderr.strip()}")
    path = os.path.join(folder, script)
    with open(path, "w") as f:
        f.write(proc.stdout)
    return path


def main(args: Args) -> None:
    if args.base:  # old against new: each script twice, the base's copy named script@base
        folder = tempfile.mkdtemp()
        args.scripts = [x for s in args.scripts for x in (s, f"{s}@{args.base}")]
        paths = {s: at_commit(s.split("@")[0], args.base, folder) if "@" in s else s for s in args.scripts}
    else:
        paths = {s: s for s in args.scripts}
    atari = [s for s in args.scripts if "atari" in s]
    humanoid = [s for s in args.scripts if "humanoid" in s]
    envs = ("--num-envs", str(args.humanoid_envs))
    groups = [(args.env_id, args.steps, [s for s in args.scripts if s not in atari + humanoid], bare_sps, ())]
    groups += [(args.atari_env_id, args.atari_steps, atari, bare_atari_sps, ())]
    groups += [(args.humanoid_env_id, args.humanoid_steps, humanoid,
                lambda env_id, steps: bare_humanoid_sps(env_id, steps, args.humanoid_envs), envs)]  # fmt: skip
    for env_id, steps, scripts, bare_fn, flags in groups:
        if not scripts:
            continue
        bare, trained = [], {script: [] for script in scripts}
        for _ in range(args.repeats):
            bare.append(bare_fn(env_id, steps))
            for script in scripts:
                trained[script].append(script_sps(paths[script], env_id, steps, *flags))
        bare_median = statistics.median(bare)
        print(f"\n{env_id}, {' '.join(flags) + ', ' if flags else ''}{steps} steps, median of {args.repeats} rounds\n")
        print("| what | SPS (median) | all rounds | share of bare stepping |\n|-|-|-|-|")
        print(f"| bare stepping, random actions | {bare_median:.0f} | {', '.join(f'{x:.0f}' for x in bare)} | 100% |")
        for script, values in trained.items():
            median = statistics.median(values)
            print(f"| {script} | {median:.0f} | {', '.join(f'{x:.0f}' for x in values)} | {median / bare_median:.0%} |")


if __name__ == "__main__":
    main(tyro.cli(Args))
