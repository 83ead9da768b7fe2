"""Tables and plots of a results folder of benchmark/run.py, beside the paper's and openai/baselines' figures.

    python -m benchmark.report benchmark/out              # writes benchmark/out/report/: report.md, summary.json, PNGs
    python -m benchmark.report --measure-random           # once: a uniform-random policy's return on each task

A run's score is the paper's (§6.1): the mean total reward of its last 100 episodes. A method is a script with a
variant of flags (its tag: benchmark/run.py's folder names are {script}__{env_id}__{tag}__{seed}).

- Per task (Figure 3): each method's mean ± std over seeds of the score, beside the paper's and baselines' returns.
- Normalized score (Table 1): per task a uniform-random policy is 0 (its return is measured once and stored in
  benchmark/random_returns.json) and the best method of this report (its mean over seeds) is 1; a method's score is
  the average over all its runs (tasks x seeds). The aggregate adds the interquartile mean of the same runs (IQM, the
  mean of the middle 50%: robust to one run that collapses or soars) and 95% bootstrap confidence intervals of both,
  resampling runs (scipy.stats.bootstrap, percentile method).
- Plots: learning curves per task (return averaged over a trailing window of episodes, put on a common step grid,
  mean over seeds with a 95% t-interval band), and the normalized scores as bars in Table 1's layout.
"""

import csv
import glob
import json
import os
import re
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

from benchmark.presets import MUJOCO_TASKS, TABLE1  # noqa: E402

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
    "Breakout": {"paper PPO, Table 6": 274.8, "paper A2C, Table 6": 303.0, "paper ACER, Table 6": 456.4},
    "Pong": {"paper PPO, Table 6": 20.7, "paper A2C, Table 6": 19.7, "paper ACER, Table 6": 20.7},
    "BeamRider": {"paper PPO, Table 6": 1590.0, "paper A2C, Table 6": 3031.7, "paper ACER, Table 6": 3863.3},
    "SpaceInvaders": {"paper PPO, Table 6": 942.5, "paper A2C, Table 6": 744.5, "paper ACER, Table 6": 1213.9},
    "Seaquest": {"paper PPO, Table 6": 1204.5, "paper A2C, Table 6": 1714.3, "paper ACER, Table 6": 1739.5},
    "Qbert": {"paper PPO, Table 6": 14293.3, "paper A2C, Table 6": 10065.7, "paper ACER, Table 6": 15316.6},
    "Enduro": {"paper PPO, Table 6": 758.3, "paper A2C, Table 6": 0.0, "paper ACER, Table 6": 0.0},
}
TABLE1_BY_TAG = {s.tag: s for s in TABLE1}


@dataclass
class Args:
    results_dir: tyro.conf.Positional[str] = os.path.join(ROOT, "benchmark", "out")
    """the folder of benchmark/run.py's runs (RESULTS_DIR)"""
    out: Optional[str] = None
    """where the report goes (default RESULTS_DIR/report)"""
    random_returns: str = RANDOM_RETURNS
    """the random policy's return per task, the 0 of the normalized score (written by --measure-random)"""
    match: str = "*"
    """only the run folders whose name matches this glob, e.g. "ppo_continuous__*" for Table 1 alone"""
    unfinished: bool = False
    """also use runs that have not finished (no result.json), e.g. to look at curves while a grid runs"""
    smooth: int = 100
    """learning curves: the return averaged over the last this many episodes (the paper's score uses 100)"""
    grid_points: int = 200
    """learning curves: points on the common step grid"""
    reference_lines: bool = True
    """learning curves: draw the paper's figure as a dashed line (--no-reference-lines for short runs, whose curves
    a 10M-step figure would flatten)"""
    resamples: int = 10_000
    """bootstrap resamples for the confidence intervals"""
    seed: int = 0
    """seed of the bootstrap, and of the random policy for --measure-random"""
    measure_random: bool = False
    """instead of a report: measure a uniform-random policy's mean return on --env-ids, store it in --random-returns"""
    env_ids: list[str] = field(default_factory=lambda: list(MUJOCO_TASKS))
    """tasks for --measure-random"""
    random_episodes: int = 100
    """episodes per task for --measure-random"""


