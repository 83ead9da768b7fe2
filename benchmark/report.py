"""Tables and plots of a grid's results table, beside the paper's and openai/baselines' figures.

    python -m benchmark.report benchmark/results/table1.csv   # writes benchmark/results/table1/: report.md, PNGs
    python -m benchmark.report benchmark/out                  # an unnamed grid's RESULTS_DIR/results.csv
    python -m benchmark.report --measure-random               # once: a uniform-random policy's return on each task
    python -m benchmark.report benchmark/results/table1-ppo1.csv --anchors benchmark/results/table1.csv
    python -m benchmark.report benchmark/results/atari.csv    # Table 6's games beside the paper, CleanRL and ppo2
    python -m benchmark.report benchmark/results/humanoid-run.csv benchmark/results/humanoid-flagrun.csv \
        benchmark/results/humanoid-flagrun-harder.csv benchmark/results/humanoid-v4.csv   # Figure 4's four tasks

The input is what benchmark/run.py commits: {grid}.csv, one row per finished run, and {grid}_curves.csv, about 100
points of each run's learning curve. Nothing else is read, so anyone can rebuild every table and plot from them.

A run's score is the paper's (§6.1): the mean total reward of its last 100 episodes. A method is a script with its
flags, at one length (total timesteps): runs of different lengths are never averaged into one cell.

- Table 1, exactly as §6.1: for each script and length with runs of Table 1's settings (tag and flags as in
  benchmark/presets.py), per task the random policy is 0 (benchmark/random_returns.json) and the best mean over
  seeds among those settings is 1; a setting's score is the mean over its runs (tasks x seeds). Runs of any other
  script, tag or length in the table change none of these numbers. Beside the mean: the interquartile mean (IQM, the
  mean of the middle 50%), and 95% bootstrap intervals of both, stratified by task (seeds resampled within each
  task; scipy.stats.bootstrap, percentile method, with the small-sample correction: each task's n seeds spread by
  sqrt(n/(n-1)) about their mean, see bootstrap_replicates), with the number of runs n.
- Figure 3: each method's mean ± std over seeds of the score on each task, beside the paper's and baselines' returns;
  figure3.png has one panel per task, one line per method (the mean over seeds of the smoothed curve) and each seed
  drawn thin. table1.png: Table 1's bars beside the paper's.
- The paper's claims, each with a verdict read off these numbers (holds / holds on the means, not beyond the noise /
  fails, and by how much): clip 0.2 is the best setting, no clipping scores below 0, every KL setting scores below
  clip 0.2 (each with the 95% interval of clip 0.2's lead, stratified as above), and PPO is at or above every other
  algorithm on all tasks but at most one (each task where another is ahead with the 95% interval of its lead; the
  claim fails on the means, not beyond the noise, when at most one of those intervals excludes 0). A length with one
  Table 1 setting alone makes no Table 1.
- Table 1 settings with another set of code-level details (--anchors TABLE, the last command above): runs of
  ppo_continuous.py tagged "<prefix>-<setting's tag>" with a prefix's flags before the setting's (the table1-ppo1
  preset: prefix ppo1, its flags presets.PPO1). A section per prefix, "Table 1 settings with <prefix>'s details,
  scored on the main Table 1's scale": per task the random policy is 0 and 1 is the best mean over seeds among the
  Table 1 settings of the anchors table (typically benchmark/results/table1.csv, whole: --seeds picks only this
  table's runs) at the same length, so the numbers read beside the main Table 1's rather than against this table's
  own best. Per setting: n, mean and IQM with their stratified 95% intervals, the mean per task, the same setting in
  the anchors table and the paper, and the difference of the two means (prefix - main, on the tasks both have runs
  on) with its 95% interval; each run's return against the random policy's; and verdicts: does no clipping score
  below 0, and below random on HalfCheetah, with these details; does clip 0.2 gain or lose against the main Table
  1's. Tasks without a 0 and 1 in the anchors' Table 1 are left out with a note.
- Atari (Table 6), for the games of Table 6 in the table: per game and method the last-100 score, the mean over
  every game of training (Table 2's metric, the score_all column), the paper's A2C, ACER and PPO, CleanRL's and
  ppo2's published scores, wall time and SPS; and a verdict, at 10M steps only: at, above or below the paper's PPO,
  by how much, read by the 95% t-interval of our mean with two seeds or more, by CleanRL's seed-to-seed std with one.
  figure3.png draws the paper's and CleanRL's final scores as reference lines.
- Figure 4 (§6.3), for a table whose runs are all on Figure 4's tasks (the humanoid-run, humanoid-flagrun,
  humanoid-flagrun-harder and humanoid-v4 presets): per run its task, seed, steps, score, wall time, SPS and the
  command that trained it; a run shorter than its preset's length is marked incomplete and gets no verdict. On
  Humanoid-v4 alone, public numbers (CleanRL's PPO at 1M steps, Sample Factory's APPO at 10M) beside ours; the paper
  gives Roboschool's three tasks as a plot only, so those are compared as plots. figure4.png: a panel per task, a
  line per run.
- Several tables (the last command above): their runs in one report, by default in a folder named after all of them.
- Provenance: the commits and script versions the runs came from; the report says so when one table mixes them.
"""

import csv
import json
import os
import re
import shlex
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Optional

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import scipy.stats  # noqa: E402
import tyro  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from benchmark import run as runner  # noqa: E402
from benchmark.presets import MUJOCO_TASKS, PPO1_DETAILS, PPO1_PARTS, PRESETS, RERUNS, SUPERSEDED, TABLE1  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANDOM_RETURNS = os.path.join(ROOT, "benchmark", "random_returns.json")

# Reference returns, from shared/reference/targets.md. MuJoCo, 1M steps: the paper's PPO (clip) final returns as
# public reproductions read them off Figure 3 (approximate), openai/baselines' ppo2 (6 seeds) and trpo_mpi benchmark
# results. Atari, 10M steps, mean of the last 100 episodes: the paper's Table 6. Keyed by the task's base name.
REFERENCE = {
    "HalfCheetah": {"paper PPO, Fig. 3 (approx.)": 1800, "baselines ppo2": 1668.6, "baselines trpo_mpi": 1289.7},
    "Hopper": {"paper PPO, Fig. 3 (approx.)": 2200, "baselines ppo2": 2316.2, "baselines trpo_mpi": 1912.9},
    "InvertedDoublePendulum": {
        "paper PPO, Fig. 3 (approx.)": 8000,
        "baselines ppo2": 7102.9,
        "baselines trpo_mpi": 6731.6,
    },
    "InvertedPendulum": {"paper PPO, Fig. 3 (approx.)": 1000, "baselines ppo2": 809.4, "baselines trpo_mpi": 905.1},
    "Reacher": {"paper PPO, Fig. 3 (approx.)": -8, "baselines ppo2": -6.7, "baselines trpo_mpi": -4.8},
    "Swimmer": {"paper PPO, Fig. 3 (approx.)": 110, "baselines ppo2": 111.2, "baselines trpo_mpi": 95.0},
    "Walker2d": {"paper PPO, Fig. 3 (approx.)": 3400, "baselines ppo2": 3425.0, "baselines trpo_mpi": 2342.6},
    **{game: {"paper PPO, Table 6": ppo, "paper A2C, Table 6": a2c, "paper ACER, Table 6": acer,
              **({"CleanRL ppo_atari, 3 seeds": cleanrl} if cleanrl else {}),
              **({"CleanRL JAX PPO": cleanrl_jax} if cleanrl_jax else {}),
              **({"baselines ppo2": ppo2} if ppo2 else {})}
       for game, ppo, a2c, acer, cleanrl, cleanrl_jax, ppo2 in (
           ("Breakout", 274.8, 303.0, 456.4, 414.7, None, 406.6),
           ("Pong", 20.7, 19.7, 20.7, 20.4, None, 20.5),
           ("BeamRider", 1590.0, 3031.7, 3863.3, 1915.9, None, 2643.0),
           ("SpaceInvaders", 942.5, 744.5, 1213.9, None, None, None),
           ("Seaquest", 1204.5, 1714.3, 1739.5, None, None, None),
           ("Qbert", 14293.3, 10065.7, 15316.6, None, 16431, 14283),
           ("Enduro", 758.3, 0.0, 0.0, None, 1263, 1061),
           ("BattleZone", 17367, 3080, 8983, None, 24938, 20314),
           ("DoubleDunk", -14.9, -16.2, -13.2, None, -8.57, -9.0),
           ("NameThisGame", 6255, 5961, 8488, None, 5443, 5714),
           ("Kangaroo", 9929, 45.3, 50.0, None, 7282, 3792),
       )},
}  # fmt: skip
# Drawn as dashed lines in figure3.png where a task has them: the paper's figure, then CleanRL's final score
REFERENCE_LINES = ("paper PPO, Fig. 3 (approx.)", "paper PPO, Table 6", "CleanRL ppo_atari, 3 seeds")
# CleanRL ppo_atari's sample std over its 3 seeds at 10M steps (targets.md): the one public seed-to-seed spread on
# these games, the yardstick of a one-seed verdict on Atari
SEED_SPREAD = {"Breakout": 28.1, "Pong": 0.2, "BeamRider": 484.6}
ATARI_PAPER, ATARI_STEPS = "paper PPO, Table 6", 10_000_000  # Table 6: 40M frames
TABLE1_SCRIPT = "ppo_continuous.py"
CLAIMED_BEST = "clip-0.2"  # §6.1: clipping with ε = 0.2 scores best; Figure 3's PPO is this setting
KL_GROUPS = ("adaptive KL", "fixed KL")
# §6.3's Figure 4, in the paper's order: Roboschool's three humanoid tasks (rebuilt on MuJoCo by humanoid_flagrun.py,
# whose env ids carry a "humanoid_flagrun:" prefix), then gymnasium's Humanoid-v4, the task users know
FIGURE4_TASKS = ("HumanoidRun-v0", "HumanoidFlagrun-v0", "HumanoidFlagrunHarder-v0", "Humanoid-v4")
# Public returns of PPO-family code on Humanoid-v4, the one Figure 4 task with published numbers (the paper draws its
# Roboschool tasks as curves only): (source, env steps, mean, std). CleanRL's published benchmark of
# ppo_continuous_action.py on gymnasium's v4 tasks (its PPO docs' table, tag pr-424: 716.11 ± 49.08 at 1M steps, mean
# ± std over its seeds); Sample Factory 2.0's published MuJoCo results for APPO (its mujoco_humanoid model card:
# 5439.48 ± 1314.24 after 10M env steps, mean ± std over the evaluation episodes of one trained policy)
HUMANOID_V4_PUBLIC = (
    ("CleanRL ppo_continuous_action", 1_000_000, 716.11, 49.08),
    ("Sample Factory APPO", 10_000_000, 5439.48, 1314.24),
)


