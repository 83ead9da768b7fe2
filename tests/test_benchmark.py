"""benchmark/run.py: the grids, a run's identity, provenance, the lock, the results table, resume, retries, and Ray."""

import csv
import glob
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from benchmark import presets, stages
from benchmark import run as runner
from tests.helpers import assert_one_line_error, run_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKE = os.path.join("tests", "fake_script.py")  # a script with the real ones' CLI and none of their work
# The smoke preset, smaller still: 4 iterations of 256 steps, 2 epochs each
TINY = ["--preset", "smoke", "--total-timesteps", "1024", "--jobs", "2"]


def bench(*flags: str, tmp_path, cwd: str = ROOT, timeout: float = 240, wait: bool = True, env=None, preexec_fn=None):
    """`python -m benchmark.run flags` with its run folders and tables under tmp_path, as a user types it."""
    env = {**os.environ, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1", **(env or {})}
    cmd = [sys.executable, "-m", "benchmark.run", *flags, "--results-dir", str(tmp_path / "out"), "--tables-dir",
           str(tmp_path / "tables")]  # fmt: skip
    if not wait:
        return subprocess.Popen(cmd, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                preexec_fn=preexec_fn)  # fmt: skip
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def folders(tmp_path) -> dict[str, str]:
    """The run folders under tmp_path/out by their name without the hash."""
    out = tmp_path / "out"
    names = sorted(os.listdir(out)) if out.exists() else []
    return {name.rsplit("__", 1)[0]: str(out / name) for name in names if "__" in name}


def table(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def alive(pid: int) -> bool:
    """Whether pid runs (a zombie, dead but not yet reaped by its parent, counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def first_started(tmp_path, proc) -> str:
    """The folder of the first run whose (fake) script has printed "started"."""
    deadline = time.time() + 60
    while True:
        started = [f for f in folders(tmp_path).values() if "started" in read_text(os.path.join(f, "log.txt"))]
        if started:
            return started[0]
        assert time.time() < deadline and proc.poll() is None, "no run started"
        time.sleep(0.2)


def read_text(path: str) -> str:
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        return f.read()


def test_presets_build_the_papers_grids():
    table1 = runner.build_grid(runner.Args(preset="table1"))
    assert len(table1) == 11 * 7 * 3 and {r.total_timesteps for r in table1} == {1_000_000}
    assert {r.variant for r in table1} == {s.flags for s in presets.TABLE1}
    assert "--objective kl-adaptive --kl-target 0.003" in {r.variant for r in table1}
    figure3 = runner.build_grid(runner.Args(preset="figure3"))
    assert {r.label for r in figure3} >= {"PPO (clip)", "TRPO"}
    assert len(figure3) == len(presets.PRESETS["figure3"].methods) * 7 * 3
    # figure3's PPO runs are table1's clip-0.2 runs: one folder serves both
    assert {r.name for r in figure3 if r.script == "ppo_continuous.py"} < {r.name for r in table1}
    atari = runner.build_grid(runner.Args(preset="atari", dry_run=True))
    assert {r.total_timesteps for r in atari} == {10_000_000} and "BreakoutNoFrameskip-v4" in {r.env_id for r in atari}
    # CleanRL's settings on Breakout (issue #48): the three flags where CleanRL's ppo_atari.py differs from Table 5
    cleanrl = runner.build_grid(runner.Args(preset="atari-cleanrl", dry_run=True))
    assert [(r.env_id, r.seed, r.total_timesteps) for r in cleanrl] == [("BreakoutNoFrameskip-v4", s, 10_000_000)
                                                                        for s in (1, 2)]  # fmt: skip
    assert cleanrl[0].flags()[-5:] == ["--update-epochs", "4", "--vf-coef", "0.25", "--no-anneal-clip"]
    # scale knobs; --tags picks methods of the preset; a fork runs the settings of the preset's first script
    small = runner.build_grid(runner.Args(preset="table1", scripts=["my_ppo.py"], env_ids=["Hopper-v4"], seeds=[7],
                                          total_timesteps=5000, tags=["none", "clip-0.2"], dry_run=True))  # fmt: skip
    assert [r.tag for r in small] == ["none", "clip-0.2"]
    assert small[0].name.startswith("my_ppo__Hopper-v4__none__5000__7__")
    assert small[0].flags() == ["--env-id", "Hopper-v4", "--seed", "7", "--total-timesteps", "5000", "--save-model",
                                "--objective", "none"]  # fmt: skip


def test_explicit_grid_reads_flag_valued_variants():
    args = runner.parse_args(["--scripts", "ppo_continuous.py", "--env-ids", "Hopper-v4", "Walker2d-v4", "--variants",
                              "", "--objective kl-adaptive --kl-target 0.01", "--seeds", "1", "2"])  # fmt: skip
    runs = runner.build_grid(args)
    assert len(runs) == 2 * 2 * 2
    assert {r.tag for r in runs} == {"default", "objective_kl-adaptive_kl-target_0.01"}
    assert runs[-1].flags()[-4:] == ["--objective", "kl-adaptive", "--kl-target", "0.01"]
    args = runner.parse_args(["--variants", "--no-norm-adv", "--extra", "--num-steps 512"])
    assert args.variants == ["--no-norm-adv"] and args.extra == "--num-steps 512"
    assert runner.tag_of("--clip-coef 0.1 --objective=clip") == "clip-coef_0.1_objective-clip"


def test_runs_that_differ_in_length_or_flags_never_share_a_folder():
    def name(tag="t", steps=1_000_000, variant="--objective clip", seed=1, script="ppo_continuous.py"):
        return runner.run_name(script, "Hopper-v4", tag, steps, seed, variant)

    assert name() == name()  # a run's identity decides its folder
    others = [name(steps=200_000), name(steps=None), name(variant="--objective none"), name(seed=2),
              name(script="trpo.py"), name(variant="--objective clip --clip-coef 0.3")]  # fmt: skip
    assert len({name(), *others}) == 1 + len(others)
    # the same tag given to other flags (the way a 200k test run and the 1M preset once collided) gets another folder
    short = runner.build_grid(runner.Args(preset="table1", env_ids=["Hopper-v4"], seeds=[1], total_timesteps=200_000))
    full = runner.build_grid(runner.Args(preset="table1", env_ids=["Hopper-v4"], seeds=[1]))
    assert not {r.name for r in short} & {r.name for r in full}


def test_bad_input_is_one_line_and_exit_code_2(tmp_path):
    unwritable = tmp_path / "file"
    unwritable.write_text("a file, not a folder")
    cases = {
        ("--preset", "tabel1"): "unknown preset 'tabel1'",
        ("--scripts", "nope.py"): "script nope.py not found",
        ("--preset", "table1", "--tags", "clip-0.4"): "no method tagged 'clip-0.4'",
        ("--env-ids", "Hoper-v4"): "unknown task 'Hoper-v4'",
        ("--jobs", "0"): "--jobs must be at least 1",
        ("--results-dir", str(unwritable / "out")): "cannot write there",
        ("--preset", "smoke", "--backend", "ray", "--scripts", str(tmp_path / "x.py")): "not found",
        ("--jobs", "two"): "bad flags",
    }
    for flags, message in cases.items():
        proc = bench(*flags, tmp_path=tmp_path, timeout=60) if "--results-dir" not in flags else subprocess.run(
            [sys.executable, "-m", "benchmark.run", *flags], cwd=ROOT, capture_output=True, text=True, timeout=60
        )  # fmt: skip
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), (flags, proc.stderr)
        assert message in lines[0], (flags, lines)
    outside = tmp_path / "mine.py"
    outside.write_text("print('hi')")
    proc = bench("--scripts", str(outside), "--backend", "ray", "--env-ids", "Hopper-v4", tmp_path=tmp_path)
    assert proc.returncode == 2 and "lies outside" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_without_ray_the_ray_backend_is_a_one_line_error(tmp_path):
    code = ("import sys; sys.modules['ray'] = None; from benchmark.run import main;"
            f" main(['--preset', 'smoke', '--backend', 'ray', '--results-dir', {str(tmp_path)!r}])")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: --backend ray needs ray: pip install -r requirements-ray.txt"]


def test_smoke_grid_records_provenance_and_skips_finished_runs(tmp_path):
    proc = bench(*TINY, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 finished now, 0 finished earlier, 0 failed" in proc.stdout
    rows = table(tmp_path / "tables" / "smoke.csv")
    assert sorted(int(r["seed"]) for r in rows) == [1, 2]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(ROOT, "ppo_continuous.py"), "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    for row in rows:
        folder = str(tmp_path / "out" / row["name"])
        with open(os.path.join(folder, "result.json")) as f:
            result = json.load(f)
        assert row["script"] == "ppo_continuous.py" and row["flags"] == "--num-steps 256"
        assert row["env_id"] == "InvertedPendulum-v4" and row["total_timesteps"] == "1024"
        assert float(row["score"]) == pytest.approx(result["last100"]) and int(row["episodes"]) == result["episodes"]
        _, returns = runner.read_episodes(os.path.join(folder, result["run_dir"], "episodes.csv"))
        assert float(row["score_all"]) == pytest.approx(np.mean(returns))  # Table 2's metric: every episode
        # provenance: the code, the packages, the machine, the flags the script ran with, the time it took
        assert row["commit"] == commit and row["dirty"] in ("True", "False") and row["script_sha256"] == sha
        for package in runner.PACKAGES:
            assert row[package.replace("-", "_")] == importlib.metadata.version(package)
        assert row["host"] == socket.gethostname() and row["cpu"] and row["python"]
        saved = json.loads(row["args"])
        assert saved["num_steps"] == 256 and saved["seed"] == int(row["seed"]) and saved["gamma"] == 0.99
        assert float(row["wall_s"]) > 0 and float(row["sps"]) == pytest.approx(1024 / float(row["wall_s"]), rel=0.01)
        assert row["attempts"] == "1" and row["script_versions"] == "1"
        assert os.path.exists(os.path.join(folder, result["run_dir"], "checkpoint.pt"))  # --save-model
    curves = table(tmp_path / "tables" / "smoke_curves.csv")
    assert {c["name"] for c in curves} == {r["name"] for r in rows}
    assert 50 <= sum(c["name"] == rows[0]["name"] for c in curves) <= runner.CURVE_POINTS
    last = [c for c in curves if c["name"] == rows[0]["name"]][-1]
    assert last["step"] == "1024" and float(last["return_last100"]) == pytest.approx(float(rows[0]["score"]), abs=1e-3)

    before = {f: open(f, "rb").read() for f in (tmp_path / "out").glob("*/*") if f.is_file() and f.name != "lock"}
    start = time.time()
    again = bench(*TINY, tmp_path=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0 finished now, 2 finished earlier, 0 failed" in again.stdout
    assert time.time() - start < 20  # Python starting up; no script ran
    after = {f: open(f, "rb").read() for f in (tmp_path / "out").glob("*/*") if f.is_file() and f.name != "lock"}
    assert after == before and table(tmp_path / "tables" / "smoke.csv") == rows  # nothing ran, nothing rewritten

    dry = bench(*TINY, "--dry-run", tmp_path=tmp_path)
    assert dry.returncode == 0 and "2 runs, 2 finished, 0 to run" in dry.stdout
    # a grid that shares these runs records them under its own name for them (the smoke preset's: none)
    for row in rows:
        path = tmp_path / "out" / row["name"] / "result.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "label": "the first grid's name"}))
    shared = bench(*TINY, "--grid", "shared", tmp_path=tmp_path)
    assert shared.returncode == 0 and "0 finished now, 2 finished earlier" in shared.stdout, shared.stdout
    assert table(tmp_path / "tables" / "shared.csv") == rows
    # the run folders lost with a machine: the committed table still says which runs are done, and they stay done
    shutil.rmtree(tmp_path / "out")
    again = bench(*TINY, tmp_path=tmp_path)
    assert again.returncode == 0 and "0 finished now, 2 finished earlier" in again.stdout, again.stdout
    assert table(tmp_path / "tables" / "smoke.csv") == rows and not os.listdir(tmp_path / "out")
    # and without the folders, another grid with these runs (Figure 3's PPO is Table 1's clip 0.2) trains none: it
    # copies their rows and curves from the committed table, under its own label for them
    labelled = [{**r, "label": "the first grid's name"} for r in rows]
    runner.upsert_rows(str(tmp_path / "tables" / "smoke.csv"), runner.COLUMNS, labelled, {r["name"] for r in rows})
    other = bench(*TINY, "--grid", "other", tmp_path=tmp_path)
    assert other.returncode == 0 and "0 finished now, 2 finished earlier" in other.stdout, other.stdout
    assert not os.listdir(tmp_path / "out")
    assert table(tmp_path / "tables" / "other.csv") == rows  # label "" again
    assert table(tmp_path / "tables" / "other_curves.csv") == curves


def test_dry_run_estimates_the_time_left_from_measured_sps(tmp_path):
    (tmp_path / "tables").mkdir()
    row = {c: "" for c in runner.COLUMNS}
    for env_id, sps in (("Hopper-v4", "2000"), ("Walker2d-v4", "1000")):
        row.update(name=env_id, script="ppo_continuous.py", env_id=env_id, sps=sps, cpu=runner.machine_state()["cpu"])
        runner.upsert_rows(str(tmp_path / "tables" / "table1.csv"), runner.COLUMNS, [dict(row)], {env_id})
    proc = bench("--preset", "table1", "--env-ids", "Hopper-v4", "Walker2d-v4", "--seeds", "1", "--jobs", "2",
                 "--dry-run", tmp_path=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len([line for line in proc.stdout.splitlines() if "[to run]" in line]) == 22
    # 11 settings x (1M / 2000 + 1M / 1000 s), two at a time: 11 x 1500 s / 2 = 2.29 h
    assert "22 runs, 0 finished, 22 to run; about 2.3 h left at 2 at a time" in proc.stdout


def test_dry_run_times_a_script_without_finished_runs_by_its_runs_in_progress(tmp_path):
    # two 10M-step runs of a script that no table holds: the first has reached step 5,000 in 20 + 5 s of attempts
    args = runner.Args(scripts=[FAKE], env_ids=["Hopper-v4", "Walker2d-v4"], seeds=[1], total_timesteps=10_000_000,
                       results_dir=str(tmp_path / "out"), tables_dir=str(tmp_path / "tables"), jobs=1)  # fmt: skip
    first, second = runner.build_grid(args)
    folder = tmp_path / "out" / first.name
    (folder / "runs" / "x").mkdir(parents=True)
    (folder / "runs" / "x" / "episodes.csv").write_text("global_step,episodic_return,episodic_length\n"
                                                        "2500,1.0,10\n5000,2.0,10\n")  # fmt: skip
    (folder / "attempts.jsonl").write_text('{"seconds": 20.0}\n{"seconds": 5.0}\n')
    assert runner.own_sps(str(folder)) == pytest.approx(200) and runner.own_sps(str(tmp_path / "none")) is None
    # (10M - 5,000) / 200 s for the first, 10M / 200 s for the second (its script's runs in progress): 27.8 h
    text = runner.estimate([first, second], args, set(), str(tmp_path / "tables" / "grid.csv"))
    assert text == ("2 runs, 0 finished, 2 to run; about 27.8 h left at 1 at a time, from the SPS of runs in progress"
                    " so far (their wall time over the steps they reached)")  # fmt: skip
    # while a process holds the run's lock, its attempt in progress counts from its start in log.txt (30 s ago)
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - 30))
    (folder / "log.txt").write_text(f"== 2026-01-01 00:00:00 on host: an earlier attempt\n== {started} on host: x\n")
    lock, _ = runner.take_lock(str(folder))
    try:
        assert runner.own_sps(str(folder)) == pytest.approx(5000 / (25 + 30), rel=0.03)
    finally:
        os.close(lock)
    assert runner.own_sps(str(folder)) == pytest.approx(200)  # the lock free again: no attempt running


def test_the_recorded_flags_are_the_checkpoints_on_resume(tmp_path):
    (run,) = runner.build_grid(runner.Args(preset="smoke", seeds=[1]))
    folder = tmp_path / "out" / run.name
    folder.mkdir(parents=True)
    # an earlier start of this run, by a version of the script whose default GAE lambda was 0.9: its checkpoint rules
    first = [sys.executable, os.path.join(ROOT, "ppo_continuous.py"), *run.flags(), "--gae-lambda", "0.9"]
    subprocess.run(first, cwd=folder, check=True, capture_output=True, timeout=120)
    proc = bench("--preset", "smoke", "--seeds", "1", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (row,) = table(tmp_path / "tables" / "smoke.csv")
    assert json.loads(row["args"])["gae_lambda"] == 0.9 and "resumed from its checkpoint" in proc.stdout


def test_dirty_means_the_runs_script_differs_from_its_commit(tmp_path, monkeypatch):
    # a repository whose commit holds a training script and a results table, as benchmark/ holds them
    repo = tmp_path / "repo"
    (repo / "benchmark" / "results").mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, FAKE), repo / "train.py")
    (repo / "benchmark" / "results" / "grid.csv").write_text("name,score\n")
    (repo / ".gitignore").write_text("benchmark/out/\nruns/\n")
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-C", str(repo)]
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "base"]):
        subprocess.run(git + cmd, check=True, capture_output=True)
    monkeypatch.setattr(runner, "ROOT", str(repo))

    def dirty(script: str, seed: int):
        """The dirty flag that a fresh run of the script records (run_one reads the state of the repo at its start)."""
        run = runner.Run(f"run{seed}", "train.py", script, "Hopper-v4", seed, "default", "", "--score 5", 1000)
        result = runner.run_one(run, str(tmp_path / "out"), {"commit": None, "dirty": None})
        assert result["status"] == "finished", result
        # the fake's last 100 of 200 episodes average 5, the first 100 average 0: each score reads its own episodes
        assert result["last100"] == pytest.approx(5) and result["score_all"] == pytest.approx(2.5)
        return result["dirty"]

    script = str(repo / "train.py")
    assert dirty(script, 1) is False
    # what a grid changes while it runs: its results table (tracked), run folders and scripts' runs (ignored)
    with open(repo / "benchmark" / "results" / "grid.csv", "a") as f:
        f.write("run1,5.0\n")
    for folder in ("benchmark/out/run1", "runs/x"):
        (repo / folder).mkdir(parents=True)
        (repo / folder / "log.txt").write_text("a log\n")
    (repo / "notes.md").write_text("untracked\n")
    assert dirty(script, 2) is False
    head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert runner.git_state(script) == {"commit": head, "dirty": False}
    # the script edited, by a word or by a staged change, or never committed: dirty
    with open(script, "a") as f:
        f.write("# an edit\n")
    assert dirty(script, 3) is True
    subprocess.run(git + ["add", "train.py"], check=True, capture_output=True)
    assert runner.git_state(script)["dirty"] is True
    shutil.copy(os.path.join(ROOT, FAKE), repo / "mine.py")
    assert dirty(str(repo / "mine.py"), 4) is True
    # a script outside the repository: no commit holds it
    shutil.copy(os.path.join(ROOT, FAKE), tmp_path / "outside.py")
    assert runner.git_state(str(tmp_path / "outside.py"))["dirty"] is None


def test_dirty_also_means_the_env_module_beside_the_script_differs_from_its_commit(tmp_path, monkeypatch):
    # §6.3's tasks come from humanoid_flagrun.py beside the scripts (env id module:Name): it decides a run's numbers
    # as the script does, so an edit to it makes the run dirty; an edit to another module, or an installed env, not
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("train.py", "tasks.py", "other.py"):
        (repo / name).write_text(f"# {name}\n")
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-C", str(repo)]
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "base"]):
        subprocess.run(git + cmd, check=True, capture_output=True)
    monkeypatch.setattr(runner, "ROOT", str(repo))
    script = str(repo / "train.py")
    assert runner.env_module(script, "tasks:Flagrun-v0") == str(repo / "tasks.py")
    assert runner.env_module(script, "Hopper-v4") is None and runner.env_module(script, "missing:Env-v0") is None
    assert runner.git_state(script, "tasks:Flagrun-v0")["dirty"] is False
    (repo / "other.py").write_text("# edited\n")
    assert runner.git_state(script, "tasks:Flagrun-v0")["dirty"] is False
    (repo / "tasks.py").write_text("# edited\n")
    assert runner.git_state(script, "tasks:Flagrun-v0")["dirty"] is True
    assert runner.git_state(script, "Hopper-v4")["dirty"] is False  # the script itself is as committed


def test_failed_runs_are_recorded_retried_and_the_rest_go_on(tmp_path):
    proc = bench("--scripts", FAKE, "--env-ids", "InvertedPendulum-v4", "--seeds", "1", "--variants", "--fail",
                 "--crash-once", "--tags", "fail", "crash", "--retries", "1", tmp_path=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 finished now, 0 finished earlier, 1 failed" in proc.stdout
    proc = bench("--env-ids", "InvertedPendulum-v4", "--seeds", "1", "--variants", "--num-steps 0", "--tags", "bad",
                 tmp_path=tmp_path)  # fmt: skip
    assert proc.returncode == 1 and "0 finished now, 0 finished earlier, 1 failed" in proc.stdout
    found = folders(tmp_path)
    with open(os.path.join(found["fake_script__InvertedPendulum-v4__fail__default__1"], "error.json")) as f:
        error = json.load(f)
    assert error["returncode"] == 1 and "fake_script: something broke" in error["log_tail"]
    failed = found["fake_script__InvertedPendulum-v4__fail__default__1"]
    assert len(runner.read_attempts(failed)) == 2  # tried, then retried once
    crash = found["fake_script__InvertedPendulum-v4__crash__default__1"]  # crashed, then resumed from its checkpoint
    assert [a["resumed_from"] for a in runner.read_attempts(crash)] == [None, "runs/fake/checkpoint.pt"]
    with open(os.path.join(crash, "result.json")) as f:
        assert json.load(f)["resumed"]
    bad = found["ppo_continuous__InvertedPendulum-v4__bad__default__1"]  # exit code 2, bad flags: not retried
    assert len(runner.read_attempts(bad)) == 1
    with open(os.path.join(bad, "error.json")) as f:
        assert "--num-steps must be positive" in json.load(f)["log_tail"]


def hold_lock(folder, seconds: float) -> subprocess.Popen:
    """A process that holds folder/lock's flock for `seconds`, as a forked child or another runner would."""
    code = ("import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(float(sys.argv[2]))")  # fmt: skip
    holder = subprocess.Popen([sys.executable, "-c", code, os.path.join(folder, "lock"), str(seconds)],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert holder.stdout.readline() == "held\n"
    return holder


def test_a_lock_held_for_a_moment_is_waited_for_and_one_held_longer_is_busy(tmp_path):
    # a script forked in another thread holds a copy of a just-released lock until it execs: not another runner
    holder = hold_lock(tmp_path, 0.3)
    fd, _ = runner.take_lock(str(tmp_path), patience=5.0)
    assert fd is not None
    os.close(fd)
    holder.wait()
    holder = hold_lock(tmp_path, 60)  # a runner's script holds it for the whole run
    try:
        start = time.monotonic()
        assert runner.take_lock(str(tmp_path), patience=0.5) == (None, "another process")
        assert time.monotonic() - start >= 0.5
    finally:
        holder.kill()
        holder.wait()


def test_two_runners_on_one_folder_train_each_run_once(tmp_path):
    flags = ["--scripts", FAKE, "--env-ids", "Hopper-v4", "--seeds", "1", "2", "3", "--variants", "--sleep 4",
             "--jobs", "3"]  # fmt: skip
    first = bench(*flags, tmp_path=tmp_path, wait=False)
    second = bench(*flags, tmp_path=tmp_path, wait=False)
    outputs = [p.communicate(timeout=120)[0] for p in (first, second)]
    assert first.returncode == 0 and second.returncode == 0, outputs
    for folder in folders(tmp_path).values():  # each run trained by one process, once
        assert len(runner.read_attempts(folder)) == 1
        with open(os.path.join(folder, "runs", "fake", "pids.txt")) as f:
            assert len(f.read().split()) == 1
    said = "\n".join(outputs)
    assert said.count("finished now") == 2 and len(re.findall(r"^\[\d/3\] (finished|busy|skipped)", said, re.M)) == 6
    assert "busy" in said  # the runner that came second said which runs it left to the other
    assert len(table(tmp_path / "out" / "results.csv")) == 3  # an unnamed grid's table: in its results folder


def test_killing_the_runner_ends_its_training_and_the_next_call_takes_over(tmp_path):
    flags = ["--scripts", FAKE, "--env-ids", "Hopper-v4", "--seeds", "1", "--variants", "--sleep 60 --save-seconds 10"]
    proc = bench(*flags, tmp_path=tmp_path, wait=False)
    folder = first_started(tmp_path, proc)
    pid = int(open(os.path.join(folder, "runs", "fake", "pids.txt")).read().split()[0])
    proc.kill()  # SIGKILL: the runner has no chance to stop its script; the kernel sends the script SIGTERM
    proc.communicate()
    # while the orphan saves its checkpoint it still holds the run's lock: a new runner leaves the run to it
    meanwhile = bench(*flags, tmp_path=tmp_path)
    assert meanwhile.returncode == 0 and "another live process holds its lock" in meanwhile.stdout, meanwhile.stdout
    assert alive(pid) and not os.path.exists(os.path.join(folder, "attempts.jsonl"))
    deadline = time.time() + 20
    while alive(pid):
        assert time.time() < deadline, "the training process outlived its runner"
        time.sleep(0.1)
    assert os.path.exists(os.path.join(folder, "runs", "fake", "checkpoint.pt"))  # it saved before it went
    again = bench(*flags, tmp_path=tmp_path)
    assert again.returncode == 0 and "resumed from its checkpoint" in again.stdout, again.stdout + again.stderr
    assert "took over the lock of a dead process" in open(os.path.join(folder, "log.txt")).read()


def test_sigterm_stops_the_grid_with_checkpoints_and_the_next_call_resumes(tmp_path):
    flags = ["--scripts", FAKE, "--env-ids", "Hopper-v4", "--seeds", "1", "2", "--jobs", "1", "--variants",
             "--sleep 60"]  # fmt: skip
    proc = bench(*flags, tmp_path=tmp_path, wait=False)
    first = first_started(tmp_path, proc)
    proc.terminate()
    output = proc.communicate(timeout=30)[0]
    assert proc.returncode == 130, output
    assert "interrupted: run the same command again to resume" in output
    assert os.path.exists(os.path.join(first, "runs", "fake", "checkpoint.pt"))
    assert not os.path.exists(os.path.join(first, "error.json"))
    assert sum(os.path.exists(os.path.join(f, "log.txt")) for f in folders(tmp_path).values()) == 1  # one never began

    again = bench(*flags, tmp_path=tmp_path, env={"FAKE_NO_SLEEP": "1"})  # the run that never began: no sleep now
    assert again.returncode == 0, again.stdout + again.stderr
    with open(os.path.join(first, "result.json")) as f:
        assert json.load(f)["resumed"]


def test_sigint_between_two_runs_stops_the_grid_and_starts_no_other(tmp_path):
    # `kill -INT` of a runner in the background (or Ctrl-C) just as one run has finished and the next one starts. The
    # runner starts with SIGINT ignored, as `nohup python -m benchmark.run ... &` in a script starts it
    flags = ["--scripts", FAKE, "--env-ids", "Hopper-v4", "--seeds", "1", "--jobs", "1", "--variants", "",
             "--sleep 60", "--sleep 60 --score 2"]  # fmt: skip
    proc = bench(*flags, tmp_path=tmp_path, wait=False, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    deadline = time.time() + 60
    while not [f for f in folders(tmp_path).values() if os.path.exists(os.path.join(f, "result.json"))]:
        assert time.time() < deadline and proc.poll() is None, "the first run never finished"
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    output = proc.communicate(timeout=30)[0]
    assert proc.returncode == 130 and "1 finished now" in output, output
    assert f"; runner pid {proc.pid}\n" in output  # what a user stops a runner in the background with
    found = folders(tmp_path)
    assert os.path.exists(os.path.join(found["fake_script__Hopper-v4__default__default__1"], "result.json"))
    started = [f for f in found.values() if "started" in read_text(os.path.join(f, "log.txt"))]
    assert len(started) <= 1, output  # the next run was stopped as it began, or never began; the last never began
    for folder in started:  # stopped with its checkpoint, and its training process is gone
        assert os.path.exists(os.path.join(folder, "runs", "fake", "checkpoint.pt"))
        assert not os.path.exists(os.path.join(folder, "result.json"))
        assert not any(alive(int(p)) for p in read_text(os.path.join(folder, "runs", "fake", "pids.txt")).split())


def test_a_signal_taken_by_a_worker_thread_stops_the_wait_at_once(tmp_path):
    # The kernel may give the runner's Ctrl-C to a worker thread (here on purpose): the main thread, asleep in the
    # pool's wait, must stop within a moment, not when the run ends hours later
    pool = runner.LocalPool(runner.Args(results_dir=str(tmp_path), jobs=1), {})

    def run_that_takes_the_signal():
        time.sleep(0.5)  # the main thread is in the wait by now
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        time.sleep(5)  # a run that goes on: the broken wait returns only after it

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        pool.pending[pool.pool.submit(run_that_takes_the_signal)] = None
        start = time.time()
        with pytest.raises(KeyboardInterrupt):
            pool.wait()
        assert time.time() - start < 3, "the Ctrl-C waited for the run to end"
    finally:
        signal.signal(signal.SIGINT, before)
        pool.pool.shutdown(wait=False, cancel_futures=True)


def test_a_run_that_finishes_as_the_grid_stops_is_handed_back_by_stop(tmp_path, monkeypatch):
    # The race CI once lost: Ctrl-C after a run wrote its result.json, before its thread returned. The grid must still
    # count it as finished and put it in the table, so stop() hands back the outcomes that came in while it stopped
    def run_one(run, results_dir, code):
        time.sleep(0.5)  # the signal comes in here
        return {"name": run.name, "status": "finished"}

    monkeypatch.setattr(runner, "run_one", run_one)
    args = runner.Args(results_dir=str(tmp_path), jobs=2)
    pool = runner.LocalPool(args, {("a.py", "Hopper-v4"): {}})
    runs = [runner.Run(f"run{seed}", "a.py", "a.py", "Hopper-v4", seed, "default", "PPO", "", None) for seed in (1, 2)]
    for run in runs:
        pool.submit(run)
    assert sorted(o["name"] for o in pool.stop()) == sorted(run.name for run in runs)


def test_an_interrupt_while_an_outcome_is_recorded_waits_for_the_end_of_it():
    before, recorded = signal.getsignal(signal.SIGINT), []
    with pytest.raises(KeyboardInterrupt):
        with runner.interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # a pending signal is handled at the next bytecode: the block must go on regardless
            recorded.append("row")
    assert recorded == ["row"] and signal.getsignal(signal.SIGINT) is before


@pytest.fixture
def ray_cluster(tmp_path):
    """A Ray cluster of one node on 127.0.0.1, started as `ray start` starts one, stopped afterwards."""
    pytest.importorskip("ray")
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = [ray_bin, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", "2",
             "--include-dashboard", "false", "--disable-usage-stats"]  # fmt: skip
    subprocess.run(start, check=True, capture_output=True, timeout=120, cwd=str(tmp_path))
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray_bin, "stop", "--force"], capture_output=True, timeout=120)


def test_ray_cluster_without_a_shared_filesystem(tmp_path, ray_cluster):
    worker_dir = tmp_path / "worker_disk"  # where the workers write; the driver never reads it
    flags = ["--backend", "ray", "--address", ray_cluster, "--worker-dir", str(worker_dir)]
    proc = bench(*TINY, *flags, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 finished now" in proc.stdout
    rows = table(tmp_path / "tables" / "smoke.csv")
    assert len(rows) == 2 and all(json.loads(r["args"])["num_steps"] == 256 for r in rows)
    for row in rows:  # the results, the episodes and the checkpoint reached the driver's folder
        folder = str(tmp_path / "out" / row["name"])
        with open(os.path.join(folder, "result.json")) as f:
            result = json.load(f)
        assert os.path.exists(os.path.join(folder, result["run_dir"], "episodes.csv"))
        assert os.path.exists(os.path.join(folder, result["run_dir"], "checkpoint.pt"))
        # the worker ran the copy of the repo that Ray shipped, not the driver's files
        (attempt,) = runner.read_attempts(folder)
        assert not attempt["script"].startswith(ROOT) and attempt["script"].endswith("/ppo_continuous.py")
    shutil.rmtree(worker_dir)  # a lost worker disk loses nothing: the driver holds every finished run
    again = bench(*TINY, *flags, tmp_path=tmp_path)
    assert again.returncode == 0 and "0 finished now, 2 finished earlier" in again.stdout, again.stdout

    # A Ray worker killed mid-run (as Ray's memory monitor does): its training process stops, saving a checkpoint on
    # the worker's disk; the run is retried and resumes from it
    proc = bench("--scripts", FAKE, "--env-ids", "Hopper-v4", "--seeds", "1", "--variants", "--kill-parent-once",
                 *flags, tmp_path=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "retry 1/2" in proc.stdout and "resumed from its checkpoint" in proc.stdout
    (worker_folder,) = [str(p) for p in worker_dir.iterdir() if p.name.startswith("fake_script")]
    with open(os.path.join(worker_folder, "runs", "fake", "pids.txt")) as f:
        pids = [int(p) for p in f.read().split()]
    assert len(pids) == 2 and not any(alive(p) for p in pids)  # none left orphaned
    driver_folder = folders(tmp_path)["fake_script__Hopper-v4__kill-parent-once__default__1"]
    assert [a["resumed_from"] for a in runner.read_attempts(driver_folder)] == ["runs/fake/checkpoint.pt"]


@pytest.mark.parametrize("script", ["ppo_atari.py", "ppo_continuous.py", "ppo_humanoid.py"],
                         ids=["atari", "mujoco", "humanoid"])  # fmt: skip
def test_the_stage_profile_accounts_for_every_stage_of_an_iteration(script):
    # one iteration after one of warm-up: every stage of the loop timed, each row its own time, the rows summing to
    # the whole iteration
    proc = subprocess.run([sys.executable, "-m", "benchmark.stages", "--script", script, "--iterations", "1",
                           "--warmup", "1", "--alone-calls", "50"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = re.findall(r"^\| ([^|*]+?) \| (-?\d+) \| (-?[\d.]+)% \| [\d.]+ \|$", proc.stdout, re.M)
    names = [name for name, _, _ in rows]
    env_row = stages.SCRIPTS[script][1]
    assert names[:3] == [env_row, "rollout: forward passes", "rollout: bookkeeping"]
    assert "update: the gradient steps" in names and names[-1] == "the rest (loop bookkeeping, CSV)"
    ms = {name: int(value) for name, value, _ in rows}
    assert all(value >= 0 for name, value in ms.items() if name != "the rest (loop bookkeeping, CSV)")
    assert sum(float(share) for _, _, share in rows) == pytest.approx(100, abs=0.5)
    assert ms[env_row] > 0 and ms["rollout: forward passes"] > 0 and ms["update: the gradient steps"] > 0
    # own times: the rest is what no stage took, a sliver of the loop, not a stage counted twice (negative)
    assert abs(ms["the rest (loop bookkeeping, CSV)"]) <= 0.05 * sum(ms.values())
    calls = {"ppo_atari.py": 128, "ppo_humanoid.py": 512}.get(script, 2048)  # one per rollout step: T of Table 5, 4, 3
    assert re.search(rf"forward pass \({calls} calls per iteration\): [\d.]+ us per call in the rollout, [\d.]+ us "
                     r"alone in a loop", proc.stdout)  # fmt: skip


def test_the_stage_profile_continues_a_copy_of_a_checkpoint_and_leaves_the_run_alone(tmp_path):
    # a run stopped after its first iterations (SIGTERM saves its checkpoint), then profiled from that trained state
    running = run_script("ppo_continuous.py", "--total-timesteps", "1000000", "--save-model", cwd=tmp_path, wait=False)
    deadline = time.time() + 120
    while not glob.glob(str(tmp_path / "runs" / "*" / "checkpoint.pt")) and time.time() < deadline:
        assert running.poll() is None, running.communicate()
        time.sleep(0.2)
    running.send_signal(signal.SIGTERM)
    running.communicate(timeout=120)
    (checkpoint,) = glob.glob(str(tmp_path / "runs" / "*" / "checkpoint.pt"))
    folder = os.path.dirname(checkpoint)
    before = {name: runner.sha256_of(os.path.join(folder, name)) for name in os.listdir(folder)}
    proc = subprocess.run([sys.executable, "-m", "benchmark.stages", "--resume", checkpoint, "--iterations", "1",
                           "--warmup", "1", "--alone-calls", "50"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"ppo_continuous.py from {checkpoint}, Hopper-v4, 1 iterations of 2048 steps" in proc.stdout
    assert re.search(r"^\| rollout: forward passes \| \d+ \|", proc.stdout, re.M)
    assert {name: runner.sha256_of(os.path.join(folder, name)) for name in os.listdir(folder)} == before
    proc = subprocess.run([sys.executable, "-m", "benchmark.stages", "--resume", checkpoint, "--iterations", "1000",
                           "--warmup", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert_one_line_error(proc, checkpoint, "steps are left in its run, fewer than 1001 iterations")


def test_the_stage_profile_refuses_bad_input_in_one_line():
    proc = subprocess.run([sys.executable, "-m", "benchmark.stages", "--script", "trpo.py", "--network", "a3c"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: --network is ppo_atari.py's; trpo.py has no such flag"
    proc = subprocess.run([sys.executable, "-m", "benchmark.stages", "--base", "no-such-commit"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.startswith("error: --base no-such-commit: ")
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
