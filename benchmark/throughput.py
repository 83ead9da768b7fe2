"""Steps per second of the training scripts, against bare stepping of the same env with random actions.

Each script trains with its defaults (Table 3 for the MuJoCo scripts, Table 5 for ppo_atari.py) for --steps steps in
a subprocess; its own "done:" line gives the training loop's SPS (imports and env creation excluded). Bare stepping
runs a random agent for the same number of steps: for MuJoCo `env.step(env.action_space.sample())` on one env,
resetting at episode ends; for Atari ale-py's AtariVectorEnv with the script's 8 envs and settings; for
ppo_humanoid.py its own worker processes (one per core) stepping its 32 envs (--humanoid-envs), as its rollout does;
with --humanoid-checkpoint, both from a run's trained state instead: bare stepping with the actions of its policy,
and the script continuing a copy of the checkpoint for --humanoid-seconds (by the last SPS it logs), because MuJoCo
steps a robot that runs slower than one that falls, and an untrained one falls (RESULTS.md, §6.3).
Measurements alternate, and the median of --repeats rounds is reported, because these machines are shared and noisy.

    python benchmark/throughput.py --scripts ppo_continuous.py trpo.py reinforce_baseline.py ppo_atari.py
    python benchmark/throughput.py --scripts ppo_continuous.py --base 5bbc273~2   # old against new, in one run
    python benchmark/throughput.py --scripts ppo_humanoid.py --humanoid-envs 128 --humanoid-env-id \
        humanoid_flagrun:HumanoidFlagrun-v0                                        # §6.3, both cores
    python benchmark/throughput.py --scripts ppo_humanoid.py --humanoid-checkpoint CHECKPOINT.pt   # a trained robot

With --base, each script is also timed as it stood at that commit (taken with `git show` into a scratch folder),
in the same rounds, so that old and new are measured side by side on the same machine at the same time.
"""

import os
import re
import shutil
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
    humanoid_checkpoint: Optional[str] = None
    """a ppo_humanoid.py checkpoint: bare stepping of --humanoid-env-id takes its policy's actions (the Gaussian's
    mean plus noise of its σ, clipped as the run clips them; the policy's time left out), and ppo_humanoid.py
    continues a copy of it instead of starting untrained"""
    humanoid_seconds: float = 60.0
    """with --humanoid-checkpoint: how long the script continues the copy (then SIGTERM: it ends its iteration)"""
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


