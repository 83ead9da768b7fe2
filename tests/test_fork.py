"""Forking is safe: the edits a researcher makes to a copy of a script either train what they wrote, or stop the run at
once with a one-line error that says what to change. None trains silently wrong.

Each edit is made, as text, in a scratch copy of each torch script, which is then imported and trained for two short
iterations in this process: on tests.fake_envs:Bandit-v0 (pays −a², so learning narrows π: the logged entropy falls)
for the MuJoCo scripts, on Breakout for ppo_atari.py (where learning is then checked on a made-up batch, by
tests/test_atari.py's check). The edits:
- (a) the usual PyTorch optimizer lines: optimizer.zero_grad(); loss.backward(); clip_grad_norm_; optimizer.step()
- (b) another activation in the networks (ReLU for tanh; tanh for ReLU in the Atari CNN)
- (c) one more hidden layer
- (d) a new per-sample column in the batch, used in the update (each minibatch checks that it lines up with obs)
"""

import importlib.util
import math
import os
import re

import numpy as np
import pytest
import torch

from tests.helpers import ROOT, one_torch_thread, only_run_dir, scalars, train_in_process  # noqa: F401 (autouse fixture)
from tests.test_atari import fire_gain

ROOT_SCRIPTS = ["ppo_continuous.py", "trpo.py", "reinforce_baseline.py", "ppo_atari.py"]
USUAL_OPTIMIZER_LINES = ("optimizer.zero_grad()", "loss.backward()",
                         "nn.utils.clip_grad_norm_(agent.parameters(), 0.5)", "optimizer.step()")  # fmt: skip


def usual_optimizer_lines(source: str) -> str:
    """(a): the script's flat-gradient lines, from `flat_params.grad.zero_()` to `optimizer.step()`, become the usual
    ones. reinforce_baseline.py has no flat gradient: its update already uses them."""
    pattern = re.compile(r"^( *)flat_params\.grad\.zero_\(\)\n.*?optimizer\.step\(\)\n", re.S | re.M)
    if not pattern.search(source):
        assert "optimizer.zero_grad()" in source
        return source
    return pattern.sub(lambda m: "".join(f"{m.group(1)}{line}\n" for line in USUAL_OPTIMIZER_LINES), source)


def other_activation(source: str) -> str:
    """(b): ReLU for tanh in the MLPs; in the Atari CNN, whose activation is ReLU, tanh."""
    if "nn.Tanh()" in source:
        return source.replace("nn.Tanh()", "nn.ReLU()")
    return source.replace("nn.ReLU()", "nn.Tanh()")


def third_hidden_layer(source: str) -> str:
    """(c): one more hidden layer of the same width."""
    mlp = "linear(64, 64, hidden), nn.Tanh(), "
    if mlp in source:
        return source.replace(mlp, mlp * 2, 1)
    cnn = "layer_init(nn.Linear(64 * 7 * 7, 512), math.sqrt(2), orthogonal),\n                nn.ReLU(),\n"
    assert source.count(cnn) == 1  # the Nature CNN, the default --network
    extra = "                layer_init(nn.Linear(512, 512), math.sqrt(2), orthogonal), nn.ReLU(),\n"
    return source.replace(cnn, cnn + extra)


def new_column(source: str) -> str:
    """(d): flatten_batch gains a per-sample column, each sample's row in the batch, and every minibatch of the
    update checks that the column's rows are those of its observations."""
    column = '"advantages": b_advantages,'
    assert source.count(column) == 1
    source = source.replace(column, '"row": torch.arange(len(b_advantages)), ' + column)
    line = re.search(r"^( *)mb = \{key: column\[start : start \+ args\.minibatch_size\].*\n", source, re.M)
    assert line, "no minibatch dict in the update"
    check = f'{line.group(1)}assert torch.equal(mb["obs"], batch["obs"][mb["row"]]), "a column out of line"\n'
    return source[: line.end()] + check + source[line.end() :]


EDITS = {"usual-optimizer-lines": usual_optimizer_lines, "other-activation": other_activation,
         "third-hidden-layer": third_hidden_layer, "new-column": new_column}  # fmt: skip
