"""Check that a change to the scripts leaves their training arithmetic alone, bit for bit.

    python -m benchmark.bitcheck                      # the working tree against HEAD, every case
    python -m benchmark.bitcheck --base c2e99e5 --scripts trpo.py

For each case (a script with short-run flags) it runs the script as it is at --base and as it is in the working tree,
same seed, each in a scratch folder, and compares episodes.csv byte for byte and every tensor and value of the final
checkpoint (weights, optimizer state, running statistics, RNG and env states). One line per case, IDENTICAL or
DIFFERENT (with the first difference); exit code 1 when any case differs. This is the check a refactor must pass
while a benchmark grid runs the script (DEVELOPERS.md: "refactors are checked bit for bit").
"""

import glob
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Optional

import torch
import tyro

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Short runs that reach every branch of the shared skeleton: one env and several, terminations and time-limit
# truncations (HalfCheetah's 1000 steps), every objective of Table 1, ppo1's details, and the Figure 3 flag sets of
# vanilla PG, A2C and A2C + trust region, and CEM
CASES = {
    "ppo_continuous.py": [
        "--env-id Hopper-v4 --total-timesteps 20480",
        "--env-id Walker2d-v4 --total-timesteps 4096 --objective none",
        "--env-id HalfCheetah-v4 --num-envs 2 --num-steps 1024 --total-timesteps 4096 --objective kl-adaptive",
        "--env-id InvertedDoublePendulum-v4 --num-envs 3 --num-steps 512 --total-timesteps 6144 --clip-vloss"
        " --objective kl-fixed --kl-beta 3",
        # ppo1's details (benchmark/presets.py PPO1), the table1-ppo1 grid's, on 2 envs with time-limit truncations
        "--env-id HalfCheetah-v4 --num-envs 2 --num-steps 1024 --total-timesteps 6144 --objective none --obs-clip 5"
        " --obs-std-floor 0.1 --obs-stats-update batch --norm-adv-scope batch --max-grad-norm None --no-norm-reward"
        " --no-anneal-lr --adam-eps 1e-8 --clip-vloss --vf-coef 0.5 --no-bootstrap-truncated --normc-init"
        " --no-clip-actions",
    ],
    "trpo.py": [
        "--env-id Hopper-v4 --total-timesteps 10240",
        "--env-id InvertedDoublePendulum-v4 --num-envs 3 --num-steps 512 --total-timesteps 6144",
    ],
    "reinforce_baseline.py": [
        "--env-id Hopper-v4 --num-envs 3 --num-steps 512 --total-timesteps 6144",
        "--env-id Hopper-v4 --total-timesteps 8192 --adaptive-lr --kl-target 2e-3 --learning-rate 1e-3 --no-anneal-lr",
        "--env-id HalfCheetah-v4 --total-timesteps 2400 --num-envs 16 --num-steps 5 --gae-lambda 1 --no-norm-adv"
        " --update-epochs 1 --vf-epochs 1 --minibatch-size 80 --optimizer rmsprop --learning-rate 7e-4"
        " --vf-learning-rate 7e-4 --vf-coef 0.5 --ent-coef 0.01 --max-grad-norm 0.5",
        # Figure 3's A2C (TensorFlow's RMSProp) with the trust region
        "--env-id HalfCheetah-v4 --total-timesteps 2400 --num-envs 16 --num-steps 5 --gae-lambda 1 --no-norm-adv"
        " --update-epochs 1 --vf-epochs 1 --minibatch-size 80 --optimizer rmsprop-tf --learning-rate 7e-4"
        " --vf-learning-rate 7e-4 --vf-coef 0.5 --ent-coef 0.01 --max-grad-norm 0.5 --trust-region --tr-delta 0.5",
    ],
    "cem.py": [
        "--env-id Hopper-v4 --total-timesteps 20000 --population-size 8",
        "--env-id HalfCheetah-v4 --total-timesteps 12000 --population-size 4 --episodes-per-sample 2",
    ],
    # §6.3's script: Table 4 (adaptive stepsize, log-std anneal) on a flagrun task, whose own state a checkpoint
    # keeps, in 2 worker processes; and Humanoid-v4 with the KL penalty and ppo1's batch statistics
    "ppo_humanoid.py": [
        "--env-id humanoid_flagrun:HumanoidFlagrun-v0 --num-envs 8 --num-workers 2 --update-threads 1 --num-steps 64"
        " --minibatch-size 128 --total-timesteps 2048",
        "--env-id Humanoid-v4 --num-envs 4 --num-workers 2 --update-threads 1 --num-steps 128 --minibatch-size 256"
        " --total-timesteps 2048 --objective kl-adaptive --obs-stats-update batch --clip-vloss",
    ],
    "ppo_atari.py": [
        "--env-id BreakoutNoFrameskip-v4 --total-timesteps 4096 --torch-threads 1 --env-threads 1",
        "--env-id BreakoutNoFrameskip-v4 --total-timesteps 3072 --torch-threads 1 --env-threads 1"
        " --objective kl-adaptive --max-episode-frames 1200 --no-clip-vloss",
        "--env-id ALE/Pong-v5 --num-envs 4 --total-timesteps 2048 --torch-threads 1 --env-threads 1"
        " --no-fire-on-life-loss --objective kl-fixed",
    ],
}


