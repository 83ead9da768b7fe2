"""benchmark/: the runner's grids, its local and Ray backends, resume and failures; the report's numbers by hand."""

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from benchmark import presets, report
from benchmark import run as runner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The smoke preset, smaller still: 4 iterations of 256 steps, 2 epochs each
TINY = ["--preset", "smoke", "--total-timesteps", "1024", "--jobs", "2"]


def bench(*flags: str, cwd: str = ROOT, timeout: float = 240) -> subprocess.CompletedProcess:
    """`python -m benchmark.run flags`, as a user types it, from cwd with the repo importable."""
    env = {**os.environ, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "benchmark.run", *flags]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def files_of(results_dir) -> dict[str, tuple[bytes, int]]:
    """Every result.json and log.txt under results_dir: content and modification time."""
    found = {}
    for folder in sorted(os.listdir(results_dir)):
        for name in ("result.json", "log.txt"):
            path = os.path.join(results_dir, folder, name)
            with open(path, "rb") as f:
                found[path] = (f.read(), os.stat(path).st_mtime_ns)
    return found


def test_presets_build_the_papers_grids():
    table1 = runner.build_grid(runner.Args(preset="table1"))
    assert len(table1) == 11 * 7 * 3 and {r.total_timesteps for r in table1} == {1_000_000}
    assert {r.variant for r in table1} == {s.flags for s in presets.TABLE1}
    assert "--objective kl-adaptive --kl-target 0.003" in {r.variant for r in table1}
    figure3 = runner.build_grid(runner.Args(preset="figure3"))
    assert {r.script for r in figure3} == {"ppo_continuous.py", "trpo.py", "reinforce_baseline.py"}
    assert len(figure3) == 3 * 7 * 3
    # figure3's PPO runs are table1's clip-0.2 runs: one folder serves both
    assert {r.name for r in figure3 if r.script == "ppo_continuous.py"} < {r.name for r in table1}
    atari = runner.build_grid(runner.Args(preset="atari", dry_run=True))
    assert {r.total_timesteps for r in atari} == {10_000_000} and "BreakoutNoFrameskip-v4" in {r.env_id for r in atari}
    # scale knobs; a fork runs the settings of the preset's first script
    small = runner.build_grid(runner.Args(preset="table1", scripts=["my_ppo.py"], env_ids=["Hopper-v4"], seeds=[7],
                                          total_timesteps=5000, dry_run=True))  # fmt: skip
    assert len(small) == 11 and small[0].name == "my_ppo__Hopper-v4__none__7"
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


