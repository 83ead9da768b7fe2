"""Run a grid of training runs, scripts x tasks x seeds x flag variants, each in its own process, here or on Ray.

    python -m benchmark.run --preset table1                    # Table 1: 11 objectives x 7 tasks x 3 seeds, 1M steps
    python -m benchmark.run --preset figure3 --env-ids Hopper-v4 --seeds 1 2 --total-timesteps 300000
    python -m benchmark.run --scripts my_ppo.py --env-ids Hopper-v4 Walker2d-v4 --seeds 1 2 \\
        --variants "" "--objective kl-adaptive --kl-target 0.01"
    python -m benchmark.run --preset smoke --backend ray       # on Ray: pip install -r requirements-ray.txt

Any script that follows the project's CLI works (--env-id, --seed, --total-timesteps, --save-model, --resume, and a
runs/*/episodes.csv), a copy of your own included. Each run has a folder RESULTS_DIR/{script}__{env_id}__{tag}__{seed}/
with spec.json (what it runs), log.txt (all its output), runs/ (the script runs in this folder, with --save-model), and
at the end result.json (finished) or error.json (failed: the exit code and the log's tail). JSON files are written to
a temporary name and renamed, so an interruption never leaves half a file.

Run the same command again and it carries on: finished runs are skipped, unfinished ones resume from their last
checkpoint with --resume, failed ones are tried again. Ctrl-C (or SIGTERM) asks each running script to save a
checkpoint and stop. Exit code: 0 when every run finished, 1 when some failed, 2 for bad input, 130 when interrupted.
Then `python -m benchmark.report RESULTS_DIR` makes the tables and plots.
"""

import glob
import importlib.util
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, replace
from typing import Literal, Optional

import tyro

from benchmark.presets import PRESETS, Method

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Args:
    preset: Optional[Literal["table1", "figure3", "atari", "smoke"]] = None
    """a grid of the paper (benchmark/presets.py): table1 (the 11 objectives of Table 1 x 7 MuJoCo tasks x 3 seeds),
    figure3 (PPO, TRPO, vanilla PG x 7 tasks x 3 seeds), atari (ppo_atari.py on Table 6 games, 10M steps), smoke (2
    runs of seconds). --scripts, --env-ids, --seeds and --total-timesteps scale it down"""
    scripts: Optional[list[str]] = None
    """training scripts: paths, or names of the repo's top-level scripts (default ppo_continuous.py). With a preset:
    the subset of its scripts to run; a script it does not name (your fork) runs the settings of its first script"""
    env_ids: Optional[list[str]] = None
    """tasks (default Hopper-v4, or the preset's)"""
    seeds: Optional[list[int]] = None
    """seeds (default 1 2 3, or the preset's); the paper uses 3 per task"""
    total_timesteps: Optional[int] = None
    """steps per run (default: the preset's, else the script's own default, 1M for the MuJoCo scripts)"""
    variants: Optional[list[str]] = None
    """flag sets to compare, each one a method, e.g. "" "--objective kl-adaptive --kl-target 0.01" ("" is the
    script's defaults). Not with a preset, which has its own"""
    tags: Optional[list[str]] = None
    """names of the --variants in folder names and reports, one each; made from the flags when not given"""
    extra: str = ""
    """flags for every run, after the variant's, e.g. "--num-steps 512"; they become part of every tag"""
    results_dir: str = os.path.join(ROOT, "benchmark", "out")
    """where each run gets its folder"""
    backend: Literal["local", "ray"] = "local"
    """local: a pool of --jobs processes on this machine. ray: one Ray task per run, on --address"""
    jobs: int = os.cpu_count() or 1
    """runs at a time on the local backend, and the CPUs of the Ray instance started here; one per core, as each
    script uses one torch thread"""
    address: Optional[str] = None
    """the Ray cluster: "auto" for the one `ray start` runs on this machine, HOST:6379 or "ray://HOST:10001" for a
    remote one (Ray's token authentication then wants RAY_AUTH_MODE=token and the cluster's token). Unset: start a
    local Ray instance with --jobs CPUs. On several machines, --results-dir and the scripts must sit on a shared
    filesystem at the same path on each, with the same Python environment"""
    cpus_per_run: float = 1.0
    """CPUs that Ray reserves for each run"""
    gpus_per_run: float = 0.0
    """GPUs that Ray reserves for each run (e.g. 0.25 to share one GPU among four Atari runs)"""
    dry_run: bool = False
    """print the grid (and what each run would do) and exit"""


