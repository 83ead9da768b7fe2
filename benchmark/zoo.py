"""The trained policies of models/: per task one file, cut from a finished run's final checkpoint, that holds what the
policy needs to act (its weights and the flags it trained with) and where it came from (the run's row of a results
table: the script, its commit and sha256), then the score the script's own evaluation gives it, with that command.

    python -m benchmark.zoo export CHECKPOINT models/breakout.pt      # weights, flags, the run's table row
    python -m benchmark.zoo score models/breakout.pt --eval-episodes 30  # runs the evaluation, records it in the file
    python -m benchmark.zoo table models/*.pt                          # the rows of models/README.md's table
    python -m benchmark.zoo strip CHECKPOINT --out strip.png            # Figure 5: a humanoid turns to a new flag
    python -m benchmark.zoo clip models/humanoid-run.pt --out clip.webp  # §6.3: a few seconds of a humanoid policy
    python -m benchmark.zoo gait models/humanoid-run.pt                  # §6.3: how upright, what touches, its course

A file keeps no optimizer, RNG or env state, so it can be watched (--eval-checkpoint) but not resumed, and it holds
only tensors and plain Python values, so it loads with torch.load(path, weights_only=True).
"""

import csv
import glob
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
import tyro
from PIL import Image, ImageDraw, ImageFont  # Pillow: installed with matplotlib, which requirements.txt pins

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What each script's policy needs to act, besides its flags: the keys of its checkpoint a policy file keeps
# (the MuJoCo policy normalizes its observations by the statistics it trained with)
ACTS = {"ppo_atari.py": ("agent",), "ppo_continuous.py": ("agent", "obs_rms"), "ppo_humanoid.py": ("agent", "obs_rms")}
STRIP_GAP = 4  # white pixels between the frames of a strip
EVAL_LINE = re.compile(r"mean return (\S+) \+- (\S+) over (\d+) (?:games|episodes)", re.MULTILINE)


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2, no traceback."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def load(path: str) -> dict:
    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except Exception as e:
        fail(f"{path}: cannot load ({type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''})")


