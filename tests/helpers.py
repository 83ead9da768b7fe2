"""Run the top-level scripts as a user does, and read what they wrote."""

import csv
import glob
import importlib
import os
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The scripts that share ppo_continuous.py's skeleton: the shared behaviour is tested on each of them
SCRIPTS = ["ppo_continuous.py", "trpo.py", "reinforce_baseline.py"]


def script_modules() -> list:
    """SCRIPTS as pytest parameters: each script imported as a module, named by its file."""
    return [pytest.param(importlib.import_module(script.removesuffix(".py")), id=script) for script in SCRIPTS]


def run_script(script: str, *flags: str, cwd, timeout: float = 300, wait: bool = True, stdout=subprocess.PIPE):
    """`python script flags` in cwd, with the repo root importable so that `--env-id tests.fake_envs:...` works."""
    env = {**os.environ, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, os.path.join(ROOT, script), *flags]
    if not wait:
        return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=timeout)


def assert_one_line_error(proc, *words: str, code: int = 2) -> None:
    """A script refused its input as the project asks: exit `code`, one line on stderr starting "error: " and naming
    each of `words`, no traceback."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and all(w in lines[0] for w in words), proc.stderr
    assert "Traceback" not in proc.stderr


def train_in_process(module, *flags: str) -> None:
    """`python script flags` without a new interpreter, whose imports take seconds: parse, validate and train in the
    current folder as the script's main does. train() owns the process when run as a script, so pytest's signal
    handlers and torch's thread count are given back afterwards."""
    import torch
    import tyro

    args = tyro.cli(module.Args, args=list(flags))
    module.validate(args)
    handlers, threads = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}, torch.get_num_threads()
    try:
        module.train(args)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def one_torch_thread():
    """For the test modules that import it: in-process CNN passes are small, a second thread only waits for a core."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def only_run_dir(cwd) -> str:
    """The one run folder a script wrote under cwd/runs."""
    (folder,) = glob.glob(os.path.join(str(cwd), "runs", "*"))
    return folder


def read_episodes(folder: str) -> list[list[str]]:
    with open(os.path.join(folder, "episodes.csv")) as f:
        return list(csv.reader(f))


def scalar_events(folder: str, tag: str) -> list[tuple[int, float]]:
    """(step, value) of each event a run logged to TensorBoard under `tag`, in step order, as TensorBoard reads the
    folder: after a resume, without the events the resumed run purged."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(folder)
    events.Reload()
    return [(event.step, event.value) for event in events.Scalars(tag)]


def scalars(folder: str, tag: str) -> list[float]:
    """The values a run logged to TensorBoard under `tag`, in step order."""
    return [value for _, value in scalar_events(folder, tag)]


def scalar_tags(folder: str) -> set[str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(folder)
    events.Reload()
    return set(events.Tags()["scalars"])