@dataclass(frozen=True)
class Run:
    """One training run of the grid: a script with flags on one task and seed."""

    name: str
    script: str
    """the script as given on the command line or in the preset"""
    script_path: str
    """its absolute path"""
    env_id: str
    seed: int
    tag: str
    variant: str
    """the method's flags, then --extra's"""
    total_timesteps: Optional[int]

    def flags(self) -> list[str]:
        """The flags of a fresh start. The variant's come last, so that they win over the grid's."""
        steps = ["--total-timesteps", str(self.total_timesteps)] if self.total_timesteps else []
        return ["--env-id", self.env_id, "--seed", str(self.seed), *steps, "--save-model", *shlex.split(self.variant)]


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2, no traceback."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def tag_of(flags: str) -> str:
    """A folder-safe name for a set of flags: "--objective kl-adaptive --kl-target 0.01" -> objective_kl-adaptive_kl-
    target_0.01. "" -> default."""
    words = [re.sub(r"[^A-Za-z0-9.+-]+", "-", word.lstrip("-")).strip("-") for word in shlex.split(flags)]
    tag = "_".join(word for word in words if word)
    return tag or "default"


def resolve_script(script: str) -> Optional[str]:
    """A path as given (relative to the working directory), else a script at the top of the repo."""
    for candidate in (os.path.abspath(script), os.path.join(ROOT, script)):
        if os.path.isfile(candidate):
            return candidate
    return None


def grid_methods(args: Args) -> list[Method]:
    """The methods of the grid: a preset's, or --scripts x --variants."""
    if args.preset is None:
        variants = args.variants if args.variants is not None else [""]
        if args.tags is not None and len(args.tags) != len(variants):
            fail(f"--tags gives {len(args.tags)} names for {len(variants)} --variants")
        tags = args.tags or [tag_of(v) for v in variants]
        for tag in tags:
            if not re.fullmatch(r"[A-Za-z0-9.+-]+(_[A-Za-z0-9.+-]+)*", tag):
                fail(f"tag {tag!r}: use letters, digits, '.', '+', '-' and single '_'")
        return [Method(s, t, v) for s in args.scripts or ["ppo_continuous.py"] for t, v in zip(tags, variants)]
    if args.variants is not None or args.tags is not None:
        fail(f"--preset {args.preset} has its own variants; use --variants (and --tags) without a preset")
    methods = PRESETS[args.preset].methods
    if args.scripts is None:
        return methods
    first = methods[0].script
    return [
        replace(m, script=s)
        for s in args.scripts
        for m in methods
        if m.script == s or (m.script == first and s not in {n.script for n in methods})
    ]


def build_grid(args: Args) -> list[Run]:
    """Every (method, task, seed) of the grid, in that order, as a Run with its folder name."""
    preset = PRESETS[args.preset] if args.preset else None
    env_ids = args.env_ids or (preset.env_ids if preset else ["Hopper-v4"])
    seeds = args.seeds or (preset.seeds if preset else [1, 2, 3])
    steps = args.total_timesteps or (preset.total_timesteps if preset else None)
    runs = []
    for method in grid_methods(args):
        path = resolve_script(method.script)
        if path is None and not args.dry_run:
            fail(f"script {method.script} not found (looked in {os.getcwd()} and {ROOT})")
        stem = os.path.splitext(os.path.basename(method.script))[0]
        tag = method.tag if not args.extra else f"{method.tag}_{tag_of(args.extra)}"
        variant = f"{method.flags} {args.extra}".strip()
        for env_id in env_ids:
            for seed in seeds:
                name = f"{stem}__{env_id}__{tag}__{seed}"
                runs.append(Run(name, method.script, path or method.script, env_id, seed, tag, variant, steps))
    names = [run.name for run in runs]
    if len(set(names)) != len(names):
        fail(f"two runs share a folder name: {sorted(n for n in names if names.count(n) > 1)[0]}")
    return runs