@dataclass
class RunData:
    """One run: who it is, and its episodes."""

    name: str
    script: str
    """the script's name without .py"""
    tag: str
    env_id: str
    seed: int
    finished: bool
    steps: np.ndarray  # (episodes,) global step at each episode's end
    returns: np.ndarray  # (episodes,) episodic return

    @property
    def method(self) -> str:
        return self.script if self.tag == "default" else f"{self.script} {self.tag}"

    @property
    def score(self) -> float:
        """The paper's score: the mean return of the last 100 episodes."""
        return float(np.mean(self.returns[-100:]))


def task_name(env_id: str) -> str:
    """HalfCheetah-v4 -> HalfCheetah, BreakoutNoFrameskip-v4 -> Breakout: the key of REFERENCE."""
    return re.sub(r"(NoFrameskip)?-v\d+$", "", env_id.split("/")[-1])


def read_episodes(csv_path: str) -> tuple[np.ndarray, np.ndarray]:
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    steps = np.array([float(r["global_step"]) for r in rows])
    returns = np.array([float(r["episodic_return"]) for r in rows])
    return steps, returns


def load_runs(results_dir: str, match: str = "*", unfinished: bool = False) -> tuple[list[RunData], list[str]]:
    """The runs of a results folder, and notes on the folders left out.

    A finished run's result.json names its run folder; an unfinished one has spec.json; folders of
    benchmark/returns.py have result.json without it, and are read from their name and newest runs/*/episodes.csv.
    """
    runs, notes = [], []
    for folder in sorted(glob.glob(os.path.join(results_dir, match))):
        name = os.path.basename(folder)
        parts = name.split("__")
        if not os.path.isdir(os.path.join(folder, "runs")) or len(parts) != 4:
            continue
        finished = os.path.exists(os.path.join(folder, "result.json"))
        if not finished and not unfinished:
            failed = os.path.exists(os.path.join(folder, "error.json"))
            notes.append(f"{name}: {'failed' if failed else 'not finished'}, left out")
            continue
        meta = {}
        for file in ("result.json", "spec.json"):
            if os.path.exists(os.path.join(folder, file)):
                with open(os.path.join(folder, file)) as f:
                    meta = json.load(f)
                break
        csv_path = os.path.join(folder, meta["run_dir"], "episodes.csv") if meta.get("run_dir") else None
        if csv_path is None or not os.path.exists(csv_path):
            paths = glob.glob(os.path.join(folder, "runs", "*", "episodes.csv"))
            csv_path = max(paths, key=os.path.getmtime) if paths else None
        steps, returns = read_episodes(csv_path) if csv_path else (np.zeros(0), np.zeros(0))
        if len(returns) == 0:
            notes.append(f"{name}: no episode finished, left out")
            continue
        script = os.path.splitext(os.path.basename(meta.get("script", parts[0])))[0]
        env_id, tag, seed = meta.get("env_id", parts[1]), meta.get("tag", parts[2]), int(meta.get("seed", parts[3]))
        runs.append(RunData(name, script, tag, env_id, seed, finished, steps, returns))
    return runs, notes


def method_order(method: str) -> tuple:
    """Table 1's settings in the paper's order first, then the rest by name."""
    script, _, tag = method.partition(" ")
    index = [s.tag for s in TABLE1].index(tag) if tag in TABLE1_BY_TAG else len(TABLE1)
    return index, script, tag


def iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean: the mean of the middle 50% (25% trimmed from each end)."""
    return scipy.stats.trim_mean(x, 0.25, axis=axis)


def mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def bootstrap_ci(x: np.ndarray, statistic, resamples: int, seed: int) -> tuple[float, float]:
    """95% bootstrap confidence interval of statistic(x) over resampled runs; NaN with fewer than 2 runs."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return float("nan"), float("nan")
    if np.ptp(x) == 0:  # every resample gives the same value
        return float(x[0]), float(x[0])
    result = scipy.stats.bootstrap((x,), statistic, n_resamples=resamples, confidence_level=0.95,
                                   method="percentile", vectorized=True, rng=np.random.default_rng(seed))  # fmt: skip
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def load_random_returns(path: str) -> dict[str, float]:
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {env_id: entry["mean"] for env_id, entry in json.load(f)["returns"].items()}


