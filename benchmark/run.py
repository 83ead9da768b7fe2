"""Run a grid of training runs, scripts x tasks x seeds x flag variants, each in its own process, here or on Ray.

    python -m benchmark.run --preset table1 --dry-run          # the 231 runs of Table 1, those done, the time left
    python -m benchmark.run --preset table1                    # Table 1: 11 objectives x 7 tasks x 3 seeds, 1M steps
    python -m benchmark.run --preset figure3 --env-ids Hopper-v4 --seeds 1 2 --total-timesteps 300000
    python -m benchmark.run --scripts my_ppo.py --env-ids Hopper-v4 Walker2d-v4 --seeds 1 2 \\
        --variants "" "--objective kl-adaptive --kl-target 0.01"
    python -m benchmark.run --preset smoke --backend ray --address HEAD:6379   # pip install -r requirements-ray.txt

Any script that follows the project's CLI works (--env-id, --seed, --total-timesteps, --save-model, --resume, and a
runs/*/episodes.csv), a copy of your own included.

A run is its script, task, seed, total timesteps and flags: runs that differ in any of them get different folders,
RESULTS_DIR/{script}__{env_id}__{tag}__{total timesteps}__{seed}__{hash of the flags}/, holding spec.json (what it
runs), log.txt (all its output), attempts.jsonl (one line per start: host, commit, exit code, seconds), runs/ (the
script's own folder, with --save-model) and at the end result.json (finished, with its provenance) or error.json.

A lock in each run folder keeps one process per run: a run held by a live process (another runner's, or a training
process that outlived its runner) is skipped and said so; a lock left by a dead one is taken over. The training
process holds the lock with its runner and gets SIGTERM when its runner dies (it saves a checkpoint and stops), so
killing a runner or a Ray worker leaves no training behind.

Run the same command again and it carries on: finished runs are skipped, unfinished ones resume from their last
checkpoint with --resume, failed ones are tried again; within one call a failed run is retried --retries times.
Ctrl-C (or SIGTERM) asks each running script to save a checkpoint and stop. Exit code: 0 when no run failed, 1 when
some failed, 2 for bad input, 130 when interrupted. A runner in the background (nohup ... &) prints its pid first:
stop it with `kill -INT PID`. (A `kill -INT "$(pgrep -f PATTERN)"` in a script fails when PATTERN also matches the
shell running it: pgrep then prints two pids, which kill refuses as one argument.)

Each finished run becomes a row of the grid's results table, benchmark/results/{grid}.csv (score, episodes, flags,
provenance), and about 100 points of its learning curve in benchmark/results/{grid}_curves.csv; both are meant to be
committed. `python -m benchmark.report benchmark/results/{grid}.csv` makes the tables and plots from them alone.
"""

import contextlib
import csv
import ctypes
import fcntl
import glob
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import platform
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, replace
from typing import Literal, Optional

import tyro

from benchmark.presets import PRESETS, Method

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_TABLES = os.path.join(ROOT, "benchmark", "results")
# Columns of a grid's results table, one row per finished run. commit: HEAD as the run last started; dirty: whether
# the run's script, or the env module its env id names (module:Name, as humanoid_flagrun.py), then differed from that
# commit (edited, staged, or not committed at all). Changes elsewhere, these tables included, do not count: those two
# alone decide a run's numbers (the rows finished by 2026-12-02 were written when any changed tracked file set it;
# those finished by 2026-12-07 looked at the script alone). script_sha256: the script's hash as the run last started.
# score: the mean return of the last 100 episodes (§6.1, Table 6); score_all: of every episode of training (Table 2's
# "average reward per episode over the entire training period"; empty in rows finished before 2026-12-03)
COLUMNS = ["name", "script", "tag", "label", "flags", "env_id", "seed", "total_timesteps", "score", "score_all",
           "episodes", "commit", "dirty", "script_sha256", "script_versions", "wall_s", "sps", "attempts",
           "finished_at", "host", "cpu", "python", "torch", "gymnasium", "mujoco", "ale_py", "numpy",
           "args"]  # fmt: skip
CURVE_COLUMNS = ["name", "step", "return_last100"]
PACKAGES = ["torch", "gymnasium", "mujoco", "ale-py", "numpy"]
CURVE_POINTS = 100


@dataclass
class Args:
    preset: Optional[str] = None
    """a grid of the paper (benchmark/presets.py): table1 (the 11 objectives of Table 1 x 7 MuJoCo tasks x 3 seeds),
    figure3 (PPO, TRPO, vanilla PG, A2C x 7 tasks x 3 seeds), atari (ppo_atari.py on Table 6 games, 10M steps),
    smoke (2 runs of seconds). --scripts, --tags, --env-ids, --seeds and --total-timesteps scale it down"""
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
    """names of the --variants in folder names and reports, one each (made from the flags when not given); with a
    preset, the subset of its methods to run, e.g. --tags clip-0.2 none"""
    extra: str = ""
    """flags for every run, after the variant's, e.g. "--num-steps 512"; they become part of every tag"""
    grid: Optional[str] = None
    """name of the results table, benchmark/results/{grid}.csv (default: the preset's name; without a preset or
    --grid, the table goes to RESULTS_DIR/results.csv, which is not committed)"""
    results_dir: str = os.path.join(ROOT, "benchmark", "out")
    """where each run gets its folder"""
    tables_dir: str = RESULTS_TABLES
    """where the results tables of named grids go"""
    backend: Literal["local", "ray"] = "local"
    """local: a pool of --jobs processes on this machine. ray: one Ray task per run, on --address"""
    jobs: int = os.cpu_count() or 1
    """runs at a time on the local backend, and the CPUs of the Ray instance started here; one per core, as each
    script uses one torch thread"""
    retries: int = 2
    """times a failed run (or one whose Ray worker died) is started again within one call, resuming from its
    checkpoint where there is one. A run that exits with code 2 (bad flags) is not retried"""
    address: Optional[str] = None
    """the Ray cluster: "auto" for the one `ray start` runs on this machine, HOST:6379 or "ray://HOST:10001" for a
    remote one. Unset: start a local Ray instance with --jobs CPUs. The repo reaches the workers through Ray (its
    working_dir), so nodes need only the Python environment, not a copy of the repo or a shared filesystem"""
    worker_dir: Optional[str] = None
    """on the Ray backend: where each worker keeps its run folders (default: --results-dir, on that node's disk).
    Finished runs come back to --results-dir on this machine in any case"""
    cpus_per_run: float = 1.0
    """CPUs that Ray reserves for each run"""
    gpus_per_run: float = 0.0
    """GPUs that Ray reserves for each run (e.g. 0.25 to share one GPU among four Atari runs)"""
    dry_run: bool = False
    """print the grid: each run's state and command, the runs done, and an estimate of the wall time left"""