def write_json(path: str, data: dict) -> None:
    """Write to a temporary file, then rename: a reader sees the old file or the new one, never half of one."""
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def read_json(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def latest_checkpoint(folder: str) -> Optional[str]:
    """The newest runs/*/checkpoint.pt under a run's folder, if any."""
    paths = glob.glob(os.path.join(folder, "runs", "*", "checkpoint.pt"))
    return max(paths, key=os.path.getmtime) if paths else None


def last100(csv_path: str) -> tuple[Optional[float], int]:
    """The paper's score (§6.1): the mean return of the last 100 episodes; and the number of episodes."""
    with open(csv_path) as f:
        returns = [float(line.split(",")[1]) for line in f.read().splitlines()[1:] if line]
    return (sum(returns[-100:]) / len(returns[-100:]) if returns else None), len(returns)


def interrupt(proc: subprocess.Popen) -> int:
    """One SIGINT: the scripts finish the iteration, save a checkpoint and exit. A second one would kill them."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def wait_for(proc: subprocess.Popen, stop_path: str) -> tuple[int, bool]:
    """Wait for the script; stop it with a checkpoint when the file stop_path appears (the runner writes it when it is
    interrupted: a file reaches a Ray task on another node too). Returns the exit code and whether it was stopped."""
    try:
        while True:
            try:
                return proc.wait(timeout=1.0), False
            except subprocess.TimeoutExpired:
                if os.path.exists(stop_path):
                    return interrupt(proc), True
    except KeyboardInterrupt:  # what ray.cancel raises in a task
        interrupt(proc)
        raise


def request_stop(runs: list[Run], results_dir: str) -> None:
    """Ask every run of this invocation that is running or waiting its turn to stop: each gets a file named stop."""
    for run in runs:
        os.makedirs(os.path.join(results_dir, run.name), exist_ok=True)
        open(os.path.join(results_dir, run.name, "stop"), "w").close()


def run_one(run: Run, results_dir: str) -> dict:
    """Run (or resume, or skip) one run of the grid in its folder, and return what happened to it.

    status: skipped (finished earlier), finished, failed, interrupted, or not started (stopped before its turn).
    """
    folder = os.path.join(results_dir, run.name)
    result_path, error_path = os.path.join(folder, "result.json"), os.path.join(folder, "error.json")
    if os.path.exists(result_path):  # finished: never rerun
        return {**read_json(result_path), "status": "skipped"}
    stop_path = os.path.join(folder, "stop")
    if os.path.exists(stop_path):  # the runner was interrupted before this run's turn came
        return {"name": run.name, "status": "not started"}
    os.makedirs(folder, exist_ok=True)
    spec = {**asdict(run), "flags": run.flags()}
    write_json(os.path.join(folder, "spec.json"), spec)
    checkpoint = latest_checkpoint(folder)
    flags = ["--resume", checkpoint] if checkpoint else run.flags()
    command = [sys.executable, run.script_path, *flags]

    log_path = os.path.join(folder, "log.txt")
    start = time.time()
    with open(log_path, "a") as log:
        offset = log.tell()
        log.write(f"== {time.strftime('%Y-%m-%d %H:%M:%S')} {shlex.join(command)}\n")
        log.flush()
        # A session of its own: a Ctrl-C on the terminal reaches only this runner, which passes one SIGINT on. Ray's
        # workers block SIGINT, and a child inherits the mask: unblock it while starting the script
        blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT, signal.SIGTERM])
        try:
            proc = subprocess.Popen(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)  # fmt: skip
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        returncode, interrupted = wait_for(proc, stop_path)
    seconds = round(time.time() - start, 1)
    with open(log_path) as f:
        f.seek(offset)
        output = f.read()

    # The run folder: from the final line "done: N steps in X s (S SPS); run folder DIR", else the newest with episodes
    done = re.findall(r"^done: .*\(([\d.]+) SPS\); run folder (.+)$", output, re.M)
    run_dir = os.path.join(folder, done[-1][1].strip()) if done else None
    if run_dir is None or not os.path.isfile(os.path.join(run_dir, "episodes.csv")):
        candidates = [os.path.dirname(p) for p in glob.glob(os.path.join(folder, "runs", "*", "episodes.csv"))]
        run_dir = max(candidates, key=os.path.getmtime) if candidates else None
    if returncode == 0 and run_dir is not None:
        score, episodes = last100(os.path.join(run_dir, "episodes.csv"))
        result = {**spec, "status": "finished", "run_dir": os.path.relpath(run_dir, folder), "last100": score,
                  "episodes": episodes, "seconds": seconds, "sps": float(done[-1][0]) if done else None,
                  "resumed": checkpoint is not None, "finished_at": time.strftime("%Y-%m-%d %H:%M:%S")}  # fmt: skip
        write_json(result_path, result)
        if os.path.exists(error_path):
            os.remove(error_path)
        return result
    if interrupted:  # it saved a checkpoint; the next invocation resumes it
        return {**spec, "status": "interrupted", "returncode": returncode}
    tail = output.splitlines()[-30:]
    error = {**spec, "status": "failed", "returncode": returncode, "seconds": seconds, "log": log_path,
             "log_tail": "\n".join(tail), "failed_at": time.strftime("%Y-%m-%d %H:%M:%S")}  # fmt: skip
    if returncode == 0:
        error["log_tail"] += "\n(exit code 0, but no runs/*/episodes.csv was written)"
    write_json(error_path, error)
    return error


def run_local(runs: list[Run], args: Args, on_outcome) -> None:
    """A pool of --jobs threads, each waiting on one script's process."""
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, run, args.results_dir) for run in runs]
        try:
            for future in as_completed(futures):
                on_outcome(future.result())
        except KeyboardInterrupt:
            print("\ninterrupted: the running scripts save a checkpoint and stop ...", flush=True)
            request_stop(runs, args.results_dir)
            for future in futures:
                future.cancel()
            raise  # the pool waits for the scripts on the way out