def summarize(runs: list[RunData], random_returns: dict[str, float], resamples: int, seed: int) -> dict:
    """Every number of the report: per task, per method; normalized scores and their aggregates."""
    summary = {"tasks": {}, "normalized": {}, "notes": []}
    normalized = {}  # method -> [normalized score of each run]
    per_task_normalized = {}  # method -> {env_id: mean normalized score over seeds}
    for env_id in sorted({r.env_id for r in runs}):
        task_runs = [r for r in runs if r.env_id == env_id]
        methods = {}
        for method in sorted({r.method for r in task_runs}, key=method_order):
            scores = [r.score for r in sorted(task_runs, key=lambda r: r.seed) if r.method == method]
            methods[method] = {
                "seeds": len(scores),
                "scores": scores,
                "mean": float(np.mean(scores)),
                "std": float(np.std(scores, ddof=1)) if len(scores) > 1 else None,  # sample std over seeds
                "episodes": float(np.mean([len(r.returns) for r in task_runs if r.method == method])),
            }
        best = max(methods, key=lambda m: methods[m]["mean"])
        task = {"methods": methods, "best": best, "random": random_returns.get(env_id)}
        summary["tasks"][env_id] = task

        # Table 1's normalization: random policy 0, the best method's mean 1
        low, high = random_returns.get(env_id), methods[best]["mean"]
        if low is None:
            measure = f"python -m benchmark.report --measure-random --env-ids {env_id}"
            summary["notes"].append(f"{env_id}: no random-policy return in the random returns file, so not normalized"
                                    f" ({measure})")  # fmt: skip
            continue
        if high <= low:
            summary["notes"].append(f"{env_id}: no method beats the random policy ({low:.1f}), so not normalized")
            continue
        for run in task_runs:
            normalized.setdefault(run.method, []).append((run.score - low) / (high - low))
        for method, stats in methods.items():
            per_task_normalized.setdefault(method, {})[env_id] = (stats["mean"] - low) / (high - low)

    for method in sorted(normalized, key=method_order):
        x = np.array(normalized[method])
        setting = TABLE1_BY_TAG.get(method.partition(" ")[2])
        summary["normalized"][method] = {
            "runs": len(x),
            "scores": x.tolist(),
            "mean": float(np.mean(x)),
            "mean_ci": bootstrap_ci(x, mean, resamples, seed),
            "iqm": float(iqm(x)),
            "iqm_ci": bootstrap_ci(x, iqm, resamples, seed),
            "per_task": per_task_normalized[method],
            "paper": setting.paper_score if setting else None,
        }
    return summary


def fmt(x: Optional[float], digits: int = 1) -> str:
    return "–" if x is None or np.isnan(x) else f"{x:.{digits}f}"


