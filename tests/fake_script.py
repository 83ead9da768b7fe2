"""A stand-in for a training script in the benchmark runner's tests: the real scripts' command line, none of the work.

It takes --env-id, --seed, --total-timesteps, --save-model and --resume CKPT as they do, writes runs/fake/episodes.csv
whose last 100 episodes average --score (all 200 half of it), a checkpoint file, and the final "done: ... run folder
DIR" line. Test-only flags make it misbehave: --fail (exit 1), --crash-once (save a checkpoint, exit 1; the resumed
run finishes), --sleep S (wait S seconds before finishing, unless FAKE_NO_SLEEP is set; SIGINT or SIGTERM saves a
checkpoint, after --save-seconds, and exits 128 + signal), and --kill-parent-once (SIGKILL the process that started
it, as Ray's memory monitor kills a worker, then wait). It lives in the repo so that Ray ships it to the workers with
the rest of the code.
"""

import os
import signal
import sys
import time

argv = sys.argv[1:]


def value(flag: str, default: str) -> str:
    return argv[argv.index(flag) + 1] if flag in argv else default


resume = value("--resume", "")
run_dir = os.path.dirname(resume) if resume else os.path.join("runs", "fake")
os.makedirs(run_dir, exist_ok=True)
with open(os.path.join(run_dir, "pids.txt"), "a") as f:
    f.write(f"{os.getpid()}\n")


def save_and_exit(signum, frame):
    time.sleep(float(value("--save-seconds", "0")))  # finishing the iteration in progress, as the real scripts do
    with open(os.path.join(run_dir, "checkpoint.pt"), "w") as f:
        f.write("not a torch checkpoint")
    sys.exit(128 + signum)


if "--fail" in argv:
    print("fake_script: something broke", file=sys.stderr)
    sys.exit(1)
if not resume and ("--crash-once" in argv or "--kill-parent-once" in argv):
    with open(os.path.join(run_dir, "checkpoint.pt"), "w") as f:
        f.write("not a torch checkpoint")
    if "--crash-once" in argv:
        sys.exit(1)
    signal.signal(signal.SIGTERM, save_and_exit)
    print("started", flush=True)
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(60)
    sys.exit(3)  # the runner should have ended this process long before
if float(value("--sleep", "0")) > 0 and not resume and not os.environ.get("FAKE_NO_SLEEP"):
    signal.signal(signal.SIGINT, save_and_exit)
    signal.signal(signal.SIGTERM, save_and_exit)
    print("started", flush=True)
    time.sleep(float(value("--sleep", "0")))

score, steps = float(value("--score", "1.0")), int(value("--total-timesteps", "2000"))
with open(os.path.join(run_dir, "episodes.csv"), "w") as f:
    f.write("global_step,episodic_return,episodic_length\n")
    for i in range(200):  # 200 episodes evenly over the run: the first 100 alternate -/+ 1, the last 100 score -/+ 1
        level = score if i >= 100 else 0.0
        f.write(f"{(i + 1) * steps // 200},{level - 1 if i % 2 else level + 1},10\n")
print(f"done: {steps} steps in 0.01 s (2000 SPS); run folder {run_dir}")