def run_ray(runs: list[Run], args: Args, on_outcome) -> None:
    """One Ray task per run; each task runs the script as a process on its node, exactly as the local backend does."""
    import logging

    import ray

    if __name__ != "__main__":  # send run_one's code with the task, so that workers need not import this module
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    if args.address:
        try:
            ray.init(address=args.address, log_to_driver=False, logging_level=logging.WARNING)
        except (ConnectionError, RuntimeError, ValueError) as e:
            fail(
                f"--address {args.address}: cannot connect to Ray ({type(e).__name__}: {str(e).splitlines()[0][:200]})"
            )
    else:
        ray.init(address="local", num_cpus=args.jobs, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING)  # fmt: skip
    signal.signal(signal.SIGTERM, stop_on_sigterm)  # ray.init replaced it with one that exits at once
    task = ray.remote(run_one).options(num_cpus=args.cpus_per_run, num_gpus=args.gpus_per_run, max_retries=0)
    pending = {task.remote(run, args.results_dir): run for run in runs}
    try:
        while pending:
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            run = pending.pop(ref)
            try:
                outcome = ray.get(ref)
            except ray.exceptions.RayError as e:  # the worker or its node died: record it like a failed script
                outcome = {**asdict(run), "flags": run.flags(), "status": "failed", "returncode": None,
                           "log_tail": f"Ray: {type(e).__name__}: {str(e)[-2000:]}"}  # fmt: skip
                os.makedirs(os.path.join(args.results_dir, run.name), exist_ok=True)
                write_json(os.path.join(args.results_dir, run.name, "error.json"), outcome)
            on_outcome(outcome)
    except KeyboardInterrupt:
        print("\ninterrupted: the running scripts save a checkpoint and stop ...", flush=True)
        request_stop(list(pending.values()), args.results_dir)
        ray.wait(list(pending), num_returns=len(pending), timeout=600)
        raise
    finally:
        ray.shutdown()


def stop_on_sigterm(signum, frame) -> None:
    """SIGTERM stops the grid as Ctrl-C does: the running scripts save a checkpoint."""
    raise KeyboardInterrupt


def describe(outcome: dict) -> str:
    """One line on a run's outcome."""
    status, name = outcome["status"], outcome["name"]
    score = outcome.get("last100")
    score = "no episode" if score is None else f"last-100 return {score:.1f} over {outcome.get('episodes')} episodes"
    if status == "skipped":
        return f"skipped   {name}: finished earlier, {score}"
    if status == "finished":
        resumed = ", resumed from its checkpoint" if outcome.get("resumed") else ""
        return f"finished  {name}: {score}, {outcome['seconds']:.0f} s{resumed}"
    if status == "failed":
        last = [line for line in outcome.get("log_tail", "").splitlines() if line.strip()]
        return f"FAILED    {name}: exit {outcome['returncode']}: {last[-1][:200] if last else ''}"
    return f"{status:<9} {name}"


