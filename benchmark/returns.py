"""Train a grid of (script, env, seed) runs and report each run's mean return over its last 100 episodes.

The paper's score (§6.1): a run's mean total reward over its last 100 episodes. Runs go side by side, one per core
(`--jobs`), each with one torch thread. Interrupting is safe: every run saves checkpoints, and running the same
command again resumes unfinished runs and skips finished ones.

    python benchmark/returns.py --scripts ppo_continuous.py --env-ids Hopper-v4 --seeds 1 2
"""

import csv
import glob
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import tyro

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Args:
    scripts: list[str] = field(default_factory=lambda: ["ppo_continuous.py"])
    """algorithm scripts at the top of the repo"""
    env_ids: list[str] = field(default_factory=lambda: ["Hopper-v4"])
    """tasks"""
    seeds: list[int] = field(default_factory=lambda: [1, 2])
    """seeds; the paper uses 3 per task"""
    total_timesteps: int = 1_000_000
    """steps per run (the paper: 1M)"""
    extra: str = ""
    """more flags for every run, e.g. "--objective kl-adaptive --kl-target 0.01" """
    tag: str = ""
    """a name for this variant, so that runs of different --extra do not share a folder"""
    jobs: int = 2
    """runs at a time: one per core"""
    out: str = os.path.join(ROOT, "benchmark", "out")
    """where the runs live"""


def last100(csv_path: str) -> tuple[float, int]:
    """Mean return of the last 100 episodes, and the number of episodes."""
    with open(csv_path) as f:
        returns = [float(row["episodic_return"]) for row in csv.DictReader(f)]
    return float(np.mean(returns[-100:])), len(returns)


def run_one(args: Args, script: str, env_id: str, seed: int) -> dict:
    name = f"{script[:-3]}__{env_id}__{args.tag or 'default'}__{seed}"
    folder = os.path.join(args.out, name)
    result_path = os.path.join(folder, "result.json")
    if os.path.exists(result_path):  # finished earlier
        with open(result_path) as f:
            return json.load(f)
    os.makedirs(folder, exist_ok=True)
    checkpoints = sorted(glob.glob(os.path.join(folder, "runs", "*", "checkpoint.pt")))
    flags = ["--resume", checkpoints[-1]] if checkpoints else [
        "--env-id", env_id, "--seed", str(seed), "--total-timesteps", str(args.total_timesteps), "--save-model",
        *args.extra.split()]  # fmt: skip
    start = time.time()
    with open(os.path.join(folder, "log.txt"), "a") as log:
        proc = subprocess.run([sys.executable, os.path.join(ROOT, script), *flags], cwd=folder, stdout=log, stderr=log)
    if proc.returncode != 0:
        return {"name": name, "error": f"exit {proc.returncode}, see {folder}/log.txt"}
    run_dir = sorted(glob.glob(os.path.join(folder, "runs", "*")))[-1]
    score, episodes = last100(os.path.join(run_dir, "episodes.csv"))
    result = {"name": name, "script": script, "env_id": env_id, "seed": seed, "extra": args.extra,
              "last100": score, "episodes": episodes, "seconds": round(time.time() - start)}  # fmt: skip
    with open(result_path, "w") as f:
        json.dump(result, f)
    return result


def main(args: Args) -> None:
    grid = [(s, e, seed) for s in args.scripts for e in args.env_ids for seed in args.seeds]
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda job: run_one(args, *job), grid))
    print("| script | env | variant | seed | last-100 mean return | episodes |\n|-|-|-|-|-|-|")
    for r in results:
        if "error" in r:
            print(f"| {r['name']} | error: {r['error']} |")
        else:
            print(f"| {r['script']} | {r['env_id']} | {args.extra or 'defaults'} | {r['seed']} | {r['last100']:.1f} |"
                  f" {r['episodes']} |")  # fmt: skip
    for script in args.scripts:
        for env_id in args.env_ids:
            scores = [r["last100"] for r in results if r.get("script") == script and r.get("env_id") == env_id]
            if scores:
                print(f"\n{script} {env_id} {args.extra}: mean over {len(scores)} seeds {np.mean(scores):.1f}")
    if any("error" in r for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main(tyro.cli(Args))