def markdown(summary: dict, results_dir: str, notes: list[str], plots: list[str]) -> str:
    """report.md: the normalized scores first (Table 1), then the returns per task (Figure 3), then the plots."""
    made = f"Made {time.strftime('%Y-%m-%d %H:%M')} by `python -m benchmark.report`."
    lines = [f"# Benchmark report: {results_dir}", "",
             f"{made} Score of a run: the mean return of its last 100 episodes (§6.1).", ""]  # fmt: skip
    if summary["normalized"]:
        lines += ["## Normalized score (Table 1)", "",
                  "Per task, the uniform-random policy is 0 and the best method here (mean over seeds) is 1; mean and"
                  " IQM over all runs of a method, each with its 95% bootstrap confidence interval over runs.", "",
                  "| method | Table 1 setting | runs | mean | 95% CI | IQM | 95% CI | paper |",
                  "|-|-|-|-|-|-|-|-|"]  # fmt: skip
        for method, s in summary["normalized"].items():
            setting = TABLE1_BY_TAG.get(method.partition(" ")[2])
            label = f"{setting.group}{', ' + setting.setting if setting.setting else ''}" if setting else ""
            lines.append(f"| {method} | {label} | {s['runs']} | {fmt(s['mean'], 2)} |"
                         f" [{fmt(s['mean_ci'][0], 2)}, {fmt(s['mean_ci'][1], 2)}] | {fmt(s['iqm'], 2)} |"
                         f" [{fmt(s['iqm_ci'][0], 2)}, {fmt(s['iqm_ci'][1], 2)}] | {fmt(s['paper'], 2)} |")  # fmt: skip
        tasks = [e for e in summary["tasks"] if any(e in s["per_task"] for s in summary["normalized"].values())]
        lines += ["", "Per task (mean over seeds), with the returns that map to 0 and 1:", "",
                  "| method | " + " | ".join(tasks) + " |", "|-|" + "-|" * len(tasks)]  # fmt: skip
        for method, s in summary["normalized"].items():
            lines.append(f"| {method} | " + " | ".join(fmt(s["per_task"].get(e), 2) for e in tasks) + " |")
        lines.append("| *0: random policy* | " + " | ".join(fmt(summary["tasks"][e]["random"]) for e in tasks) + " |")
        best = [summary["tasks"][e]["methods"][summary["tasks"][e]["best"]]["mean"] for e in tasks]
        lines.append("| *1: best method* | " + " | ".join(fmt(b) for b in best) + " |")
        lines.append("")

    lines += ["## Returns per task (Figure 3)", "", "Mean ± std (sample std, over seeds) of the last-100-episode"
              " return; reference rows in italics.", ""]  # fmt: skip
    for env_id, task in summary["tasks"].items():
        lines += [f"### {env_id}", "", "| method | seeds | last-100 return | episodes per run |", "|-|-|-|-|"]
        for method, s in task["methods"].items():
            spread = f" ± {fmt(s['std'])}" if s["std"] is not None else ""
            lines.append(f"| {method} | {s['seeds']} | {fmt(s['mean'])}{spread} | {s['episodes']:.0f} |")
        for source, value in REFERENCE.get(task_name(env_id), {}).items():
            lines.append(f"| *{source}* | | *{value}* | |")
        if task["random"] is not None:
            lines.append(f"| *uniform random policy* | | *{fmt(task['random'])}* | |")
        lines.append("")

    if plots:
        lines += ["## Plots", ""] + [f"![{os.path.splitext(p)[0]}]({p})" for p in plots] + [""]
    if notes or summary["notes"]:
        lines += ["## Notes", ""] + [f"- {n}" for n in summary["notes"] + notes] + [""]
    return "\n".join(lines)


def trailing_mean(x: np.ndarray, window: int) -> np.ndarray:
    """y[i] = mean of x[max(0, i - window + 1) : i + 1]."""
    sums = np.concatenate([[0.0], np.cumsum(x)])
    i = np.arange(1, len(x) + 1)
    start = np.maximum(0, i - window)
    return (sums[i] - sums[start]) / (i - start)