@dataclass
class Args:
    table: tyro.conf.Positional[str] = os.path.join(ROOT, "benchmark", "results", "table1.csv")
    """a results table of benchmark/run.py ({grid}.csv, its curves beside it), or a RESULTS_DIR with results.csv"""
    more_tables: tyro.conf.Positional[list[str]] = field(default_factory=list)
    """more results tables, for one report of all their runs (Figure 4's grids: humanoid-run, humanoid-flagrun,
    humanoid-flagrun-harder, humanoid-v4)"""
    out: Optional[str] = None
    """where the report goes (default: beside the table, in a folder named after it; of several tables, named after
    all of them, joined by +)"""
    random_returns: str = RANDOM_RETURNS
    """the random policy's return per task, the 0 of the normalized score (written by --measure-random)"""
    reference_lines: bool = True
    """figure3.png: draw the paper's final return as a dashed line (--no-reference-lines for short runs)"""
    resamples: int = 10_000
    """bootstrap resamples for the confidence intervals"""
    seed: int = 0
    """seed of the bootstrap, and of the random policy for --measure-random"""
    seeds: Optional[list[int]] = None
    """only the runs of these seeds (e.g. --seeds 1: a grid's first seed, fixed while later seeds still run)"""
    measure_random: bool = False
    """instead of a report: measure a uniform-random policy's mean return on --env-ids, store it in --random-returns"""
    env_ids: list[str] = field(default_factory=lambda: list(MUJOCO_TASKS))
    """tasks for --measure-random"""
    anchors: Optional[str] = None
    """a results table whose Table 1 (typically benchmark/results/table1.csv) scores this table's Table 1 settings
    run with another prefix's details (tags "<prefix>-<setting>", e.g. ppo1-none): its random policy 0, best 1"""
    full: Optional[str] = None
    """with --anchors: the results table of ppo1's full set (typically benchmark/results/table1-ppo1.csv), against
    whose runs this table's leave-one-out runs (tags "ppo1-no-<detail>-<setting>") are compared, detail by detail"""
    random_episodes: int = 100
    """episodes per task for --measure-random"""


