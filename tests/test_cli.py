"""Bad input: a one-line error that names the flag, exit code 2, no traceback. A non-finite loss stops the run."""

import importlib
import os

import pytest
import torch

from tests.helpers import SCRIPTS, assert_one_line_error, only_run_dir, run_script


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
    assert_one_line_error(proc, flag_named)
    assert not (tmp_path / "runs").exists()  # nothing half-made


# Each torch script: the task a checkpoint names, when that task cannot be made here
UNINSTALLED = {"ppo_atari.py": "NoSuchGame-v4"} | {s: "tests.fake_envs:NoSuchTask-v0" for s in [*SCRIPTS, "cem.py"]}
BAD_INPUT = [
    (["--resume", "empty.pt"], "--resume"),
    (["--eval-checkpoint", "empty.pt"], "--eval-checkpoint"),
    (["--eval-checkpoint", "uninstalled.pt"], "--eval-checkpoint"),
    (["--seed", "-1"], "--seed"),
    (["--seed", str(2**32)], "--seed"),
    (["--gae-lambda", "inf"], "--gae-lambda"),
    (["--init-std", "inf"], "--init-std"),
    (["--gamma", "nan"], "--gamma"),
    (["--num-envs", "1", "--num-steps", "1", "--minibatch-size", "1"], "--norm-adv"),
    # a run continues with its saved flags: others given with --resume would be ignored, so they are refused
    (["--resume", "any.pt", "--total-timesteps", "2000000"], "--total-timesteps"),
]


def has_flags(script: str, flags: list) -> bool:
    """Whether every flag in `flags` is one of the script's (cem.py has no --gamma, say)."""
    fields = vars(importlib.import_module(script.removesuffix(".py")).Args())
    return all(flag[2:].replace("-", "_") in fields for flag in flags if flag.startswith("--"))


@pytest.mark.parametrize(
    "script, flags, flag_named",
    [
        (script, flags, named)
        for script in [*SCRIPTS, "ppo_atari.py", "cem.py"]
        for flags, named in BAD_INPUT
        if has_flags(script, flags)
    ],  # fmt: skip
)
def test_bad_input_of_every_torch_script_is_one_line_and_exit_2(tmp_path, script, flags, flag_named):
    (tmp_path / "empty.pt").write_bytes(b"")
    module = importlib.import_module(script.removesuffix(".py"))
    torch.save({"args": vars(module.Args(env_id=UNINSTALLED[script]))}, tmp_path / "uninstalled.pt")
    proc = run_script(script, *flags, cwd=tmp_path, timeout=120)
    assert_one_line_error(proc, flag_named)
    assert not (tmp_path / "runs").exists()  # nothing half-made


@pytest.mark.parametrize("script", SCRIPTS)
def test_resume_refuses_an_env_whose_state_a_checkpoint_cannot_hold(tmp_path, script):
    # Pendulum-v1 trains, but its state is not MuJoCo physics: a resumed run would continue from another state
    proc = run_script(script, "--env-id", "Pendulum-v1", "--num-steps", "256", "--minibatch-size", "64",
                      "--total-timesteps", "256", "--save-model", cwd=tmp_path, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    checkpoint = os.path.join(only_run_dir(tmp_path), "checkpoint.pt")
    proc = run_script(script, "--resume", checkpoint, cwd=tmp_path, timeout=120)
    assert_one_line_error(proc, "Pendulum-v1", "MuJoCo")
    proc = run_script(script, "--eval-checkpoint", checkpoint, "--eval-episodes", "1", cwd=tmp_path, timeout=120)
    assert proc.returncode == 0 and "mean return" in proc.stdout, proc.stderr  # evaluation still works


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