def plot_curves(runs: list[RunData], env_id: str, path: str, window: int, points: int, references: bool = True):
    """Learning curves on one task: per method, the mean over seeds and a 95% t-interval band."""
    task_runs = [r for r in runs if r.env_id == env_id]
    grid = np.linspace(min(r.steps[0] for r in task_runs), max(r.steps[-1] for r in task_runs), points)
    methods = sorted({r.method for r in task_runs}, key=method_order)
    colors = plt.get_cmap("tab10" if len(methods) <= 10 else "tab20").colors
    fig, ax = plt.subplots(figsize=(7 if len(methods) <= 4 else 10, 4.5))
    for color, method in zip(colors * 2, methods):
        # (seeds, points): each seed's smoothed return; NaN before its first episode; after its last one, a finished
        # run keeps its last value (no episode ended in its final steps), an unfinished one has NaN
        curves = np.array([np.interp(grid, r.steps, y := trailing_mean(r.returns, window), left=np.nan,
                                     right=y[-1] if r.finished else np.nan)
                           for r in task_runs if r.method == method])  # fmt: skip
        n = np.sum(~np.isnan(curves), axis=0)
        with warnings.catch_warnings():  # grid points with no seed, or one, have no mean or no band
            warnings.simplefilter("ignore", RuntimeWarning)
            center = np.nanmean(curves, axis=0)
            half = scipy.stats.t.ppf(0.975, n - 1) * np.nanstd(curves, axis=0, ddof=1) / np.sqrt(n)
        ax.plot(grid, center, color=color, label=f"{method} ({len(curves)} seed{'s' if len(curves) != 1 else ''})")
        ax.fill_between(grid, center - half, center + half, color=color, alpha=0.2, linewidth=0)
    reference = REFERENCE.get(task_name(env_id), {}) if references else {}
    for source, value in list(reference.items())[:1]:  # the paper's figure
        ax.axhline(value, color="gray", linestyle="--", linewidth=1, label=source)
    ax.set_title(env_id)
    ax.set_xlabel("environment steps")
    ax.set_ylabel(f"episodic return (mean of last {window} episodes)")
    ax.grid(alpha=0.3)
    if len(methods) > 4:  # beside the plot, not over the curves
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    else:
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def plot_normalized(summary: dict, path: str) -> None:
    """Normalized scores as bars grouped like Table 1 (no clipping, clipping, adaptive KL, fixed KL, then the rest),
    with bootstrap 95% CIs and the paper's scores as black ticks."""
    groups = {}
    for method, s in summary["normalized"].items():
        setting = TABLE1_BY_TAG.get(method.partition(" ")[2])
        group = setting.group if setting else "other methods"
        label = (setting.setting or "L^CPI") if setting else method
        if setting and method.partition(" ")[0] != "ppo_continuous":
            label = f"{method.partition(' ')[0]}\n{label}"
        groups.setdefault(group, []).append((label, s))
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(summary["normalized"]) + 2), 4.5))
    x, ticks, labels = 0.0, [], []
    for g, (group, bars) in enumerate(groups.items()):
        color = f"C{g}"
        start = x
        for label, s in bars:
            ci = np.array(s["mean_ci"])
            err = None if np.isnan(ci).any() else [[s["mean"] - ci[0]], [ci[1] - s["mean"]]]
            ax.bar(x, s["mean"], width=0.8, color=color, yerr=err, capsize=3)
            if s["paper"] is not None:
                ax.plot([x - 0.4, x + 0.4], [s["paper"]] * 2, color="black", linewidth=2)
            ticks.append(x)
            labels.append(label)
            x += 1
        ax.text((start + x - 1) / 2, -0.2, group, ha="center", va="top", transform=ax.get_xaxis_transform())
        x += 0.6
    ax.plot([], [], color="black", linewidth=2, label="paper, Table 1")
    ax.axhline(0, color="gray", linewidth=0.8)
    ax.set_xticks(ticks, labels, fontsize=8, rotation=30, ha="right", rotation_mode="anchor")
    ax.set_ylabel("normalized score (random 0, best 1)")
    ax.set_title("Average normalized score over tasks x seeds, 95% bootstrap CI")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def plot_aggregate(summary: dict, path: str) -> None:
    """Mean and IQM of the normalized scores per method, each with its 95% bootstrap CI."""
    methods = list(summary["normalized"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 0.4 * len(methods) + 1.5), sharey=True)
    y = np.arange(len(methods))[::-1]
    for ax, key, title in ((axes[0], "mean", "mean"), (axes[1], "iqm", "IQM")):
        values = np.array([summary["normalized"][m][key] for m in methods])
        cis = np.array([summary["normalized"][m][f"{key}_ci"] for m in methods])
        err = np.nan_to_num(np.abs(cis.T - values))
        ax.errorbar(values, y, xerr=err, fmt="o", capsize=3)
        ax.set_title(f"{title} normalized score, 95% CI")
        ax.grid(alpha=0.3, axis="x")
    axes[0].set_yticks(y, methods, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
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

    runs, notes = load_runs(args.results_dir, args.match, args.unfinished)
    if not runs:
        print(f"error: no runs with episodes in {args.results_dir} (matching {args.match!r})")
        raise SystemExit(2)
    out = args.out or os.path.join(args.results_dir, "report")
    os.makedirs(out, exist_ok=True)
    summary = summarize(runs, load_random_returns(args.random_returns), args.resamples, args.seed)

    plots = []
    if summary["normalized"]:
        plot_normalized(summary, os.path.join(out, "normalized_scores.png"))
        plot_aggregate(summary, os.path.join(out, "aggregate.png"))
        plots += ["normalized_scores.png", "aggregate.png"]
    for env_id in summary["tasks"]:
        name = f"curves_{env_id.replace('/', '_')}.png"
        plot_curves(runs, env_id, os.path.join(out, name), args.smooth, args.grid_points, args.reference_lines)
        plots.append(name)

    write_text(os.path.join(out, "summary.json"), json.dumps(summary, indent=1) + "\n")
    write_text(os.path.join(out, "report.md"), markdown(summary, args.results_dir, notes, plots))
    print(f"{len(runs)} runs on {len(summary['tasks'])} tasks; {len(notes)} folders left out")
    print(f"written: {os.path.join(out, 'report.md')}, summary.json and {len(plots)} plots")


if __name__ == "__main__":
    main(tyro.cli(Args, description=__doc__))
