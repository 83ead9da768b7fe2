"""benchmark/report.py: Table 1's normalization exactly as §6.1, stratified intervals, and a report from the committed
results table alone."""

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from benchmark import presets, report
from benchmark import run as runner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = {s.tag: s.flags for s in presets.TABLE1}
# (tag, env_id): the last-100 scores of seeds 1 and 2; random returns 0 (Hopper) and 10 (Swimmer)
SCORES = {
    ("clip-0.2", "Hopper-v4"): [100, 200],
    ("none", "Hopper-v4"): [50, 70],
    ("clip-0.2", "Swimmer-v4"): [30, 50],
    ("none", "Swimmer-v4"): [60, 100],
}
RANDOM = {"Hopper-v4": 0.0, "Swimmer-v4": 10.0}


def row(tag: str, env_id: str, seed: int, score: float, script="ppo_continuous.py", flags=None, steps=1_000_000,
        sha="a" * 64) -> dict:  # fmt: skip
    """A row of a results table as benchmark/run.py writes it."""
    flags = FLAGS.get(tag, "") if flags is None else flags
    name = runner.run_name(script, env_id, tag, steps, seed, flags)
    return {**{c: "" for c in runner.COLUMNS}, "name": name, "script": script, "tag": tag, "flags": flags,
            "env_id": env_id, "seed": seed, "total_timesteps": steps, "score": score, "episodes": 500,
            "commit": "c" * 40, "dirty": "False", "script_sha256": sha, "script_versions": 1}  # fmt: skip


def paper_rows() -> list[dict]:
    return [row(tag, env_id, seed, s) for (tag, env_id), scores in SCORES.items() for seed, s in enumerate(scores, 1)]


