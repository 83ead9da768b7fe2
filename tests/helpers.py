"""Run the top-level scripts as a user does, and read what they wrote."""

import csv
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_script(script: str, *flags: str, cwd, timeout: float = 300, wait: bool = True):
    """`python script flags` in cwd, with the repo root importable so that `--env-id tests.fake_envs:...` works."""
    env = {**os.environ, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, os.path.join(ROOT, script), *flags]
    if not wait:
        return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def only_run_dir(cwd) -> str:
    """The one run folder a script wrote under cwd/runs."""
    (folder,) = glob.glob(os.path.join(str(cwd), "runs", "*"))
    return folder


def read_episodes(folder: str) -> list[list[str]]:
    with open(os.path.join(folder, "episodes.csv")) as f:
        return list(csv.reader(f))