def save(policy: dict, path: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    torch.save(policy, path + ".tmp")
    os.replace(path + ".tmp", path)  # write, then rename: a cut-off save keeps the last one


def finished_row(args: dict, tables: list[str]) -> tuple[dict, str]:
    """The results-table row of the run whose flags are the checkpoint's: a row records the flags the run used (the
    checkpoint's, on resume, the path it resumed from included), so they name one run."""
    as_recorded = json.loads(json.dumps(args))  # the table's JSON holds a tuple flag (--hidden-sizes) as a list
    for table in tables:
        with open(table, newline="") as f:
            for row in csv.DictReader(f):
                if row.get("args") and json.loads(row["args"]) == as_recorded:
                    return row, table
    names = ", ".join(os.path.relpath(t, ROOT) for t in tables)
    fail(f"no finished run in {names} has this checkpoint's flags: a policy file comes from a table's run")


@dataclass
class Export:
    """Cut a finished run's final checkpoint to a policy file."""

    checkpoint: tyro.conf.Positional[str]
    """the run's checkpoint.pt at its last step: a run folder's, or a committed one (`git show COMMIT:PATH > FILE`)"""
    out: tyro.conf.Positional[str]
    """the policy file to write, e.g. models/breakout.pt"""
    tables: tuple[str, ...] = tuple(
        sorted(p for p in glob.glob(os.path.join(ROOT, "benchmark", "results", "*.csv")) if "_curves" not in p)
    )
    """the results tables to find the run in (default: all of benchmark/results)"""


def export(cmd: Export) -> None:
    ckpt = load(cmd.checkpoint)
    if not isinstance(ckpt, dict) or "optimizer" not in ckpt or "args" not in ckpt:
        fail(f"{cmd.checkpoint}: not a run's checkpoint (a policy file is exported already)")
    row, table = finished_row(ckpt["args"], list(cmd.tables))
    if row["script"] not in ACTS:
        fail(f"{row['script']}: which of its checkpoint's keys its policy needs is not known here (ACTS)")
    flags = ckpt["args"]
    last = flags["total_timesteps"] // (flags["num_envs"] * flags["num_steps"])
    if ckpt["iteration"] != last:  # the table's score is the finished run's; an earlier checkpoint is another policy
        fail(f"{cmd.checkpoint}: iteration {ckpt['iteration']} of {last}, not the finished run's last")
    policy = {
        "script": row["script"],
        "args": flags,
        # clone: each tensor on a storage of its own size, so the file holds the float32 weights and nothing more
        **{
            key: {name: t.clone() if torch.is_tensor(t) else t for name, t in ckpt[key].items()}
            for key in ACTS[row["script"]]
        },
        "global_step": ckpt["global_step"],
        "run": row["name"],
        "table": os.path.relpath(table, ROOT),
        "commit": row["commit"],
        "script_sha256": row["script_sha256"],
        "training_score": float(row["score"]),  # the table's score: the mean return of the run's last 100 games
    }
    save(policy, cmd.out)
    print(f"{cmd.out}: {row['name']} at step {ckpt['global_step']}, {os.path.getsize(cmd.out):,} bytes")


@dataclass
class Score:
    """Evaluate a policy file with its script's --eval-checkpoint, from the repo root, and record the score and the
    command in the file."""

    policy: tyro.conf.Positional[str]
    """a policy file, e.g. models/breakout.pt (its path as the recorded command gives it: from the repo root)"""
    eval_episodes: int = 30
    """games to play (--eval-episodes)"""


def score(cmd: Score) -> None:
    policy = load(cmd.policy)
    if not isinstance(policy, dict) or policy.get("script") not in ACTS:
        fail(f"{cmd.policy}: not a policy file of benchmark/zoo.py")
    path = os.path.relpath(os.path.abspath(cmd.policy), ROOT)
    words = [policy["script"], "--eval-checkpoint", path, "--eval-episodes", str(cmd.eval_episodes)]
    proc = subprocess.run([sys.executable, *words], cwd=ROOT, capture_output=True, text=True)
    print(proc.stdout, end="")
    found = EVAL_LINE.search(proc.stdout)
    if proc.returncode != 0 or not found:
        fail(f"`python {' '.join(words)}` gave no score: {proc.stderr.strip()[-300:]}")
    mean, std, games = float(found.group(1)), float(found.group(2)), int(found.group(3))
    policy["score"] = {"mean": mean, "std": std, "games": games, "command": "python " + " ".join(words)}
    save(policy, cmd.policy)


@dataclass
class Table:
    """The rows of models/README.md's table, one per policy file."""

    policies: tyro.conf.Positional[tuple[str, ...]]
    """policy files, e.g. models/*.pt"""


def size_text(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"


def table(cmd: Table) -> None:
    print("| task | file | trained by | score | watch it |")
    print("|-|-|-|-|-|")
    for path in cmd.policies:
        p = load(path)
        flags, rel = p["args"], os.path.relpath(os.path.abspath(path), ROOT)
        s = p.get("score")
        games = "games" if "atari" in p["script"] else "episodes"
        measured = f"**{s['mean']:.2f} ± {s['std']:.2f}** over {s['games']} {games} (`{s['command']}`)" if s else "-"
        print(f"| {flags['env_id']} | `{rel}` ({size_text(os.path.getsize(path))}) | `{p['script']}` seed "
              f"{flags['seed']}, {p['global_step']:,} steps, commit {p['commit'][:7]} (`{p['table']}`: last-100 "
              f"training return {p['training_score']:.1f}) | {measured} | `python {p['script']} --eval-checkpoint "
              f"{rel} --capture-video` |")  # fmt: skip


@dataclass
class Strip:
    """Still frames of a ppo_humanoid.py policy turning towards a new flag, side by side in one PNG (the paper's
    Figure 5): its deterministic policy plays its flag task until the flag moves (after 200 steps, or when reached),
    and a frame is taken at the move and every --every steps after it, each labelled with its steps since the move;
    the angle from the torso's heading to the flag is printed for each frame."""

    policy: tyro.conf.Positional[str]
    """a policy file or a run's checkpoint of ppo_humanoid.py, trained on HumanoidFlagrun-v0 or -Harder-v0"""
    out: str = "strip.png"
    """the PNG to write"""
    frames: int = 8
    """frames in the strip"""
    every: int = 12
    """steps between frames: 8 frames 12 steps apart span 84 steps of 0.0165 s, 1.4 s of a turn at a run (a policy
    that turns more slowly needs a larger --every)"""
    seed: Optional[int] = None
    """the first episode's seed, then + 1 per episode (default: the seeds of the script's --eval-checkpoint)"""
    episodes: int = 10
    """episodes to try: one where the robot falls before a flag move and the frames after it is passed over"""
    width: int = 300
    """pixels per frame"""
    height: int = 300
    """pixels per frame"""


def strip_frames(env, act, seed: int, cmd: Strip) -> Optional[list[dict]]:
    """One episode's strip: a frame at the step where the flag moved and every cmd.every steps after it, until
    cmd.frames are taken (a move within the strip starts it again, so one flag is followed); None when the robot
    fell or the episode ended first."""
    obs, info = env.reset(seed=seed)
    flag, moved_at, taken, step = info["target"], None, [], 0
    while len(taken) < cmd.frames:
        obs, _, terminated, truncated, info = env.step(act(obs))
        step += 1
        if terminated:  # fell: no more frames of a running robot in this episode
            return None
        if not np.array_equal(info["target"], flag):  # the task's target is the flag: it moved in this step
            before, flag, moved_at, taken = flag, info["target"], step, []
        if moved_at is not None and (step - moved_at) % cmd.every == 0:
            taken.append({"after_move": step - moved_at, "step": step, "seed": seed, "flag": flag, "before": before,
                          # observation 1 and 2: sin and cos of the angle from the torso's yaw to the flag
                          "angle": math.degrees(math.atan2(obs[1], obs[2])), "image": env.render()})  # fmt: skip
        if truncated and len(taken) < cmd.frames:  # the time limit
            return None
    return taken


def side_by_side(images: list, labels: list[str]):
    """The frames left to right, STRIP_GAP white pixels apart, each with its label in its top left corner."""
    height, width = images[0].shape[:2]
    sheet = Image.new("RGB", (len(images) * (width + STRIP_GAP) - STRIP_GAP, height), "white")
    font = ImageFont.load_default(size=max(8, height // 16))
    for i, (image, label) in enumerate(zip(images, labels)):
        panel = Image.fromarray(image)
        # on the frame, which clips it: white on a black outline, readable on the sky and on the floor
        ImageDraw.Draw(panel).text((4, 2), label, fill="white", font=font, stroke_width=2, stroke_fill="black")
        sheet.paste(panel, (i * (width + STRIP_GAP), 0))
    return sheet


def humanoid_player(path: str, command: str, width: int, height: int, flag_task: bool = False):
    """A ppo_humanoid.py policy as its evaluation plays it (its network, the Gaussian's mean, the frozen statistics)
    in its task made to render width x height: returns (env, act, the policy's flags). With flag_task, a task without
    a flag is refused."""
    # imported here: the other commands need neither the training script nor MuJoCo, whose imports take seconds
    import humanoid_flagrun
    import ppo_humanoid

    ckpt = ppo_humanoid.load_checkpoint(path, command)  # another script's file, not a checkpoint: one line
    saved = ckpt["args"]
    os.environ.setdefault("MUJOCO_GL", "egl")  # headless as --capture-video, unless the user chose another backend
    env = ppo_humanoid.make_env_or_fail(saved.env_id, f"{command} {path}", render_mode="rgb_array",
                                        width=width, height=height)  # fmt: skip
    if flag_task and (not isinstance(env.unwrapped, humanoid_flagrun.HumanoidEnv) or env.unwrapped.task == "run"):
        fail(f"{path}: a policy of {saved.env_id}, which has no flag to move; a strip needs a flag task of "
             "humanoid_flagrun.py (HumanoidFlagrun-v0, HumanoidFlagrunHarder-v0)")  # fmt: skip
    agent = ppo_humanoid.Agent(env.observation_space.shape[0], env.action_space.shape[0],
                               hidden_sizes=saved.hidden_sizes, activation=saved.activation)  # fmt: skip
    obs_rms = ppo_humanoid.RunningMeanStd()
    try:
        agent.load_state_dict(ckpt["agent"])
        obs_rms.load(ckpt["obs_rms"])
    except Exception as e:
        fail(f"{path}: its weights do not fit {saved.env_id} ({ppo_humanoid.describe(e)})")

    def act(obs):
        with torch.inference_mode():
            normalized = ppo_humanoid.normalize_obs(obs[None], obs_rms, saved, update=False)
            mean, _ = agent.get_policy(torch.from_numpy(normalized))
        return ppo_humanoid.env_actions(mean[0].numpy(), env.action_space, saved)

    # gymnasium's Humanoid-v4 films through its model's camera that follows the robot, as the script's --capture-video
    return ppo_humanoid.follow_robot(env), act, saved


def check_flags(cmd, positive: tuple[str, ...]) -> None:
    """One line and exit code 2 for a flag of strip, clip or gait out of its range."""
    for name in positive:
        if not getattr(cmd, name) > 0:
            fail(f"--{name} must be positive, got {getattr(cmd, name)}")
    if cmd.seed is not None and cmd.seed < 0:  # gymnasium's seeds are non-negative
        fail(f"--seed must be >= 0, got {cmd.seed}")


def strip(cmd: Strip) -> list[dict]:
    """Write the strip to cmd.out and print each frame's angle to the flag; return the frames' records."""
    import humanoid_flagrun
    import ppo_humanoid

    check_flags(cmd, ("frames", "every", "episodes", "width", "height"))
    env, act, saved = humanoid_player(cmd.policy, "strip", cmd.width, cmd.height, flag_task=True)
    # The camera is the env's own render(): it follows the torso from 4 m behind it on the line to the flag (20° off
    # it), so the robot is at the center and the flag ahead in view at any distance; at the move it swings round to
    # the new flag, and the turn shows as the robot coming round to face away from the camera. The model's "track"
    # camera looks along +y from 4 m to the side whatever the flag, so a flag behind it is out of view.
    first = saved.seed + 10_000 if cmd.seed is None else cmd.seed
    for seed in range(first, first + cmd.episodes):
        taken = strip_frames(env, act, seed, cmd)
        if taken:
            break
    else:
        seeds, span = f"seeds {first}-{first + cmd.episodes - 1}", (cmd.frames - 1) * cmd.every
        fail(f"{cmd.policy}: no episode of {cmd.episodes} ({seeds}) ran {span} steps after a flag move: the robot "
             "fell, or the episode ended, first")  # fmt: skip
    env.close()
    start = taken[0]
    print(
        f"{saved.env_id}, seed {seed}: the flag moved at step {start['step']}, from "
        f"({start['before'][0]:.1f}, {start['before'][1]:.1f}) to ({start['flag'][0]:.1f}, {start['flag'][1]:.1f})"
    )
    labels = []
    for frame in taken:
        when = f"+{frame['after_move']} steps ({frame['after_move'] * humanoid_flagrun.DT:.2f} s)"
        print(f"  {when}: angle to the flag {frame['angle']:+6.1f}° (+ is to the left)")
        labels.append(f"{when}\nflag {frame['angle']:+.0f}°")
    try:
        os.makedirs(os.path.dirname(cmd.out) or ".", exist_ok=True)
        side_by_side([frame.pop("image") for frame in taken], labels).save(cmd.out, format="PNG")
    except OSError as e:
        fail(f"--out {cmd.out}: cannot write ({ppo_humanoid.describe(e)})")
    print(cmd.out)
    return taken


@dataclass
class Clip:
    """A few seconds of a ppo_humanoid.py policy as an animated WebP, which plays, looping, in a browser and where
    the README shows a picture (§6.3's short videos; the script's --capture-video films whole episodes as mp4): its
    deterministic policy plays one episode, and a frame is kept every --every steps, shown for as long as they last,
    so the clip runs at the task's own speed. The clip ends early where the episode does (a fall)."""

    policy: tyro.conf.Positional[str]
    """a policy file or a run's checkpoint of ppo_humanoid.py, on any of its tasks"""
    out: str = "clip.webp"
    """the animated WebP to write"""
    seconds: float = 6.0
    """seconds of the task's time to show"""
    start: int = 0
    """steps to play before the first frame"""
    every: int = 4
    """steps per frame: 4 steps of 0.0165 s (HumanoidRun and the flag tasks; Humanoid-v4's are 0.015 s) are 15
    frames a second"""
    seed: Optional[int] = None
    """the episode's seed (default: the first seed of the script's --eval-checkpoint)"""
    width: int = 240
    """pixels per frame"""
    height: int = 240
    """pixels per frame"""
    quality: int = 50
    """WebP's quality, 0 to 100: 50 keeps 6 s of a 240 x 240 humanoid under 1 MB"""


def clip(cmd: Clip) -> dict:
    """Write the clip to cmd.out and print what it shows; return its record (the frames' steps, the return)."""
    import ppo_humanoid

    check_flags(cmd, ("seconds", "every", "width", "height"))
    if not (cmd.start >= 0 and 0 <= cmd.quality <= 100):
        fail(f"--start must be >= 0 and --quality lie in [0, 100], got {cmd.start} and {cmd.quality}")
    env, act, saved = humanoid_player(cmd.policy, "clip", cmd.width, cmd.height)
    dt = env.unwrapped.dt
    frames_wanted = max(1, round(cmd.seconds / (cmd.every * dt)))
    seed = saved.seed + 10_000 if cmd.seed is None else cmd.seed
    obs, _ = env.reset(seed=seed)
    frames, steps, total, step, ended = [], [], 0.0, 0, None
    while len(frames) < frames_wanted:
        if step >= cmd.start and (step - cmd.start) % cmd.every == 0:
            frames.append(Image.fromarray(env.render()))
            steps.append(step)
        obs, reward, terminated, truncated, _ = env.step(act(obs))
        total, step = total + float(reward), step + 1
        if terminated or truncated:
            ended = "fell" if terminated else "reached its time limit"
            break
    env.close()
    if not frames:
        fail(f"{cmd.policy}: the episode of seed {seed} {ended} at step {step}, before --start {cmd.start}")
    try:
        os.makedirs(os.path.dirname(cmd.out) or ".", exist_ok=True)
        frames[0].save(cmd.out, format="WEBP", save_all=True, append_images=frames[1:], loop=0,
                       duration=round(1000 * cmd.every * dt), quality=cmd.quality, method=6)  # fmt: skip
    except OSError as e:
        fail(f"--out {cmd.out}: cannot write ({ppo_humanoid.describe(e)})")
    shown = len(frames) * cmd.every * dt
    end = f"; the episode {ended} at step {step}" if ended else ""
    print(f"{saved.env_id}, seed {seed}: steps {steps[0]} to {steps[-1]} ({len(frames)} frames, {shown:.1f} s), "
          f"return {total:.1f} from the reset{end}")  # fmt: skip
    print(cmd.out)
    return {"seed": seed, "steps": steps, "return": total, "ended": ended}


@dataclass
class Gait:
    """How a ppo_humanoid.py policy moves, in numbers a clip only suggests: its deterministic policy plays
    --episodes episodes, and each step records the height of the torso's center of mass (the height that the
    Roboschool tasks' alive rule reads: up while above 0.78 m) and which of the robot's bodies touch the floor. A
    robot that runs upright has the torso near its reset height and only its feet on the floor; one that runs
    crouched, on its knees or crawling has the torso low and its shins or more on the floor. On the tasks of
    humanoid_flagrun.py also its course: its speed over the ground and towards the target (the flag, or Roboschool's
    target 1 km ahead), the angle from its torso's heading to the target (a runner faces where it runs), the angle
    from its torso's heading to where it goes (a robot that faces where it goes runs forward, not sideways), and how
    many flags it reached. On HumanoidFlagrunHarder-v0 also how it gets up, by the task's own rule (down while the
    torso is below 0.8 m): from a lying start, and after each fall from up; and how many cubes were thrown, how many
    touched the robot, and how many falls came within THROWN_DOWN steps of a touch (knocked down, most likely)."""

    policy: tyro.conf.Positional[str]
    """a policy file or a run's checkpoint of ppo_humanoid.py, on any of its tasks"""
    episodes: int = 3
    """episodes to play"""
    seed: Optional[int] = None
    """the first episode's seed, then + 1 per episode (default: the seeds of the script's --eval-checkpoint)"""


# humanoid_flagrun.py moves a flag the robot comes within 1 m of, or when its timer runs out
FLAG_REACHED = 1.0
# a throw teleports Harder's cube 4 m from the torso and sets it flying at 20 to 30 m/s (± 1 per axis); in flight it
# covers at most 0.55 m a step, so a jump of more than THROW_JUMP m with a speed above THROW_SPEED m/s is a throw
THROW_JUMP, THROW_SPEED = 1.5, 15.0
# a fall within this many steps (1 s) after the cube touched the robot counts as one the cube may have caused
THROWN_DOWN = 60
# where the robot goes is its move over this many steps (0.165 s), which spans the sway of a stride's steps
SIDEWAYS_STEPS = 10
FEET = {"left_foot", "right_foot"}  # the humanoid's foot bodies, in gymnasium's humanoid.xml and humanoid_flagrun's
NOT_FEET = "(not feet)"  # gait's count of the steps in which any other body touches the floor


def floor_contacts(model, data, bodies) -> set[str]:
    """The names of those of `bodies` (ids) that touch the floor geom in MuJoCo's current contacts."""
    import mujoco

    floor = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    touching = set()
    for contact in data.contact[: data.ncon]:
        if floor in (contact.geom1, contact.geom2):
            body = model.geom_bodyid[contact.geom2 if contact.geom1 == floor else contact.geom1]
            if body in bodies:
                touching.add(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, body))
    return touching


def gait_line(heights: list[float], floor: dict) -> str:
    """Torso heights and floor shares in a few words, the most touching body first."""
    median, low, high = np.percentile(heights, [50, 10, 90])
    touching = ", ".join(f"{name} {share:.2f}" for name, share in sorted(floor.items(), key=lambda item: -item[1]))
    return f"torso {median:.2f} ({low:.2f} to {high:.2f}), lowest {min(heights):.2f}; on the floor: {touching or '-'}"


def course_line(records: list[dict], flags: bool) -> str:
    """The course of one or more episodes in a few words: flags (flag tasks), speeds, heading."""
    reached, timed_out = sum(r["flags_reached"] for r in records), sum(r["flags_timed_out"] for r in records)
    speed, toward, heading, sideways = (np.concatenate([r[key] for r in records])
                                        for key in ("speed", "toward", "heading", "sideways"))  # fmt: skip
    goes = (f"; it goes a median {np.median(np.abs(sideways)):.0f}° off its torso's heading (its moves over "
            f"{SIDEWAYS_STEPS} steps)" if len(sideways) else "")  # fmt: skip
    return (f"; course: {f'flags reached {reached}, moved by their timer {timed_out}; ' if flags else ''}"
            f"{speed.mean():.2f} m/s over the ground, {toward.mean():.2f} towards the target, which lies a median "
            f"{np.median(np.abs(heading)):.0f}° off the torso's heading, to its left in {(heading > 0).mean():.2f} "
            f"of the steps{goes}")  # fmt: skip


def times_down(heights: list[float], reset_height: float) -> list[tuple[int, int, bool]]:
    """The robot's stretches on the ground by Harder's rule (down while the torso is below humanoid_flagrun.DOWN_Z,
    0.8 m): for each, (its first step, its steps down, whether the torso rose to 0.8 m after it in the episode).
    heights: the torso's after each step; a start lying down is a stretch from step 0 (the reset)."""
    from humanoid_flagrun import DOWN_Z

    stretches, first = [], None
    for step, height in enumerate([reset_height, *heights]):
        if height < DOWN_Z and first is None:
            first = step
        elif height >= DOWN_Z and first is not None:
            stretches.append((first, step - first, True))
            first = None
    if first is not None:
        stretches.append((first, len(heights) + 1 - first, False))
    return stretches


def falls_after_touches(down: list[tuple[int, int, bool]], touches: list[int]) -> int:
    """How many falls from up (times_down's stretches after the reset) came within THROWN_DOWN steps after a step in
    which the cube touched the robot (touches: those steps)."""
    return sum(any(first - THROWN_DOWN <= t <= first for t in touches) for first, _, _ in down if first > 0)


def getup_line(records: list[dict]) -> str:
    """Harder's getting up in a few words: from lying starts, after falls, and the cubes."""
    lying = [r for r in records if r["start"] != "upright"]
    up_from_lying = [r["down"][0][1] for r in lying if r["down"][0][2]]
    falls = [d for r in records for d in r["down"] if d[0] > 0]
    up_again = [steps for _, steps, up in falls if up]

    def median(steps: list[int]) -> str:
        return f" (median {np.median(steps):.0f} steps down)" if steps else ""

    start = f" (start: {records[0]['start']})" if len(records) == 1 else ""
    return (f"; getting up{start}: lying starts {len(lying)}, up in {len(up_from_lying)}{median(up_from_lying)}; falls "
            f"from up {len(falls)}, up again {len(up_again)}{median(up_again)}; cubes thrown "
            f"{sum(r['throws'] for r in records)}, touched the robot {sum(r['hits'] for r in records)}, falls "
            f"within {THROWN_DOWN} steps of a touch {sum(r['knocked'] for r in records)}")  # fmt: skip


def sideways_angles(path: list, yaws: list) -> list[float]:
    """Where the robot goes, seen from its torso: for each whole run of SIDEWAYS_STEPS steps, the angle in degrees
    from the torso's heading at its start to its move (+ to the left, in [-180, 180)). path: the x, y before each
    step and after the last; yaws: the torso's yaw before each step."""
    angles = []
    for t in range(0, len(yaws) - SIDEWAYS_STEPS + 1, SIDEWAYS_STEPS):
        (dx, dy), yaw = path[t + SIDEWAYS_STEPS] - path[t], yaws[t]
        angles.append((math.degrees(math.atan2(dy, dx) - yaw) + 180) % 360 - 180)
    return angles


def gait(cmd: Gait) -> list[dict]:
    """Print each episode's torso heights and the share of its steps each body touches the floor (and on
    humanoid_flagrun.py's tasks its course), then the same over all episodes; return the episodes' records."""
    import mujoco

    import humanoid_flagrun

    check_flags(cmd, ("episodes",))
    env, act, saved = humanoid_player(cmd.policy, "gait", 64, 64)  # nothing is rendered
    model, data, task = env.unwrapped.model, env.unwrapped.data, env.unwrapped
    torso = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "torso")
    robot = {b for b in range(model.nbody) if model.body_rootid[b] == torso}  # not the world, a flag or a cube
    course = isinstance(task, humanoid_flagrun.HumanoidEnv)  # a target to run to (gymnasium's Humanoid-v4 has none)
    flags = course and task.task != "run"
    harder = course and task.task == "harder"
    if harder:
        cube_geom = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "cube")
        robot_geoms = np.flatnonzero(np.isin(model.geom_bodyid, list(robot)))
    first = saved.seed + 10_000 if cmd.seed is None else cmd.seed
    records = []
    for seed in range(first, first + cmd.episodes):
        obs, info = env.reset(seed=seed)
        thrown, cube_touches = [], []  # Harder: per throw, whether the cube touched the robot; the steps it touched
        reset_height, heights, touches, total, done = float(data.xipos[torso, 2]), [], Counter(), 0.0, False
        speed, toward, heading, reached, timed_out = [], [], [], 0, 0
        path, yaws = [], []  # the robot's x, y and its torso's yaw before each step
        while not done:
            if course:  # the target and the robot's x, y (the mean of its bodies', as the task's potential) before
                target, xy = task.target.copy(), task.body_xyz[:2].copy()
                path.append(xy)
                yaws.append(task.body_rpy[2])
                # observation 1 and 2: sin and cos of the angle from the torso's yaw to the target, as the policy sees
                # it (degrees, + when the target lies to the left)
                heading.append(math.degrees(math.atan2(obs[1], obs[2])))
            cube = data.qpos[task.cube_qpos : task.cube_qpos + 3].copy() if harder else None
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            heights.append(float(data.xipos[torso, 2]))
            if harder:
                jump = np.linalg.norm(data.qpos[task.cube_qpos : task.cube_qpos + 3] - cube)
                if jump > THROW_JUMP and np.linalg.norm(data.qvel[task.cube_qvel : task.cube_qvel + 3]) > THROW_SPEED:
                    thrown.append(False)
                pairs = data.contact.geom[: data.ncon]
                if thrown and np.isin(pairs[(pairs == cube_geom).any(axis=1)], robot_geoms).any():
                    thrown[-1] = True  # the parked cube, before the first throw, is no hit
                    cube_touches.append(len(heights))  # the step, counted from 1
            touching = floor_contacts(model, data, robot)
            touches.update(touching | ({NOT_FEET} if touching - FEET else set()))
            total, done = total + float(reward), terminated or truncated
            if course:  # the step's move, and its part along the line to the target it ran to (the progress term's)
                moved = task.body_xyz[:2] - xy
                speed.append(float(np.linalg.norm(moved)) / task.dt)
                toward.append(float(moved @ (target - xy)) / float(np.linalg.norm(target - xy)) / task.dt)
                if not np.array_equal(task.target, target):  # the flag moved in this step: reached, or timed out
                    within = math.dist(task.body_xyz[:2], target) < FLAG_REACHED
                    reached, timed_out = reached + within, timed_out + (not within)
        steps = len(heights)
        records.append({"seed": seed, "steps": steps, "ended": "fell" if terminated else "time limit",
                        "return": total, "reset_height": reset_height, "heights": heights,
                        "floor": {name: n / steps for name, n in sorted(touches.items())},
                        "speed": speed, "toward": toward, "heading": heading,
                        "sideways": sideways_angles(path + [task.body_xyz[:2].copy()], yaws) if course else [],
                        "flags_reached": reached, "flags_timed_out": timed_out})  # fmt: skip
        if harder:
            down = times_down(heights, reset_height)
            records[-1].update(start=info["start"], down=down, throws=len(thrown), hits=sum(thrown),
                               knocked=falls_after_touches(down, cube_touches))  # fmt: skip
    env.close()
    print(f"{saved.env_id}: the torso's center of mass in m (median, 10th to 90th percentile, lowest), and the share "
          f"of steps each body touches the floor, {NOT_FEET}: any body but the feet")  # fmt: skip
    for r in records:
        print(f"  seed {r['seed']}: {r['steps']} steps ({r['ended']}), return {r['return']:.1f}, torso "
              f"{r['reset_height']:.2f} at the reset; {gait_line(r['heights'], r['floor'])}"
              f"{course_line([r], flags) if course else ''}{getup_line([r]) if harder else ''}")  # fmt: skip
    if len(records) > 1:
        steps = sum(r["steps"] for r in records)
        floor = Counter()
        for r in records:
            floor.update({name: share * r["steps"] / steps for name, share in r["floor"].items()})
        print(f"  all {len(records)} episodes: {gait_line([h for r in records for h in r['heights']], floor)}"
              f"{course_line(records, flags) if course else ''}{getup_line(records) if harder else ''}")  # fmt: skip
    return records


if __name__ == "__main__":
    command = tyro.cli(Export | Score | Table | Strip | Clip | Gait, description=__doc__)
    {Export: export, Score: score, Table: table, Strip: strip, Clip: clip, Gait: gait}[type(command)](command)
