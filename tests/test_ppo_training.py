"""End to end, as a user runs it: learning, determinism, interrupt and resume, evaluation of a saved model."""

import os
import signal
import time

import torch

from tests.helpers import only_run_dir, read_episodes, run_script

SCRIPT = "ppo_continuous.py"
# A short Hopper run: 20 rollouts of 256 steps, with minibatches of 64 (the paper's)
SHORT = ["--env-id", "Hopper-v4", "--num-steps", "256", "--total-timesteps", "5120", "--save-model"]


def test_learns_inverted_pendulum_and_evaluates_the_saved_model(tmp_path):
    # The paper's Table 3 settings; 100k steps take about 40 s here
    proc = run_script(SCRIPT, "--env-id", "InvertedPendulum-v4", "--total-timesteps", "102400", "--save-model",
                      cwd=tmp_path, timeout=240)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    folder = only_run_dir(tmp_path)
    rows = read_episodes(folder)
    assert rows[0] == ["global_step", "episodic_return", "episodic_length"]
    last100 = [float(r[1]) for r in rows[-100:]]
    assert sum(last100) / len(last100) >= 500, f"mean of the last 100 episodes {sum(last100) / len(last100)}"
    assert os.path.exists(os.path.join(folder, [f for f in os.listdir(folder) if f.startswith("events")][0]))

    ckpt_path = os.path.join(folder, "checkpoint.pt")
    ckpt = torch.load(ckpt_path, weights_only=True)
    assert ckpt["global_step"] == 102400 and ckpt["args"]["env_id"] == "InvertedPendulum-v4"
    assert {"agent", "optimizer", "obs_rms", "ret_rms", "args", "global_step"} <= set(ckpt)
    proc = run_script(SCRIPT, "--eval-checkpoint", ckpt_path, "--eval-episodes", "5", cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    mean_return = float(proc.stdout.split("mean return")[1].split()[0])
    assert mean_return >= 500, proc.stdout


def test_same_seed_same_returns(tmp_path):
    for name in ("a", "b"):
        os.makedirs(tmp_path / name)
        proc = run_script(SCRIPT, *SHORT, "--seed", "7", cwd=tmp_path / name, timeout=120)
        assert proc.returncode == 0, proc.stderr
    a, b = (read_episodes(only_run_dir(tmp_path / name)) for name in ("a", "b"))
    assert len(a) > 50 and a == b  # identical to the last digit
    ckpt_a, ckpt_b = (torch.load(os.path.join(only_run_dir(tmp_path / n), "checkpoint.pt"), weights_only=True)
                      for n in ("a", "b"))  # fmt: skip
    for key, value in ckpt_a["agent"].items():
        assert torch.equal(value, ckpt_b["agent"][key])


def test_interrupted_and_resumed_run_equals_an_uninterrupted_one(tmp_path):
    os.makedirs(tmp_path / "whole")
    os.makedirs(tmp_path / "parts")
    proc = run_script(SCRIPT, *SHORT, cwd=tmp_path / "whole", timeout=120)
    assert proc.returncode == 0, proc.stderr

    # SIGTERM once training has begun: the script finishes the iteration, saves, and exits
    running = run_script(SCRIPT, *SHORT, cwd=tmp_path / "parts", wait=False)
    deadline = time.time() + 60
    while time.time() < deadline and not any(
        os.path.exists(os.path.join(r, "episodes.csv")) for r in (tmp_path / "parts" / "runs").glob("*")
    ):
        time.sleep(0.05)
    time.sleep(0.5)
    running.send_signal(signal.SIGTERM)
    out, err = running.communicate(timeout=60)
    assert running.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    folder = only_run_dir(tmp_path / "parts")
    ckpt_path = os.path.join(folder, "checkpoint.pt")
    stopped_at = torch.load(ckpt_path, weights_only=True)["global_step"]
    assert 0 < stopped_at < 5120, "the signal must arrive mid-run for this test to mean anything"

    proc = run_script(SCRIPT, "--resume", ckpt_path, cwd=tmp_path / "parts", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert read_episodes(folder) == read_episodes(only_run_dir(tmp_path / "whole"))
    whole = torch.load(os.path.join(only_run_dir(tmp_path / "whole"), "checkpoint.pt"), weights_only=True)
    parts = torch.load(ckpt_path, weights_only=True)
    for key, value in whole["agent"].items():
        assert torch.equal(value, parts["agent"][key]), key
    torch.testing.assert_close(whole["obs_rms"]["mean"], parts["obs_rms"]["mean"], rtol=0, atol=0)
