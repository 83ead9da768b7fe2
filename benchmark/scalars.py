"""A logged scalar of each run of a results table, read from the run's tensorboard events: its median over the first
and the second half of the updates, beside the run's score.

The results table says which runs a grid holds; their folders (--results-dir, where benchmark/run.py trained them)
hold the events. Folders are not committed, so this reads a grid trained on this machine, or trained again with the
command that made it. E.g. how far each update moves the policy, KL[π_old, π] over the batch after the update:

    python -m benchmark.scalars benchmark/results/table1-none-ablation.csv --scalar losses/kl
"""

import glob
import os
import statistics
import sys
from dataclasses import dataclass

import tyro
from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator

from benchmark.report import fail, method_order, open_table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Args:
    table: tyro.conf.Positional[str]
    """a results table of benchmark/run.py, benchmark/results/{grid}.csv"""
    scalar: str = "losses/kl"
    """the tensorboard tag, as the scripts log it (losses/kl, losses/clipfrac, losses/entropy, charts/learning_rate)"""
    results_dir: str = os.path.join(ROOT, "benchmark", "out")
    """where the grid's run folders are (benchmark/run.py's --results-dir)"""


def logged(run_folder: str, scalar: str) -> list[float]:
    """The scalar's values in step order. A resumed run writes a new events file from its checkpoint's step on; where
    two files log the same step, the later file (the attempt that went on) wins."""
    by_step = {}
    for path in sorted(glob.glob(os.path.join(run_folder, "runs", "*", "events.out.tfevents.*")), key=os.path.getmtime):
        events = EventAccumulator(path, size_guidance={SCALARS: 0})  # 0: keep every point, not a sample of them
        events.Reload()
        if scalar in events.Tags()["scalars"]:
            by_step.update({e.step: e.value for e in events.Scalars(scalar)})
    return [by_step[step] for step in sorted(by_step)]


def main(args: Args) -> None:
    rows, _ = open_table(args.table)
    lines = [f"{args.scalar}: median over the first and the second half of each run's updates", "",
             "| method | task | seed | score | first half | second half |", "|-|-|-|-|-|-|"]  # fmt: skip
    missing = []
    for r in sorted(rows, key=lambda r: (method_order(r["method"]), r["env_id"], r["seed"])):
        values = logged(os.path.join(args.results_dir, r["name"]), args.scalar)
        if len(values) < 2:
            missing.append(r["name"])
            continue
        half = len(values) // 2
        first, second = statistics.median(values[:half]), statistics.median(values[half:])
        lines.append(f"| {r['method'].label} | {r['env_id']} | {r['seed']} | {r['score']:.1f} | {first:.3g} |"
                     f" {second:.3g} |")  # fmt: skip
    if len(missing) == len(rows):
        fail(f"no run of {args.table} has {args.scalar} logged in its folder under {args.results_dir}")
    print("\n".join(lines))
    if missing:
        left_out = ", ".join(missing)
        print(f"\n{len(missing)} runs left out, no {args.scalar} in their folders: {left_out}", file=sys.stderr)


if __name__ == "__main__":
    main(tyro.cli(Args, description=__doc__))
