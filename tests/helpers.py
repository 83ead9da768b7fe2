"""Run the top-level scripts as a user does, and read what they wrote."""

import csv
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The scripts that share ppo_continuous.py's skeleton: the shared behaviour is tested on each of them
SCRIPTS = ["ppo_continuous.py", "trpo.py", "reinforce_baseline.py"]


def run_script(script: str, *flags: str, cwd, timeout: float = 300, wait: bool = True, stdout=subprocess.PIPE):
    """`python script flags` in cwd, with the repo root importable so that `--env-id tests.fake_envs:...` works."""
    env = {**os.environ, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, os.path.join(ROOT, script), *flags]
    if not wait:
        return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=timeout)


def only_run_dir(cwd) -> str:
    """The one run folder a script wrote under cwd/runs."""
    (folder,) = glob.glob(os.path.join(str(cwd), "runs", "*"))
    return folder


def read_episodes(folder: str) -> list[list[str]]:
    with open(os.path.join(folder, "episodes.csv")) as f:
        return list(csv.reader(f))


def scalars(folder: str, tag: str) -> list[float]:
    """The values a run logged to TensorBoard under `tag`, in step order."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(folder)
    events.Reload()
    return [event.value for event in events.Scalars(tag)]


def scalar_tags(folder: str) -> set[str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(folder)
    events.Reload()
    return set(events.Tags()["scalars"])