@dataclass(frozen=True)
class Run:
    """One training run of the grid: a script with flags on one task and seed, and where it came from."""

    name: str
    script: str
    """the script as given on the command line or in the preset"""
    script_path: str
    """its absolute path"""
    env_id: str
    seed: int
    tag: str
    label: str
    """the algorithm's name in plots"""
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


def run_name(script: str, env_id: str, tag: str, total_timesteps: Optional[int], seed: int, variant: str) -> str:
    """The run's folder: readable fields, then a hash of its identity (script, task, seed, steps, flags), so that runs
    that differ in any of them never share a folder, even under one tag."""
    stem = os.path.splitext(os.path.basename(script))[0]
    identity = json.dumps([stem, env_id, seed, total_timesteps, shlex.split(variant)])
    digest = hashlib.sha256(identity.encode()).hexdigest()[:8]
    return f"{stem}__{env_id}__{tag}__{total_timesteps or 'default'}__{seed}__{digest}"


def resolve_script(script: str) -> Optional[str]:
    """A path as given (relative to the working directory), else a script at the top of the repo."""
    for candidate in (os.path.abspath(script), os.path.join(ROOT, script)):
        if os.path.isfile(candidate):
            return candidate
    return None


def grid_methods(args: Args) -> list[Method]:
    """The methods of the grid: a preset's (or the subset --tags names), or --scripts x --variants."""
    if args.preset is None:
        variants = args.variants if args.variants is not None else [""]
        if args.tags is not None and len(args.tags) != len(variants):
            fail(f"--tags gives {len(args.tags)} names for {len(variants)} --variants")
        tags = args.tags or [tag_of(v) for v in variants]
        for tag in tags:
            if not re.fullmatch(r"[A-Za-z0-9.+-]+(_[A-Za-z0-9.+-]+)*", tag):
                fail(f"tag {tag!r}: use letters, digits, '.', '+', '-' and single '_'")
        return [Method(s, t, v) for s in args.scripts or ["ppo_continuous.py"] for t, v in zip(tags, variants)]
    if args.preset not in PRESETS:
        fail(f"unknown preset {args.preset!r}; the presets are {', '.join(PRESETS)}")
    if args.variants is not None:
        fail(f"--preset {args.preset} has its own variants; use --variants without a preset")
    methods = PRESETS[args.preset].methods
    if args.tags is not None:
        unknown = sorted(set(args.tags) - {m.tag for m in methods})
        if unknown:
            fail(f"--preset {args.preset} has no method tagged {unknown[0]!r}; its tags: "
                 f"{' '.join(dict.fromkeys(m.tag for m in methods))}")  # fmt: skip
        methods = [m for m in methods if m.tag in args.tags]
    if args.scripts is None:
        return methods
    first = methods[0].script
    return [
        replace(m, script=s)
        for s in args.scripts
        for m in methods
        if m.script == s or (m.script == first and s not in {n.script for n in methods})
    ]


def known_env_id(env_id: str) -> bool:
    """A gymnasium id (ALE's registered too), or an ALE game name such as `breakout` that ppo_atari.py takes."""
    import gymnasium as gym

    if ":" in env_id:  # module:Id registers itself when made; the script says so if it is wrong
        return True
    try:
        import ale_py

        gym.register_envs(ale_py)
        roms = set(ale_py.roms.get_all_rom_ids())
    except ImportError:
        roms = set()
    return env_id in gym.registry or env_id.lower().replace("-", "_") in roms


def build_grid(args: Args) -> list[Run]:
    """Every (seed, task, method) of the grid, in that order, as a Run with its folder name: seed by seed, so that a
    long grid stopped part way has whole tables of fewer seeds rather than some methods and none of the rest."""
    preset = PRESETS[args.preset] if args.preset in PRESETS else None
    env_ids = args.env_ids or (preset.env_ids if preset else ["Hopper-v4"])
    seeds = args.seeds or (preset.seeds if preset else [1, 2, 3])
    steps = args.total_timesteps or (preset.total_timesteps if preset else None)
    runs, methods = [], grid_methods(args)
    for method in methods:
        if resolve_script(method.script) is None and not args.dry_run:
            fail(f"script {method.script} not found (looked in {os.getcwd()} and {ROOT})")
    for seed in seeds:
        for env_id in env_ids:
            for method in methods:
                tag = method.tag if not args.extra else f"{method.tag}_{tag_of(args.extra)}"
                label = method.label if method.label and not args.extra else ""
                variant = f"{method.flags} {args.extra}".strip()
                name = run_name(method.script, env_id, tag, steps, seed, variant)
                path = resolve_script(method.script) or method.script
                runs.append(Run(name, method.script, path, env_id, seed, tag, label, variant, steps))
    names = [run.name for run in runs]
    if len(set(names)) != len(names):
        fail(f"two runs of the grid are the same run: {sorted(n for n in names if names.count(n) > 1)[0]}")
    return runs