def split_flag_values(argv: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Take the values of --variants and --extra out of argv. They are flags themselves ("--kl-target 0.01"), which
    tyro would read as options: a value runs up to the next flag of this runner."""
    names = [name.replace("_", "-") for name in Args.__dataclass_fields__]
    ours = {f"--{name}" for name in names} | {f"--no-{name}" for name in names} | {"-h", "--help"}
    rest, taken, i = [], {}, 0
    while i < len(argv):
        flag, _, inline = argv[i].partition("=")
        if flag in ("--variants", "--extra"):
            values = [inline] if "=" in argv[i] else []
            i += 1
            while i < len(argv) and argv[i].partition("=")[0] not in ours and (flag == "--variants" or not values):
                values.append(argv[i])
                i += 1
            taken[flag] = values
        else:
            rest.append(argv[i])
            i += 1
    return rest, taken


def parse_args(argv: list[str]) -> Args:
    rest, taken = split_flag_values(argv)
    args = tyro.cli(Args, args=rest, description=__doc__)
    if "--variants" in taken:
        args.variants = taken["--variants"]
    if "--extra" in taken:
        args.extra = " ".join(taken["--extra"])
    return args


def main(argv: Optional[list[str]] = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    args.results_dir = os.path.abspath(args.results_dir)
    runs = build_grid(args)
    if not runs:
        fail("the grid is empty")
    if args.backend == "ray" and importlib.util.find_spec("ray") is None:
        fail("--backend ray needs ray: pip install -r requirements-ray.txt")
    finished = {r.name for r in runs if os.path.exists(os.path.join(args.results_dir, r.name, "result.json"))}
    if args.dry_run:
        for run in runs:
            state = "finished" if run.name in finished else "to run"
            print(f"{run.name}  [{state}]  {shlex.join([run.script, *run.flags()])}")
        print(f"{len(runs)} runs, {len(finished)} finished, in {args.results_dir}")
        return
    os.makedirs(args.results_dir, exist_ok=True)
    where = f"{args.jobs} at a time here" if args.backend == "local" else f"on Ray ({args.address or 'local'})"
    print(f"{len(runs)} runs ({len(finished)} finished earlier), {where}; results in {args.results_dir}", flush=True)

    outcomes = []

    def on_outcome(outcome: dict) -> None:
        outcomes.append(outcome)
        print(f"[{len(outcomes):>{len(str(len(runs)))}}/{len(runs)}] {describe(outcome)}", flush=True)
        run = next(r for r in runs if r.name == outcome["name"])
        if outcome["status"] == "skipped" and outcome.get("flags") not in (None, run.flags()):
            print(f"  warning: it finished with other flags ({shlex.join(outcome['flags'])}); kept. A new"
                  f" --results-dir (or --extra/--tags) runs the new ones", flush=True)  # fmt: skip

    signal.signal(signal.SIGTERM, stop_on_sigterm)
    for run in runs:  # stop files of an earlier interrupted invocation
        if os.path.exists(os.path.join(args.results_dir, run.name, "stop")):
            os.remove(os.path.join(args.results_dir, run.name, "stop"))
    for run in runs:  # finished runs are reported here and go to no backend: Ray is not even started for them
        if run.name in finished:
            on_outcome(run_one(run, args.results_dir))
    interrupted = False
    try:
        todo = [run for run in runs if run.name not in finished]
        if todo:
            (run_ray if args.backend == "ray" else run_local)(todo, args, on_outcome)
    except KeyboardInterrupt:
        interrupted = True

    counts = {s: sum(o["status"] == s for o in outcomes) for s in ("finished", "skipped", "failed")}
    print(f"\nsummary: {len(runs)} runs: {counts['finished']} finished now, {counts['skipped']} finished earlier,"
          f" {counts['failed']} failed, {len(runs) - len(outcomes)} not done")  # fmt: skip
    for outcome in outcomes:
        if outcome["status"] == "failed":
            print(f"  {describe(outcome)}\n    see {os.path.join(args.results_dir, outcome['name'], 'error.json')}")
    if interrupted:
        print("interrupted: run the same command again to resume")
        sys.exit(130)
    print(f"tables and plots: python -m benchmark.report {args.results_dir}")
    if counts["failed"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