def write_table(path: str, rows: list[dict]) -> None:
    """The results table and its curves file: each run's curve rises linearly to its score over 100 points."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, runner.COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    with open(path[: -len(".csv")] + "_curves.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, runner.CURVE_COLUMNS)
        writer.writeheader()
        for r in rows:
            for k in range(1, 101):
                writer.writerow({"name": r["name"], "step": k * r["total_timesteps"] // 100,
                                 "return_last100": r["score"] * k / 100})  # fmt: skip


def summary_of(tmp_path, rows: list[dict]) -> dict:
    path = str(tmp_path / "t.csv")
    write_table(path, rows)
    return report.summarize(report.read_table(path)[0], RANDOM, resamples=2000, seed=0)


def table1_numbers(summary: dict, steps: int = 1_000_000) -> dict:
    (table,) = [t for t in summary["table1"] if t["total_timesteps"] == steps]
    return {
        r["setting"].tag: (r["n"], r["mean"], r["mean_ci"], r["iqm"], r["iqm_ci"], r["per_task"]) for r in table["rows"]
    }


def test_table1_normalizes_as_section_6_1(tmp_path):
    summary = summary_of(tmp_path, paper_rows())
    got = table1_numbers(summary)
    # random 0 -> 0 and the best setting's mean (clip, 150) -> 1 on Hopper; random 10 -> 0 and none's 80 -> 1 on Swimmer
    clip = [100 / 150, 200 / 150, 20 / 70, 40 / 70]
    none = [50 / 150, 70 / 150, 50 / 70, 90 / 70]
    assert got["clip-0.2"][0] == 4 and got["clip-0.2"][1] == pytest.approx(np.mean(clip))
    assert got["none"][1] == pytest.approx(np.mean(none))
    assert got["clip-0.2"][3] == pytest.approx((40 / 70 + 100 / 150) / 2)  # IQM of 4: the mean of the middle two
    assert got["clip-0.2"][5] == pytest.approx({"Hopper-v4": 1.0, "Swimmer-v4": 30 / 70})
    for _, m, m_ci, q, q_ci, _ in got.values():
        assert m_ci[0] <= m <= m_ci[1] and q_ci[0] <= q <= q_ci[1]
    (table,) = summary["table1"]
    assert table["reference"] == {"Hopper-v4": (0.0, 150.0), "Swimmer-v4": (10.0, 80.0)}
    assert report.scale_text(table["rows"], 1_000_000) == "2 tasks x 2 seeds x 1M steps"
    # while a grid's seed 3 has reached one cell (5 runs over 2 tasks), the heading names the range, not 5 // 2
    (table,) = summary_of(tmp_path, paper_rows() + [row("clip-0.2", "Hopper-v4", 3, 150)])["table1"]
    assert report.scale_text(table["rows"], 1_000_000) == "2 tasks x 2-3 seeds x 1M steps"


def test_other_scripts_tags_and_lengths_change_no_table1_number(tmp_path):
    before = table1_numbers(summary_of(tmp_path, paper_rows()))
    others = []
    for env_id in RANDOM:
        for seed in (1, 2):
            others += [
                row("default", env_id, seed, 10_000, script="trpo.py"),  # another algorithm, far better
                row("clip-0.2", env_id, seed, 10_000, script="my_ppo.py"),  # a fork with Table 1's tag and flags
                row("clip-0.2", env_id, seed, 10_000, flags=FLAGS["clip-0.2"] + " --num-steps 512"),  # other flags
                row("mine", env_id, seed, 10_000, flags=FLAGS["clip-0.2"]),  # Table 1's flags under another tag
                row("clip-0.2", env_id, seed, 10_000, steps=200_000),  # shorter runs of two Table 1 settings
                row("none", env_id, seed, 5_000, steps=200_000),
                row("clip-0.2", env_id, seed, 10_000, steps=500_000),  # one setting alone at its length
            ]
    summary = summary_of(tmp_path, paper_rows() + others)
    assert table1_numbers(summary) == before
    # the 200k runs make a Table 1 of their own, and a cell of their own in the returns per task; one setting alone
    # (it would be its own best, 1 on every task) makes none
    assert [t["total_timesteps"] for t in summary["table1"]] == [200_000, 1_000_000]
    cells = [m for m in summary["tasks"]["Hopper-v4"] if (m.script, m.tag, m.flags) == ("ppo_continuous.py",
             "clip-0.2", FLAGS["clip-0.2"])]  # fmt: skip
    assert sorted(m.total_timesteps for m in cells) == [200_000, 500_000, 1_000_000]
    text = "\n".join(report.returns_table(summary))  # several lengths: each row names its own
    assert "| ppo_continuous clip-0.2, 500k | 2 | 10000.0 ± 0.0 | 10000.0 ± 0.0 |" in text and " at 1M" not in text
    assert "| ppo_continuous clip-0.2, 1M | 2 | 150.0 ± 70.7 | 40.0 ± 14.1 |" in text


def claims_of(tmp_path, scores: dict) -> str:
    """The report's verdicts on the paper's claims for {(script or tag, env_id): seeds' scores}, random 0 and 10."""
    rows = [row("default", e, seed, x, script=k) if k.endswith(".py") else row(k, e, seed, x)
            for (k, e), xs in scores.items() for seed, x in enumerate(xs, 1)]  # fmt: skip
    summary = summary_of(tmp_path, rows)
    return "\n".join(report.table1_claims(summary["table1"][0]) + report.figure3_claim(summary))


def verdict(text: str, claim: str) -> str:
    (line,) = [line for line in text.splitlines() if line.startswith(f"- *{claim}")]
    return line


def set_scores(runs: dict, scores: tuple, tasks: tuple = ("Hopper-v4", "Swimmer-v4")) -> None:
    """(tag or script, the first task's mean, the second's): three seeds at mean - 1, mean, mean + 1 on each task."""
    for key, *means in scores:
        for env_id, x in zip(tasks, means):
            runs[key, env_id] = [x - 1, x, x + 1]


def rows_of(runs: dict, prefix: str = "") -> list[dict]:
    """The rows of {(Table 1 tag, env_id): seeds' scores}; with a prefix, as the table1-ppo1 preset runs them: tag
    "<prefix>-<tag>", the prefix's flags (presets.PPO1) before the setting's."""
    return [row(f"{prefix}-{tag}" if prefix else tag, env_id, seed, s,
                flags=f"{presets.PPO1} {FLAGS[tag]}" if prefix else None)
            for (tag, env_id), scores in runs.items() for seed, s in enumerate(scores, 1)]  # fmt: skip


def test_verdicts_on_the_papers_claims(tmp_path):
    best = "Clipping with ε = 0.2 is the best"
    runs = {}
    set_scores(runs, (("clip-0.2", 101, 61), ("clip-0.1", 51, 31), ("none", -11, 1), ("kl-adaptive-0.01", 71, 41),
                      ("trpo.py", 91, 71)))  # fmt: skip
    text = claims_of(tmp_path, runs)
    kl = (71 / 101 + 31 / 51) / 2  # clip 0.2 is the best setting on both tasks: 1; the others relative to it
    assert f"**Holds.** Clip 0.2 is ahead of all 3 beyond the interval; the closest: adaptive KL, d_targ=0.01" \
           f" {1 - kl:+.2f} [" in verdict(text, best) and "Clip 0.2 scores 1.00 [0.99, 1.01]." in text  # fmt: skip
    assert "**Holds.**" in verdict(text, "No clipping") and "Below random on: Hopper-v4; Swimmer-v4." in text
    assert f"**Holds.** Clip 0.2 is ahead of all 1 beyond the interval; the closest: adaptive KL, d_targ=0.01" \
           f" {1 - kl:+.2f}" in verdict(text, "Every KL-penalty setting")  # fmt: skip
    line = verdict(text, "PPO is at or above")  # TRPO ahead on one task of two: "almost all"
    assert "**Holds.**" in line and "on 1 of the 2 tasks" in line
    assert "Swimmer-v4: trpo default 71.0 ± 1.0 (n=3) against PPO's 61.0 ± 1.0 (n=3), ahead by 10.0 [" in line
    assert "beyond the interval on 1 of them" in line

    set_scores(runs, (("clip-0.1", 121, 71), ("none", 51, 31), ("kl-adaptive-0.01", 151, 81), ("trpo.py", 111, 71)))
    text = claims_of(tmp_path, runs)
    assert "**Fails** for 2 of 3, at or above clip 0.2: clipping, ε = 0.1 -" in verdict(text, best)
    assert "2 of them beyond the interval" in verdict(text, best)
    none = (51 / 151 + 21 / 71) / 2  # the best setting now: adaptive KL on both tasks
    assert f"**Fails.** It scores {none:.2f} [" in verdict(text, "No clipping") and "Below random on: none." in text
    assert "**Fails** for 1 of 1" in verdict(text, "Every KL-penalty setting")
    line = verdict(text, "PPO is at or above")  # TRPO ahead by 10 on both tasks, seeds 1 apart: beyond the noise
    assert "**Fails.**" in line and "on 0 of the 2 tasks" in line and "beyond the interval on 2 of them" in line

    # clip 0.2 ahead of clip 0.1 on the means by less than the spread of the seeds
    runs["clip-0.2", "Hopper-v4"], runs["clip-0.1", "Hopper-v4"] = [60, 100, 140], [55, 95, 135]
    runs["clip-0.2", "Swimmer-v4"], runs["clip-0.1", "Swimmer-v4"] = [20, 60, 100], [15, 55, 95]
    del runs["kl-adaptive-0.01", "Hopper-v4"], runs["kl-adaptive-0.01", "Swimmer-v4"]
    text = claims_of(tmp_path, runs)
    line = verdict(text, best)
    assert "**Holds on the means, not beyond the noise.**" in line and "includes 0 against: clipping, ε = 0.1 +" in line
    # TRPO (111, 71) still ahead of PPO's means (100, 60) on both tasks, now by less than the spread of PPO's seeds
    line = verdict(text, "PPO is at or above")
    assert "**Fails on the means, not beyond the noise.**" in line and "beyond the interval on 0 of them" in line
    assert "Hopper-v4: trpo default 111.0 ± 1.0 (n=3) against PPO's 100.0 ± 40.0 (n=3), ahead by 11.0 [-" in line


def test_a_superseded_method_stays_in_the_returns_table_but_not_in_the_verdict(tmp_path):
    # the old A2C row (presets.SUPERSEDED) far ahead of PPO on both tasks: listed, but no rival in §6.2's verdict
    runs = {}
    set_scores(runs, (("clip-0.2", 101, 61), ("none", -11, 1)))
    rows = rows_of(runs)
    rows += [row("a2c", env_id, seed, 1000.0, script="reinforce_baseline.py", flags="--optimizer rmsprop")
             for env_id in ("Hopper-v4", "Swimmer-v4") for seed in (1, 2, 3)]  # fmt: skip
    summary = summary_of(tmp_path, rows)
    assert summary["figure3"] == []  # PPO and nothing else to compare: no verdict
    (method,) = [m for m in summary["tasks"]["Hopper-v4"] if m.script == "reinforce_baseline.py"]
    assert method.superseded and summary["tasks"]["Hopper-v4"][method]["mean"] == 1000.0


def test_intervals_resample_seeds_within_each_task():
    # Task A's runs all score 0, task B's all 1: resampling seeds within a task never changes the mean, 0.5. Resampling
    # runs pooled across tasks would draw more A's or B's and give an interval of about ±0.3
    strata = [np.zeros(3), np.ones(3)]
    assert report.stratified_ci(strata, report.mean, resamples=2000, seed=0) == (0.5, 0.5)
    low, high = report.stratified_ci([np.array([0.0, 1, 2]), np.array([10.0, 11, 12])], report.mean, 2000, 0)
    assert 5.0 < low < 6 < high < 7.0  # only the spread within each task: means of 3 draws, averaged over 2 tasks
    # a task with one run is held fixed; with none varying there is no interval
    # (the 2 runs spread by the small-sample factor sqrt(2) about their mean: 1 -+ sqrt(2), the extremes of the draws)
    low, high = report.stratified_ci([np.array([0.0, 2]), np.array([5.0])], report.mean, 2000, 0)
    assert low == pytest.approx((2 * (1 - 2**0.5) + 5) / 3) and high == pytest.approx((2 * (1 + 2**0.5) + 5) / 3)
    assert np.isnan(report.stratified_ci([np.array([1.0]), np.array([2.0])], report.mean, 2000, 0)).all()


def test_bootstrap_variance_of_a_mean_is_the_unbiased_one():
    # A plain bootstrap resamples n runs from their plug-in distribution, whose variance is (n-1)/n of the unbiased s^2:
    # its variance of a mean is (n-1)/n * s^2/n, 2/3 of s^2/n with 3 seeds. Corrected, stratum by stratum, it is s^2/n
    a = [np.array([0.0, 1, 5]), np.array([2.0, 3, 3.5]), np.array([-1.0, 4, 4.5]), np.array([7.0, 7.5, 10])]
    b = [np.array([1.0, 2, 2.5]), np.array([0.0, 6]), np.array([3.0, 3, 4, 8]), np.array([9.0])]  # 3, 2, 4 and 1 run

    def unbiased(strata: list[np.ndarray], ddof: int = 1) -> float:
        """The variance of the mean of all runs, seeds varying within each stratum: sum of (n_s/N)^2 var_s / n_s."""
        total = sum(len(s) for s in strata)
        return sum((len(s) / total) ** 2 * np.var(s, ddof=ddof) / len(s) for s in strata if len(s) > 1)

    replicates = report.bootstrap_replicates([a], report.mean, 20_000, 0)
    assert np.mean(replicates) == pytest.approx(np.mean(np.concatenate(a)), abs=0.02)
    assert np.var(replicates) == pytest.approx(unbiased(a), rel=0.03)
    assert not np.var(replicates) == pytest.approx(unbiased(a, ddof=0), rel=0.1)  # the plain bootstrap's, 2/3 of it
    # strata of 2, 3 and 4 runs, each with its own factor; one run adds no spread. A difference adds the two variances
    replicates = report.bootstrap_replicates([a, b], lambda x, y, axis=-1: report.mean(x, axis) - report.mean(y, axis),
                                             20_000, 0)  # fmt: skip
    assert np.var(replicates) == pytest.approx(unbiased(a) + unbiased(b), rel=0.03)
    # the intervals read these replicates: about +-1.96 of their sd, wider than the plain one by sqrt(3/2)
    low, high = report.stratified_ci(a, report.mean, 20_000, 0)
    assert (high - low) / (2 * 1.96) == pytest.approx(unbiased(a) ** 0.5, rel=0.05)


def test_iqm_on_a_small_set():
    assert report.iqm(np.array([1.0, 2, 3, 4, 5, 6, 7, 100])) == pytest.approx((3 + 4 + 5 + 6) / 4)
    assert report.task_name("BreakoutNoFrameskip-v4") == "Breakout" and report.task_name("Hopper-v4") == "Hopper"
    assert report.steps_text(1_000_000) == "1M" and report.steps_text(200_000) == "200k"


def test_report_from_the_results_table_alone(tmp_path):
    rows = paper_rows() + [row("default", "Hopper-v4", s, 90, script="trpo.py") for s in (1, 2)]
    rows[0]["script_sha256"] = "b" * 64  # one run of ppo_continuous.py came from another version of the script
    path = str(tmp_path / "grid.csv")
    write_table(path, rows)
    random_path = tmp_path / "random.json"
    random_path.write_text(json.dumps({"returns": {e: {"mean": v} for e, v in RANDOM.items()}}))
    proc = subprocess.run([sys.executable, "-m", "benchmark.report", path, "--random-returns", str(random_path),
                           "--resamples", "2000"], cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = tmp_path / "grid"
    text = (out / "report.md").read_text()
    clip = np.mean([100 / 150, 200 / 150, 20 / 70, 40 / 70])
    assert f"| clipping | ε = 0.2 | 4 | {clip:.2f} | [" in text and "| 0.82 |" in text
    assert "## Table 1: 2 tasks x 2 seeds x 1M steps" in text
    # Figure 3 as numbers: a row per method and a column per task (a cell without runs is "–"); the label of a run
    # is what its table says (here none), never guessed from the script
    assert "Last-100-episode return at 1M steps" in text and "| method | n | Hopper-v4 | Swimmer-v4 |" in text
    assert "| TRPO |" not in text and "| trpo default | 2 | 90.0 ± 0.0 | – |" in text
    assert "| *baselines ppo2* | | *2316.2* | *111.2* |" in text
    assert "ppo_continuous.py: its 8 runs come from 2 versions of the script" in text
    assert "trpo.py: all 2 runs from one version" in text
    for png in ("table1.png", "figure3.png"):
        assert (out / png).stat().st_size > 10_000
    # a grid's first seed alone, fixed while later seeds still run: seed 1 of clip 0.2 is the best on Hopper (100 >
    # 50) and (30 - 10) / (60 - 10) on Swimmer, where no clipping scored 60
    proc = subprocess.run([sys.executable, "-m", "benchmark.report", path, "--random-returns", str(random_path),
                           "--resamples", "2000", "--seeds", "1", "--out", str(tmp_path / "seed1")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (tmp_path / "seed1" / "report.md").read_text()
    assert f"| clipping | ε = 0.2 | 2 | {np.mean([100 / 100, 20 / 50]):.2f} | [–, –] |" in text
    assert f"{os.path.basename(path)} --seeds 1`" in text and "## Table 1: 2 tasks x 1 seed x 1M steps" in text
    assert "| trpo default | 1 | 90.0 | – |" in text  # one seed per cell: no spread


def test_scalars_reads_each_runs_events_and_a_resumed_run_once(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    rows = [row("none", "Hopper-v4", 1, 50), row("none", "Hopper-v4", 2, 70)]  # seed 2 has no folder here
    write_table(str(tmp_path / "grid.csv"), rows)
    run_dir = tmp_path / "out" / rows[0]["name"] / "runs" / "Hopper-v4__ppo_continuous__1__1"
    # the first attempt logs updates 1-4 and dies; the second resumes from update 2's checkpoint and logs 3-6 again
    for attempt, (steps, values) in enumerate((([1, 2, 3, 4], [1, 3, 100, 100]), ([3, 4, 5, 6], [5, 7, 9, 11]))):
        writer = SummaryWriter(str(run_dir), filename_suffix=f".{attempt}")
        for step, value in zip(steps, values):
            writer.add_scalar("losses/kl", value, step)
        writer.close()
        (path,) = [p for p in run_dir.iterdir() if p.name.endswith(f".{attempt}")]
        os.utime(path, (1000 + attempt, 1000 + attempt))
    proc = subprocess.run([sys.executable, "-m", "benchmark.scalars", str(tmp_path / "grid.csv"), "--results-dir",
                           str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # updates 1-6 log 1, 3, 5, 7, 9, 11: medians 3 (1, 3, 5) and 9 (7, 9, 11); the dead attempt's 100s are gone
    assert "| ppo_continuous none | Hopper-v4 | 1 | 50.0 | 3 | 9 |" in proc.stdout
    assert "| 2 | 70.0 |" not in proc.stdout
    assert f"1 runs left out, no losses/kl in their folders: {rows[1]['name']}" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "benchmark.scalars", str(tmp_path / "grid.csv"), "--scalar", "x/y",
                           "--results-dir", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith("error: no run of ")


def test_bad_input_to_the_report_is_one_line_and_exit_code_2(tmp_path):
    (tmp_path / "junk.csv").write_text("a,b\n1,2\n")
    for target in (str(tmp_path / "missing.csv"), str(tmp_path / "junk.csv"), str(tmp_path)):
        proc = subprocess.run([sys.executable, "-m", "benchmark.report", target], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)  # fmt: skip
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith("error: ")


def test_a_variant_is_a_table1_setting_after_another_prefixs_flags():
    def method(tag: str, flags: str, script: str = "ppo_continuous.py") -> report.Method:
        return report.Method(script, tag, flags, 1_000_000, tag)

    setting = {s.tag: s for s in presets.TABLE1}
    ppo1_none = method("ppo1-none", f"{presets.PPO1} {FLAGS['none']}")
    assert ppo1_none.variant == ("ppo1", setting["none"]) and ppo1_none.table1 is None
    # any prefix, dashes in it too; kl-fixed-10 is not kl-fixed-1 with a 0 left over
    got = method("obs-clip-10-clip-0.2", f"--obs-clip 10 {FLAGS['clip-0.2']}").variant
    assert got == ("obs-clip-10", setting["clip-0.2"])
    got = method("ppo1-kl-fixed-10", f"{presets.PPO1} {FLAGS['kl-fixed-10']}").variant
    assert got == ("ppo1", setting["kl-fixed-10"])
    # a rerun (presets.RERUNS) needs no flag of its own: the setting trained again by another version of the script
    assert method("plain-clip-0.2", FLAGS["clip-0.2"]).variant == ("plain", setting["clip-0.2"])
    (preset,) = [p for name, p in presets.PRESETS.items() if name == "table1-plain"]
    assert [report.Method(m.script, m.tag, m.flags, 1, m.label).variant for m in preset.methods] == [
        ("plain", setting["clip-0.2"])
    ]
    for tag, flags, script in [
        ("none", FLAGS["none"], "ppo_continuous.py"),  # Table 1's own setting
        ("ppo1-none", FLAGS["none"], "ppo_continuous.py"),  # no flag of the prefix's: the setting under another name
        ("ppo1-none", f"{FLAGS['none']} {presets.PPO1}", "ppo_continuous.py"),  # the prefix's flags after the setting's
        ("ppo1-none", f"{presets.PPO1} {FLAGS['clip-0.2']}", "ppo_continuous.py"),  # tag and flags of two settings
        ("ppo1-clip-0.2", f"{presets.PPO1} --objective clip --clip-coef 0.3", "ppo_continuous.py"),
        ("-none", f"{presets.PPO1} {FLAGS['none']}", "ppo_continuous.py"),  # no prefix
        ("ppo1none", f"{presets.PPO1} {FLAGS['none']}", "ppo_continuous.py"),
        ("ppo1-none", f"{presets.PPO1} {FLAGS['none']}", "my_ppo.py"),  # another script
    ]:
        assert method(tag, flags, script).variant is None, (tag, flags, script)
    # the preset's methods are all variants, of the settings it names
    (preset,) = [p for name, p in presets.PRESETS.items() if name == "table1-ppo1"]
    got = [report.Method(m.script, m.tag, m.flags, 1, m.label).variant for m in preset.methods]
    assert got == [("ppo1", setting[tag]) for tag in presets.PPO1_SETTINGS]


# A main Table 1 (the anchors) and its settings run with ppo1's details, 3 seeds each at mean - 1, mean, mean + 1.
# Random returns -300 on HalfCheetah and 10 on Swimmer; the anchors' clip 0.2 is their best on both tasks (1700, 81),
# so the anchors' 0 and 1 are (-300, 1700) on HalfCheetah and (10, 81) on Swimmer
VARIANT_TASKS = ("HalfCheetah-v4", "Swimmer-v4")
VARIANT_RANDOM = {"HalfCheetah-v4": -300.0, "Swimmer-v4": 10.0}
ANCHORS = (("clip-0.2", 1700, 81), ("none", -500, 46))


def variant_report(tmp_path, variants: tuple, anchors: bool = True, drop=(), table: str = "ppo1-details.csv") -> str:
    """report.md of a table of (Table 1 tag, HalfCheetah's mean, Swimmer's mean) with ppo1's details, --anchors a
    table of ANCHORS (or none); drop: (tag, env_id, seed) of runs not yet finished. The table's name is no preset's
    (so no run is known to be missing), unless `table` names one."""
    random_path = tmp_path / "random.json"
    random_path.write_text(json.dumps({"returns": {e: {"mean": v} for e, v in VARIANT_RANDOM.items()}}))
    main_runs, ppo1_runs = {}, {}
    set_scores(main_runs, ANCHORS, VARIANT_TASKS)
    set_scores(ppo1_runs, variants, VARIANT_TASKS)
    write_table(str(tmp_path / "table1.csv"), rows_of(main_runs))
    rows = [r for r in rows_of(ppo1_runs, "ppo1") if (r["tag"][len("ppo1-") :], r["env_id"], r["seed"]) not in drop]
    write_table(str(tmp_path / table), rows)
    anchors_path = str(tmp_path / "table1.csv") if anchors else None
    report.main(report.Args(table=str(tmp_path / table), out=str(tmp_path / "out"), resamples=2000,
                            random_returns=str(random_path), anchors=anchors_path))  # fmt: skip
    return (tmp_path / "out" / "report.md").read_text()


def test_table1_settings_with_ppo1s_details_on_the_main_table1s_scale(tmp_path):
    text = variant_report(tmp_path, (("clip-0.2", 3700, 152), ("none", -700, 2.9)))
    assert "## Table 1 settings with ppo1's details, scored on the main Table 1's scale: 2 tasks x 3 seeds" in text
    # ppo1's clip 0.2: (3700 + 300) / 2000 = 2 and (152 - 10) / 71 = 2 on the anchors' scale (its own table's best
    # would make it 1); beside it the anchors' clip 0.2 (1 on both tasks), the paper's 0.82 and the difference, +1
    (line,) = [x for x in text.splitlines() if x.startswith("| clipping | ε = 0.2 |")]
    assert line.startswith("| clipping | ε = 0.2 | 6 | 2.00 | [") and "| 6 | 1.00 | [" in line
    assert "| 0.82 | +1.00 | [" in line
    # no clipping: -400 / 2000 = -0.2 and -7.1 / 71 = -0.1; the anchors': -0.1 and 36 / 71
    none = (-0.2 - 0.1) / 2
    (line,) = [x for x in text.splitlines() if x.startswith("| no clipping or penalty |  |")]
    assert line.startswith(f"| no clipping or penalty |  | 6 | {none:.2f} | [")
    assert f"| -0.39 | {none - (-0.1 + 36 / 71) / 2:+.2f} | [" in line
    assert "| clipping, ε = 0.2, ppo1 | 2.00 | 2.00 |" in text
    assert "| clipping, ε = 0.2, main Table 1 | 1.00 | 1.00 |" in text
    assert "| *0: random policy* | -300.0 | 10.0 |" in text
    assert "| *1: best setting of the main Table 1* | 1700.0 | 81.0 |" in text
    # each run: its return, the random policy's, the difference
    assert "| no clipping or penalty | HalfCheetah-v4 | 1 | -701.0 | -300.0 | -401.0 | -0.20 |" in text
    assert "| no clipping or penalty | Swimmer-v4 | 3 | 3.9 | 10.0 | -6.1 | -0.09 |" in text
    assert "| clipping, ε = 0.2 | Swimmer-v4 | 2 | 152.0 | 10.0 | 142.0 | 2.00 |" in text
    line = verdict(text, "Does no clipping or penalty score below 0 with ppo1's details?")
    assert f"**Holds.** It scores {none:.2f} [" in line and "n = 6 runs on 2 tasks" in line
    assert f"(paper: -0.39; the main Table 1: {(-0.1 + 36 / 71) / 2:.2f} [" in line
    line = verdict(text, "Does no clipping score below random on HalfCheetah-v4 with ppo1's details?")
    assert "**Holds.** 3 of 3 runs below the random policy's -300.0; their mean return -700.0, -400.0 [" in line
    assert "the main Table 1: 3 of 3 runs below random, mean return -500.0" in line
    line = verdict(text, "Does clip 0.2 gain or lose with ppo1's details")
    assert "**Gains, beyond the noise.** ppo1 - main: +1.00 [" in line and "on the 2 tasks both have runs on" in line
    (line,) = [x for x in text.splitlines() if x.startswith("- These runs change all of ppo1's details at once")]
    assert "leave-one-out" in line and "(here HalfCheetah-v4, where it scores -0.20)" in line

    # no clipping above 0 with ppo1's details, on a partial grid (Swimmer's seed 3 not finished); no clip 0.2 runs
    text = variant_report(tmp_path, (("none", 700, 45.5),), drop=[("none", "Swimmer-v4", 3)])
    none = (3 * 0.5 + 34.5 / 71 + 35.5 / 71) / 5  # (700 + 300) / 2000 and Swimmer's 44.5 and 45.5
    line = verdict(text, "Does no clipping or penalty score below 0 with ppo1's details?")
    assert f"**Fails.** It scores {none:.2f} [" in line and "n = 5 runs on 2 tasks" in line
    line = verdict(text, "Does no clipping score below random on HalfCheetah-v4")
    assert "**Fails.** 0 of 3 runs below the random policy's -300.0; their mean return 700.0, +1000.0 [" in line
    assert "Does clip 0.2 gain or lose" not in text and "2 tasks x 2-3 seeds x 1M steps" in text


def test_a_setting_its_grid_has_not_finished_is_marked_incomplete_and_gets_no_verdict(tmp_path, monkeypatch):
    # table1-ppo1.csv is the table1-ppo1 preset's: 7 tasks x 3 seeds, 21 runs a setting; here 6 (2 tasks x 3 seeds)
    text = variant_report(tmp_path, (("clip-0.2", 3700, 152), ("none", -700, 2.9)), table="table1-ppo1.csv")
    (line,) = [x for x in text.splitlines() if x.startswith("| clipping | ε = 0.2 |")]
    assert line.startswith("| clipping | ε = 0.2 | 6 (6 of 21 runs: incomplete) | 2.00 | [")  # numbers, marked
    for setting in ("clipping, ε = 0.2", "no clipping or penalty"):
        assert f"- *{setting}*: no verdict: incomplete, 6 of the 21 runs its grid asks have finished." in text
    assert "**Holds" not in text and "**Fails" not in text and "**Gains" not in text and "**Loses" not in text
    # --seeds 1 asks 7 runs a setting of the same grid: 2 are there, still incomplete
    (tmp_path / "out" / "report.md").unlink()
    report.main(report.Args(table=str(tmp_path / "table1-ppo1.csv"), out=str(tmp_path / "out"), resamples=200,
                            random_returns=str(tmp_path / "random.json"), anchors=str(tmp_path / "table1.csv"),
                            seeds=[1]))  # fmt: skip
    assert "2 of the 7 runs its grid asks" in (tmp_path / "out" / "report.md").read_text()
    # the figure's legend says so too
    labels = []
    monkeypatch.setattr(report.plt.Axes, "plot", lambda self, *a, **k: labels.append(k.get("label")) or [])
    rows, _ = report.open_table(str(tmp_path / "table1-ppo1.csv"))
    curves = {r["name"]: (np.array([1_000_000]), np.array([r["score"]])) for r in rows}
    sizes = report.grid_sizes("table1-ppo1.csv", None)
    report.plot_figure3(report.summarize(rows, {}, 10, 0), rows, curves, str(tmp_path / "f.png"), False, sizes)
    assert any(label and "incomplete: 6 of 21 runs" in label for label in labels), labels


def test_without_anchors_the_report_has_no_variant_section(tmp_path):
    text = variant_report(tmp_path, (("clip-0.2", 3700, 152), ("none", -700, 2.9)), anchors=False)
    assert "ppo1's details" not in text and "main Table 1" not in text and "--anchors" not in text
    assert "| ppo_continuous ppo1-none | 3 | -700.0 ± 1.0 | 2.9 ± 1.0 |" in text  # the returns table as before


def test_bad_anchors_are_one_line_and_exit_code_2(tmp_path):
    path = str(tmp_path / "grid.csv")
    write_table(path, paper_rows())
    (tmp_path / "junk.csv").write_text("a,b\n1,2\n")
    (tmp_path / "empty.csv").write_text(",".join(runner.COLUMNS) + "\n")
    for anchors in ("missing.csv", "junk.csv", "empty.csv"):
        proc = subprocess.run([sys.executable, "-m", "benchmark.report", path, "--anchors", str(tmp_path / anchors)],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith(f"error: {tmp_path / anchors}: ")
    assert not (tmp_path / "grid").exists()  # nothing written


def test_atari_against_table_6(tmp_path, monkeypatch):
    def game(env_id, seed, score, steps=10_000_000, **extra):
        return {**row("default", env_id, seed, score, script="ppo_atari.py", flags="", steps=steps), **extra}

    rows = [game("BreakoutNoFrameskip-v4", 1, 300.0, score_all=120.0, wall_s=14_400, sps=694.4),
            game("PongNoFrameskip-v4", 1, 20.0, score_all=5.0), game("PongNoFrameskip-v4", 2, 21.0, score_all=7.0),
            game("BeamRiderNoFrameskip-v4", 1, 900.0), game("BreakoutNoFrameskip-v4", 1, 15.0, steps=1_000_000),
            row("clip-0.2", "Hopper-v4", 1, 100)]  # fmt: skip
    path = str(tmp_path / "atari.csv")
    write_table(path, rows)
    table = report.read_table(path)[0]
    text = "\n".join(report.atari_section(report.summarize(table, {}, resamples=100, seed=0), table))
    assert "| game | method | steps | n | last 100 | all training | paper PPO, Table 6 | paper A2C, Table 6 |" in text
    # the last 100 and all training games, the paper's three, CleanRL's and ppo2's, hours and SPS; MuJoCo not here
    assert "| Breakout | ppo_atari default | 10M | 1 | 300.0 | 120.0 | 274.8 | 303.0 | 456.4 | 414.7 | 406.6 |" \
           " 4.00 | 694 |" in text  # fmt: skip
    assert "| Pong | ppo_atari default | 10M | 2 | 20.5 ± 0.7 | 6.0 | 20.7 |" in text and "Hopper" not in text
    assert "| BeamRider | ppo_atari default | 10M | 1 | 900.0 | – |" in text  # a row without score_all, wall, SPS
    # one seed: within CleanRL's seed-to-seed std (28.1 on Breakout) is "at", beyond it (484.6 on BeamRider) is not
    assert "- Breakout, ppo_atari default at 10M steps: 300.0, **at** the paper's PPO: above it by 25.2 (+9%" in text
    assert "- BeamRider, ppo_atari default at 10M steps: 900.0, **below** the paper's PPO by 690.0 (-43%" in text
    # two seeds: the paper's 20.7 inside the 95% t-interval of 20.5 ± 12.71 * 0.71 / sqrt(2) = ± 6.35
    assert "Pong, ppo_atari default at 10M steps: 20.5, **at** the paper's PPO: its 20.7 lies inside the 95%" \
           " t-interval of our mean over 2 seeds [14.1, 26.9]" in text  # fmt: skip
    assert "- Breakout, ppo_atari default at 1M steps: 15.0, no verdict: Table 6's scores are at 10M steps." in text
    verdict = report.atari_verdict([20.0, 20.2, 20.1], 20.7, None)  # a tight spread: the paper's score outside it
    assert verdict.startswith("**below** the paper's PPO by 0.6 (-3% of the paper's 20.7), beyond the 95% t-interval")
    assert report.atari_verdict([300.0], 274.8, None).endswith(
        "no public seed-to-seed spread on this game to read it by"
    )
    # the curves: the paper's final score and CleanRL's as lines on each game's panel, the paper's alone on MuJoCo's
    lines = []
    monkeypatch.setattr(report.plt.Axes, "axhline", lambda ax, y, **kw: lines.append((y, kw["label"])))
    summary, curves = report.summarize(table, {}, resamples=100, seed=0), report.read_table(path)[1]
    report.plot_figure3(summary, table, curves, str(tmp_path / "f.png"), True)
    paper, cleanrl = "paper PPO, Table 6", "CleanRL ppo_atari, 3 seeds"
    assert sorted(lines) == sorted([(1590.0, paper), (1915.9, cleanrl), (274.8, paper), (414.7, cleanrl),
                                    (2200, "paper PPO, Fig. 3 (approx.)"), (20.7, paper), (20.4, cleanrl)])  # fmt: skip
    # without a game of Table 6: no section
    mujoco = [r for r in table if r["env_id"] == "Hopper-v4"]
    assert report.atari_section(report.summarize(mujoco, {}, resamples=100, seed=0), mujoco) == []


def test_leave_one_out_names_the_detail_whose_removal_moves_the_score(tmp_path):
    # The anchors as in variant_report: 0 and 1 are (-300, 1700) on HalfCheetah and (10, 81) on Swimmer. ppo1's full set
    # scores no clipping at -700 and 2.9 (-0.2 and -0.1); without --no-clip-actions it scores 1700 and 81 (1 and 1),
    # without normc as the full set; each at mean - 1, mean, mean + 1 over 3 seeds
    random_path = tmp_path / "random.json"
    random_path.write_text(json.dumps({"returns": {e: {"mean": v} for e, v in VARIANT_RANDOM.items()}}))
    main_runs, full_runs = {}, {}
    set_scores(main_runs, ANCHORS, VARIANT_TASKS)
    set_scores(full_runs, (("none", -700, 2.9),), VARIANT_TASKS)
    write_table(str(tmp_path / "table1.csv"), rows_of(main_runs))
    write_table(str(tmp_path / "table1-ppo1.csv"), rows_of(full_runs, "ppo1"))

    def loo_report(runs: list[dict]) -> str:
        """report.md of these leave-one-out runs, against the main Table 1 and ppo1's full set written above."""
        write_table(str(tmp_path / "ppo1-leave-one-out-none.csv"), runs)
        report.main(report.Args(table=str(tmp_path / "ppo1-leave-one-out-none.csv"), out=str(tmp_path / "out"),
                                resamples=2000, random_returns=str(random_path), anchors=str(tmp_path / "table1.csv"),
                                full=str(tmp_path / "table1-ppo1.csv")))  # fmt: skip
        return (tmp_path / "out" / "report.md").read_text()

    loo = []
    for detail, (cheetah, swimmer) in (("unclipped-actions", (1700, 81)), ("normc", (-700, 2.9)),
                                       ("constant-lr", (-700, 81)), ("constant-lr-schedule", (-700, 81))):  # fmt: skip
        for env_id, x in zip(VARIANT_TASKS, (cheetah, swimmer)):
            loo += [row(f"ppo1-no-{detail}-none", env_id, seed, x + seed - 2,
                        flags=f"{presets.ppo1_without(detail)} {FLAGS['none']}") for seed in (1, 2, 3)]  # fmt: skip
    text = loo_report(loo)
    assert "## Leave one of ppo1's details out: no clipping or penalty" in text
    assert "against ppo1's full set (its mean: HalfCheetah-v4 -0.20 (n=3), Swimmer-v4 -0.10 (n=3))" in text
    # the preset's grid asks 2 tasks x 3 seeds = 6 runs of each; these are complete
    # the main Table 1's no clipping: (-500 + 300) / 2000 = -0.10 and (46 - 10) / 71 = 0.51, so ppo1's set falls by
    # 0.10 and 0.61; leaving out --no-clip-actions wins back 1.20 / 0.10 = 1200% and 1.10 / 0.61 = 181% of it
    (line,) = [x for x in text.splitlines() if x.startswith("| unclipped-actions |")]
    assert line.startswith("| unclipped-actions | 6 | +1.20 | [") and "| 1200% | +1.10 | [" in line
    assert line.endswith("| 181% |")
    (line,) = [x for x in text.splitlines() if x.startswith("| normc |")]
    assert line.startswith("| normc | 6 | +0.00 | [")
    # a part of a detail (presets.PPO1_PARTS) has its row, and a line that says which flag it leaves out
    assert "| constant-lr-schedule | 6 | +0.00 | [" in text
    assert "- constant-lr-schedule: a part of a detail, `--no-anneal-lr` alone left out" in text
    (line,) = [x for x in text.splitlines() if x.startswith("**Verdict (no clipping or penalty).**")]
    assert "raise the score beyond the noise: constant-lr on Swimmer-v4 (+1.10 [" in line
    assert "unclipped-actions on HalfCheetah-v4 (+1.20 [" in line.split("lower it")[0]
    assert "unclipped-actions on Swimmer-v4" in line and "normc on" not in line and "these lower it: none." in line
    assert "constant-lr-schedule on Swimmer-v4 (+1.10 [" in line
    assert (
        "On HalfCheetah-v4, ppo1's fall (-0.20 against the main Table 1's -0.10) is explained by one detail: leaving"
        " out unclipped-actions (1200% of it) alone wins back half of it or more, beyond the noise." in line
    )
    # on Swimmer constant-lr wins it back too: each alone undoes it, so the fall needs both; its part that does it as
    # well is named within it, not counted as a third detail
    assert (
        "On Swimmer-v4, ppo1's fall (-0.10 against the main Table 1's 0.51) needs 2 details together: leaving out"
        " any one of them alone wins back half of it or more, beyond the noise: constant-lr (181% of it;"
        " `--no-anneal-lr` alone, 181%), unclipped-actions (181% of it)." in line
    )
    # each leave-one-out prefix's own section says what its runs are, not that they change every detail at once
    assert "These runs have ppo1's details but unclipped-actions (ppo_continuous.py's default in its place)" in text
    assert "change all of ppo1-no-" not in text
    # with the detail that moves nothing and one that wins back a fifth of Swimmer's fall (12.9: (12.9 - 10) / 71 =
    # 0.04, +0.14 of 0.61) and lowers HalfCheetah's score (-800: -0.25), no single detail explains it: the pair is named
    obs_clip = [row("ppo1-no-obs-clip-none", env_id, seed, x + seed - 2,
                    flags=f"{presets.ppo1_without('obs-clip')} {FLAGS['none']}")
                for env_id, x in zip(VARIANT_TASKS, (-800, 12.9)) for seed in (1, 2, 3)]  # fmt: skip
    text = loo_report([r for r in loo if "normc" in r["tag"]] + obs_clip)
    (line,) = [x for x in text.splitlines() if x.startswith("**Verdict (no clipping or penalty).**")]
    assert "raise the score beyond the noise: obs-clip on Swimmer-v4 (+0.14 [" in line
    assert "these lower it: obs-clip on HalfCheetah-v4 (-0.05 [" in line
    assert "On Swimmer-v4 no single detail's removal wins back half of ppo1's fall (-0.10 against the main Table 1's" \
           " 0.51) beyond the noise; the pair to test next, the two whose removal raises it most: obs-clip and normc." \
           in line  # fmt: skip
    # with one of obs-clip's runs still to come, no detail explains the fall yet and no pair is named
    text = loo_report([r for r in loo if "normc" in r["tag"]] + obs_clip[1:])
    assert "No verdict yet on obs-clip: incomplete; nor on what explains ppo1's fall" in text
    assert "pair to test next" not in text and "explained by one detail" not in text
    # where ppo1's set scores at or above the main Table 1's, there is no fall to explain
    set_scores(full_runs, (("none", -500, 46),), VARIANT_TASKS)
    write_table(str(tmp_path / "table1-ppo1.csv"), rows_of(full_runs, "ppo1"))
    text = loo_report([r for r in loo if "normc" in r["tag"]])
    # (the normc runs, at the old full set's scores, now score below it)
    assert "these lower it: normc on HalfCheetah-v4 (-0.10 [" in text
    assert "On HalfCheetah-v4 ppo1's full set does not fall below the main Table 1's score: no fall to explain." \
           " On Swimmer-v4 ppo1's full set does not fall" in text  # fmt: skip


def humanoid_row(grid: str, env_id: str, score: float, steps: int, seed: int = 1, **extra) -> dict:
    """A run of a humanoid preset's grid (§6.3), under the preset's tag, flags and label."""
    (method,) = presets.PRESETS[grid].methods
    r = row(method.tag, env_id, seed, score, script=method.script, flags=method.flags, steps=steps)
    return {**r, "label": method.label, **extra}


def test_figure4_per_run_with_public_numbers_on_humanoid_v4_alone(tmp_path, monkeypatch):
    run, flag, harder = (f"humanoid_flagrun:Humanoid{t}-v0" for t in ("Run", "Flagrun", "FlagrunHarder"))
    tables = {
        "humanoid-run": [humanoid_row("humanoid-run", run, 2500.0, 50_000_000)],
        "humanoid-flagrun": [humanoid_row("humanoid-flagrun", flag, 1200.0, 100_000_000)],
        # the Harder grid's run stopped at 20M of its preset's 50M: incomplete
        "humanoid-flagrun-harder": [humanoid_row("humanoid-flagrun-harder", harder, 300.0, 20_000_000)],
        # seed 1 at the preset's 10M, its curve 600 at 1M (rising linearly); seed 2 short at 2M
        "humanoid-v4": [humanoid_row("humanoid-v4", "Humanoid-v4", 6000.0, 10_000_000, wall_s=12_960, sps=771.6),
                        humanoid_row("humanoid-v4", "Humanoid-v4", 400.0, 2_000_000, seed=2)],
    }  # fmt: skip
    for grid, rows in tables.items():
        write_table(str(tmp_path / f"{grid}.csv"), rows)
    paths = [str(tmp_path / f"{grid}.csv") for grid in tables]
    proc = subprocess.run([sys.executable, "-m", "benchmark.report", *paths, "--resamples", "100"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = tmp_path / "humanoid-run+humanoid-flagrun+humanoid-flagrun-harder+humanoid-v4"
    assert (out / "figure4.png").stat().st_size > 10_000 and not (out / "figure3.png").exists()
    text = (out / "report.md").read_text()
    lines = {}
    for line in text.splitlines():
        if line.startswith("| Humanoid"):
            lines.setdefault(line.split(" | ")[0][2:], []).append(line)
    public = "CleanRL ppo_continuous_action, 1M steps: 716 ± 49; Sample Factory APPO, 10M steps: 5439 ± 1314"
    (line,) = lines["HumanoidRun-v0"]
    assert line.startswith("| HumanoidRun-v0 | PPO, Table 4, 32 actors | 1 | 50M | 50M | 2500.0 | – | – |  | `python")
    assert f"`python ppo_humanoid.py --env-id {run} --seed 1 --total-timesteps 50000000 --save-model`" in line
    (line,) = lines["HumanoidFlagrun-v0"]
    assert "| 1 | 100M | 100M | 1200.0 |" in line and "incomplete" not in line
    (line,) = lines["HumanoidFlagrunHarder-v0"]
    assert "| 1 | 20M (incomplete: 20M of 50M steps) | 50M | 300.0 |" in line
    assert "--total-timesteps 20000000 --save-model --num-envs 128`" in line
    short, full = lines["Humanoid-v4"]  # shorter runs first
    v4 = "| Humanoid-v4 | PPO, Table 4, 32 actors |"
    assert full.startswith(f"{v4} 1 | 10M | 10M | 6000.0 | 3.60 | 772 | {public} |")
    assert short.startswith(f"{v4} 2 | 2M (incomplete: 2M of 10M steps) | 10M | 400.0 | – | – | {public} |")
    assert sum("716 ± 49" in line for line in text.splitlines() if line.startswith("|")) == 2
    # verdicts on the full run alone: 6000 within APPO's ± 1314 at 10M; its curve's 600 at 1M below CleanRL's 716
    assert "- Humanoid-v4, PPO, Table 4, 32 actors, seed 1, 10M steps: 600.0 (its curve at 1M steps), **below**" \
           " CleanRL ppo_continuous_action's 716 ± 49 at 1M steps by 116, beyond its ± std; 6000.0, **at** Sample" \
           " Factory APPO's 5439 ± 1314 at 10M steps: within its ± std." in text  # fmt: skip
    assert "- Humanoid-v4, PPO, Table 4, 32 actors, seed 2, 2M steps: no verdict: incomplete: 2M of 10M steps." in text
    assert "compare figure4.png with the paper's Figure 4 as a plot" in text
    assert "Returns per task (Figure 3)" not in text

    # the flag grids without Humanoid-v4, into a folder of their own: no public number anywhere, a pointer to the plot
    report.main(report.Args(table=paths[1], more_tables=[paths[2]], resamples=100))
    flags = tmp_path / "humanoid-flagrun+humanoid-flagrun-harder"
    text = (flags / "report.md").read_text()
    assert (flags / "figure4.png").exists()
    assert "716" not in text and "5439" not in text and "CleanRL" not in text and "Sample Factory" not in text
    assert "| HumanoidFlagrunHarder-v0 |" in text and "HumanoidRun-v0 |" not in text
    assert "HumanoidFlagrun-v0, HumanoidFlagrunHarder-v0: the paper's Figure 4 gives Roboschool's tasks" in text

    # the figure: a line per run against millions of steps; the public points with their std on Humanoid-v4 alone
    drawn, points = [], []
    monkeypatch.setattr(report.plt.Axes, "plot", lambda ax, x, y, **kw: drawn.append((ax, max(x), kw["label"])))
    monkeypatch.setattr(report.plt.Axes, "errorbar", lambda ax, x, y, **kw: points.append((ax, x, y, kw["yerr"])))
    rows, curves = [], {}
    for path in paths:
        table_rows, table_curves = report.read_table(path)
        rows, curves = rows + table_rows, {**curves, **table_curves}
    report.plot_figure4(rows, curves, str(tmp_path / "f.png"))
    assert [(x, label) for _, x, label in drawn] == [
        (50.0, "PPO, Table 4, 32 actors, 50M steps, seed 1"),
        (100.0, "PPO, Table 4, 128 actors, 100M steps, seed 1"),
        (20.0, "PPO, Table 4, 128 actors, 20M steps, seed 1, incomplete: 20M of 50M steps"),
        (2.0, "PPO, Table 4, 32 actors, 2M steps, seed 2, incomplete: 2M of 10M steps"),
        (10.0, "PPO, Table 4, 32 actors, 10M steps, seed 1"),
    ]
    v4_axes = drawn[4][0]
    assert [(ax is v4_axes, x, y, err) for ax, x, y, err in points] == [(True, 1.0, 716.11, 49.08),
                                                                      (True, 10.0, 5439.48, 1314.24)]  # fmt: skip
    points.clear()
    report.plot_figure4([r for r in rows if r["env_id"] != "Humanoid-v4"], curves, str(tmp_path / "f.png"))
    assert points == []