def validate(args: Args) -> None:
    """Bad input fails here, in a second, with one line."""
    if args.jobs < 1 or args.retries < 0:
        fail(f"--jobs must be at least 1 and --retries at least 0, got {args.jobs} and {args.retries}")
    if args.total_timesteps is not None and args.total_timesteps < 1:
        fail(f"--total-timesteps must be positive, got {args.total_timesteps}")
    if args.grid is not None and not re.fullmatch(r"[A-Za-z0-9_.-]+", args.grid):
        fail(f"--grid {args.grid!r}: use letters, digits, '.', '-' and '_'")
    for env_id in args.env_ids or []:
        if not known_env_id(env_id):
            fail(f"--env-ids: unknown task {env_id!r} (not a gymnasium id nor an ALE game)")
    if args.backend == "ray" and importlib.util.find_spec("ray") is None:
        fail("--backend ray needs ray: pip install -r requirements-ray.txt")
    if args.dry_run:
        return
    for flag, folder in (("--results-dir", args.results_dir), ("--tables-dir", args.tables_dir)):
        probe = os.path.join(folder, f".write-test-{os.getpid()}")  # this process's own: two runners may start at once
        try:
            os.makedirs(folder, exist_ok=True)
            with open(probe, "w"):
                pass
            os.remove(probe)
        except OSError as e:
            fail(f"{flag} {folder}: cannot write there ({e.strerror or type(e).__name__})")


# Provenance: which code, on which machine, with which packages


