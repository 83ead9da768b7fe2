"""The trained policies of models/: per task one file, cut from a finished run's final checkpoint, that holds what the
policy needs to act (its weights and the flags it trained with) and where it came from (the run's row of a results
table: the script, its commit and sha256), then the score the script's own evaluation gives it, with that command.

    python -m benchmark.zoo export CHECKPOINT models/breakout.pt      # weights, flags, the run's table row
    python -m benchmark.zoo score models/breakout.pt --eval-episodes 30  # runs the evaluation, records it in the file
    python -m benchmark.zoo table models/*.pt                          # the rows of models/README.md's table

A file keeps no optimizer, RNG or env state, so it can be watched (--eval-checkpoint) but not resumed, and it holds
only tensors and plain Python values, so it loads with torch.load(path, weights_only=True).
"""

import csv
import glob
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

import torch
import tyro

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What each script's policy needs to act, besides its flags: the keys of its checkpoint a policy file keeps
# (the MuJoCo policy normalizes its observations by the statistics it trained with)
ACTS = {"ppo_atari.py": ("agent",), "ppo_continuous.py": ("agent", "obs_rms")}
EVAL_LINE = re.compile(r"mean return (\S+) \+- (\S+) over (\d+) (?:games|episodes)", re.MULTILINE)


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2, no traceback."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def load(path: str) -> dict:
    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except Exception as e:
        fail(f"{path}: cannot load ({type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''})")


def save(policy: dict, path: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    torch.save(policy, path + ".tmp")
    os.replace(path + ".tmp", path)  # write, then rename: a cut-off save keeps the last one


def finished_row(args: dict, tables: list[str]) -> tuple[dict, str]:
    """The results-table row of the run whose flags are the checkpoint's: a row records the flags the run used (the
    checkpoint's, on resume, the path it resumed from included), so they name one run."""
    for table in tables:
        with open(table, newline="") as f:
            for row in csv.DictReader(f):
                if row.get("args") and json.loads(row["args"]) == args:
                    return row, table
    names = ", ".join(os.path.relpath(t, ROOT) for t in tables)
    fail(f"no finished run in {names} has this checkpoint's flags: a policy file comes from a table's run")


@dataclass
class Export:
    """Cut a finished run's final checkpoint to a policy file."""

    checkpoint: tyro.conf.Positional[str]
    """the run's checkpoint.pt at its last step: a run folder's, or a committed one (`git show COMMIT:PATH > FILE`)"""
    out: tyro.conf.Positional[str]
    """the policy file to write, e.g. models/breakout.pt"""
    tables: tuple[str, ...] = tuple(
        sorted(p for p in glob.glob(os.path.join(ROOT, "benchmark", "results", "*.csv")) if "_curves" not in p)
    )
    """the results tables to find the run in (default: all of benchmark/results)"""


def export(cmd: Export) -> None:
    ckpt = load(cmd.checkpoint)
    if not isinstance(ckpt, dict) or "optimizer" not in ckpt or "args" not in ckpt:
        fail(f"{cmd.checkpoint}: not a run's checkpoint (a policy file is exported already)")
    row, table = finished_row(ckpt["args"], list(cmd.tables))
    if row["script"] not in ACTS:
        fail(f"{row['script']}: which of its checkpoint's keys its policy needs is not known here (ACTS)")
    flags = ckpt["args"]
    last = flags["total_timesteps"] // (flags["num_envs"] * flags["num_steps"])
    if ckpt["iteration"] != last:  # the table's score is the finished run's; an earlier checkpoint is another policy
        fail(f"{cmd.checkpoint}: iteration {ckpt['iteration']} of {last}, not the finished run's last")
    policy = {
        "script": row["script"],
        "args": flags,
        # clone: each tensor on a storage of its own size, so the file holds the float32 weights and nothing more
        **{
            key: {name: t.clone() if torch.is_tensor(t) else t for name, t in ckpt[key].items()}
            for key in ACTS[row["script"]]
        },
        "global_step": ckpt["global_step"],
        "run": row["name"],
        "table": os.path.relpath(table, ROOT),
        "commit": row["commit"],
        "script_sha256": row["script_sha256"],
        "training_score": float(row["score"]),  # the table's score: the mean return of the run's last 100 games
    }
    save(policy, cmd.out)
    print(f"{cmd.out}: {row['name']} at step {ckpt['global_step']}, {os.path.getsize(cmd.out):,} bytes")


@dataclass
class Score:
    """Evaluate a policy file with its script's --eval-checkpoint, from the repo root, and record the score and the
    command in the file."""

    policy: tyro.conf.Positional[str]
    """a policy file, e.g. models/breakout.pt (its path as the recorded command gives it: from the repo root)"""
    eval_episodes: int = 30
    """games to play (--eval-episodes)"""


def score(cmd: Score) -> None:
    policy = load(cmd.policy)
    if not isinstance(policy, dict) or policy.get("script") not in ACTS:
        fail(f"{cmd.policy}: not a policy file of benchmark/zoo.py")
    path = os.path.relpath(os.path.abspath(cmd.policy), ROOT)
    words = [policy["script"], "--eval-checkpoint", path, "--eval-episodes", str(cmd.eval_episodes)]
    proc = subprocess.run([sys.executable, *words], cwd=ROOT, capture_output=True, text=True)
    print(proc.stdout, end="")
    found = EVAL_LINE.search(proc.stdout)
    if proc.returncode != 0 or not found:
        fail(f"`python {' '.join(words)}` gave no score: {proc.stderr.strip()[-300:]}")
    mean, std, games = float(found.group(1)), float(found.group(2)), int(found.group(3))
    policy["score"] = {"mean": mean, "std": std, "games": games, "command": "python " + " ".join(words)}
    save(policy, cmd.policy)


@dataclass
class Table:
    """The rows of models/README.md's table, one per policy file."""

    policies: tyro.conf.Positional[tuple[str, ...]]
    """policy files, e.g. models/*.pt"""


def size_text(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"


def table(cmd: Table) -> None:
    print("| task | file | trained by | score | watch it |")
    print("|-|-|-|-|-|")
    for path in cmd.policies:
        p = load(path)
        flags, rel = p["args"], os.path.relpath(os.path.abspath(path), ROOT)
        s = p.get("score")
        games = "games" if "atari" in p["script"] else "episodes"
        measured = f"**{s['mean']:.2f} ± {s['std']:.2f}** over {s['games']} {games} (`{s['command']}`)" if s else "-"
        print(f"| {flags['env_id']} | `{rel}` ({size_text(os.path.getsize(path))}) | `{p['script']}` seed "
              f"{flags['seed']}, {p['global_step']:,} steps, commit {p['commit'][:7]} (`{p['table']}`: last-100 "
              f"training return {p['training_score']:.1f}) | {measured} | `python {p['script']} --eval-checkpoint "
              f"{rel} --capture-video` |")  # fmt: skip


if __name__ == "__main__":
    command = tyro.cli(Export | Score | Table, description=__doc__)
    {Export: export, Score: score, Table: table}[type(command)](command)
