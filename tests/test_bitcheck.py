"""benchmark/bitcheck.py, the check every refactor of a script passes while a grid runs it: it must say DIFFERENT for
a change to the training arithmetic, however small, and IDENTICAL for a change to the words only."""

import copy
import os
import shutil
import subprocess

import pytest
import torch

from benchmark import bitcheck
from tests.helpers import ROOT

# Two iterations of 128 steps: an update, then a rollout with the updated policy
CASE = "--env-id Hopper-v4 --num-steps 128 --minibatch-size 32 --total-timesteps 256"


def test_first_difference_names_where_two_checkpoints_differ():
    checkpoint = {"agent": {"w": torch.zeros(3)}, "steps": [1, 2], "rng": 5}
    assert bitcheck.first_difference(checkpoint, copy.deepcopy(checkpoint)) is None
    changed = copy.deepcopy(checkpoint)
    changed["agent"]["w"][2] = 1e-30  # the smallest change is a change
    assert bitcheck.first_difference(checkpoint, changed) == "checkpoint['agent']['w']"
    changed = {**checkpoint, "agent": {"w": torch.zeros(1, 3)}}
    assert bitcheck.first_difference(checkpoint, changed) == "checkpoint['agent']['w']"
    longer = {**checkpoint, "steps": [1, 2, 3]}
    assert bitcheck.first_difference(checkpoint, longer) == "checkpoint['steps']: lengths 2 and 3"
    assert bitcheck.first_difference(checkpoint, {**checkpoint, "rng": 6}) == "checkpoint['rng']: 5 != 6"
    assert bitcheck.first_difference(checkpoint, {**checkpoint, "new": 0}) == "checkpoint: keys ['new']"
    # NaN is a value a state may hold (a flagrun task's "not crawling yet"): the same NaN is the same bits
    unset = {"t": torch.tensor([1.0, float("nan")]), "start": float("nan")}
    assert bitcheck.first_difference(unset, copy.deepcopy(unset)) is None
    assert bitcheck.first_difference(unset, {**unset, "start": 0.0}) == "checkpoint['start']: nan != 0.0"
    assert bitcheck.first_difference(unset, {**unset, "t": torch.tensor([1.0, 0.0])}) == "checkpoint['t']"
    assert bitcheck.first_difference({"z": torch.tensor(0.0)}, {"z": torch.tensor(-0.0)}) == "checkpoint['z']"
    assert bitcheck.first_difference({"z": torch.zeros(2)}, {"z": torch.zeros(2, dtype=torch.float64)}) is not None


@pytest.mark.parametrize(
    "old, new, verdict",
    [
        # the docstring of a flag: the words change, the arithmetic does not
        ('"""[not in paper] Adam\'s epsilon', '"""[not in paper] The epsilon of Adam', "IDENTICAL"),
        # Adam's epsilon from 1e-5 to 1.1e-5: each step of the first update moves by a hair less
        ("adam_eps: float = 1e-5", "adam_eps: float = 1.1e-5", "DIFFERENT"),
        # a new flag whose default keeps the arithmetic: IDENTICAL, and named; one whose default changes it: DIFFERENT
        (
            "    adam_eps: float = 1e-5\n",
            '    adam_eps: float = 1e-5\n    new_flag: float = 1.0\n    """a flag"""\n',
            "IDENTICAL",
        ),
        (
            "    adam_eps: float = 1e-5\n",
            '    adam_eps: float = 1.1e-5\n    new_flag: float = 1.0\n    """a flag"""\n',
            "DIFFERENT",
        ),
    ],
    ids=["docstring", "adam-eps", "new-flag", "new-flag-and-adam-eps"],
)
def test_bitcheck_tells_a_change_of_arithmetic_from_a_change_of_words(tmp_path, monkeypatch, capsys, old, new, verdict):
    # a repository whose HEAD holds ppo_continuous.py as it is here, and whose working tree holds the edit
    repo = tmp_path / "repo"
    repo.mkdir()
    script = repo / "ppo_continuous.py"
    shutil.copy(os.path.join(ROOT, "ppo_continuous.py"), script)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-C", str(repo)]
    for cmd in (["init", "-q"], ["add", "ppo_continuous.py"], ["commit", "-qm", "base"]):
        subprocess.run(git + cmd, check=True, capture_output=True)
    text = script.read_text()
    assert text.count(old) == 1
    script.write_text(text.replace(old, new))
    monkeypatch.setattr(bitcheck, "ROOT", str(repo))
    monkeypatch.setattr(bitcheck, "CASES", {"ppo_continuous.py": [CASE]})
    with pytest.raises(SystemExit) as exit:
        bitcheck.main(bitcheck.Args(scripts=["ppo_continuous.py"]))
    out = capsys.readouterr().out
    assert exit.value.code == (0 if verdict == "IDENTICAL" else 1)
    assert out.startswith(f"{verdict}  ppo_continuous.py {CASE}"), out
    assert ("(flags added: new_flag)" in out) == ("new_flag" in new), out