def test_smoke_local_then_resume_skips_finished_runs(tmp_path):
    out = str(tmp_path / "out")
    proc = bench(*TINY, "--results-dir", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 finished now, 0 finished earlier, 0 failed" in proc.stdout
    for seed in (1, 2):
        folder = os.path.join(out, f"ppo_continuous__InvertedPendulum-v4__smoke__{seed}")
        with open(os.path.join(folder, "result.json")) as f:
            result = json.load(f)
        assert result["status"] == "finished" and result["seed"] == seed and result["episodes"] > 0
        assert os.path.exists(os.path.join(folder, result["run_dir"], "episodes.csv"))
        assert os.path.exists(os.path.join(folder, result["run_dir"], "checkpoint.pt"))  # --save-model
        assert "--total-timesteps 1024" in open(os.path.join(folder, "log.txt")).read()
    before = files_of(out)

    start = time.time()
    again = bench(*TINY, "--results-dir", out)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0 finished now, 2 finished earlier, 0 failed" in again.stdout
    assert time.time() - start < 20  # Python starting up; no script ran
    assert files_of(out) == before  # no log line appended, no result rewritten


def test_smoke_on_a_local_ray_instance(tmp_path):
    pytest.importorskip("ray")
    out = str(tmp_path / "out")
    proc = bench(*TINY, "--results-dir", out, "--backend", "ray")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 finished now" in proc.stdout
    for seed in (1, 2):
        with open(os.path.join(out, f"ppo_continuous__InvertedPendulum-v4__smoke__{seed}", "result.json")) as f:
            assert json.load(f)["status"] == "finished"


def test_without_ray_the_ray_backend_is_a_one_line_error(tmp_path):
    code = ("import sys; sys.modules['ray'] = None; from benchmark.run import main;"
            f" main(['--preset', 'smoke', '--backend', 'ray', '--results-dir', {str(tmp_path)!r}])")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: --backend ray needs ray: pip install -r requirements-ray.txt"]


FAKE_OK = """
    import os, sys
    env_id = sys.argv[sys.argv.index("--env-id") + 1]
    os.makedirs("runs/fake", exist_ok=True)
    with open("runs/fake/episodes.csv", "w") as f:
        f.write("global_step,episodic_return,episodic_length\\n10,1.0,10\\n20,3.0,10\\n")
    print("done: 20 steps in 0.01 s (2000 SPS); run folder runs/fake")
"""
FAKE_BAD = """
    import sys
    print("fake_bad: something broke", file=sys.stderr)
    sys.exit(1)
"""


def test_failed_runs_are_recorded_and_the_rest_go_on(tmp_path):
    (tmp_path / "fake_ok.py").write_text(textwrap.dedent(FAKE_OK))
    (tmp_path / "fake_bad.py").write_text(textwrap.dedent(FAKE_BAD))
    out = str(tmp_path / "out")
    # scripts by path (a user's own) and by name (the repo's); --num-steps 0 is a bad flag for ppo_continuous.py
    proc = bench("--scripts", "fake_bad.py", "fake_ok.py", "ppo_continuous.py", "--env-ids", "InvertedPendulum-v4",
                 "--seeds", "1", "--variants", "--num-steps 0", "--results-dir", out, cwd=str(tmp_path))  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 finished now, 0 finished earlier, 2 failed" in proc.stdout

    def read(name: str, file: str) -> dict:
        with open(os.path.join(out, f"{name}__InvertedPendulum-v4__num-steps_0__1", file)) as f:
            return json.load(f)

    assert read("fake_ok", "result.json")["last100"] == 2.0
    bad = read("fake_bad", "error.json")
    assert bad["returncode"] == 1 and "fake_bad: something broke" in bad["log_tail"]
    ppo = read("ppo_continuous", "error.json")
    assert ppo["returncode"] == 2 and "--num-steps must be positive" in ppo["log_tail"]


FAKE_CRASHES_ONCE = """
    import os, sys
    if "--resume" in sys.argv:  # the second attempt: carry on from the checkpoint
        run_dir = os.path.dirname(sys.argv[sys.argv.index("--resume") + 1])
        with open(os.path.join(run_dir, "episodes.csv"), "w") as f:
            f.write("global_step,episodic_return,episodic_length\\n10,5.0,10\\n")
        print(f"done: 10 steps in 0.01 s (1000 SPS); run folder {run_dir}")
    else:  # the first: save a checkpoint, then crash
        os.makedirs("runs/crashy", exist_ok=True)
        open("runs/crashy/checkpoint.pt", "w").write("weights")
        sys.exit(1)
"""


def test_an_unfinished_run_resumes_from_its_checkpoint(tmp_path):
    (tmp_path / "crashy.py").write_text(textwrap.dedent(FAKE_CRASHES_ONCE))
    out, folder = str(tmp_path / "out"), str(tmp_path / "out" / "crashy__Hopper-v4__default__1")
    flags = ["--scripts", str(tmp_path / "crashy.py"), "--env-ids", "Hopper-v4", "--seeds", "1", "--results-dir", out]
    assert bench(*flags).returncode == 1 and os.path.exists(os.path.join(folder, "error.json"))
    proc = bench(*flags)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(os.path.join(folder, "result.json")) as f:
        result = json.load(f)
    assert result["resumed"] and result["last100"] == 5.0 and not os.path.exists(os.path.join(folder, "error.json"))
    assert "--resume " + os.path.join(folder, "runs", "crashy", "checkpoint.pt") in open(f"{folder}/log.txt").read()


FAKE_SLOW = """
    import os, signal, sys, time
    def save_and_exit(signum, frame):  # as the real scripts do: checkpoint, then exit 128 + signal
        open("runs/slow/checkpoint.pt", "w").write("weights")
        sys.exit(128 + signum)
    if os.environ.get("FAKE_SLOW") and "--resume" not in sys.argv:  # run until stopped
        signal.signal(signal.SIGINT, save_and_exit)
        os.makedirs("runs/slow", exist_ok=True)
        print("started", flush=True)
        time.sleep(60)
    run_dir = os.path.dirname(sys.argv[sys.argv.index("--resume") + 1]) if "--resume" in sys.argv else "runs/slow"
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, "episodes.csv"), "w") as f:
        f.write("global_step,episodic_return,episodic_length\\n10,7.0,10\\n")
    print(f"done: 10 steps in 0.01 s (1000 SPS); run folder {run_dir}")
"""


def test_sigterm_stops_the_grid_with_checkpoints_and_the_next_call_resumes(tmp_path):
    (tmp_path / "slow.py").write_text(textwrap.dedent(FAKE_SLOW))
    out, folder = str(tmp_path / "out"), str(tmp_path / "out" / "slow__Hopper-v4__default__1")
    flags = ["--scripts", str(tmp_path / "slow.py"), "--env-ids", "Hopper-v4", "--seeds", "1", "2", "--jobs", "1",
             "--results-dir", out]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": ROOT, "FAKE_SLOW": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "benchmark.run", *flags], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    deadline = time.time() + 30
    while "started" not in (open(f"{folder}/log.txt").read() if os.path.exists(f"{folder}/log.txt") else ""):
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.2)
    proc.terminate()
    output = proc.communicate(timeout=30)[0]
    assert proc.returncode == 130, output
    assert "interrupted: run the same command again to resume" in output
    assert os.path.exists(f"{folder}/runs/slow/checkpoint.pt") and not os.path.exists(f"{folder}/error.json")
    assert not os.path.exists(str(tmp_path / "out" / "slow__Hopper-v4__default__2" / "log.txt"))  # never started

    again = bench(*flags)
    assert again.returncode == 0, again.stdout + again.stderr
    with open(f"{folder}/result.json") as f:
        assert json.load(f)["resumed"]