def sha256_of(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def env_module(script_path: str, env_id: str) -> Optional[str]:
    """The file of the module that an env id of the form module:Name imports from beside the script (gymnasium's
    make imports it, and the script's folder is on the path): humanoid_flagrun.py for §6.3's tasks. None for an env
    of an installed package."""
    if ":" not in env_id:
        return None
    path = os.path.join(os.path.dirname(os.path.abspath(script_path)), *env_id.split(":")[0].split(".")) + ".py"
    return path if os.path.isfile(path) else None


def git_state(script_path: str, env_id: str = "") -> dict:
    """The repo's commit, and whether the run's script or its env module (env_module) differs from it (dirty):
    edited, staged, or not in the commit at all (untracked or ignored). The scripts import nothing else from the repo,
    so these two alone decide a run's arithmetic and nothing else counts: not the results tables this runner writes,
    nor the docs, tests or other scripts. dirty is None for a script outside the repo (no commit holds it; its sha256
    says which it was), or with no git."""

    def git(*words: str) -> str:
        return subprocess.run(["git", *words], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD") or None
        path = os.path.abspath(script_path)
        if commit is None or os.path.commonpath([path, ROOT]) != ROOT:
            return {"commit": commit, "dirty": None}
        paths = [path, *filter(None, [env_module(path, env_id)])]
        return {"commit": commit, "dirty": bool(git("status", "--porcelain", "--ignored", "--", *paths))}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def machine_state() -> dict:
    """Host, CPU model and the versions of the packages that decide a run's numbers (of this node)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    state = {"host": socket.gethostname(), "cpu": cpu, "python": platform.python_version()}
    for package in PACKAGES:
        try:
            state[package.replace("-", "_")] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            state[package.replace("-", "_")] = None
    return state


def saved_args(checkpoint: Optional[str]) -> Optional[dict]:
    """The flags a run actually used: the ones its checkpoint holds (on resume the scripts take the checkpoint's)."""
    if checkpoint is None:
        return None
    try:
        import torch

        return dict(torch.load(checkpoint, weights_only=True, map_location="cpu")["args"])
    except Exception:  # a script of your own may save something else, or nothing torch can read
        return None


# Files, locks and processes of one run


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


def read_attempts(folder: str) -> list[dict]:
    """A run folder's attempts.jsonl: one dict per finished start (none before the first ends)."""
    path = os.path.join(folder, "attempts.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_episodes(csv_path: str) -> tuple[list[int], list[float]]:
    """The global step at the end of each episode, and its return."""
    with open(csv_path) as f:
        rows = [line.split(",") for line in f.read().splitlines()[1:] if line]
    return [int(float(row[0])) for row in rows], [float(row[1]) for row in rows]


def take_lock(folder: str, patience: float = 0.5) -> tuple[Optional[int], str]:
    """An exclusive flock on folder/lock: (its fd, the note a dead holder left) or (None, the live holder's note).
    The kernel drops a flock when the last process holding it ends, so a lock never outlives its holders.

    A process this runner forks in another thread (a script, git) holds a copy of every fd open at that moment until
    it execs, which closes them: one run's lock, just released, can look held for those milliseconds. So a busy lock
    is tried again for `patience` seconds before it counts as another runner's (which holds it for the whole run)."""
    fd = os.open(os.path.join(folder, "lock"), os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + patience
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                note = os.pread(fd, 4096, 0).decode(errors="replace").strip()
                os.close(fd)
                return None, note or "another process"
            time.sleep(0.01)
    return fd, os.pread(fd, 4096, 0).decode(errors="replace").strip()  # a note left means its writer died holding it


def write_note(fd: int, note: str) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, note.encode(), 0)


def die_with_parent(parent: int):
    """preexec_fn: SIGTERM this child when the thread that started it dies (Linux's PR_SET_PDEATHSIG), so a killed
    runner or Ray worker leaves no training process behind; the scripts save a checkpoint on SIGTERM."""

    prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform == "linux" else None  # loaded before the fork

    def set_signal() -> None:
        if prctl is not None:
            prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the line above took effect
            os._exit(1)

    return set_signal


def interrupt(proc: subprocess.Popen) -> int:
    """One SIGINT: the scripts finish the iteration, save a checkpoint and exit. A second one would kill them."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def wait_for(proc: subprocess.Popen, stop_path: str) -> tuple[int, bool]:
    """Wait for the script; stop it with a checkpoint when the file stop_path appears (the local runner writes it when
    it is interrupted). Returns the exit code and whether it was stopped."""
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


def run_one(run: Run, results_dir: str, code: dict, script_path: Optional[str] = None) -> dict:
    """Run (or resume, or skip) one run of the grid in its folder, and return what happened to it.

    status: skipped (finished earlier), finished, failed, interrupted, not started (stopped before its turn), or busy
    (another live process holds its lock). `code` is the driver's git state of the run's script and env module
    (git_state), which a Ray worker, having no .git, records as it is; `script_path` where the script lies here.
    """
    folder = os.path.join(results_dir, run.name)
    result_path = os.path.join(folder, "result.json")
    if os.path.exists(result_path):  # finished: never rerun
        return {**read_json(result_path), "status": "skipped"}
    stop_path = os.path.join(folder, "stop")
    if os.path.exists(stop_path):  # the runner was interrupted before this run's turn came
        return {"name": run.name, "status": "not started"}
    os.makedirs(folder, exist_ok=True)
    lock, note = take_lock(folder)
    if lock is None:
        return {"name": run.name, "status": "busy", "holder": note}
    try:
        if os.path.exists(result_path):  # it finished while we waited for the lock
            return {**read_json(result_path), "status": "skipped"}
        return run_locked(run, folder, code, script_path or run.script_path, lock, note)
    finally:
        write_note(lock, "")  # released cleanly: no note for the next holder
        os.close(lock)


def run_locked(run: Run, folder: str, code: dict, script_path: str, lock: int, dead_holder: str) -> dict:
    """run_one's work, with the run's lock held."""
    spec = {**asdict(run), "flags": run.flags()}
    write_json(os.path.join(folder, "spec.json"), spec)
    checkpoint = latest_checkpoint(folder)
    command = [sys.executable, script_path, *(["--resume", checkpoint] if checkpoint else run.flags())]
    if os.path.isdir(os.path.join(ROOT, ".git")):  # the script as this attempt starts (a Ray worker has no .git)
        code = git_state(script_path, run.env_id)
    machine, sha = machine_state(), sha256_of(script_path)
    log_path = os.path.join(folder, "log.txt")
    start = time.time()
    with open(log_path, "a") as log:
        offset = log.tell()
        if dead_holder:
            log.write(f"== took over the lock of a dead process ({dead_holder})\n")
        log.write(f"== {time.strftime('%Y-%m-%d %H:%M:%S')} on {machine['host']}: {shlex.join(command)}\n")
        log.flush()
        # A session of its own: a Ctrl-C on the terminal reaches only this runner, which passes one SIGINT on. Ray's
        # workers block SIGINT, and a child inherits the mask: unblock it while starting the script. The child
        # inherits the lock's fd, so the lock stays held for as long as the training runs, whatever happens to us
        blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT, signal.SIGTERM])
        try:
            proc = subprocess.Popen(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT, pass_fds=(lock,),
                                    env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
                                    preexec_fn=die_with_parent(os.getpid()))  # fmt: skip
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        write_note(lock, f"runner pid {os.getpid()}, training pid {proc.pid}, on {machine['host']} since "
                         f"{time.strftime('%Y-%m-%d %H:%M:%S')}")  # fmt: skip
        returncode, interrupted = wait_for(proc, stop_path=os.path.join(folder, "stop"))
    seconds = round(time.time() - start, 3)  # a run of a few steps can take under 0.05 s
    attempt = {"started_at": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start)), "seconds": seconds,
               "returncode": returncode, "resumed_from": checkpoint and os.path.relpath(checkpoint, folder),
               "script": script_path, **code, "script_sha256": sha, **machine}  # fmt: skip
    with open(os.path.join(folder, "attempts.jsonl"), "a") as f:
        f.write(json.dumps(attempt) + "\n")
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
        attempts = read_attempts(folder)
        _, returns = read_episodes(os.path.join(run_dir, "episodes.csv"))
        args = saved_args(os.path.join(run_dir, "checkpoint.pt"))
        steps = (args or {}).get("total_timesteps") or run.total_timesteps
        wall = sum(a["seconds"] for a in attempts)
        result = {
            **spec, "status": "finished", "run_dir": os.path.relpath(run_dir, folder),
            "last100": sum(returns[-100:]) / len(returns[-100:]) if returns else None, "episodes": len(returns),
            "score_all": sum(returns) / len(returns) if returns else None,
            "args": args, "total_timesteps_run": steps, "wall_s": round(wall, 1), "attempts": len(attempts),
            "sps": round(steps / wall, 1) if steps and wall else None, "resumed": checkpoint is not None,
            "script_versions": sorted({a["script_sha256"] for a in attempts}),
            "finished_at": time.strftime("%Y-%m-%d %H:%M:%S"), **code, "script_sha256": sha, **machine,
        }  # fmt: skip
        write_json(os.path.join(folder, "result.json"), result)
        if os.path.exists(os.path.join(folder, "error.json")):
            os.remove(os.path.join(folder, "error.json"))
        return result
    if interrupted or returncode in (128 + signal.SIGINT, 128 + signal.SIGTERM):  # a checkpoint was saved
        return {**spec, "status": "interrupted", "returncode": returncode}
    tail = output.splitlines()[-30:]
    error = {**spec, "status": "failed", "returncode": returncode, "seconds": seconds, "log": log_path,
             "log_tail": "\n".join(tail), "failed_at": time.strftime("%Y-%m-%d %H:%M:%S")}  # fmt: skip
    if returncode == 0:
        error["log_tail"] += "\n(exit code 0, but no runs/*/episodes.csv was written)"
    write_json(os.path.join(folder, "error.json"), error)
    return error


# The Ray backend: the code travels with Ray, the results come back through it


def folder_files(folder: str) -> dict[str, bytes]:
    """Every file of a run folder by relative path, but its lock and stop files."""
    files = {}
    for base, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(base, name)
            if name not in ("lock", "stop") and not name.endswith(".tmp"):
                with open(path, "rb") as f:
                    files[os.path.relpath(path, folder)] = f.read()
    return files


def put_files(folder: str, files: dict[str, bytes]) -> None:
    """Write files into a run folder (each to a temporary name, then renamed), skipping those already identical."""
    for relpath, data in files.items():
        path = os.path.join(folder, relpath)
        if os.path.exists(path):
            with open(path, "rb") as f:
                if f.read() == data:
                    continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)


def ray_task(run: Run, script: str, worker_dir: str, code: dict, seed_files: dict[str, bytes]) -> dict:
    """One run on a Ray worker, in the copy of the repo that Ray unpacked as its working directory. A checkpoint the
    driver holds (seed_files) starts the run where the worker has none; everything the run wrote returns with it."""
    folder = os.path.join(worker_dir, run.name)
    os.makedirs(folder, exist_ok=True)
    if seed_files and latest_checkpoint(folder) is None:
        put_files(folder, seed_files)
    script_path = os.path.join(os.getcwd(), script)
    outcome = run_one(run, worker_dir, code, script_path)
    files = folder_files(folder) if outcome["status"] != "busy" else {}
    return {**outcome, "files": files, "worker": {"host": socket.gethostname(), "script_path": script_path}}


class LocalPool:
    """Runs in a pool of --jobs threads, each waiting on one script's process."""

    def __init__(self, args: Args, codes: dict[tuple[str, str], dict]):
        self.args, self.codes, self.pool, self.pending = args, codes, ThreadPoolExecutor(args.jobs), {}

    def submit(self, run: Run) -> None:
        code = self.codes[run.script_path, run.env_id]
        self.pending[self.pool.submit(run_one, run, self.args.results_dir, code)] = run

    def wait(self) -> None:
        while not wait(self.pending, timeout=0.5, return_when=FIRST_COMPLETED).done:
            handle_signals()

    def next_outcome(self) -> tuple[Run, dict]:
        future = next(f for f in self.pending if f.done())
        return self.pending.pop(future), future.result()

    def stop(self) -> list[dict]:
        request_stop(list(self.pending.values()), self.args.results_dir)
        for future in self.pending:
            future.cancel()
        self.pool.shutdown(wait=True)  # the scripts save their checkpoints on the way out
        # A run that finished just as the signal came (its result.json written, its thread not yet done) is finished
        return [f.result() for f in self.pending if not f.cancelled() and f.exception() is None]

    def close(self) -> None:
        self.pool.shutdown(wait=True)


class RayPool:
    """One Ray task per run; each runs the script as a process on its node exactly as the local backend does, and
    sends back the run's files, so the driver's results folder fills up with or without a shared filesystem."""

    def __init__(self, args: Args, codes: dict[tuple[str, str], dict]):
        import logging

        import ray

        self.ray, self.args, self.codes, self.pending = ray, args, codes, {}
        # The repo goes to every worker through Ray (working_dir: ROOT, minus what is large and not code)
        runtime_env = {"working_dir": ROOT, "excludes": ["benchmark/out", "runs", "wandb", "*.pt"]}
        options = dict(runtime_env=runtime_env, log_to_driver=False, logging_level=logging.WARNING)
        try:
            if args.address:
                ray.init(address=args.address, **options)
            else:
                ray.init(address="local", num_cpus=args.jobs, include_dashboard=False, **options)
        except (ConnectionError, RuntimeError, ValueError) as e:
            fail(f"--address {args.address}: cannot start Ray ({type(e).__name__}: {str(e).splitlines()[0][:200]})")
        signal.signal(signal.SIGTERM, stop_on_sigterm)  # ray.init replaced it with one that exits at once
        from benchmark import (
            run as this,
        )  # by reference: the workers import it from working_dir, even when we are __main__

        self.task = ray.remote(this.ray_task).options(num_cpus=args.cpus_per_run, num_gpus=args.gpus_per_run,
                                                 max_retries=0)  # fmt: skip

    def submit(self, run: Run) -> None:
        folder = os.path.join(self.args.results_dir, run.name)
        seed_files = folder_files(folder) if latest_checkpoint(folder) else {}
        worker_dir = self.args.worker_dir or self.args.results_dir
        script = os.path.relpath(run.script_path, ROOT)  # where the script lies in the repo, and so in working_dir
        code = self.codes[run.script_path, run.env_id]
        self.pending[self.task.remote(run, script, worker_dir, code, seed_files)] = run

    def wait(self) -> None:
        while not self.ray.wait(list(self.pending), num_returns=1, timeout=0.5)[0]:
            handle_signals()

    def next_outcome(self) -> tuple[Run, dict]:
        (ref,), _ = self.ray.wait(list(self.pending), num_returns=1)
        run = self.pending.pop(ref)
        try:
            outcome = self.ray.get(ref)
        except self.ray.exceptions.RayError as e:  # the worker or its node died: a failure, which may be retried
            return run, {**asdict(run), "flags": run.flags(), "status": "failed", "returncode": None,
                         "log_tail": f"Ray: {type(e).__name__}: {str(e)[-2000:]}"}  # fmt: skip
        folder = os.path.join(self.args.results_dir, run.name)
        os.makedirs(folder, exist_ok=True)
        put_files(folder, outcome.pop("files"))
        return run, outcome

    def stop(self) -> list[dict]:
        for ref in self.pending:  # a KeyboardInterrupt in the task: the script saves a checkpoint on the worker's disk
            self.ray.cancel(ref)
        ready, _ = self.ray.wait(list(self.pending), num_returns=len(self.pending), timeout=600)
        finished = []  # a task that had finished before its cancel came: its files and outcome, as next_outcome's
        for ref in ready:
            with contextlib.suppress(self.ray.exceptions.RayError):
                outcome = self.ray.get(ref)
                put_files(os.path.join(self.args.results_dir, outcome["name"]), outcome.pop("files"))
                finished.append(outcome)
        self.close()
        return finished

    def close(self) -> None:
        self.ray.shutdown()


def handle_signals() -> None:
    """Run the handler of a Ctrl-C or SIGTERM that has come, now. The kernel may give a signal to any of the runner's
    threads; Python runs its handler in the main thread, but when the signal lands on a worker thread, a main thread
    asleep in a wait is not woken for it (CPython 3.11), and a grid's wait lasts hours. pthread_sigmask runs the
    handlers of the signals that came, whichever thread took them."""
    signal.pthread_sigmask(signal.SIG_BLOCK, [])


def request_stop(runs: list[Run], results_dir: str) -> None:
    """Ask every run that is running or waiting its turn to stop: each gets a file named stop."""
    for run in runs:
        os.makedirs(os.path.join(results_dir, run.name), exist_ok=True)
        open(os.path.join(results_dir, run.name, "stop"), "w").close()


@contextlib.contextmanager
def interrupts_deferred():
    """Hold a Ctrl-C or SIGTERM back until the block ends, then stop the grid as it would have: a run's outcome is
    never half handled (taken from the pool but not yet in the results table)."""
    caught = []
    handlers = {s: signal.signal(s, lambda signum, _: caught.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        if caught:
            raise KeyboardInterrupt


def stop_on_sigterm(signum, frame) -> None:
    """SIGTERM stops the grid as Ctrl-C does: the running scripts save a checkpoint."""
    raise KeyboardInterrupt


# The grid's results table: one row per finished run, and its learning curve


def table_paths(args: Args) -> tuple[str, str]:
    """The results table and its curves file: benchmark/results/{grid}.csv for a named grid, else in RESULTS_DIR."""
    grid = args.grid or args.preset
    base = os.path.join(args.tables_dir, grid) if grid else os.path.join(args.results_dir, "results")
    return base + ".csv", base + "_curves.csv"


def result_row(result: dict) -> dict:
    """A finished run's result.json as a row of the results table."""
    args = result.get("args")
    row = {"score": result["last100"], "flags": result["variant"], "total_timesteps": result["total_timesteps_run"],
           "script": os.path.basename(result["script"]), "args": json.dumps(args, sort_keys=True) if args else "",
           "script_versions": len(result["script_versions"])}  # fmt: skip
    return {column: row.get(column, result.get(column)) for column in COLUMNS}


def curve_rows(name: str, steps: list[int], returns: list[float], total: int) -> list[dict]:
    """About 100 points of a learning curve: at each hundredth of the run, the mean return of the last (up to) 100
    episodes that ended by then, the paper's score as it stood at that step."""
    rows, ended = [], 0
    for k in range(1, CURVE_POINTS + 1):
        step = round(k * total / CURVE_POINTS)
        while ended < len(steps) and steps[ended] <= step:
            ended += 1
        if ended:
            recent = returns[max(0, ended - 100) : ended]
            rows.append({"name": name, "step": step, "return_last100": round(sum(recent) / len(recent), 4)})
    return rows


def upsert_rows(path: str, columns: list[str], rows: list[dict], names: set[str]) -> None:
    """Replace the rows of `names` in a CSV by `rows` (add them where new), under a lock so two runners on one table
    never lose each other's rows, and atomically so an interruption never leaves half a table."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        kept = []
        if os.path.exists(path):
            with open(path, newline="") as f:
                kept = [row for row in csv.DictReader(f) if row["name"] not in names]
        with open(path + ".tmp", "w", newline="") as f:
            writer = csv.DictWriter(f, columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(sorted(kept + rows, key=lambda row: row["name"]))  # in name order: stable diffs
        os.replace(path + ".tmp", path)


def record(result: dict, results_dir: str, table: str, curves: str) -> None:
    """Put a finished run into the results table and the curves file (or refresh it there)."""
    folder = os.path.join(results_dir, result["name"])
    steps, returns = read_episodes(os.path.join(folder, result["run_dir"], "episodes.csv"))
    upsert_rows(table, COLUMNS, [result_row(result)], {result["name"]})
    total = result["total_timesteps_run"] or (steps[-1] if steps else 0)
    upsert_rows(curves, CURVE_COLUMNS, curve_rows(result["name"], steps, returns, total), {result["name"]})


def recorded_runs(table: str, tables_dir: str) -> dict[str, tuple[dict, str]]:
    """Every run in the committed results tables, by name: its row and the table it is in (the grid's own, if there)."""
    recorded = {}
    for path in sorted(glob.glob(os.path.join(tables_dir, "*.csv"))) + [table]:  # the grid's own table wins
        if os.path.exists(path) and not path.endswith("_curves.csv"):
            with open(path, newline="") as f:
                recorded.update({row["name"]: (row, path) for row in csv.DictReader(f)})
    return recorded


def copy_recorded(row: dict, label: str, source: str, table: str, curves: str) -> None:
    """Put a run that another grid's table holds into this grid's table and curves file, under this grid's label."""
    points, source_curves = [], source[: -len(".csv")] + "_curves.csv"
    if os.path.exists(source_curves):
        with open(source_curves, newline="") as f:
            points = [point for point in csv.DictReader(f) if point["name"] == row["name"]]
    upsert_rows(table, COLUMNS, [{**row, "label": label}], {row["name"]})
    upsert_rows(curves, CURVE_COLUMNS, points, {row["name"]})


# The driver


def describe(outcome: dict) -> str:
    """One line on a run's outcome."""
    status, name = outcome["status"], outcome["name"]
    score = outcome.get("last100")
    score = "no episode" if score is None else f"last-100 return {score:.1f} over {outcome.get('episodes')} episodes"
    if status == "skipped":
        return f"skipped   {name}: finished earlier, {score}"
    if status == "finished":
        resumed = ", resumed from its checkpoint" if outcome.get("resumed") else ""
        return f"finished  {name}: {score}, {outcome['wall_s']:.0f} s{resumed}"
    if status == "busy":
        return f"busy      {name}: another live process holds its lock ({outcome['holder']}); left to it"
    if status == "failed":
        last = [line for line in outcome.get("log_tail", "").splitlines() if line.strip()]
        return f"FAILED    {name}: exit {outcome['returncode']}: {last[-1][:200] if last else ''}"
    return f"{status:<9} {name}"


def steps_done(folder: str) -> int:
    """The step a run's episodes have reached (0 before its first episode)."""
    csvs = sorted(glob.glob(os.path.join(folder, "runs", "*", "episodes.csv")))
    steps = read_episodes(csvs[-1])[0] if csvs else []
    return steps[-1] if steps else 0


def own_sps(folder: str) -> Optional[float]:
    """A run's own SPS so far, for a script none of whose runs has finished (a 10M-step Atari run that crosses
    sessions): the step its episodes reached over the seconds of its attempts (attempts.jsonl), plus, while another
    process runs it (its lock held), the time since that attempt started (log.txt's last "== <time> on" line). None
    before its first episode."""
    steps, seconds = steps_done(folder), sum(a["seconds"] for a in read_attempts(folder))
    lock, _ = take_lock(folder, patience=0) if os.path.isdir(folder) else (0, "")
    if lock is None and os.path.exists(os.path.join(folder, "log.txt")):  # held: an attempt is running now
        with open(os.path.join(folder, "log.txt")) as f:
            starts = re.findall(r"^== (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) on ", f.read(), re.M)
        seconds += time.time() - time.mktime(time.strptime(starts[-1], "%Y-%m-%d %H:%M:%S")) if starts else 0
    elif lock:
        os.close(lock)  # free: released at once, the dry run takes nothing
    return steps / seconds if steps and seconds > 0 else None


def estimate(runs: list[Run], args: Args, finished: set[str], table: str) -> str:
    """The wall time left, from the SPS (wall time included) of finished runs in the results tables: the same script
    and task on this CPU model first, then the same script and task anywhere, then the same script. A script with no
    finished run is timed by its runs in progress (own_sps): the run's own speed, else the median of its script's."""
    rows = [row for row, _ in recorded_runs(table, args.tables_dir).values() if row.get("sps")]
    cpu = machine_state()["cpu"]
    folders = {run.name: os.path.join(args.results_dir, run.name) for run in runs}
    progress = {run.name: own_sps(folders[run.name]) for run in runs if run.name not in finished}

    def sps(run: Run) -> tuple[Optional[float], bool]:
        """The speed to time the run by, and whether it comes from runs in progress."""
        script = os.path.basename(run.script)
        for keep in (lambda r: r["env_id"] == run.env_id and r["cpu"] == cpu, lambda r: r["env_id"] == run.env_id,
                     lambda r: True):  # fmt: skip
            found = [float(r["sps"]) for r in rows if r["script"] == script and keep(r)]
            if found:
                return statistics.median(found), False
        same = [progress[r.name] for r in runs if r.script == run.script and progress.get(r.name)]
        return progress.get(run.name) or (statistics.median(same) if same else None), True

    seconds, unknown, in_progress = 0.0, [], 0
    for run in runs:
        if run.name in finished:
            continue
        speed, from_progress = sps(run)
        if speed is None:
            unknown.append(run.name)
        else:
            seconds += ((run.total_timesteps or 1_000_000) - steps_done(folders[run.name])) / speed
            in_progress += from_progress
    left = len(runs) - len(finished)
    hours = seconds / args.jobs / 3600
    text = f"{len(runs)} runs, {len(finished)} finished, {left} to run"
    if left and len(unknown) == left:
        return text + "; no estimate of the time left: no run of their scripts has finished or made progress yet"
    if left:
        timed = left - len(unknown)
        source = ("the measured SPS of finished runs" if not in_progress else
                  "the SPS of runs in progress so far (their wall time over the steps they reached)"
                  if in_progress == timed else
                  f"the measured SPS of finished runs, and for {in_progress} of runs in progress so far")  # fmt: skip
        text += f"; about {hours:.1f} h left at {args.jobs} at a time, from {source}"
    if unknown:
        text += f" ({len(unknown)} runs not counted: no run of their script has finished or made progress yet)"
    return text


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
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(said):
            args = tyro.cli(Args, args=rest, description=__doc__)
    except SystemExit as e:
        if e.code == 0:  # --help
            print(said.getvalue(), end="")
            raise
        # tyro's boxed message, down to its one line that says what is wrong
        lines = [line.strip("│ ") for line in said.getvalue().splitlines()]
        reason = next((line for line in lines if line.startswith(("Error", "Unrecognized", "Missing"))), "")
        fail(f"bad flags in {shlex.join(rest)}: {reason or 'see --help'} (python -m benchmark.run --help lists them)")
    if "--variants" in taken:
        args.variants = taken["--variants"]
    if "--extra" in taken:
        args.extra = " ".join(taken["--extra"])
    return args


def main(argv: Optional[list[str]] = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    args.results_dir = os.path.abspath(args.results_dir)
    args.tables_dir = os.path.abspath(args.tables_dir)
    validate(args)
    runs = build_grid(args)
    if not runs:
        fail("the grid is empty")
    if args.backend == "ray":
        outside = [r.script for r in runs if os.path.commonpath([r.script_path, ROOT]) != ROOT]
        if outside:
            fail(f"--backend ray: {outside[0]} lies outside {ROOT}; put it there, so that Ray ships it to the workers")
    table, curves = table_paths(args)
    # Finished: a result.json in its folder, or a row in a committed results table (the folders may be on a lost
    # machine). Any grid's table counts: Figure 3's PPO runs are Table 1's clip-0.2 runs, trained once.
    recorded = recorded_runs(table, args.tables_dir)
    finished = {r.name for r in runs if os.path.exists(os.path.join(args.results_dir, r.name, "result.json"))}
    finished |= {r.name for r in runs} & set(recorded)
    if args.dry_run:
        for run in runs:
            state = "finished" if run.name in finished else "to run"
            print(f"{run.name}  [{state}]  {shlex.join([run.script, *run.flags()])}")
        print(estimate(runs, args, finished, table))
        return
    where = f"{args.jobs} at a time here" if args.backend == "local" else f"on Ray ({args.address or 'local'})"
    print(f"{len(runs)} runs ({len(finished)} finished earlier), {where}; run folders in {args.results_dir}, results"
          f" table {table}; runner pid {os.getpid()}", flush=True)  # fmt: skip

    outcomes = {}
    # each script's state with its env module's, as the grid starts
    codes = {key: git_state(*key) for key in {(run.script_path, run.env_id) for run in runs}}
    labels = {run.name: run.label for run in runs}  # a run shared by two grids goes by each grid's name for it

    def on_outcome(outcome: dict) -> None:
        outcomes[outcome["name"]] = outcome
        print(f"[{len(outcomes):>{len(str(len(runs)))}}/{len(runs)}] {describe(outcome)}", flush=True)
        if outcome["status"] in ("finished", "skipped") and not outcome.get("in_table_only"):
            record({**outcome, "label": labels[outcome["name"]]}, args.results_dir, table, curves)

    signal.signal(signal.SIGTERM, stop_on_sigterm)
    # A runner started with `&` by a non-interactive shell (nohup, a script) inherits SIGINT ignored, and Python then
    # keeps it so: without this line `kill -INT` of the pid printed above would stop nothing
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for run in runs:  # stop files of an earlier interrupted invocation
        if os.path.exists(os.path.join(args.results_dir, run.name, "stop")):
            os.remove(os.path.join(args.results_dir, run.name, "stop"))
    for run in runs:  # finished runs are recorded here and go to no backend: Ray is not even started for them
        if os.path.exists(os.path.join(args.results_dir, run.name, "result.json")):
            on_outcome(run_one(run, args.results_dir, codes[run.script_path, run.env_id]))
        elif run.name in finished:  # its row is all that is left of it: keep the row, copy it from another grid's
            row, source = recorded[run.name]
            if source != table:
                copy_recorded(row, run.label, source, table, curves)
            on_outcome({"name": run.name, "status": "skipped", "last100": float(row["score"]),
                        "episodes": row["episodes"], "in_table_only": True})  # fmt: skip
    todo = [run for run in runs if run.name not in finished]
    interrupted, tries = False, {run.name: 0 for run in todo}
    pool = (RayPool if args.backend == "ray" else LocalPool)(args, codes) if todo else None
    try:
        for run in todo:
            pool.submit(run)
        while pool and pool.pending:
            pool.wait()  # where a Ctrl-C lands; one that comes while a finished run is recorded waits for its end
            with interrupts_deferred():
                run, outcome = pool.next_outcome()
                retry = outcome["status"] == "failed" and outcome.get("returncode") != 2
                if retry and tries[run.name] < args.retries:
                    tries[run.name] += 1
                    print(f"  retry {tries[run.name]}/{args.retries} of {run.name}: {describe(outcome)}", flush=True)
                    pool.submit(run)
                else:
                    on_outcome(outcome)
        if pool:
            pool.close()
    except KeyboardInterrupt:
        interrupted = True
        print("\ninterrupted: the running scripts save a checkpoint and stop ...", flush=True)
        for outcome in pool.stop():  # runs that finished as the signal came go in the table; the stopped ones resume
            if outcome["status"] not in ("interrupted", "not started"):
                on_outcome(outcome)

    counts = {s: sum(o["status"] == s for o in outcomes.values()) for s in ("finished", "skipped", "failed", "busy")}
    print(f"\nsummary: {len(runs)} runs: {counts['finished']} finished now, {counts['skipped']} finished earlier,"
          f" {counts['failed']} failed, {counts['busy']} running in another process,"
          f" {len(runs) - len(outcomes)} not done")  # fmt: skip
    for outcome in outcomes.values():
        if outcome["status"] == "failed":
            print(f"  {describe(outcome)}\n    see {os.path.join(args.results_dir, outcome['name'], 'error.json')}")
    if interrupted:
        print("interrupted: run the same command again to resume")
        sys.exit(130)
    print(f"results table: {table}\ntables and plots: python -m benchmark.report {table}")
    if counts["failed"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
