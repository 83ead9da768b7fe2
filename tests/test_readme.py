"""The README's claims about the scripts hold, and keep holding as the scripts change: the diff counts it gives, and
the functions it says the three MuJoCo scripts share line for line."""

import ast
import os
import re
import subprocess

import pytest

from tests.helpers import ROOT

MUJOCO_SCRIPTS = ["ppo_continuous.py", "trpo.py", "reinforce_baseline.py"]


def readme() -> str:
    with open(os.path.join(ROOT, "README.md")) as f:
        return " ".join(f.read().split())  # one line: a claim may wrap anywhere


def source(script: str) -> str:
    with open(os.path.join(ROOT, script)) as f:
        return f.read()


def changed_lines(a: str, b: str) -> int:
    """`diff a b | grep -c '^[<>]'`, the README's count."""
    proc = subprocess.run(["diff", a, b], cwd=ROOT, capture_output=True, text=True)
    return sum(line[:1] in "<>" and line != "" for line in proc.stdout.splitlines())


def top_level(script: str) -> dict[str, str]:
    """The source of each top-level function and class of a script, by name."""
    text = source(script)
    tree = ast.parse(text)
    return {
        n.name: ast.get_source_segment(text, n) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
    }


@pytest.mark.parametrize("other", ["trpo.py", "reinforce_baseline.py", "ppo_humanoid.py"])
def test_the_readmes_diff_count_is_the_diffs(other):
    claim = re.search(rf"`diff ppo_continuous\.py {re.escape(other)}` has ([\d,]+) changed lines", readme())
    assert claim, f"the README gives no diff count for {other}"
    assert changed_lines("ppo_continuous.py", other) == int(claim.group(1).replace(",", "")), claim.group(0)


@pytest.mark.parametrize(
    "claim, scripts",
    [(r"The three MuJoCo scripts share, line for line, (.*?) \(checked by tests/test_readme\.py\)", MUJOCO_SCRIPTS),
     (r"`cem\.py` shares, line for line, (.*?) with them \(checked by", ["cem.py", *MUJOCO_SCRIPTS])],
    ids=["mujoco-scripts", "cem"],
)  # fmt: skip
def test_the_functions_the_readme_says_scripts_share_are_the_same_in_each(claim, scripts):
    found = re.search(claim, readme())
    assert found, f"the README has no claim {claim!r}"
    names = re.findall(r"`(\w+)`", found.group(1))
    assert len(names) >= 10, names
    sources = [top_level(script) for script in scripts]
    for name in names:
        assert all(name in s for s in sources), f"{name} is not in every one of {scripts}"
        assert all(s[name] == sources[0][name] for s in sources), f"{name} differs between {scripts}"


def test_ppo_humanoid_differs_from_its_parent_only_where_the_readme_says():
    # a variant script diffs cleanly against its parent: the functions the README names differ, every other is the same
    found = re.search(r"of the functions both have, (.*?) differ where these reach them", readme())
    assert found, "the README does not say which functions of ppo_humanoid.py differ from ppo_continuous.py's"
    named = set(re.findall(r"`(\w+)`", found.group(1)))
    parent, variant = top_level("ppo_continuous.py"), top_level("ppo_humanoid.py")
    assert set(parent) <= set(variant), set(parent) - set(variant)
    assert {name for name in parent if parent[name] != variant[name]} == named


def test_the_readmes_first_two_commands_train_and_test():
    # CI (.ci/run) runs the README's second fenced command as the test command, and a newcomer's check runs the first
    # two in fresh venvs: both must install what they need, and the second must be the test suite
    text = open(os.path.join(ROOT, "README.md")).read()
    blocks = re.findall(r"```(?:bash|sh|shell|console)?\n(.*?)```", text, re.S)
    commands = [c for c in (line.strip().lstrip("$ ").strip() for b in blocks for line in b.splitlines()) if c]
    commands = [c for c in commands if not c.startswith("#")]
    assert commands[0].startswith("pip install -r requirements.txt && python ") and "--env-id" in commands[0]
    assert commands[1].startswith("pip install -r requirements.txt") and commands[1].endswith("python -m pytest")
