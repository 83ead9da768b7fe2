"""Forking is safe: the edits a researcher makes to a copy of a script train what they say, as written, with no edit
anywhere else; and an edit that would train silently wrong (the rollout samples from one policy, the update scores
another) stops the run before the update's first step, with a one-line error.

Each edit is made, as text, in a scratch copy of each torch script, which is then imported and trained for two short
iterations in this process: on tests.fake_envs:Bandit-v0 (pays −a², so learning narrows π: the logged entropy falls)
for the MuJoCo scripts, on Breakout for ppo_atari.py (where learning is then checked on a made-up batch, by
tests/test_atari.py's check). The edits:
- the usual PyTorch optimizer lines: optimizer.zero_grad(); loss.backward(); clip_grad_norm_; optimizer.step()
- another activation in the networks (ReLU for tanh; tanh for ReLU in the Atari CNN), one more hidden layer
- a bounded mean, tanh at the network or at the call sites; a state-dependent log-std from a head of its own
- a new per-sample column in the batch of shape (T, N), (T·N,) or (T, N, 2), used in the update (each minibatch
  checks that it lines up with the observations)
- SGD or AdamW for Adam
"""

import importlib.util
import math
import os
import re

import pytest

from tests.helpers import ROOT, one_torch_thread, only_run_dir, scalars, train_in_process  # noqa: F401 (autouse fixture)
from tests.test_atari import fire_gain

ROOT_SCRIPTS = ["ppo_continuous.py", "trpo.py", "reinforce_baseline.py", "ppo_atari.py"]
MUJOCO_SCRIPTS = ROOT_SCRIPTS[:3]
USUAL_OPTIMIZER_LINES = ("optimizer.zero_grad()", "loss.backward()",
                         "nn.utils.clip_grad_norm_(agent.parameters(), 0.5)", "optimizer.step()")  # fmt: skip


def usual_optimizer_lines(source: str) -> str:
    """Each gradient step, from `optimizer.zero_grad()` and `loss.backward()` to `optimizer.step()`, becomes the four
    usual lines as a researcher writes them (a clip of 0.5, whatever the script's flags say)."""
    pattern = re.compile(r"^( *)optimizer\.zero_grad\(\)\n *loss\.backward\(\)\n.*?optimizer\.step\(\)\n", re.S | re.M)
    source, count = pattern.subn(lambda m: "".join(f"{m.group(1)}{line}\n" for line in USUAL_OPTIMIZER_LINES), source)
    assert count >= 1, "no optimizer step"
    return source


def other_activation(source: str) -> str:
    """ReLU for tanh in the MLPs; in the Atari CNN, whose activation is ReLU, tanh."""
    if "nn.Tanh()" in source:
        return source.replace("nn.Tanh()", "nn.ReLU()")
    return source.replace("nn.ReLU()", "nn.Tanh()")


def third_hidden_layer(source: str) -> str:
    """One more hidden layer of the same width."""
    mlp = "linear(64, 64, hidden), nn.Tanh(), "
    if mlp in source:
        return source.replace(mlp, mlp * 2, 1)
    cnn = "layer_init(nn.Linear(64 * 7 * 7, 512), math.sqrt(2), orthogonal),\n                nn.ReLU(),\n"
    assert source.count(cnn) == 1  # the Nature CNN, the default --network
    extra = "                layer_init(nn.Linear(512, 512), math.sqrt(2), orthogonal), nn.ReLU(),\n"
    return source.replace(cnn, cnn + extra)


