"""Bad input: a one-line error that names the flag, exit code 2, no traceback. A non-finite loss stops the run."""

import os

import pytest
import torch

from tests.helpers import SCRIPTS, only_run_dir, run_script


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize(
    "flags, flag_named",
    [
        (["--env-id", "NoSuchEnv-v0"], "--env-id"),
        (["--env-id", "tests.fake_envs:ChainDiscrete-v0"], "--env-id"),
        (["--minibatch-size", "100"], "--minibatch-size"),
        (["--num-steps", "0"], "--num-steps"),
        (["--total-timesteps", "-5"], "--total-timesteps"),
        (["--gae-lambda", "2"], "--gae-lambda"),
        (["--num-envs", "0"], "--num-envs"),
        (["--gamma", "1.5"], "--gamma"),
        (["--resume", "missing.pt"], "--resume"),
        (["--eval-checkpoint", "corrupt.pt"], "--eval-checkpoint"),
        (["--resume", "other.pt"], "--resume"),
        (["--eval-checkpoint", "other.pt"], "--eval-checkpoint"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, script, flags, flag_named):
    (tmp_path / "corrupt.pt").write_bytes(b"this is not a checkpoint")
    torch.save({"args": {"no_such_flag": 1}}, tmp_path / "other.pt")  # another script's or version's checkpoint
    proc = run_script(script, *flags, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and flag_named in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists()  # nothing half-made


@pytest.mark.parametrize(
    "script, rate",
    [
        ("ppo_continuous.py", "--learning-rate"),
        ("trpo.py", "--max-kl"),
        ("reinforce_baseline.py", "--vf-learning-rate"),
    ],
)
def test_non_positive_rate_is_refused(tmp_path, script, rate):
    proc = run_script(script, rate, "0", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: {rate} must be positive, got 0.0", proc.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_non_finite_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, script):
    # the env's reward turns NaN at its 300th step, in the third rollout of 128 steps
    flags = ["--env-id", "tests.fake_envs:ChainNan-v0", "--num-steps", "128", "--minibatch-size", "32",
             "--total-timesteps", "1280", "--save-model"]  # fmt: skip
    proc = run_script(script, *flags, cwd=tmp_path, timeout=120)
    assert proc.returncode == 1
    assert "non-finite loss" in proc.stderr and "Traceback" not in proc.stderr
    ckpt = torch.load(os.path.join(only_run_dir(tmp_path), "checkpoint.pt"), weights_only=True)
    assert ckpt["global_step"] == 256 and ckpt["iteration"] == 2
    assert all(torch.isfinite(p).all() for p in ckpt["agent"].values())


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--kl-target", "0"], "--kl-target must be positive, got 0.0"),
        (["--rmsprop-eps", "-1e-5"], "--rmsprop-eps must be positive, got -1e-05"),
        (["--vf-coef", "0"], "--vf-coef must be positive, got 0.0"),
        (["--rmsprop-alpha", "1"], "--rmsprop-alpha must lie in [0, 1), got 1.0"),
        (["--ent-coef", "-0.01"], "--ent-coef must be >= 0, got -0.01"),
        (["--max-grad-norm", "0"], "--max-grad-norm must be positive (or None: no clip), got 0.0"),
        (["--adaptive-lr"], "--adaptive-lr sets the policy's stepsize from the KL each batch; add --no-anneal-lr"),
    ],
)
def test_reinforce_baseline_refuses_bad_values_of_its_figure3_flags(tmp_path, flags, message):
    # one short batch: were a value let through, the run would end in seconds and fail here, not time out
    proc = run_script("reinforce_baseline.py", "--total-timesteps", "2048", *flags, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: {message}", proc.stderr
    assert not (tmp_path / "runs").exists()