@dataclass(frozen=True)
class Method:
    """A cell key: the script with its flags at one length; the label names it in plots."""

    script: str
    tag: str
    flags: str
    total_timesteps: int
    label: str

    @property
    def superseded(self) -> bool:
        """A method that another replaced (presets.SUPERSEDED): in the returns table, not in the plots or verdicts."""
        return (self.script, self.tag) in SUPERSEDED

    @property
    def table1(self):
        """The Table 1 setting this method is (its script, tag and flags), or None."""
        setting = next((s for s in TABLE1 if s.tag == self.tag), None)
        if self.script == TABLE1_SCRIPT and setting and self.flags.split() == setting.flags.split():
            return setting
        return None

    @property
    def variant(self):
        """(prefix, Table 1 setting) for a Table 1 setting run with another set of code-level details, as the
        table1-ppo1 preset runs them: script ppo_continuous.py, tag "<prefix>-<setting's tag>", flags the prefix's
        followed by the setting's; or None. The prefix needs a flag of its own: without one the run is the setting
        itself under another name, and nothing in it is the prefix's details; unless the prefix is a rerun
        (presets.RERUNS), the setting trained again by a later, not bit-identical version of the script."""
        if self.script != TABLE1_SCRIPT:
            return None
        flags = self.flags.split()
        for s in TABLE1:
            own, prefix = s.flags.split(), self.tag[: -len(s.tag) - 1]
            extra = len(flags) > len(own) or prefix in RERUNS  # a rerun by another version has no flag of its own
            if self.tag == f"{prefix}-{s.tag}" and prefix and extra and flags[-len(own) :] == own:
                return prefix, s
        return None


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2, no traceback."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def steps_text(steps: int) -> str:
    """1000000 -> 1M, 200000 -> 200k."""
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if steps >= size and steps % (size // 10) == 0:
            return f"{steps / size:g}{unit}"
    return str(steps)


def task_name(env_id: str) -> str:
    """HalfCheetah-v4 -> HalfCheetah, BreakoutNoFrameskip-v4 -> Breakout: the key of REFERENCE."""
    return re.sub(r"(NoFrameskip)?-v\d+$", "", env_id.split("/")[-1])


def read_table(path: str) -> tuple[list[dict], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """The rows of a results table (typed), and the curve of each run from the curves file beside it. Each row's grid
    is the table's name: a preset's, when the table is one, whose length a run is held to."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row["grid"] = os.path.splitext(os.path.basename(path))[0]
        row["seed"], row["total_timesteps"], row["score"] = (
            int(row["seed"]),
            int(row["total_timesteps"]),
            float(row["score"]),
        )
        for column in ("score_all", "wall_s", "sps"):  # empty in older tables, and in hand-made ones
            row[column] = float(row[column]) if row.get(column) else None
        label = row.get("label") or f"{os.path.splitext(row['script'])[0]} {row['tag']}"
        row["method"] = Method(row["script"], row["tag"], row["flags"], row["total_timesteps"], label)
    curves, curves_path = {}, path[: -len(".csv")] + "_curves.csv"
    if os.path.exists(curves_path):
        points = {}
        with open(curves_path, newline="") as f:
            for point in csv.DictReader(f):
                points.setdefault(point["name"], []).append((int(point["step"]), float(point["return_last100"])))
        curves = {name: (np.array([s for s, _ in p]), np.array([r for _, r in p])) for name, p in points.items()}
    return rows, curves


def open_table(path: str) -> tuple[list[dict], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """read_table, with a one-line error and exit code 2 for a path that is not a results table."""
    if not os.path.isfile(path):
        fail(f"{path}: no such results table (benchmark/run.py writes benchmark/results/{{grid}}.csv)")
    try:
        return read_table(path)
    except (KeyError, ValueError) as e:
        fail(f"{path}: not a results table of benchmark/run.py ({type(e).__name__}: {e})")


def method_order(method: Method) -> tuple:
    """Table 1's settings in the paper's order first, then the rest by script and tag; shorter runs first."""
    index = TABLE1.index(method.table1) if method.table1 else len(TABLE1)
    return index, method.script, method.tag, method.total_timesteps


def iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean: the mean of the middle 50% (25% trimmed from each end)."""
    return scipy.stats.trim_mean(x, 0.25, axis=axis)


def mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def bootstrap_replicates(groups: list[list[np.ndarray]], statistic, resamples: int, seed: int) -> np.ndarray:
    """The bootstrap distribution of statistic(*pooled groups): each group's runs are resampled within each of its
    strata (tasks), independently of the other strata and groups (scipy.stats.bootstrap with one sample per stratum,
    unpaired). A stratum with one run is held fixed (it adds no spread); with none to resample the distribution is
    empty, and one value when every resample gives the same.

    Small-sample correction: each stratum of n runs is resampled spread about its mean by sqrt(n/(n-1)), so that for
    a mean each replicate's deviation from the point estimate grows by that factor, stratum by stratum. A plain
    bootstrap draws from the plug-in distribution of n runs, whose variance is (n-1)/n of the unbiased sample
    variance s^2: its variance of a stratum's mean is (n-1)/n * s^2/n, low by a third with the paper's 3 seeds, and
    its intervals too narrow by sqrt(3/2). The factor n/(n-1) on the variance makes it s^2/n, the unbiased one."""
    varying = [(g, np.asarray(s, float)) for g, strata in enumerate(groups) for s in strata if len(s) > 1]
    fixed = [np.concatenate([np.asarray(s, float) for s in strata if len(s) <= 1] + [np.zeros(0)]) for strata in groups]
    if not varying:
        return np.zeros(0)
    if all(np.ptp(s) == 0 for _, s in varying):  # every resample gives the same value
        return np.array([statistic(*[np.concatenate([np.asarray(s, float) for s in strata]) for strata in groups])])
    spread = [(g, s.mean() + np.sqrt(len(s) / (len(s) - 1)) * (s - s.mean())) for g, s in varying]

    def pooled_statistic(*samples, axis=-1):
        samples = [np.moveaxis(s, axis, -1) for s in samples]
        batch = samples[0].shape[:-1]
        pooled = [np.concatenate([s for (g, _), s in zip(spread, samples) if g == group]
                                 + [np.broadcast_to(constant, batch + constant.shape)], axis=-1)
                  for group, constant in enumerate(fixed)]  # fmt: skip
        return statistic(*pooled, axis=-1)

    result = scipy.stats.bootstrap(tuple(s for _, s in spread), pooled_statistic, n_resamples=resamples,
                                   paired=False, vectorized=True, method="percentile",
                                   rng=np.random.default_rng(seed))  # fmt: skip
    return result.bootstrap_distribution


def bootstrap_ci(groups: list[list[np.ndarray]], statistic, resamples: int, seed: int) -> tuple[float, float]:
    """95% percentile interval of bootstrap_replicates (stratified, small-sample corrected); none without a stratum
    of two runs or more."""
    replicates = bootstrap_replicates(groups, statistic, resamples, seed)
    if not len(replicates):
        return float("nan"), float("nan")
    low, high = np.percentile(replicates, [2.5, 97.5])
    return float(low), float(high)


def stratified_ci(strata: list[np.ndarray], statistic, resamples: int, seed: int) -> tuple[float, float]:
    """95% interval of statistic(all runs of one setting), seeds resampled within each task."""
    return bootstrap_ci([strata], statistic, resamples, seed)


def difference_ci(a: list[np.ndarray], b: list[np.ndarray], resamples: int, seed: int) -> tuple[float, float]:
    """95% interval of mean(a) - mean(b), two settings' runs resampled within each task, each setting on its own."""
    return bootstrap_ci([a, b], lambda x, y, axis=-1: mean(x, axis) - mean(y, axis), resamples, seed)


def load_random_returns(path: str) -> dict[str, float]:
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {env_id: entry["mean"] for env_id, entry in json.load(f)["returns"].items()}


def normalized(scores: list[float], reference: tuple[float, float]) -> list[float]:
    """Table 1's normalized scores: reference = (the random policy's return, the best setting's mean) -> (0, 1)."""
    low, high = reference
    return [(s - low) / (high - low) for s in scores]


def scored(per_task: dict[str, list[float]], resamples: int, seed: int) -> dict:
    """A setting's row of Table 1 from its normalized scores per task ({env_id: scores}, at least one task): the
    number of runs n, the mean and IQM with their 95% intervals stratified by task, the mean and seeds per task."""
    strata = [np.array(v) for v in per_task.values()]
    x = np.concatenate(strata)
    return {"n": len(x), "tasks": len(strata), "mean": float(x.mean()),
            "mean_ci": stratified_ci(strata, mean, resamples, seed), "iqm": float(iqm(x)),
            "iqm_ci": stratified_ci(strata, iqm, resamples, seed),
            "per_task": {e: float(np.mean(v)) for e, v in per_task.items()},
            "seeds": {e: len(v) for e, v in per_task.items()}, "scores": per_task}  # fmt: skip


def difference(a: dict[str, list[float]], b: dict[str, list[float]], resamples: int, seed: int) -> dict:
    """mean(a) - mean(b) over the tasks both have runs on ({env_id: scores}), with its 95% interval (difference_ci);
    none without a task in common."""
    common = [e for e in a if e in b]
    if not common:
        return {"diff": float("nan"), "tasks": 0, "ci": (float("nan"), float("nan"))}
    x, y = [np.array(a[e]) for e in common], [np.array(b[e]) for e in common]
    return {"diff": float(mean(np.concatenate(x)) - mean(np.concatenate(y))), "tasks": len(common),
            "ci": difference_ci(x, y, resamples, seed)}  # fmt: skip


def summarize(rows: list[dict], random_returns: dict[str, float], resamples: int, seed: int) -> dict:
    """Every number of the report: returns per task and method; Table 1 per script and length; provenance."""
    tasks = {}
    for env_id in sorted({r["env_id"] for r in rows}):
        methods = {}
        for method in sorted({r["method"] for r in rows if r["env_id"] == env_id}, key=method_order):
            runs = sorted((r for r in rows if r["env_id"] == env_id and r["method"] == method), key=lambda r: r["seed"])
            scores = [r["score"] for r in runs]
            methods[method] = {"n": len(scores), "seeds": [r["seed"] for r in runs], "scores": scores,
                               "mean": float(np.mean(scores)),
                               "std": float(np.std(scores, ddof=1)) if len(scores) > 1 else None}  # fmt: skip
        tasks[env_id] = methods

    tables1, notes = [], []
    for length in sorted({m.total_timesteps for m in {r["method"] for r in rows} if m.table1}):
        settings = sorted({r["method"] for r in rows if r["method"].table1 and r["method"].total_timesteps == length},
                          key=method_order)  # fmt: skip
        reference, per_setting = {}, {m: {} for m in settings}  # env_id -> (random, best); method -> env_id -> scores
        for env_id, methods in tasks.items():
            present = [m for m in settings if m in methods]
            if not present:
                continue
            low, high = random_returns.get(env_id), max(methods[m]["mean"] for m in present)
            if low is None or high <= low:
                why = "no random-policy return in the random returns file" if low is None else "none beats random"
                notes.append(f"Table 1 at {steps_text(length)} steps: {env_id} left out ({why})")
                continue
            reference[env_id] = (low, high)
            for m in present:
                per_setting[m][env_id] = normalized(methods[m]["scores"], reference[env_id])
        rows1 = [{"method": m, "setting": m.table1, **scored(per_setting[m], resamples, seed)}
                 for m in settings if per_setting[m]]  # fmt: skip
        if len(rows1) < 2:  # one setting is its own best on every task: a table of ones says nothing
            continue
        clip = next((r for r in rows1 if r["setting"].tag == CLAIMED_BEST), None)
        for r in rows1 if clip else []:  # each setting against clip 0.2, on the tasks both have runs on
            r["behind_clip"] = difference(clip["scores"], r["scores"], resamples, seed)
        tables1.append({"total_timesteps": length, "reference": reference, "rows": rows1,
                        "settings": len(rows1)})  # fmt: skip
    return {"tasks": tasks, "table1": tables1, "figure3": figure3_comparisons(tasks, resamples, seed),
            "notes": notes + provenance_notes(rows)}  # fmt: skip


def figure3_comparisons(tasks: dict, resamples: int, seed: int) -> list[dict]:
    """Per length, §6.2's comparison: on each task with PPO (clip 0.2) and another algorithm (another script), the
    best other algorithm by its mean over seeds; where it is ahead of PPO, by how much, with the 95% interval of that
    difference (each method's seeds resampled on their own)."""
    comparisons = []
    for length in sorted({m.total_timesteps for methods in tasks.values() for m in methods}):
        compared, ahead = 0, []
        for env_id, methods in tasks.items():
            ppo = [m for m in methods if m.table1 and m.tag == CLAIMED_BEST and m.total_timesteps == length]
            others = [m for m in methods if m.script != TABLE1_SCRIPT and m.total_timesteps == length
                      and not m.superseded]  # fmt: skip
            if not ppo or not others:
                continue
            compared += 1
            rival = max(others, key=lambda m: methods[m]["mean"])
            p, best = methods[ppo[0]], methods[rival]
            if best["mean"] > p["mean"]:
                ci = difference_ci([np.array(best["scores"])], [np.array(p["scores"])], resamples, seed)
                ahead.append({"env_id": env_id, "method": rival, "best": best, "ppo": p,
                              "diff": best["mean"] - p["mean"], "ci": ci})  # fmt: skip
        if compared:
            comparisons.append({"total_timesteps": length, "compared": compared, "ahead": ahead})
    return comparisons


def provenance_notes(rows: list[dict]) -> list[str]:
    """Which code made the runs: a note per script whose runs come from more than one version of it."""
    notes = []
    for script in sorted({r["script"] for r in rows}):
        runs = [r for r in rows if r["script"] == script]
        versions = {r["script_sha256"] for r in runs}
        commits = sorted({r["commit"][:10] + ("+dirty" if r["dirty"] == "True" else "") for r in runs})
        mixed_runs = sum(int(r["script_versions"]) > 1 for r in runs)
        if len(versions) > 1 or mixed_runs:
            notes.append(f"{script}: its {len(runs)} runs come from {len(versions)} versions of the script (sha256"
                         f" {', '.join(sorted(v[:12] for v in versions))}; commits {', '.join(commits)}); {mixed_runs}"
                         f" runs resumed under another version than they started")  # fmt: skip
        else:
            notes.append(f"{script}: all {len(runs)} runs from one version of the script (sha256"
                         f" {next(iter(versions))[:12]}; commits {', '.join(commits)})")  # fmt: skip
    return notes


def fmt(x: Optional[float], digits: int = 1) -> str:
    return "–" if x is None or np.isnan(x) else f"{x:.{digits}f}"


def interval(ci: tuple[float, float]) -> str:
    return f"[{fmt(ci[0], 2)}, {fmt(ci[1], 2)}]"


def setting_name(r: dict) -> str:
    """clipping, ε = 0.2: a Table 1 row's objective and setting."""
    return f"{r['setting'].group}{', ' + r['setting'].setting if r['setting'].setting else ''}"


def score(r: dict) -> str:
    """A Table 1 row's mean normalized score with its 95% interval."""
    return f"{fmt(r['mean'], 2)} {interval(r['mean_ci'])}"


def runs_text(r: dict) -> str:
    """How many runs a Table 1 row's numbers rest on: what a reader needs of a partial grid."""
    return f"n = {r['n']} runs on {r['tasks']} task{'' if r['tasks'] == 1 else 's'}"


def signed(x: float) -> str:
    return "–" if np.isnan(x) else f"{x:+.2f}"


def listing(items: list[str]) -> str:
    return "; ".join(items) if items else "none"


def below_0(x: float, ci: tuple[float, float], on_the_mean: str) -> str:
    """The verdict on "x is below 0": beyond the noise when its 95% interval is below 0 too (a missing interval, one
    seed per task, is not)."""
    if ci[1] < 0:
        return "**Holds.**"
    return on_the_mean if x < 0 else "**Fails.**"


def table1_claims(table: dict) -> list[str]:
    """A verdict on each of §6.1's claims about Table 1, from this table's numbers, with the 95% intervals: of a
    setting's score, and of clip 0.2's lead over another setting (the difference of their means, both settings' seeds
    resampled within each task). A lead whose interval excludes 0 is beyond the noise of these seeds."""
    rows = {r["setting"].tag: r for r in table["rows"]}
    clip, none, tasks = rows.get(CLAIMED_BEST), rows.get("none"), len(table["reference"])

    def includes_0(close: list[dict]) -> str:
        missing = any(np.isnan(r["behind_clip"]["ci"]).any() for r in close)
        return "includes 0, or is missing (one seed on every task)," if missing else "includes 0"

    def lead(r: dict) -> str:
        """clip 0.2's mean minus r's, with its interval."""
        b = r["behind_clip"]
        on = "" if b["tasks"] == tasks else f" (on the {b['tasks']} tasks both have runs on)"
        return f"{setting_name(r)} {b['diff']:+.2f} {interval(b['ci'])}{on}"

    def ahead_of(rivals: list[dict]) -> str:
        """The verdict on "clip 0.2 scores above each of rivals"."""
        level = [r for r in rivals if r["behind_clip"]["diff"] <= 0]  # at or above clip 0.2
        close = [r for r in rivals if r not in level and not r["behind_clip"]["ci"][0] > 0]
        if not level and not close:
            closest = min(rivals, key=lambda r: r["behind_clip"]["diff"])
            return (
                f"**Holds.** Clip 0.2 is ahead of all {len(rivals)} beyond the interval; the closest: {lead(closest)}."
            )
        if not level:
            return (f"**Holds on the means, not beyond the noise.** Clip 0.2 is ahead of all {len(rivals)}, but the"
                    f" interval of its lead {includes_0(close)} against:"
                    f" {listing([lead(r) for r in close])}.")  # fmt: skip
        clearly = [r for r in level if r["behind_clip"]["ci"][1] < 0]
        return (f"**Fails** for {len(level)} of {len(rivals)}, at or above clip 0.2:"
                f" {listing([lead(r) for r in level])}; {len(clearly)} of them beyond the interval.")  # fmt: skip

    lines = ["### The paper's claims on Table 1, tested on these runs", "",
             "Each verdict reads this table: a setting's score with its 95% interval, and clip ε = 0.2's lead over"
             " another setting (the difference of their mean scores, positive when clip 0.2 is ahead) with the 95%"
             " interval of that difference, seeds resampled within each task. A lead whose interval excludes 0 is"
             " beyond the spread of these seeds.", ""]  # fmt: skip

    if clip:
        runner_up = sorted(s.paper_score for s in TABLE1)[-2]
        lines += [f"- *Clipping with ε = 0.2 is the best setting* (paper: {clip['setting'].paper_score:.2f}, the"
                  f" next {runner_up:.2f}). {ahead_of([r for r in table['rows'] if r is not clip])} Clip 0.2 scores"
                  f" {score(clip)}."]  # fmt: skip
    if none:
        below = [e for e, v in none["per_task"].items() if v < 0]
        on_the_mean = "**Holds on the mean; its interval reaches 0, or is missing.**"
        verdict = f"{below_0(none['mean'], none['mean_ci'], on_the_mean)} It scores {score(none)}"
        above = none["mean"] - none["setting"].paper_score
        verdict += f", {above:.2f} above the paper's." if verdict.startswith("**Fails") else "."
        per_task = ", ".join(f"{e} {v:.2f}" for e, v in none["per_task"].items())
        lines += [f"- *No clipping or penalty scores below 0, worse than a random policy on average* (paper:"
                  f" {none['setting'].paper_score:.2f}, with HalfCheetah below random). {verdict} Below random on:"
                  f" {listing(below)}. Per task: {per_task}."]  # fmt: skip
    kl = [r for r in table["rows"] if r["setting"].group in KL_GROUPS]
    if clip and kl:
        best_kl = max(r["setting"].paper_score for r in kl)
        lines += [f"- *Every KL-penalty setting scores below clipping with ε = 0.2* (paper: at most {best_kl:.2f}"
                  f" against {clip['setting'].paper_score:.2f}). {ahead_of(kl)}"]  # fmt: skip
    return lines + [""]


def figure3_claim(summary: dict) -> list[str]:
    """§6.2's claim, per length: PPO (clip 0.2) is at or above every other algorithm on almost all tasks, read as all
    tasks but at most one. It fails beyond the noise only where another algorithm is ahead on two tasks or more by a
    difference whose 95% interval excludes 0."""
    lines = []
    for c in summary["figure3"]:
        behind = []
        for a in c["ahead"]:
            spread = [f" ± {fmt(s['std'])}" if s["std"] is not None else "" for s in (a["best"], a["ppo"])]
            behind.append(f"{a['env_id']}: {a['method'].label} {fmt(a['best']['mean'])}{spread[0]} (n={a['best']['n']})"
                          f" against PPO's {fmt(a['ppo']['mean'])}{spread[1]} (n={a['ppo']['n']}), ahead by"
                          f" {fmt(a['diff'])} [{fmt(a['ci'][0])}, {fmt(a['ci'][1])}]")  # fmt: skip
        clearly = [a for a in c["ahead"] if a["ci"][0] > 0]
        if len(c["ahead"]) <= 1:
            verdict = "**Holds.**"
        elif len(clearly) <= 1:
            verdict = "**Fails on the means, not beyond the noise.**"
        else:
            verdict = "**Fails.**"
        steps, leads = steps_text(c["total_timesteps"]), c["compared"] - len(c["ahead"])
        lines += [f"- *PPO is at or above every other algorithm on almost all tasks* ({steps} steps; read as: on all"
                  f" tasks but at most one). {verdict} PPO (clip, ε = 0.2) has the highest mean return on {leads} of"
                  f" the {c['compared']} tasks with other algorithms; where another is ahead (mean ± sample std over"
                  f" seeds, and the difference of the means with its 95% interval, each method's n seeds resampled on"
                  f" their own, spread by sqrt(n/(n-1))): {listing(behind)}; beyond the interval on {len(clearly)} of"
                  " them."]  # fmt: skip
    return ["## The paper's claim on Figure 3, tested on these runs", ""] + lines + [""] if lines else []


def atari_verdict(scores: list[float], paper: float, spread: Optional[float]) -> str:
    """At, above or below the paper's PPO on a game. With two seeds or more: at when the paper's score lies inside
    the 95% t-interval of our mean. With one seed there is no interval: at when within CleanRL's seed-to-seed std on
    the game (SEED_SPREAD), a yardstick of how far two seeds of one program fall apart, not a test."""
    ours, n = float(np.mean(scores)), len(scores)
    diff = ours - paper
    by = f"by {fmt(abs(diff))} ({diff / abs(paper):+.0%} of the paper's {fmt(paper)})" if paper else f"by {fmt(diff)}"
    side = "above" if diff > 0 else "below"
    if n >= 2:
        half = float(scipy.stats.t.ppf(0.975, n - 1) * np.std(scores, ddof=1) / np.sqrt(n))
        where = f"95% t-interval of our mean over {n} seeds [{fmt(ours - half)}, {fmt(ours + half)}]"
        if abs(diff) <= half:
            return f"**at** the paper's PPO: its {fmt(paper)} lies inside the {where}"
        return f"**{side}** the paper's PPO {by}, beyond the {where}"
    if spread is None:
        return (
            f"**{side}** the paper's PPO {by}; one seed, and no public seed-to-seed spread on this game to read it by"
        )
    if abs(diff) <= spread:
        return (f"**at** the paper's PPO: {side} it {by}, within CleanRL's seed-to-seed std on this game"
                f" ({fmt(spread)}); one seed, a yardstick rather than a test")  # fmt: skip
    return (f"**{side}** the paper's PPO {by}, more than CleanRL's seed-to-seed std on this game ({fmt(spread)});"
            " one seed, a yardstick rather than a test")  # fmt: skip


def atari_section(summary: dict, rows: list[dict]) -> list[str]:
    """Table 6 as our runs read it: per game and method, the score beside the paper's A2C, ACER and PPO, CleanRL's and
    ppo2's; the mean over every game of training (Table 2's metric); wall time and SPS; a verdict against the paper's
    PPO (atari_verdict). Empty without a game of Table 6."""
    games = [e for e in summary["tasks"] if ATARI_PAPER in REFERENCE.get(task_name(e), {})]
    if not games:
        return []
    sources = [ATARI_PAPER, "paper A2C, Table 6", "paper ACER, Table 6", "CleanRL ppo_atari, 3 seeds",
               "CleanRL JAX PPO", "baselines ppo2"]  # fmt: skip
    sources = [x for x in sources if any(x in REFERENCE[task_name(e)] for e in games)]
    lines = ["## Atari (Table 6)", "", "Per game: the mean of the last 100 games at the end of training (the paper's"
             " score, Table 6), mean ± sample std over seeds; *all training*: the mean over every game of training"
             " (Table 2's metric), mean over seeds; wall time (hours, all attempts of a run; a resumed run's include"
             " its restarts) and SPS (steps over that wall time, whatever else the machine ran), medians over seeds."
             " References as published: the paper's Table 6, CleanRL's and openai/baselines' benchmarks"
             " (shared/reference/targets.md).", "",
             "| game | method | steps | n | last 100 | all training | " + " | ".join(sources) + " | wall (h) | SPS |",
             "|-|-|-|-|-|-|" + "-|" * len(sources) + "-|-|"]  # fmt: skip
    verdicts = []
    for env_id in games:
        reference = REFERENCE[task_name(env_id)]
        for method, cell in summary["tasks"][env_id].items():
            runs = [r for r in rows if r["env_id"] == env_id and r["method"] == method]
            spread = f" ± {fmt(cell['std'])}" if cell["std"] is not None else ""
            alls = [r["score_all"] for r in runs if r["score_all"] is not None]
            walls, speeds = [r["wall_s"] / 3600 for r in runs if r["wall_s"]], [r["sps"] for r in runs if r["sps"]]
            cells = [fmt(float(np.mean(alls))) if alls and len(alls) == len(runs) else "–",
                     *[fmt(reference[x]) if x in reference else "" for x in sources],
                     fmt(float(np.median(walls)), 2) if walls else "–",
                     fmt(float(np.median(speeds)), 0) if speeds else "–"]  # fmt: skip
            lines.append(f"| {task_name(env_id)} | {method.label} | {steps_text(method.total_timesteps)} |"
                         f" {cell['n']} | {fmt(cell['mean'])}{spread} | " + " | ".join(cells) + " |")  # fmt: skip
            verdict = (atari_verdict(cell["scores"], reference[ATARI_PAPER], SEED_SPREAD.get(task_name(env_id)))
                       if method.total_timesteps == ATARI_STEPS else
                       f"no verdict: Table 6's scores are at {steps_text(ATARI_STEPS)} steps")  # fmt: skip
            verdicts.append(f"- {task_name(env_id)}, {method.label} at {steps_text(method.total_timesteps)} steps:"
                            f" {fmt(cell['mean'])}, {verdict}.")  # fmt: skip
    return lines + ["", "Against the paper's PPO (Table 6):", ""] + verdicts + [""]


def grid_sizes(path: str, seeds: Optional[list[int]]) -> dict[tuple, int]:
    """How many runs the grid of a results table asks of each method, when the table is a preset's
    (benchmark/results/{preset}.csv): its tasks times its seeds (those of --seeds only), by (script, tag, flags,
    total timesteps). {} for a table of no preset's: then nothing is known to be missing."""
    preset = PRESETS.get(os.path.splitext(os.path.basename(path))[0])
    if preset is None or preset.total_timesteps is None:
        return {}
    n = len(preset.env_ids) * len([s for s in preset.seeds if not seeds or s in seeds])
    return {(m.script, m.tag, " ".join(m.flags.split()), preset.total_timesteps): n for m in preset.methods}


def grid_size(sizes: dict[tuple, int], method: Method) -> Optional[int]:
    return sizes.get((method.script, method.tag, " ".join(method.flags.split()), method.total_timesteps))


def variant_sections(rows: list[dict], anchors: dict, resamples: int, seed: int, anchors_source: str,
                     sizes: Optional[dict] = None) -> list[dict]:  # fmt: skip
    """Per prefix and length, the Table 1 settings run with that prefix's details (Method.variant), scored on the
    anchors table's Table 1 at that length (anchors: its summarize): per task its random policy 0 and its best setting
    1. The variant table's own best would make its best setting 1 whatever it scored; on the anchors' scale its
    numbers read beside the main Table 1's. Each setting's row also holds the anchors' row of the same setting and the
    difference of the two (variant - main) with its 95% interval, on the tasks both have runs on. A setting with
    fewer runs than its grid asks (sizes: grid_sizes) is marked incomplete: its numbers are shown, its verdicts not."""
    sections, variants = [], {r["method"] for r in rows if r["method"].variant}
    for prefix, length in sorted({(m.variant[0], m.total_timesteps) for m in variants}):
        methods = sorted((m for m in variants if m.variant[0] == prefix and m.total_timesteps == length),
                         key=lambda m: (TABLE1.index(m.variant[1]), m.flags))  # fmt: skip
        table = next((t for t in anchors["table1"] if t["total_timesteps"] == length), None)
        section = {"prefix": prefix, "total_timesteps": length, "anchors": anchors_source, "anchor": table,
                   "rows": [], "notes": [], "halfcheetah": None,
                   "flags": sorted({" ".join(m.flags.split()[: -len(m.variant[1].flags.split())])
                                    for m in methods})}  # fmt: skip
        sections.append(section)
        if table is None:
            section["notes"].append(f"The anchors table has no Table 1 at {steps_text(length)} steps (runs of two Table"
                                    " 1 settings or more at that length): nothing to score these runs on.")  # fmt: skip
            continue
        reference, mains = table["reference"], {r["setting"]: r for r in table["rows"]}
        runs = sorted((r for r in rows if r["method"] in methods), key=lambda r: (r["env_id"], r["seed"]))
        for env_id in sorted({r["env_id"] for r in runs} - set(reference)):
            section["notes"].append(f"{env_id} left out: the anchors' Table 1 at {steps_text(length)} steps has no 0"
                                    " and 1 there (no runs of its settings, no random-policy return, or none beats"
                                    " random).")  # fmt: skip
        for m in methods:
            own = [r for r in runs if r["method"] == m and r["env_id"] in reference]
            returns = {}
            for r in own:
                returns.setdefault(r["env_id"], []).append(r["score"])
            if not returns:
                continue
            per_task = {e: normalized(x, reference[e]) for e, x in returns.items()}
            anchor, expected = mains.get(m.variant[1]), grid_size(sizes or {}, m)
            done = sum(r["method"] == m for r in runs)  # on every task, scored or not
            incomplete = expected is not None and done < expected
            section["rows"].append({"method": m, "setting": m.variant[1], **scored(per_task, resamples, seed),
                                    "expected": expected, "done": done, "incomplete": incomplete,
                                    "runs": own, "returns": returns, "main": anchor,
                                    "vs_main": difference(per_task, anchor["scores"], resamples, seed) if anchor
                                    else None})  # fmt: skip
        # the paper's note to Table 1: without clipping HalfCheetah falls below the random policy; in returns, so that
        # it reads without the scale
        none = next((r for r in section["rows"] if r["setting"].tag == "none" and not r["incomplete"]), None)
        cheetah = next((e for e in none["returns"] if task_name(e) == "HalfCheetah"), None) if none else None
        if cheetah:
            low, main_none = reference[cheetah][0], mains.get(none["setting"])
            x = np.array(none["returns"][cheetah])
            section["halfcheetah"] = {"env_id": cheetah, "random": low, "returns": x,
                                      "ci": stratified_ci([x - low], mean, resamples, seed),
                                      "main": anchors["tasks"][cheetah][main_none["method"]]["scores"]
                                      if main_none and cheetah in main_none["scores"] else None}  # fmt: skip
    return sections


def normalized_per_task(runs: list[dict], reference: dict) -> dict[str, list[float]]:
    """{env_id: the runs' normalized scores} on the tasks the reference (a Table 1's 0 and 1) has."""
    returns = {}
    for r in runs:
        returns.setdefault(r["env_id"], []).append(r["score"])
    return {e: normalized(x, reference[e]) for e, x in sorted(returns.items()) if e in reference}


def leave_one_out(rows: list[dict], full_rows: list[dict], anchors: dict, sizes: dict, resamples: int,
                  seed: int) -> list[dict]:  # fmt: skip
    """Per Table 1 setting of the leave-one-out runs (tags "ppo1-no-<detail>-<setting>", presets.PPO1_DETAILS): per
    detail and task, how far the mean normalized score (the anchors' Table 1 scale) moves when that detail alone is
    left out of ppo1's set, against the full set's runs of the setting (full_rows, tag "ppo1-<setting>"), with the 95%
    interval of the change (each side's seeds resampled). A detail whose grid is not finished is marked incomplete."""
    sections = []
    loo = {r["method"] for r in rows if r["method"].variant and r["method"].variant[0].startswith("ppo1-no-")}
    for setting, length in sorted({(m.variant[1], m.total_timesteps) for m in loo}, key=lambda x: TABLE1.index(x[0])):
        table = next((t for t in anchors["table1"] if t["total_timesteps"] == length), None)
        if table is None:
            continue
        reference = table["reference"]
        full = normalized_per_task([r for r in full_rows if r["method"].variant == ("ppo1", setting)
                                    and r["method"].total_timesteps == length], reference)  # fmt: skip
        main = next((r["scores"] for r in table["rows"] if r["setting"] == setting), {})  # the same setting, our flags
        # the fall to explain, per task: the main Table 1's mean minus ppo1's full set's (a task without one has none)
        falls = {e: float(np.mean(main[e]) - np.mean(full[e])) for e in full if e in main}
        section = {"setting": setting, "total_timesteps": length, "full": full, "main": main, "falls": falls,
                   "rows": []}  # fmt: skip
        for detail in (*PPO1_DETAILS, *PPO1_PARTS.get(setting.tag, {})):
            methods = [m for m in loo if m.variant == (f"ppo1-no-{detail}", setting) and m.total_timesteps == length]
            if not methods:
                continue
            runs = [r for r in rows if r["method"] in methods]
            expected = grid_size(sizes, methods[0])
            scores = normalized_per_task(runs, reference)
            section["rows"].append({
                "detail": detail, "n": len(runs), "expected": expected,
                "incomplete": expected is not None and len(runs) < expected, "per_task": scores,
                "changes": {e: difference({e: x}, full, resamples, seed) for e, x in scores.items() if e in full},
            })  # fmt: skip
            # the share of the fall that leaving the detail out wins back: 1 is the main Table 1's score again
            r = section["rows"][-1]
            r["closes"] = {e: c["diff"] / falls[e] for e, c in r["changes"].items() if falls.get(e, 0) > 0}
        sections.append(section)
    return sections


def leave_one_out_markdown(section: dict) -> list[str]:
    """A setting's leave-one-out table, and the verdict: which details' removal moves the score beyond the noise, and
    on each task where ppo1's set falls below the main Table 1, whether one detail's removal wins back the fall (half
    of it or more, beyond the noise), else which pair to test next."""
    setting, rows, full, falls = section["setting"], section["rows"], section["full"], section["falls"]
    name = setting_name({"setting": setting})
    tasks = sorted({e for r in rows for e in r["changes"]})
    main = ", ".join(f"{e} {np.mean(section['main'][e]):.2f}" for e in tasks if e in section["main"])
    lines = [f"## Leave one of ppo1's details out: {name}", "",
             "Each row: ppo1's flag set minus one detail, ppo_continuous.py's default in its place. Per task, the"
             " change of the mean normalized score (the main Table 1's scale) against ppo1's full set (its mean:"
             f" {', '.join(f'{e} {np.mean(full[e]):.2f} (n={len(full[e])})' for e in tasks)}), with its 95% interval;"
             " beyond the noise when the interval excludes 0. *Of the fall*: the change as a share of the fall from"
             f" the main Table 1's score of the same setting (our defaults: {main or 'no runs'}) to ppo1's full set's;"
             " 100% wins it all back.", "",
             "| detail left out | n | " + " | ".join(f"{e}: change | 95% CI | of the fall" for e in tasks) + " |",
             "|-|-|" + "-|-|-|" * len(tasks)]  # fmt: skip
    for r in rows:
        n = f"{r['n']} ({r['n']} of {r['expected']}: incomplete)" if r["incomplete"] else str(r["n"])
        cells = [(signed(r["changes"][e]["diff"]), interval(r["changes"][e]["ci"]),
                  f"{r['closes'][e]:.0%}" if e in r["closes"] else "–") if e in r["changes"]
                 else ("–", "–", "–") for e in tasks]  # fmt: skip
        lines.append(f"| {r['detail']} | {n} | " + " | ".join(" | ".join(c) for c in cells) + " |")
    parts = PPO1_PARTS.get(setting.tag, {})
    notes = [f"- {r['detail']}: a part of a detail, `{parts[r['detail']]}` alone left out (presets.PPO1_PARTS)"
             for r in rows if r["detail"] in parts]  # fmt: skip
    lines += [""] + notes if notes else []
    done = [r for r in rows if not r["incomplete"]]
    if not done:
        return lines + ["", f"**Verdict ({name}).** No verdict: no detail's runs are complete.", ""]

    def moves(sign: int) -> list[str]:
        return [f"{r['detail']} on {e} ({signed(c['diff'])} {interval(c['ci'])})" for r in done
                for e, c in r["changes"].items() if sign * c["ci"][0] > 0 and sign * c["ci"][1] > 0]  # fmt: skip

    up, down = moves(1), moves(-1)
    verdict = [
        f"Left out alone, these raise the score beyond the noise: {listing(up)}; these lower it: {listing(down)}."
        if up or down
        else "No single detail's removal moves the score beyond the noise."
    ]
    unfinished = [r["detail"] for r in rows if r["incomplete"]]
    if unfinished and not (up or down):
        finished = listing([r["detail"] for r in done])
        verdict = [f"Of the details whose runs are all in ({finished}), none moves the score beyond the noise when"
                   " left out alone."]  # fmt: skip
    for e in tasks if not unfinished else []:  # which detail explains a fall, or which pair is next: all of them in
        if falls.get(e, 0) <= 0:
            verdict.append(f"On {e} ppo1's full set does not fall below the main Table 1's score: no fall to explain.")
            continue
        fall = f"{np.mean(full[e]):.2f} against the main Table 1's {np.mean(section['main'][e]):.2f}"
        back = [r for r in done if e in r["changes"] and r["changes"][e]["ci"][0] > 0 and r["closes"].get(e, 0) >= 0.5]

        # a part of a detail that wins it back too is no detail of its own: it says which of the detail's flags does it
        def part_of(p: dict, r: dict) -> bool:
            return p["detail"] in parts and parts[p["detail"]] in PPO1_DETAILS.get(r["detail"], "")

        whole = [p for p in back if not any(part_of(p, r) for r in back)]
        shares = ", ".join(f"{r['detail']} ({r['closes'][e]:.0%} of it" + "".join(
            f"; `{parts[p['detail']]}` alone, {p['closes'][e]:.0%}" for p in back if part_of(p, r)) + ")"
            for r in whole)  # fmt: skip
        back = whole
        if len(back) == 1:
            verdict.append(f"On {e}, ppo1's fall ({fall}) is explained by one detail: leaving out {shares} alone wins"
                           " back half of it or more, beyond the noise.")  # fmt: skip
        elif back:  # each alone undoes most of it: the fall needs them together
            verdict.append(f"On {e}, ppo1's fall ({fall}) needs {len(back)} details together: leaving out any one of"
                           f" them alone wins back half of it or more, beyond the noise: {shares}.")  # fmt: skip
        else:
            # the pair: two details, not a detail and a part of it
            ranked = sorted((r for r in done if e in r["changes"] and r["detail"] not in parts),
                            key=lambda r: -r["changes"][e]["diff"])  # fmt: skip
            verdict.append(
                f"On {e} no single detail's removal wins back half of ppo1's fall ({fall}) beyond the"
                f" noise; the pair to test next, the two whose removal raises it most:"
                f" {' and '.join(r['detail'] for r in ranked[:2])}."
            )
    verdict += [f"No verdict yet on {listing(unfinished)}: incomplete; nor on what explains ppo1's fall, until"
                " every detail's runs are in."] if unfinished else []  # fmt: skip
    return lines + ["", f"**Verdict ({name}).** {' '.join(verdict)}", ""]


def variant_claims(section: dict) -> list[str]:
    """Plain verdicts on a prefix's Table 1 settings, read off the numbers of variant_sections with their 95%
    intervals: no clipping below 0, and below random on HalfCheetah, as the paper has them; clip 0.2 against the main
    Table 1's. A line is left out when its setting has no runs."""
    prefix, rows = section["prefix"], {r["setting"].tag: r for r in section["rows"] if not r["incomplete"]}
    none, clip, cheetah = rows.get("none"), rows.get(CLAIMED_BEST), section["halfcheetah"]
    on_the_mean = "**Holds on the mean, not beyond the noise** (its interval reaches 0, or is missing)."
    lines = [f"### What these runs say about {prefix}'s details", "",
             "Each verdict reads the numbers above: a score with its 95% interval, beyond the noise of these seeds when"
             " the interval excludes 0.", ""]  # fmt: skip
    lines += [f"- *{setting_name(r)}*: no verdict: incomplete, {r['done']} of the {r['expected']} runs its grid"
              " asks have finished." for r in section["rows"] if r["incomplete"]]  # fmt: skip
    if none:
        anchor = none["main"]
        beside = f"; the main Table 1: {score(anchor)}, {runs_text(anchor)}" if anchor else ""
        per_task = ", ".join(f"{e} {v:.2f}" for e, v in none["per_task"].items())
        verdict = below_0(none["mean"], none["mean_ci"], on_the_mean)
        lines.append(f"- *Does no clipping or penalty score below 0 with {prefix}'s details?* (paper:"
                     f" {none['setting'].paper_score:.2f}{beside}.) {verdict} It scores {score(none)},"
                     f" {runs_text(none)}. Per task: {per_task}.")  # fmt: skip
    if cheetah:
        x, low, ci = cheetah["returns"], cheetah["random"], cheetah["ci"]
        anchor = cheetah["main"]
        beside = (f"; the main Table 1: {sum(v < low for v in anchor)} of {len(anchor)} runs below random, mean"
                  f" return {fmt(np.mean(anchor))}" if anchor else "")  # fmt: skip
        lines.append(f"- *Does no clipping score below random on {cheetah['env_id']} with {prefix}'s details?* (paper:"
                     f" below random there{beside}.) {below_0(np.mean(x) - low, ci, on_the_mean)} {sum(x < low)} of"
                     f" {len(x)} runs below the random policy's {fmt(low)}; their mean return {fmt(np.mean(x))},"
                     f" {np.mean(x) - low:+.1f} [{fmt(ci[0])}, {fmt(ci[1])}] against random.")  # fmt: skip
    if clip and clip["main"] and clip["vs_main"]["tasks"]:
        d, anchor = clip["vs_main"], clip["main"]
        if d["ci"][0] > 0 or d["ci"][1] < 0:
            verdict = f"**{'Gains' if d['ci'][0] > 0 else 'Loses'}, beyond the noise.**"
        else:
            side = "Gains" if d["diff"] > 0 else "Loses" if d["diff"] < 0 else "Level"
            verdict = f"**{side} on the mean, not beyond the noise** (the interval includes 0, or is missing)."
        lines.append(f"- *Does clip 0.2 gain or lose with {prefix}'s details, against the main Table 1's clip 0.2?*"
                     f" {verdict} {prefix} - main: {signed(d['diff'])} {interval(d['ci'])} on the {d['tasks']} tasks"
                     f" both have runs on; {prefix}: {score(clip)}, {runs_text(clip)}; main: {score(anchor)},"
                     f" {runs_text(anchor)}.")  # fmt: skip
    furthest = min(none["per_task"], key=none["per_task"].get) if none else None
    where = f" (here {furthest}, where it scores {none['per_task'][furthest]:.2f})" if furthest else ""
    left_out = prefix.removeprefix("ppo1-no-") if prefix.startswith("ppo1-no-") else None
    if left_out:  # a leave-one-out prefix: ppo1's set but one detail, which the section below weighs
        lines.append(f"- These runs have ppo1's details but {left_out} (ppo_continuous.py's default in its place): the"
                     " section \"Leave one of ppo1's details out\" sets them against ppo1's full set, detail by"
                     " detail.")  # fmt: skip
    elif prefix not in RERUNS:  # a rerun changes the script's version, not a set of details
        lines.append(f"- These runs change all of {prefix}'s details at once, so they cannot say which single detail"
                     f" matters most. A leave-one-out grid would: {prefix}'s flag set minus one detail at a time, on no"
                     f" clipping and the task where it falls furthest{where}.")  # fmt: skip
    return lines + [""]


def variant_markdown(section: dict) -> list[str]:
    """A prefix's section of report.md: its settings beside the main Table 1's and the paper's, per task, per run
    (return against the random policy's), and the verdicts."""
    prefix, length, rows = section["prefix"], section["total_timesteps"], section["rows"]
    several = f" ({len(section['flags'])} different sets among its runs)" if len(section["flags"]) > 1 else ""
    lines = [f"## Table 1 settings with {prefix}'s details, scored on the main Table 1's scale"
             + (f": {scale_text(rows, length)}" if rows else ""), "",
             f"Runs of {TABLE1_SCRIPT} tagged {prefix}-<setting>: "
             + (f"the setting's own flags, trained again by {RERUNS[prefix]} (a rerun, presets.RERUNS)." if prefix in
                RERUNS else f"{prefix}'s flags{several}, then the setting's:"
                f" {'; '.join(f'`{f}`' for f in section['flags'])}."), ""]  # fmt: skip
    lines += [f"- {n}" for n in section["notes"]] + ([""] if section["notes"] else [])
    if not rows:
        return lines
    table = section["anchor"]
    reference = table["reference"]
    lines += [f"Per task, the uniform-random policy is 0 and the best of the {table['settings']} Table 1 settings of"
              f" the anchors table ({section['anchors']}, the main Table 1) at {steps_text(length)} steps (mean over"
              " seeds) is 1, so a setting here may score above 1. Mean and IQM over each setting's n runs with 95%"
              " bootstrap intervals stratified by task, as in Table 1; beside them the same setting in the main Table 1"
              f" and the paper, and {prefix} - main: the difference of the two means on the tasks both have runs on,"
              " with its 95% interval (each side's seeds resampled within each task).", "",
              "| objective | setting | n | mean | 95% CI | IQM | 95% CI | main: n | main: mean | 95% CI | main: IQM"
              f" | 95% CI | paper | {prefix} - main | 95% CI |", "|-" * 15 + "|"]  # fmt: skip
    for r in rows:
        s, m, d = r["setting"], r["main"], r["vs_main"]
        theirs = [str(m["n"]), fmt(m["mean"], 2), interval(m["mean_ci"]), fmt(m["iqm"], 2), interval(m["iqm_ci"])] \
            if m else ["–"] * 5  # fmt: skip
        # on fewer tasks than either side's own numbers: say so, as the difference then reads another set of tasks
        fewer = m and d["tasks"] < max(r["tasks"], m["tasks"])
        diff = [signed(d["diff"]) + (f" ({d['tasks']} tasks)" if fewer else ""), interval(d["ci"])] if m else ["–"] * 2
        n = f"{r['n']} ({r['done']} of {r['expected']} runs: incomplete)" if r["incomplete"] else str(r["n"])
        cells = [s.group, s.setting, n, fmt(r["mean"], 2), interval(r["mean_ci"]), fmt(r["iqm"], 2),
                 interval(r["iqm_ci"]), *theirs, fmt(s.paper_score, 2), *diff]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    envs = [e for e in reference if any(e in r["per_task"] for r in rows)]
    lines += ["", "Per task (mean normalized score over seeds), with the returns that map to 0 and 1:", "",
              "| setting | " + " | ".join(envs) + " |", "|-|" + "-|" * len(envs)]  # fmt: skip
    for r in rows:
        for name, x in ((prefix, r), ("main Table 1", r["main"])):
            if x:
                lines.append(f"| {setting_name(r)}, {name} | " + " | ".join(fmt(x["per_task"].get(e), 2) for e in envs)
                             + " |")  # fmt: skip
    lines.append("| *0: random policy* | " + " | ".join(fmt(reference[e][0]) for e in envs) + " |")
    lines.append("| *1: best setting of the main Table 1* | " + " | ".join(fmt(reference[e][1]) for e in envs) + " |")
    lines += ["", f"Each run with {prefix}'s details: its return (the mean of its last 100 episodes), the random"
              " policy's, and the difference (below 0: the run scored below random).", "",
              "| setting | task | seed | return | random policy | return - random | normalized |",
              "|-|-|-|-|-|-|-|"]  # fmt: skip
    for r in rows:
        for run in r["runs"]:
            (low, _), x = reference[run["env_id"]], run["score"]
            lines.append(f"| {setting_name(r)} | {run['env_id']} | {run['seed']} | {fmt(x)} | {fmt(low)} |"
                         f" {fmt(x - low)} | {fmt(normalized([x], reference[run['env_id']])[0], 2)} |")  # fmt: skip
    return lines + [""] + variant_claims(section)


def scale_text(summary_rows: list[dict], length: int) -> str:
    """ "7 tasks x 3 seeds x 1M steps" for a Table 1; "1-2 seeds" while a grid's later seeds have reached some cells."""
    tasks = max(r["tasks"] for r in summary_rows)
    seeds = sorted({n for r in summary_rows for n in r["seeds"].values()})
    seed_text = str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    return f"{tasks} tasks x {seed_text} seed{'' if seed_text == '1' else 's'} x {steps_text(length)} steps"


def returns_table(summary: dict) -> list[str]:
    """Figure 3 as numbers: a row per method, a column per task, then the paper's and baselines' figures."""
    envs = list(summary["tasks"])
    methods = sorted({m for methods in summary["tasks"].values() for m in methods}, key=method_order)
    lengths = {m.total_timesteps for m in methods}
    steps = f" at {steps_text(lengths.pop())} steps" if len(lengths) == 1 else ""
    lines = ["## Returns per task (Figure 3)", "", f"Last-100-episode return{steps}: mean ± sample std over each cell's"
             " seeds (n: the seeds per cell); the paper's and baselines' figures in italics.", "",
             "| method | n | " + " | ".join(envs) + " |", "|-|-|" + "-|" * len(envs)]  # fmt: skip
    for m in methods:
        cells = [summary["tasks"][e].get(m) for e in envs]
        ns = sorted({c["n"] for c in cells if c})
        name = m.label if steps else f"{m.label}, {steps_text(m.total_timesteps)}"
        texts = ["–" if c is None else fmt(c["mean"]) + (f" ± {fmt(c['std'])}" if c["std"] is not None else "")
                 for c in cells]  # fmt: skip
        lines.append(f"| {name} | {ns[0] if len(ns) == 1 else f'{ns[0]}-{ns[-1]}'} | " + " | ".join(texts) + " |")
    sources = list(dict.fromkeys(k for e in envs for k in REFERENCE.get(task_name(e), {})))
    for source in sources:
        values = [REFERENCE.get(task_name(e), {}).get(source) for e in envs]
        lines.append(f"| *{source}* | | " + " | ".join("" if v is None else f"*{v}*" for v in values) + " |")
    return lines + [""]


def markdown(summary: dict, rows: list[dict], source: str, plots: list[str], variants: tuple = (),
             loo: tuple = (), figure4: Optional[list[str]] = None) -> str:  # fmt: skip
    """report.md: Table 1 first, then Table 1's settings with other details (variant_sections, with --anchors), the
    returns per task (Figure 3, or figure4: figure4_section's lines in its place), the plots, and the notes on
    provenance."""
    made = f"Made {time.strftime('%Y-%m-%d %H:%M')} by `python -m benchmark.report {source}`."
    lines = [f"# Benchmark report: {source}", "", f"{made} Score of a run: the mean return of its last 100 episodes"
             f" (§6.1). {len(rows)} runs.", ""]  # fmt: skip
    for table in summary["table1"]:
        length = table["total_timesteps"]
        lines += [f"## Table 1: {scale_text(table['rows'], length)}", "",
                  f"Per task, the uniform-random policy is 0 and the best of the {table['settings']} Table 1 settings"
                  " here (mean over seeds) is 1. Mean and IQM over each setting's n runs, with 95% bootstrap intervals"
                  " stratified by task (seeds resampled within each task, spread by sqrt(n/(n-1)) for a task's n seeds:"
                  " the small-sample correction of the bootstrap's variance).", "",
                  "| objective | setting | n | mean | 95% CI | IQM | 95% CI | paper |",
                  "|-|-|-|-|-|-|-|-|"]  # fmt: skip
        for r in table["rows"]:
            s = r["setting"]
            lines.append(f"| {s.group} | {s.setting} | {r['n']} | {fmt(r['mean'], 2)} | [{fmt(r['mean_ci'][0], 2)},"
                         f" {fmt(r['mean_ci'][1], 2)}] | {fmt(r['iqm'], 2)} | [{fmt(r['iqm_ci'][0], 2)},"
                         f" {fmt(r['iqm_ci'][1], 2)}] | {fmt(s.paper_score, 2)} |")  # fmt: skip
        envs = list(table["reference"])
        lines += ["", "Per task (mean normalized score over seeds), with the returns that map to 0 and 1:", "",
                  "| setting | " + " | ".join(envs) + " |", "|-|" + "-|" * len(envs)]  # fmt: skip
        for r in table["rows"]:
            lines.append(f"| {setting_name(r)} | " + " | ".join(fmt(r["per_task"].get(e), 2) for e in envs) + " |")
        lines.append("| *0: random policy* | " + " | ".join(fmt(table["reference"][e][0]) for e in envs) + " |")
        lines.append("| *1: best setting* | " + " | ".join(fmt(table["reference"][e][1]) for e in envs) + " |")
        lines += [""] + table1_claims(table)
    for section in variants:
        lines += variant_markdown(section)
    for section in loo:
        lines += leave_one_out_markdown(section)

    lines += atari_section(summary, rows) + (returns_table(summary) if figure4 is None else figure4)
    lines += figure3_claim(summary)
    if plots:
        lines += ["## Plots", ""] + [f"![{os.path.splitext(p)[0]}]({p})" for p in plots] + [""]
    lines += ["## Provenance and notes", ""] + [f"- {n}" for n in summary["notes"]] + [""]
    return "\n".join(lines)


def plot_figure3(summary: dict, rows: list[dict], curves: dict, path: str, references: bool,
                 sizes: Optional[dict] = None) -> None:  # fmt: skip
    """The paper's Figure 3 layout: a panel per task, a line per method (mean over seeds of the smoothed return), each
    seed thin in the same color. A method with fewer runs than its grid asks (sizes: grid_sizes) says so in the
    legend."""
    env_ids = list(summary["tasks"])
    methods = sorted({r["method"] for r in rows if not r["method"].superseded}, key=method_order)
    lengths = {m.total_timesteps for m in methods}
    colors = dict(zip(methods, plt.get_cmap("tab10" if len(methods) <= 10 else "tab20").colors * 2))
    fig, axes = panel_grid(len(env_ids))
    for ax, env_id in zip(axes, env_ids):
        for method in methods:
            runs = [r for r in rows if r["env_id"] == env_id and r["method"] == method and r["name"] in curves]
            if not runs:
                continue
            label = method.label if len(lengths) == 1 else f"{method.label}, {steps_text(method.total_timesteps)}"
            expected, done = grid_size(sizes or {}, method), sum(r["method"] == method for r in rows)
            label += f", incomplete: {done} of {expected} runs" if expected is not None and done < expected else ""
            for r in runs:
                ax.plot(*curves[r["name"]], color=colors[method], linewidth=0.6, alpha=0.35)
            # the mean over seeds where every seed has a point (they share the step grid when they share a length)
            common = sorted(set.intersection(*(set(curves[r["name"]][0].tolist()) for r in runs)))
            mean_curve = [np.mean([curves[r["name"]][1][curves[r["name"]][0] == s][0] for r in runs]) for s in common]
            ax.plot(common, mean_curve, color=colors[method], linewidth=1.8, label=f"{label} (n={len(runs)})")
        reference = REFERENCE.get(task_name(env_id), {}) if references else {}
        for name, style in zip([n for n in REFERENCE_LINES if n in reference], ("--", ":")):
            ax.axhline(reference[name], color="gray", linestyle=style, linewidth=1, label=name)
    finish_panels(fig, axes, env_ids, path, "environment steps", "Learning curves: mean over seeds (thick), each seed"
                  " (thin)")  # fmt: skip


def panel_grid(tasks: int) -> tuple:
    """Figure 3's layout, Figure 4's too: a panel per task, up to 4 a row, and one spare panel for the legend."""
    columns = min(4, tasks + 1)
    panels = -(-(tasks + 1) // columns)
    fig, axes = plt.subplots(panels, columns, figsize=(4 * columns, 3.2 * panels), squeeze=False)
    return fig, axes.ravel()


def finish_panels(fig, axes, titles: list[str], path: str, xlabel: str, title: str) -> None:
    """Title and style the task panels of panel_grid, gather their legends into the spare panel (one entry per label,
    the seed counts " (n=...)" left out), and save the figure."""
    for ax, name in zip(axes, titles):
        ax.set_title(name, fontsize=10)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
        ax.xaxis.get_offset_text().set_fontsize(7)
    handles = {}
    for ax in axes[: len(titles)]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label.split(" (n=")[0], handle)
    legend_ax = axes[len(titles)]
    legend_ax.axis("off")
    legend_ax.legend(list(handles.values()), list(handles), loc="center", fontsize=8, frameon=False)
    for ax in axes[len(titles) + 1 :]:
        ax.axis("off")
    fig.supxlabel(xlabel)
    fig.supylabel("return (mean of last 100 episodes)", fontsize=10)  # fits the height of a single row of panels
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def figure4_task(env_id: str) -> Optional[str]:
    """humanoid_flagrun:HumanoidRun-v0 -> HumanoidRun-v0: the name of a Figure 4 task, None for any other task."""
    name = env_id.split(":")[-1]
    return name if name in FIGURE4_TASKS else None


def shortfall(r: dict) -> Optional[str]:
    """ "incomplete: 2M of 50M steps" for a run shorter than its preset asks (read_table's grid), else None: of a
    table of no preset's nothing is known to be short."""
    preset = PRESETS.get(r.get("grid", ""))
    length = preset.total_timesteps if preset else None
    if length and r["total_timesteps"] < length:
        return f"incomplete: {steps_text(r['total_timesteps'])} of {steps_text(length)} steps"
    return None


def run_command(r: dict) -> str:
    """The command that trained a run: its script with the flags benchmark/run.py gives a fresh start of it."""
    run = runner.Run(r["name"], r["script"], r["script"], r["env_id"], r["seed"], r["tag"], r["method"].label,
                     r["flags"], r["total_timesteps"])  # fmt: skip
    return shlex.join(["python", r["script"], *run.flags()])


def figure4_runs(rows: list[dict]) -> list[dict]:
    """The runs on Figure 4's tasks, in the paper's order of tasks, then by method and seed."""
    runs = [r for r in rows if figure4_task(r["env_id"])]
    return sorted(runs, key=lambda r: (FIGURE4_TASKS.index(figure4_task(r["env_id"])), method_order(r["method"]),
                                       r["seed"]))  # fmt: skip


def public_verdict(r: dict, curve: Optional[tuple], source: str, steps: int, mean_: float, std: float) -> str:
    """One run on Humanoid-v4 against a public number at its step count: our score there (the run's own at its
    length; read off its curve, the mean of the last 100 episodes then, at a shorter count), at when within the public
    ± std, above or below beyond it. One seed against a published spread: a yardstick, not a test."""
    theirs = f"{source}'s {mean_:.0f} ± {std:.0f} at {steps_text(steps)} steps"
    if steps == r["total_timesteps"]:
        ours, at = r["score"], ""
    elif steps < r["total_timesteps"] and curve is not None and (curve[0] <= steps).any():
        step = int(curve[0][curve[0] <= steps][-1])
        ours, at = float(curve[1][curve[0] <= steps][-1]), f" (its curve at {steps_text(step)} steps)"
    else:
        return f"against {theirs}: none, the run has no return at that step count"
    diff = ours - mean_
    if abs(diff) <= std:
        return f"{fmt(ours)}{at}, **at** {theirs}: within its ± std"
    return f"{fmt(ours)}{at}, **{'above' if diff > 0 else 'below'}** {theirs} by {abs(diff):.0f}, beyond its ± std"


def figure4_section(rows: list[dict], curves: dict) -> list[str]:
    """Figure 4 as numbers: a row per run with its steps against its preset's, score, wall time, SPS and the command
    that trained it; on Humanoid-v4, the public numbers beside it and a verdict against each (public_verdict), none
    from an incomplete run. Roboschool's tasks have a plot in the paper and no number: no verdict, a pointer to it."""
    runs = figure4_runs(rows)
    on_v4 = [r for r in runs if figure4_task(r["env_id"]) == "Humanoid-v4"]
    public = "; ".join(f"{x}, {steps_text(n)} steps: {m:.0f} ± {sd:.0f}" for x, n, m, sd in HUMANOID_V4_PUBLIC)
    lines = ["## Figure 4: humanoid running and steering (§6.3)", "",
             "Per run: the steps it was run for and its grid's length (the preset's), its score (the mean return of"
             " its last 100 episodes, as every run here), wall time (hours, all attempts of the run) and SPS (steps"
             " over that wall time), and the command that trained it (benchmark/run.py starts it in the run's folder)."
             " A run shorter than its grid's length is marked incomplete: its numbers are shown, no verdict is drawn"
             " from it.", "",
             "| task | method | seed | steps | grid's length | score (last 100) | wall (h) | SPS | public numbers |"
             " command |", "|-|-|-|-|-|-|-|-|-|-|"]  # fmt: skip
    for r in runs:
        short, preset = shortfall(r), PRESETS.get(r["grid"])
        length = steps_text(preset.total_timesteps) if preset and preset.total_timesteps else "–"
        cells = [figure4_task(r["env_id"]), r["method"].label, str(r["seed"]),
                 steps_text(r["total_timesteps"]) + (f" ({short})" if short else ""), length, fmt(r["score"]),
                 fmt(r["wall_s"] / 3600, 2) if r["wall_s"] else "–", fmt(r["sps"], 0) if r["sps"] else "–",
                 public if figure4_task(r["env_id"]) == "Humanoid-v4" else "", f"`{run_command(r)}`"]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    missing = [
        f"{e.split(':')[-1]} ({grid})"
        for grid in sorted({r["grid"] for r in runs})
        if grid in PRESETS
        for e in PRESETS[grid].env_ids
        if not any(r["grid"] == grid and r["env_id"] == e for r in runs)
    ]
    lines += [f"Tasks of these grids with no finished run yet: {', '.join(missing)}.", ""] if missing else []
    if on_v4:
        lines += ["Humanoid-v4 against public numbers: CleanRL's published benchmark of ppo_continuous_action (mean ±"
                  " std over its seeds) and Sample Factory's published MuJoCo results for APPO (mean ± std over the"
                  " evaluation episodes of one trained policy). Each run is one seed against a published spread: a"
                  " yardstick, not a test.", ""]  # fmt: skip
        for r in on_v4:
            name = f"- Humanoid-v4, {r['method'].label}, seed {r['seed']}, {steps_text(r['total_timesteps'])} steps"
            if shortfall(r):
                lines.append(f"{name}: no verdict: {shortfall(r)}.")
                continue
            readings = [public_verdict(r, curves.get(r["name"]), *p) for p in HUMANOID_V4_PUBLIC]
            lines.append(f"{name}: " + "; ".join(readings) + ".")
        lines.append("")
    roboschool = [t for t in FIGURE4_TASKS if t != "Humanoid-v4" and any(figure4_task(r["env_id"]) == t for r in runs)]
    if roboschool:
        lines += [f"{', '.join(roboschool)}: the paper's Figure 4 gives Roboschool's tasks as a plot only (running to"
                  " 50M steps, the flag tasks to 100M), with no number to set beside ours, and these tasks are rebuilt"
                  " on MuJoCo here (humanoid_flagrun.py): compare figure4.png with the paper's Figure 4 as a plot.",
                  ""]  # fmt: skip
    return lines


def plot_figure4(rows: list[dict], curves: dict, path: str) -> None:
    """The paper's Figure 4: a panel per task in its order, a line per run (the mean of the last 100 episodes at each
    point, the curve figure3.png draws) against environment steps in millions; on Humanoid-v4 the public numbers as
    points with their ± std at their step counts. A run shorter than its preset asks says so in the legend."""
    runs = [r for r in figure4_runs(rows) if r["name"] in curves]
    tasks = list(dict.fromkeys(figure4_task(r["env_id"]) for r in runs))
    keys = sorted({(r["method"], r["seed"]) for r in runs}, key=lambda k: (method_order(k[0]), k[1]))
    colors = dict(zip(keys, plt.get_cmap("tab10").colors * len(keys)))
    fig, axes = panel_grid(len(tasks))
    for ax, task in zip(axes, tasks):
        for r in (r for r in runs if figure4_task(r["env_id"]) == task):
            short = shortfall(r)
            label = f"{r['method'].label}, {steps_text(r['total_timesteps'])} steps, seed {r['seed']}"
            steps, returns = curves[r["name"]]
            ax.plot(steps / 1e6, returns, color=colors[(r["method"], r["seed"])], linewidth=1.2,
                    label=label + (f", {short}" if short else ""))  # fmt: skip
        if task == "Humanoid-v4":
            for (source, steps, m, sd), marker in zip(HUMANOID_V4_PUBLIC, "os"):
                ax.errorbar(steps / 1e6, m, yerr=sd, fmt=marker, color="black", capsize=4, markersize=5,
                            label=f"{source}, {steps_text(steps)} steps (± std)")  # fmt: skip
    finish_panels(fig, axes, tasks, path, "environment steps (millions)", "Figure 4: each run's learning curve; on"
                  " Humanoid-v4 the public numbers")  # fmt: skip


def plot_table1(table: dict, path: str) -> None:
    """Table 1 as bars grouped by objective: ours (95% stratified bootstrap interval) beside the paper's score."""
    fig, ax = plt.subplots(figsize=(max(7, 0.9 * len(table["rows"]) + 2), 4.5))
    x, ticks, labels, groups = 0.0, [], [], {}
    for r in table["rows"]:
        groups.setdefault(r["setting"].group, []).append(r)
    for g, (group, members) in enumerate(groups.items()):
        start = x
        for r in members:
            err = (
                None if np.isnan(r["mean_ci"]).any() else [[r["mean"] - r["mean_ci"][0]], [r["mean_ci"][1] - r["mean"]]]
            )
            ax.bar(x - 0.2, r["mean"], width=0.4, color=f"C{g}", yerr=err, capsize=3)
            ax.bar(x + 0.2, r["setting"].paper_score, width=0.4, color=f"C{g}", alpha=0.35, hatch="//")
            ticks.append(x)
            labels.append(r["setting"].setting or "L^CPI")
            x += 1
        ax.text(
            (start + x - 1) / 2, -0.22, group, ha="center", va="top", transform=ax.get_xaxis_transform(), fontsize=9
        )
        x += 0.5
    n = sorted({r["n"] for r in table["rows"]})
    legend = [Patch(color="gray", label=f"ours: mean of n = {'-'.join(map(str, n))} runs, 95% CI stratified by task"),
              Patch(facecolor="gray", alpha=0.35, hatch="//", label="paper, Table 1")]  # fmt: skip
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(ticks, labels, fontsize=8, rotation=25, ha="right", rotation_mode="anchor")
    ax.set_ylabel("average normalized score (random 0, best 1)")
    ax.set_title(f"Table 1: {scale_text(table['rows'], table['total_timesteps'])}")
    ax.legend(handles=legend, fontsize=8)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def measure_random(env_ids: list[str], episodes: int, seed: int) -> dict[str, dict]:
    """A uniform-random policy's return per task (env.action_space.sample() each step), over `episodes` episodes."""
    import gymnasium as gym

    warnings.filterwarnings("ignore", message=".*-v4 is out of date", category=DeprecationWarning)
    if any("NoFrameskip" in e for e in env_ids):
        import ale_py

        gym.register_envs(ale_py)
    measured = {}
    for env_id in env_ids:
        env = gym.make(env_id)
        env.action_space.seed(seed)
        returns = []
        for episode in range(episodes):
            env.reset(seed=seed + episode)
            done, total = False, 0.0
            while not done:
                _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
                total, done = total + float(reward), terminated or truncated
            returns.append(total)
        env.close()
        measured[env_id] = {"mean": float(np.mean(returns)), "std": float(np.std(returns)), "episodes": episodes}
        print(f"{env_id}: random policy {np.mean(returns):.2f} ± {np.std(returns):.2f} over {episodes} episodes")
    return measured


def write_text(path: str, text: str) -> None:
    """Write to a temporary file, then rename."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def shown(path: str) -> str:
    """A table's path as the report names it: relative to the repo when inside it."""
    return os.path.relpath(path, ROOT) if path.startswith(ROOT) else path


def main(args: Args) -> None:
    if args.measure_random:
        import gymnasium

        stored = {"returns": {}}
        if os.path.exists(args.random_returns):
            with open(args.random_returns) as f:
                stored = json.load(f)
        stored["about"] = ("Mean return of a uniform-random policy (env.action_space.sample()), the 0 of Table 1's"
                           " normalized score. Written by python -m benchmark.report --measure-random.")  # fmt: skip
        stored["gymnasium"] = gymnasium.__version__
        stored["returns"].update(measure_random(args.env_ids, args.random_episodes, args.seed))
        write_text(args.random_returns, json.dumps(stored, indent=1, sort_keys=True) + "\n")
        print(f"written: {args.random_returns}")
        return

    paths = [os.path.join(t, "results.csv") if os.path.isdir(t) else t for t in (args.table, *args.more_tables)]
    rows, curves = [], {}
    for table_path in paths:  # a run in two of the tables (run.py copies runs between grids) counts once
        table_rows, table_curves = open_table(table_path)
        rows += [r for r in table_rows if r["name"] not in {x["name"] for x in rows}]
        curves = {**table_curves, **curves}
    path = paths[0]
    anchor_rows = open_table(args.anchors)[0] if args.anchors else None  # before any output, as a bad table fails
    if args.anchors and not anchor_rows:
        fail(f"{args.anchors}: no finished runs to take Table 1's 0 and 1 from")
    if args.seeds:
        rows = [r for r in rows if r["seed"] in args.seeds]
    if not rows:
        fail(f"{path}: no finished runs" + (f" of seeds {args.seeds}" if args.seeds else ""))
    grids = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    out = args.out or os.path.join(os.path.dirname(path), "+".join(grids))
    os.makedirs(out, exist_ok=True)
    random_returns = load_random_returns(args.random_returns)
    summary = summarize(rows, random_returns, args.resamples, args.seed)
    sizes = {k: n for p in paths for k, n in grid_sizes(p, args.seeds).items()}  # what each preset's grid asks
    variants, loo = [], []
    if args.anchors and any(r["method"].variant for r in rows):
        # the anchors are the main Table 1 whole: --seeds picks this table's runs, not the scale they are scored on
        anchors = summarize(anchor_rows, random_returns, args.resamples, args.seed)
        variants = variant_sections(rows, anchors, args.resamples, args.seed, shown(args.anchors), sizes)
        if args.full:  # the leave-one-out runs against ppo1's full set
            loo = leave_one_out(rows, open_table(args.full)[0], anchors, sizes, args.resamples, args.seed)
    elif args.anchors:
        summary["notes"].append(f"--anchors {shown(args.anchors)}: no run here is a Table 1 setting with another"
                                " prefix's details (tag <prefix>-<setting>): none scored on its Table 1")  # fmt: skip
    plots = []
    for table in summary["table1"]:
        name = "table1.png" if len(summary["table1"]) == 1 else f"table1_{steps_text(table['total_timesteps'])}.png"
        plot_table1(table, os.path.join(out, name))
        plots.append(name)
    figure4 = all(figure4_task(r["env_id"]) for r in rows)  # Figure 4's tasks alone: its figure, not Figure 3's
    if curves:
        name = "figure4.png" if figure4 else "figure3.png"
        if figure4:
            plot_figure4(rows, curves, os.path.join(out, name))
        else:
            plot_figure3(summary, rows, curves, os.path.join(out, name), args.reference_lines, sizes)
        plots.append(name)
    source = " ".join(shown(p) for p in paths) + (f" --seeds {' '.join(map(str, args.seeds))}" if args.seeds else "")
    source += f" --anchors {shown(args.anchors)}" if args.anchors else ""
    source += f" --full {shown(args.full)}" if args.full else ""
    section = figure4_section(rows, curves) if figure4 else None
    write_text(os.path.join(out, "report.md"), markdown(summary, rows, source, plots, variants, loo, section))
    print(f"{len(rows)} runs on {len(summary['tasks'])} tasks; written: {os.path.join(out, 'report.md')} and"
          f" {len(plots)} plots")  # fmt: skip


if __name__ == "__main__":
    main(tyro.cli(Args, description=__doc__))