@dataclass
class Args:
    base: str = "HEAD"
    """the git revision to compare the working tree with"""
    scripts: list[str] = field(default_factory=lambda: list(CASES))
    """the scripts to check"""
    seed: int = 1
    """the seed of every run"""


def run(script_path: str, flags: str, seed: int, folder: str) -> str:
    """Run a script to the end in folder with --save-model; return its run folder."""
    os.makedirs(folder)
    env = {**os.environ, "PYTHONPATH": ROOT}
    cmd = [sys.executable, script_path, *flags.split(), "--seed", str(seed), "--save-model"]
    proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip().splitlines()[-1:]}")
    (run_dir,) = glob.glob(os.path.join(folder, "runs", "*"))
    return run_dir


def first_difference(a, b, where: str = "checkpoint") -> Optional[str]:
    """Where two checkpoints (nested dicts, lists, tensors, numbers) differ, or None."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):  # compared as bits: a NaN is the same NaN
        bits = [t.detach().cpu().numpy().tobytes() for t in (a, b) if isinstance(t, torch.Tensor)]
        same = len(bits) == 2 and a.dtype == b.dtype and a.shape == b.shape and bits[0] == bits[1]
        return None if same else where
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where}: keys {sorted(set(a) ^ set(b))}"
        return next((d for k in a if (d := first_difference(a[k], b[k], f"{where}[{k!r}]"))), None)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return f"{where}: lengths {len(a)} and {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := first_difference(x, y, f"{where}[{i}]"))), None)
    both_nan = isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)  # a task's "not yet"
    return None if a == b or both_nan else f"{where}: {a!r} != {b!r}"


def compare(base_dir: str, new_dir: str) -> tuple[Optional[str], str]:
    """(the first difference or None, a note). A flag that one version has and the other has not is left out of the
    comparison of the checkpoints' flags and named in the note: the cases run every flag they do not set at its
    default, so a flag added with a default that keeps the old arithmetic is IDENTICAL; one that changes it is not."""
    a, b = (torch.load(os.path.join(d, "checkpoint.pt"), weights_only=True) for d in (base_dir, new_dir))
    added, removed = sorted(set(b["args"]) - set(a["args"])), sorted(set(a["args"]) - set(b["args"]))
    for key in added:
        del b["args"][key]
    for key in removed:
        del a["args"][key]
    changes = (("added", added), ("removed", removed))
    note = "; ".join(f"flags {what}: {', '.join(keys)}" for what, keys in changes if keys)
    episodes = []
    for folder in (base_dir, new_dir):
        with open(os.path.join(folder, "episodes.csv"), "rb") as f:
            episodes.append(f.read())
    return ("episodes.csv" if episodes[0] != episodes[1] else first_difference(a, b)), note


def main(args: Args) -> None:
    unknown = [s for s in args.scripts if s not in CASES]
    if unknown:
        print(f"error: no cases for {unknown[0]}; the scripts are {' '.join(CASES)}", file=sys.stderr)
        sys.exit(2)
    different = 0
    with tempfile.TemporaryDirectory() as scratch:
        for script in args.scripts:
            os.makedirs(os.path.join(scratch, "base"), exist_ok=True)  # same file name: the run names derive from it
            base_script = os.path.join(scratch, "base", script)
            shown = subprocess.run(["git", "show", f"{args.base}:{script}"], cwd=ROOT, capture_output=True)
            if shown.returncode != 0:
                print(f"error: git show {args.base}:{script}: {shown.stderr.decode().strip()}", file=sys.stderr)
                sys.exit(2)
            with open(base_script, "wb") as f:
                f.write(shown.stdout)
            for i, flags in enumerate(CASES[script]):
                base = run(base_script, flags, args.seed, os.path.join(scratch, f"{script}_{i}_base"))
                new = run(os.path.join(ROOT, script), flags, args.seed, os.path.join(scratch, f"{script}_{i}_new"))
                difference, note = compare(base, new)
                different += difference is not None
                print(f"{'IDENTICAL' if difference is None else 'DIFFERENT'}  {script} {flags}"
                      + (f"  (first difference: {difference})" if difference else "")
                      + (f"  ({note})" if note else ""), flush=True)  # fmt: skip
    sys.exit(1 if different else 0)


if __name__ == "__main__":
    main(tyro.cli(Args, description=__doc__))