def bare_humanoid_sps(env_id: str, steps: int, num_envs: int, checkpoint: Optional[str] = None, seed: int = 0) -> float:
    """ppo_humanoid.py's N envs in its worker processes (one per core), stepped with uniform random actions, or with
    the actions of the policy in `checkpoint` (only the envs' steps are timed)."""
    sys.path.insert(0, ROOT)
    import torch

    import ppo_humanoid

    torch.set_num_threads(1)  # as the script's rollout: another torch thread would spin on the workers' cores
    args = ppo_humanoid.Args(env_id=env_id, num_envs=num_envs)
    envs = ppo_humanoid.make_envs(args, run_dir="")
    obs = np.array(envs.call(ppo_humanoid.reset_env, [seed + i for i in range(num_envs)]))
    space, rng, elapsed = envs.action_space, np.random.default_rng(seed), 0.0
    if checkpoint:
        ckpt = ppo_humanoid.load_checkpoint(checkpoint, "--humanoid-checkpoint")
        saved, obs_rms = ckpt["args"], ppo_humanoid.RunningMeanStd()
        obs_rms.load(ckpt["obs_rms"])
        agent = ppo_humanoid.Agent(obs.shape[1], space.shape[0], hidden_sizes=saved.hidden_sizes,
                                   activation=saved.activation)  # fmt: skip
        agent.load_state_dict(ckpt["agent"])
    for _ in range(steps // num_envs):
        if checkpoint:
            with torch.inference_mode():
                policy = agent.get_policy(torch.from_numpy(ppo_humanoid.normalize_obs(obs, obs_rms, saved, False)))
            mean, logstd = (x.numpy() for x in policy)
            action = ppo_humanoid.env_actions(mean + np.exp(logstd) * rng.standard_normal(mean.shape), space, saved)
        else:
            action = rng.uniform(space.low, space.high, (num_envs, *space.shape))
        start = time.perf_counter()
        obs = envs.step(action.astype(space.dtype))[0].copy()
        elapsed += time.perf_counter() - start
    envs.close()
    return steps // num_envs * num_envs / elapsed


def script_sps(script: str, env_id: str, steps: int, *flags: str) -> float:
    """SPS of the training loop of `script` (a path, or a name at the top of the repo), by its own "done:" line."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, os.path.join(ROOT, script), "--env-id", env_id, "--total-timesteps", str(steps), *flags]
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
    match = re.search(r"done: (\d+) steps in ([\d.]+) s", proc.stdout)
    if proc.returncode != 0 or match is None:
        sys.exit(f"error: {script} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    return int(match.group(1)) / float(match.group(2))


def resumed_sps(script: str, checkpoint: str, seconds: float) -> float:
    """SPS of `script` continuing a copy of `checkpoint` for about `seconds`, then stopped by SIGTERM (it ends the
    iteration in progress), by the last charts/SPS it logs: its training loop since it started."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    with tempfile.TemporaryDirectory() as tmp:  # the copy's run folder: its checkpoint, events and episodes go there
        shutil.copy(checkpoint, os.path.join(tmp, "checkpoint.pt"))
        cmd = [sys.executable, os.path.join(ROOT, script), "--resume", "checkpoint.pt"]
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            proc.terminate()
        stderr = proc.communicate()[1]
        events = EventAccumulator(tmp)
        events.Reload()
        logged = events.Scalars("charts/SPS") if "charts/SPS" in events.Tags()["scalars"] else []
    if not logged:
        sys.exit(f"error: {script} --resume {checkpoint} logged no SPS in {seconds} s: {stderr.strip()[-500:]}")
    return logged[-1].value


def at_commit(script: str, commit: str, folder: str) -> str:
    """The script as it stood at `commit`, written into `folder`; its path."""
    proc = subprocess.run(["git", "show", f"{commit}:{script}"], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"error: --base {commit}: {proc.stderr.strip()}", file=sys.stderr)  # bad input: exit code 2
        sys.exit(2)
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
    trained_robot = args.humanoid_checkpoint is not None

    def bare_humanoid(env_id: str, steps: int) -> float:
        return bare_humanoid_sps(env_id, steps, args.humanoid_envs, args.humanoid_checkpoint)

    groups += [(args.humanoid_env_id, args.humanoid_steps, humanoid, bare_humanoid, envs)]
    for env_id, steps, scripts, bare_fn, flags in groups:
        if not scripts and not (bare_fn is bare_humanoid and trained_robot):
            continue
        bare, trained = [], {script: [] for script in scripts}
        for _ in range(args.repeats):
            bare.append(bare_fn(env_id, steps))
            for script in scripts:
                if bare_fn is bare_humanoid and trained_robot:
                    trained[script].append(resumed_sps(paths[script], args.humanoid_checkpoint, args.humanoid_seconds))
                else:
                    trained[script].append(script_sps(paths[script], env_id, steps, *flags))
        bare_median = statistics.median(bare)
        print(f"\n{env_id}, {' '.join(flags) + ', ' if flags else ''}{steps} steps, median of {args.repeats} rounds\n")
        print("| what | SPS (median) | all rounds | share of bare stepping |\n|-|-|-|-|")
        actions = "the checkpoint's policy" if bare_fn is bare_humanoid and trained_robot else "random actions"
        print(f"| bare stepping, {actions} | {bare_median:.0f} | {', '.join(f'{x:.0f}' for x in bare)} | 100% |")
        for script, values in trained.items():
            median = statistics.median(values)
            print(f"| {script} | {median:.0f} | {', '.join(f'{x:.0f}' for x in values)} | {median / bare_median:.0%} |")


if __name__ == "__main__":
    main(tyro.cli(Args))