# What each fork must do. The flat gradient of ppo_continuous.py, trpo.py and ppo_atari.py (one Adam call per step, a
# speed shortcut) cannot survive optimizer.zero_grad(): those stop with the one-line error; everything else trains.
STOPS = {("usual-optimizer-lines", script) for script in ("ppo_continuous.py", "trpo.py", "ppo_atari.py")}
BANDIT = ["--env-id", "tests.fake_envs:Bandit-v0", "--num-steps", "256", "--total-timesteps", "512"]
BREAKOUT = ["--env-id", "BreakoutNoFrameskip-v4", "--num-envs", "2", "--num-steps", "32", "--minibatch-size", "32",
            "--update-epochs", "2", "--total-timesteps", "128", "--no-cuda", "--torch-threads", "1",
            "--env-threads", "1"]  # fmt: skip


def fork(tmp_path, script: str, edit, name: str):
    """A scratch copy of script with one edit (a function of its source), imported as a module of its own."""
    with open(os.path.join(ROOT, script)) as f:
        source = f.read()
    path = tmp_path / f"fork_{name.replace('-', '_')}_{script}"
    path.write_text(edit(source))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def train_fork(module, flags: list) -> str:
    """Train the fork; "trained", or the one-line message it stopped with."""
    try:
        train_in_process(module, *flags)
    except SystemExit as e:
        return str(e.code)
    return "trained"


def rollout_network_is_the_updates(module) -> None:
    """The MuJoCo scripts' rollout samples around a NumPy copy of the policy mean: it must be the network the update
    scores, actor_mean, for weights away from their start too (biases not zero)."""
    torch.manual_seed(0)
    agent = module.Agent(3, 2)
    with torch.no_grad():
        for p in agent.parameters():
            p.add_(0.3 * torch.randn_like(p))
    obs = np.random.default_rng(1).standard_normal((16, 3)).astype(np.float32)
    with torch.inference_mode():
        expected = agent.actor_mean(torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(agent.numpy_mean()(obs), expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("edit", EDITS)
@pytest.mark.parametrize("script", ROOT_SCRIPTS)
def test_a_forked_script_trains_what_was_written_or_stops_with_one_line(tmp_path, monkeypatch, script, edit):
    module = fork(tmp_path, script, EDITS[edit], edit)
    monkeypatch.chdir(tmp_path)
    outcome = train_fork(module, BREAKOUT if script == "ppo_atari.py" else BANDIT)
    if (edit, script) in STOPS:
        assert outcome.startswith("error: ") and "\n" not in outcome, outcome
        assert "flat_params.grad.zero_()" in outcome  # it says what to change
        return
    assert outcome == "trained", outcome
    if script == "ppo_atari.py":  # the rollout samples from the network's own logits; learning on a made-up batch
        gain_fire, gain_other = fire_gain(module)
        assert gain_fire > 0.01 and gain_other < -0.005, (gain_fire, gain_other)
        return
    rollout_network_is_the_updates(module)
    entropy = scalars(only_run_dir(tmp_path), "losses/entropy")  # log σ + ½ log 2πe: π narrows on the bandit
    assert len(entropy) == 2 and 0.5 * math.log(2 * math.pi * math.e) > entropy[0] > entropy[1], entropy


@pytest.mark.parametrize("script", ["ppo_continuous.py", "trpo.py", "reinforce_baseline.py"])
def test_a_layer_the_numpy_policy_cannot_follow_stops_the_run(tmp_path, monkeypatch, script):
    # a layer numpy_mean has no NumPy version of: the rollout cannot sample from actor_mean, so the run stops at once
    module = fork(tmp_path, script, lambda source: source.replace("nn.Tanh()", "nn.ELU()"), "elu")
    monkeypatch.chdir(tmp_path)
    outcome = train_fork(module, BANDIT)
    assert outcome.startswith("error: ") and "ELU" in outcome and "NUMPY_ACTIVATIONS" in outcome, outcome