def replace_once(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"{old!r} is not in the script exactly once"
    return source.replace(old, new)


def tanh_mean_at_the_network(source: str) -> str:
    """A bounded mean: tanh as the policy network's last layer."""
    return replace_once(source, "self.actor_mean = mlp(act_dim, 0.01)",
                        "self.actor_mean = nn.Sequential(mlp(act_dim, 0.01), nn.Tanh())")  # fmt: skip


def tanh_mean_at_the_call_sites(source: str) -> str:
    """A bounded mean: tanh around every call of the policy network."""
    source, count = re.subn(r"\b(self|agent)\.actor_mean\(([^()]*)\)", r"torch.tanh(\1.actor_mean(\2))", source)
    assert count >= 1
    return source


def state_dependent_logstd(source: str) -> str:
    """The log-std from a head of its own, a function of the state: the network, and the line that reads it."""
    source = replace_once(source, "self.actor_logstd = nn.Parameter(torch.zeros(act_dim))",
                          "self.actor_logstd = mlp(act_dim, 0.01)")  # fmt: skip
    return replace_once(source, "self.actor_logstd.expand_as(mean)", "self.actor_logstd(obs)")


def new_column(expression: str, row: str):
    """A per-sample column `expression` added in flatten_batch (where `advantages` is the (T, N) array); every
    minibatch then checks that `row` (of mb["row"]) indexes its own observations in the batch."""

    def edit(source: str) -> str:
        source = replace_once(source, '"advantages": advantages,', f'"row": {expression}, "advantages": advantages,')
        line = re.search(r"^( *)mb = \{key: column\[start : start \+ args\.minibatch_size\].*\n", source, re.M)
        assert line, "no minibatch dict in the update"
        check = f'{line.group(1)}assert torch.equal(mb["obs"], batch["obs"][{row}]), "a column out of line"\n'
        return source[: line.end()] + check + source[line.end() :]

    return edit


def optimizer(name: str):
    """Another optimizer for Adam, written as a researcher writes it: SGD takes neither eps nor fused."""

    def edit(source: str) -> str:
        line = re.search(r"^.*torch\.optim\.Adam\(.*\)$", source, re.M)
        assert line
        new = line.group(0).replace("torch.optim.Adam(", f"torch.optim.{name}(")
        if name == "SGD":
            new = new.replace(", eps=args.adam_eps", "").replace(", fused=True", "")
        return source[: line.start()] + new + source[line.end() :]

    return edit


ROWS = "np.arange(advantages.size).reshape(advantages.shape)"  # (T, N): each sample's row in the batch
EDITS = {
    "usual-optimizer-lines": usual_optimizer_lines,
    "other-activation": other_activation,
    "third-hidden-layer": third_hidden_layer,
    "tanh-mean-at-the-network": tanh_mean_at_the_network,
    "tanh-mean-at-the-call-sites": tanh_mean_at_the_call_sites,
    "state-dependent-logstd": state_dependent_logstd,
    "new-column-T-N": new_column(ROWS, 'mb["row"]'),
    "new-column-TN": new_column("torch.arange(advantages.size)", 'mb["row"]'),
    "new-column-T-N-2": new_column(f"np.stack([{ROWS}] * 2, axis=-1)", 'mb["row"][:, 1]'),
    "sgd": optimizer("SGD"),
    "adamw": optimizer("AdamW"),
}
GAUSSIAN_ONLY = {"tanh-mean-at-the-network", "tanh-mean-at-the-call-sites", "state-dependent-logstd"}
FORKS = [(script, edit) for script in ROOT_SCRIPTS for edit in EDITS
         if script in MUJOCO_SCRIPTS or edit not in GAUSSIAN_ONLY]  # fmt: skip
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
    """Train the fork; "trained", or the message it stopped with."""
    try:
        train_in_process(module, *flags)
    except SystemExit as e:
        return str(e.code)
    return "trained"


@pytest.mark.parametrize("script, edit", FORKS, ids=[f"{script}-{edit}" for script, edit in FORKS])
def test_a_forked_script_trains_what_was_written(tmp_path, monkeypatch, script, edit):
    module = fork(tmp_path, script, EDITS[edit], edit)
    monkeypatch.chdir(tmp_path)
    outcome = train_fork(module, BREAKOUT if script == "ppo_atari.py" else BANDIT)
    assert outcome == "trained", outcome
    if script == "ppo_atari.py":  # learning on a made-up batch: FIRE pays, and the update makes it more likely
        gain_fire, gain_other = fire_gain(module)
        assert gain_fire > 0.01 and gain_other < -0.005, (gain_fire, gain_other)
        return
    entropy = scalars(only_run_dir(tmp_path), "losses/entropy")  # log σ + ½ log 2πe: π narrows on the bandit
    assert len(entropy) == 2 and 0.5 * math.log(2 * math.pi * math.e) > entropy[0] > entropy[1], entropy


def off_policy(source: str) -> str:
    """The fork of issue #44: the update scores another policy than the rollout samples from (tanh on the mean in the
    update only; for Atari, a temperature on the logits). The MuJoCo policy starts at mean ≈ 1, as after training,
    where tanh matters (at a mean near 0 it changes nothing)."""
    call = source.index("check_on_policy(logprob,")
    if 'agent(mb["obs"])' in source:  # ppo_atari.py
        line = list(re.finditer(r"^( *)logits, new_values = agent\(mb\[\"obs\"\]\)\n", source[:call], re.M))[-1]
        return source[: line.end()] + f"{line.group(1)}logits = logits / 2\n" + source[line.end() :]
    line = list(re.finditer(r"^( *)mean, logstd = agent\.get_policy\(.*\)\n", source[:call], re.M))[-1]
    source = source[: line.end()] + f"{line.group(1)}mean = torch.tanh(mean)\n" + source[line.end() :]
    network = "self.actor_mean = mlp(act_dim, 0.01)"
    return replace_once(source, network, f"{network}\n        nn.init.constant_(self.actor_mean[-1].bias, 1.0)")


@pytest.mark.parametrize("script", ROOT_SCRIPTS)
def test_a_fork_whose_update_scores_another_policy_than_the_rollout_sampled_stops(tmp_path, monkeypatch, script):
    module = fork(tmp_path, script, off_policy, "off-policy")
    monkeypatch.chdir(tmp_path)
    outcome = train_fork(module, BREAKOUT if script == "ppo_atari.py" else BANDIT)
    assert outcome.startswith("error: the update's log π_θold") and "\n" not in outcome, outcome


@pytest.mark.parametrize("script", ROOT_SCRIPTS)
def test_a_column_of_another_shape_stops_the_run_naming_it(tmp_path, monkeypatch, script):
    def edit(source: str) -> str:  # a column of one row too many
        column = '"bad_column": np.zeros(advantages.size + 1), "advantages": advantages,'
        return replace_once(source, '"advantages": advantages,', column)

    module = fork(tmp_path, script, edit, "bad-column")
    monkeypatch.chdir(tmp_path)
    outcome = train_fork(module, BREAKOUT if script == "ppo_atari.py" else BANDIT)
    assert outcome.startswith("error: batch column 'bad_column' has shape") and "\n" not in outcome, outcome