def fake_run(results_dir, script: str, env_id: str, tag: str, seed: int, score: float, finished: bool = True):
    """A run folder as benchmark/run.py leaves it, whose last 100 episodes average `score` exactly: 50 early episodes
    of -1000 (outside the last 100), then 100 alternating score - 10, score + 10."""
    folder = os.path.join(results_dir, f"{script}__{env_id}__{tag}__{seed}")
    os.makedirs(os.path.join(folder, "runs", "r"))
    returns = [-1000.0] * 50 + [score - 10, score + 10] * 50
    with open(os.path.join(folder, "runs", "r", "episodes.csv"), "w") as f:
        f.write("global_step,episodic_return,episodic_length\n")
        f.writelines(f"{10 * (i + 1)},{r},10\n" for i, r in enumerate(returns))
    meta = {"name": os.path.basename(folder), "script": f"{script}.py", "env_id": env_id, "seed": seed, "tag": tag,
            "run_dir": "runs/r"}  # fmt: skip
    with open(os.path.join(folder, "result.json" if finished else "spec.json"), "w") as f:
        json.dump(meta, f)


def test_report_numbers_equal_the_hand_computed_ones(tmp_path):
    results = str(tmp_path / "out")
    scores = {  # (tag, env_id): last-100 score of seeds 1 and 2
        ("clip-0.2", "Hopper-v4"): [100, 200],
        ("none", "Hopper-v4"): [50, 70],
        ("clip-0.2", "Swimmer-v4"): [30, 50],
        ("none", "Swimmer-v4"): [60, 100],
    }
    for (tag, env_id), values in scores.items():
        for seed, score in enumerate(values, 1):
            fake_run(results, "ppo_continuous", env_id, tag, seed, score)
    fake_run(results, "ppo_continuous", "Walker2d-v4", "clip-0.2", 1, 500)  # one seed; no random return: not normalized
    fake_run(results, "ppo_continuous", "Walker2d-v4", "clip-0.2", 2, 900, finished=False)  # left out
    random_path = str(tmp_path / "random.json")
    with open(random_path, "w") as f:
        json.dump({"returns": {"Hopper-v4": {"mean": 0.0}, "Swimmer-v4": {"mean": 10.0}}}, f)

    report.main(report.Args(results_dir=results, random_returns=random_path, resamples=2000))
    out = os.path.join(results, "report")
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)

    # Per task: mean ± sample std over seeds of the last-100 return
    hopper = summary["tasks"]["Hopper-v4"]["methods"]["ppo_continuous clip-0.2"]
    assert hopper["mean"] == pytest.approx(150) and hopper["std"] == pytest.approx(np.sqrt((50**2 + 50**2) / 1))
    assert summary["tasks"]["Walker2d-v4"]["methods"]["ppo_continuous clip-0.2"]["std"] is None
    # Normalized: random 0 -> 0 and best mean 150 -> 1 on Hopper; random 10 -> 0 and best mean 80 (none) on Swimmer
    clip = [100 / 150, 200 / 150, (30 - 10) / 70, (50 - 10) / 70]
    none = [50 / 150, 70 / 150, (60 - 10) / 70, (100 - 10) / 70]
    got = summary["normalized"]
    assert got["ppo_continuous clip-0.2"]["scores"] == pytest.approx(clip)  # Walker2d not among them
    assert got["ppo_continuous clip-0.2"]["mean"] == pytest.approx(sum(clip) / 4)
    assert got["ppo_continuous none"]["mean"] == pytest.approx(sum(none) / 4)
    # IQM of 4 runs: the mean of the middle two
    assert got["ppo_continuous clip-0.2"]["iqm"] == pytest.approx((40 / 70 + 100 / 150) / 2)
    assert got["ppo_continuous none"]["iqm"] == pytest.approx((70 / 150 + 50 / 70) / 2)
    for s in got.values():
        assert s["mean_ci"][0] <= s["mean"] <= s["mean_ci"][1] and s["iqm_ci"][0] <= s["iqm"] <= s["iqm_ci"][1]
    assert got["ppo_continuous clip-0.2"]["paper"] == 0.82 and got["ppo_continuous none"]["paper"] == -0.39

    text = open(os.path.join(out, "report.md")).read()
    assert "| ppo_continuous clip-0.2 | 2 | 150.0 ± 70.7 | 150 |" in text
    assert f"| ppo_continuous clip-0.2 | clipping, ε = 0.2 | 4 | {sum(clip) / 4:.2f} |" in text
    assert "| *paper PPO, Fig. 3 (approx.)* | | *2200* | |" in text and "| *baselines ppo2* | | *2316.2* | |" in text
    assert "Walker2d-v4: no random-policy return" in text and "__clip-0.2__2: not finished, left out" in text
    for png in ("normalized_scores.png", "aggregate.png", "curves_Hopper-v4.png", "curves_Walker2d-v4.png"):
        assert os.path.getsize(os.path.join(out, png)) > 1000


def test_iqm_and_trailing_mean_on_small_sets():
    assert report.iqm(np.array([1.0, 2, 3, 4, 5, 6, 7, 100])) == pytest.approx((3 + 4 + 5 + 6) / 4)
    assert report.trailing_mean(np.array([1.0, 3, 5, 7]), 2) == pytest.approx([1, 2, 4, 6])
    low, high = report.bootstrap_ci(np.array([1.0, 2, 3, 4]), report.mean, resamples=2000, seed=0)
    assert 1 <= low < 2.5 < high <= 4
    assert report.task_name("BreakoutNoFrameskip-v4") == "Breakout" and report.task_name("Hopper-v4") == "Hopper"
