"""The trained policies of models/ (benchmark/zoo.py): each loads from anywhere with weights_only=True, holds its
float32 weights, its flags and where it came from and nothing to resume with, plays in its script's evaluation and
is filmed there in colour (the Atari screen at its size, the MuJoCo scene); a file that does not fit is refused in
one line."""

import csv
import glob
import importlib
import json
import math
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch
import tyro

import humanoid_flagrun
import ppo_atari
import ppo_humanoid
from benchmark import zoo
from benchmark.presets import MUJOCO_TASKS
from tests.helpers import ROOT, assert_one_line_error, one_torch_thread, run_script  # noqa: F401 (autouse fixture)
from tests.test_humanoid_envs import needs_gl

POLICIES = sorted(glob.glob(os.path.join(ROOT, "models", "*.pt")))
BREAKOUT = os.path.join(ROOT, "models", "breakout.pt")
KEYS = {"script", "args", "agent", "global_step", "run", "table", "commit", "script_sha256", "training_score", "score"}


REACHER = os.path.join(ROOT, "models", "reacher.pt")
HOPPER = os.path.join(ROOT, "models", "hopper.pt")


def test_there_is_a_policy_for_each_atari_game_of_the_results_table_and_each_mujoco_task_of_table_1():
    with open(os.path.join(ROOT, "benchmark", "results", "atari.csv"), newline="") as f:
        games = {row["env_id"] for row in csv.DictReader(f)}
    held = {torch.load(path, weights_only=True)["args"]["env_id"] for path in POLICIES}
    assert games | set(MUJOCO_TASKS) <= held, (games | set(MUJOCO_TASKS)) - held


def network(policy: dict):
    """The network the policy's flags build, with the file's weights loaded strictly: every weight, no other."""
    module = importlib.import_module(policy["script"][: -len(".py")])
    flags, weights = module.Args(**policy["args"]), policy["agent"]
    if policy["script"] == "ppo_atari.py":
        agent = module.Agent(weights["actor.bias"].numel(), network=flags.network)
    else:  # the MuJoCo policy: observation and action sizes from its first layer and its log-std
        agent = module.Agent(weights["actor_mean.0.weight"].shape[1], weights["actor_logstd"].numel())
    agent.load_state_dict(weights)
    return flags


@pytest.mark.parametrize("path", POLICIES, ids=[os.path.basename(p) for p in POLICIES])
def test_a_policy_file_loads_anywhere_with_weights_only_and_holds_what_acting_needs(tmp_path, path):
    shutil.copy(path, tmp_path / "policy.pt")  # no path of the repo inside it matters
    policy = torch.load(tmp_path / "policy.pt", weights_only=True, map_location="cpu")
    assert set(policy) == KEYS | set(zoo.ACTS[policy["script"]])  # no optimizer, RNG or env state
    weights = sum(t.numel() * t.element_size() for t in policy["agent"].values())
    assert all(t.dtype == torch.float32 for t in policy["agent"].values())
    assert os.path.getsize(tmp_path / "policy.pt") < weights + 32 * 1024  # the weights, and a few kB of the rest
    flags = network(policy)
    # provenance: the finished run's row of the results table, at the run's last step
    with open(os.path.join(ROOT, policy["table"]), newline="") as f:
        (row,) = [r for r in csv.DictReader(f) if r["name"] == policy["run"]]
    as_recorded = json.loads(json.dumps(policy["args"]))  # the table's JSON holds a tuple flag as a list
    assert json.loads(row["args"]) == as_recorded and row["script"] == policy["script"]
    assert (row["commit"], row["script_sha256"]) == (policy["commit"], policy["script_sha256"])
    batch = flags.num_envs * flags.num_steps
    assert policy["global_step"] == flags.total_timesteps // batch * batch
    rel = os.path.relpath(path, ROOT)
    assert policy["score"]["command"] == f"python {policy['script']} --eval-checkpoint {rel} --eval-episodes 30"
    with open(os.path.join(ROOT, "models", "README.md")) as f:  # the table shows the score the file records
        assert f"{policy['score']['mean']:.2f} ± {policy['score']['std']:.2f}" in f.read()


def test_a_policy_file_plays_and_films_the_colour_screen_not_the_networks_input(tmp_path, monkeypatch, capsys):
    import imageio.v2 as imageio

    shutil.copy(BREAKOUT, tmp_path / "breakout.pt")
    monkeypatch.chdir(tmp_path)
    flags = ["--eval-episodes", "1", "--eval-max-steps", "40", "--capture-video"]
    assert main(capsys, "--eval-checkpoint", "breakout.pt", *flags).returncode == 0
    assert "over 1 games (1 cut short at --eval-max-steps 40" in capsys.readouterr().out
    frames = [frame for frame in imageio.get_reader(tmp_path / "videos" / "breakout.mp4")]  # nframes: inf
    assert len(frames) == 41  # the screen after the reset, then one per step
    assert {frame.shape for frame in frames} == {(210, 160, 3)}  # the Atari's screen, not 84x84
    # colour: Breakout's rows of bricks are red, orange, yellow, green and blue, so the channels differ
    last = frames[-1].astype(int)
    assert np.abs(last[..., 0] - last[..., 2]).mean() > 5 and np.abs(last[..., 1] - last[..., 2]).mean() > 5
    assert not np.array_equal(frames[1], frames[-1])  # a game in play, not one frame


def main(capsys, *flags: str) -> SimpleNamespace:
    """`python ppo_atari.py flags` for --eval-checkpoint or --resume, as its main runs them, in this process (a new
    interpreter's imports take seconds): the exit code and what went to stderr."""
    args = tyro.cli(ppo_atari.Args, args=list(flags))
    try:
        ppo_atari.load_resumable(args.resume, list(flags)) if args.resume else ppo_atari.evaluate(args)
        code = 0
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    print(out, end="")  # back to the captured stdout, for the caller to read
    return SimpleNamespace(returncode=code, stderr=err)


def edited(tmp_path, **changes) -> str:
    """models/breakout.pt with its flags or its script changed."""
    policy = torch.load(BREAKOUT, weights_only=True)
    policy["script"] = changes.pop("script", policy["script"])
    policy["args"].update(changes)
    torch.save(policy, tmp_path / "edited.pt")
    return "edited.pt"


def truncated(tmp_path) -> str:
    with open(BREAKOUT, "rb") as f:
        (tmp_path / "truncated.pt").write_bytes(f.read()[: os.path.getsize(BREAKOUT) // 2])
    return "truncated.pt"


def other_scripts(tmp_path) -> str:
    """A run checkpoint of a MuJoCo script: its own flags, its own network."""
    args = {"env_id": "Hopper-v4", "num_envs": 1, "num_steps": 2048, "norm_obs": True}
    torch.save({"args": args, "agent": {"actor_mean.0.weight": torch.zeros(64, 11)}}, tmp_path / "hopper.pt")
    return "hopper.pt"


@pytest.mark.parametrize(
    "make, words",
    [(lambda tmp: edited(tmp, script="trpo.py"), ["a policy of trpo.py, not of ppo_atari.py"]),
     (truncated, ["truncated.pt", "cannot load checkpoint"]),
     (other_scripts, ["hopper.pt", "cannot load checkpoint"]),
     (lambda tmp: edited(tmp, network="a3c"), ["do not fit", "--network a3c"]),
     (lambda tmp: edited(tmp, env_id="PongNoFrameskip-v4"), ["do not fit", "6 actions of PongNoFrameskip-v4"])],
    ids=["another-script", "truncated", "another-scripts-checkpoint", "another-network", "another-game"],
)  # fmt: skip
def test_a_file_that_does_not_fit_gets_one_line_and_exit_code_2(tmp_path, monkeypatch, capsys, make, words):
    monkeypatch.chdir(tmp_path)
    path = make(tmp_path)
    proc = main(capsys, "--eval-checkpoint", path, "--eval-episodes", "1", "--eval-max-steps", "1")
    assert_one_line_error(proc, "--eval-checkpoint", *words)


def test_a_policy_file_cannot_be_resumed(capsys):
    assert_one_line_error(main(capsys, "--resume", BREAKOUT), "--resume", "cannot be resumed", "--eval-checkpoint")


def test_export_keeps_weights_flags_and_the_runs_row_and_refuses_a_checkpoint_before_the_end(tmp_path):
    args = vars(ppo_atari.Args(total_timesteps=2048, network="a3c"))  # 2 iterations of 8 x 128 steps; a small CNN
    agent = ppo_atari.Agent(4, orthogonal=False, network="a3c")
    ckpt = {"args": args, "global_step": 2048, "iteration": 2, "kl_beta": 1.0, "agent": agent.state_dict(),
            "optimizer": {"state": {}, "param_groups": []}, "torch_rng": torch.get_rng_state()}  # fmt: skip
    torch.save(ckpt, tmp_path / "checkpoint.pt")
    row = {"name": "run-a", "script": "ppo_atari.py", "score": "12.5", "commit": "c" * 40, "script_sha256": "s" * 64}
    with open(tmp_path / "grid.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, [*row, "args"])
        writer.writeheader()
        writer.writerow({**row, "name": "run-b", "args": json.dumps({**args, "seed": 2})})  # another run's flags
        writer.writerow({**row, "args": json.dumps(args)})
    zoo.export(zoo.Export(str(tmp_path / "checkpoint.pt"), str(tmp_path / "p.pt"), (str(tmp_path / "grid.csv"),)))
    policy = torch.load(tmp_path / "p.pt", weights_only=True)
    assert set(policy) == KEYS - {"score"} and policy["args"] == args and policy["training_score"] == 12.5
    assert (policy["run"], policy["commit"], policy["global_step"]) == ("run-a", "c" * 40, 2048)
    assert all(torch.equal(policy["agent"][k], v) for k, v in agent.state_dict().items())
    torch.save({**ckpt, "iteration": 1}, tmp_path / "checkpoint.pt")  # not the policy the table scored
    with pytest.raises(SystemExit) as stopped:
        zoo.export(zoo.Export(str(tmp_path / "checkpoint.pt"), str(tmp_path / "q.pt"), (str(tmp_path / "grid.csv"),)))
    assert stopped.value.code == 2 and not os.path.exists(tmp_path / "q.pt")


def test_a_mujoco_policy_file_plays_and_films_the_scene(tmp_path):
    # Reacher's episodes are 50 steps: the policy file plays from another folder, scores near its recorded score, and
    # the video is the rendered scene in colour
    import imageio.v3 as iio

    shutil.copy(REACHER, tmp_path / "reacher.pt")
    proc = run_script("ppo_continuous.py", "--eval-checkpoint", "reacher.pt", "--eval-episodes", "2", "--capture-video",
                      cwd=tmp_path, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    recorded = torch.load(REACHER, weights_only=True)["score"]
    assert float(proc.stdout.split("mean return")[1].split()[0]) > recorded["mean"] - 3 * recorded["std"] - 1
    (video, *_) = sorted(glob.glob(os.path.join(tmp_path, proc.stdout.split("videos: ")[1].strip(), "*.mp4")))
    frames = iio.imread(video)
    assert frames.shape == (51, 480, 480, 3)  # the scene after the reset, then one frame per step
    assert (abs(frames[..., 0].astype(int) - frames[..., 2]) > 40).any(axis=(1, 2)).all()  # colour in every frame


def test_a_humanoid_run_exports_to_a_policy_file_that_plays(tmp_path):
    # §6.3's policies go to models/ as the others do: the weights (the annealed log-std a buffer among them) and the
    # observation statistics; ppo_humanoid.py plays the file from another folder
    args = vars(ppo_humanoid.Args(env_id="humanoid_flagrun:HumanoidFlagrun-v0", total_timesteps=16384))  # 1 iteration
    agent, obs_rms = ppo_humanoid.Agent(44, 17), ppo_humanoid.RunningMeanStd((44,))
    agent.actor_logstd.fill_(-1.6)
    ckpt = {"args": args, "global_step": 16384, "iteration": 1, "kl_beta": 1.0, "agent": agent.state_dict(),
            "obs_rms": obs_rms.state(), "optimizer": {"state": {}, "param_groups": []}}  # fmt: skip
    torch.save(ckpt, tmp_path / "checkpoint.pt")
    row = {
        "name": "run-h",
        "script": "ppo_humanoid.py",
        "score": "-40.0",
        "commit": "c" * 40,
        "script_sha256": "s" * 64,
    }
    with open(tmp_path / "grid.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, [*row, "args"])
        writer.writeheader()
        writer.writerow({**row, "args": json.dumps(args)})
    os.makedirs(tmp_path / "elsewhere")
    zoo.export(zoo.Export(str(tmp_path / "checkpoint.pt"), str(tmp_path / "elsewhere" / "h.pt"),
                          (str(tmp_path / "grid.csv"),)))  # fmt: skip
    policy = torch.load(tmp_path / "elsewhere" / "h.pt", weights_only=True)
    assert set(policy) == KEYS - {"score"} | {"obs_rms"} and policy["agent"]["actor_logstd"].eq(-1.6).all()
    proc = run_script("ppo_humanoid.py", "--eval-checkpoint", "h.pt", "--eval-episodes", "1",
                      cwd=tmp_path / "elsewhere", timeout=120)  # fmt: skip
    assert proc.returncode == 0 and "eval humanoid_flagrun:HumanoidFlagrun-v0: mean return" in proc.stdout, proc.stderr


@pytest.mark.parametrize(
    "argv, words",
    [(["--eval-checkpoint", BREAKOUT], ["a policy of ppo_atari.py, not of ppo_continuous.py"]),
     (["--resume", REACHER], ["--resume", "a policy file", "cannot continue a run", "--eval-checkpoint"])],
    ids=["another-scripts-policy", "resume"],
)  # fmt: skip
def test_a_mujoco_script_refuses_what_it_cannot_use_in_one_line(tmp_path, argv, words):
    assert_one_line_error(run_script("ppo_continuous.py", *argv, cwd=tmp_path, timeout=120), *words)


def flagrun_policy(tmp_path, env_id: str = "humanoid_flagrun:HumanoidFlagrun-v0", obs_dim: int = 44) -> str:
    """An untrained policy file of ppo_humanoid.py: a small network, statistics that leave the observation as it is
    (Roboschool's tasks observe 44 values, Humanoid-v4 376)."""
    args = ppo_humanoid.Args(env_id=env_id, hidden_sizes=(16,))
    agent = ppo_humanoid.Agent(obs_dim, 17, hidden_sizes=(16,))
    policy = {"script": "ppo_humanoid.py", "args": vars(args), "agent": agent.state_dict(),
              "obs_rms": ppo_humanoid.RunningMeanStd((obs_dim,)).state()}  # fmt: skip
    torch.save(policy, tmp_path / "flagrun.pt")
    return str(tmp_path / "flagrun.pt")


def zoo_cli(capsys, command: str, *words: str) -> SimpleNamespace:
    """`python -m benchmark.zoo command words` in this process: the exit code, stdout, stderr and what it returned
    (strip: the frames' records; clip: the clip's; gait: the episodes')."""
    cls, run = {"strip": (zoo.Strip, zoo.strip), "clip": (zoo.Clip, zoo.clip), "gait": (zoo.Gait, zoo.gait)}[command]
    result, code = None, 0
    try:
        result = run(tyro.cli(cls, args=list(words)))
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out, stderr=err, result=result)


@needs_gl
def test_strip_shows_the_frames_from_the_flag_move_side_by_side(tmp_path, monkeypatch, capsys):
    # an untrained robot falls within about 40 steps: the flag moves after 20 here, not 200 (late enough for a strip
    # that ignored the move to be full before it)
    monkeypatch.setattr(humanoid_flagrun, "FLAG_TIMEOUT", 20)
    out = tmp_path / "figures" / "strip.png"
    proc = zoo_cli(capsys, "strip", flagrun_policy(tmp_path), "--out", str(out), "--frames", "3", "--every", "4",
                 "--width", "64", "--height", "48")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    frames = proc.result
    # the timer counts reset's observation, so the flag moves in step 19; a frame there and every 4 steps after
    assert [(f["after_move"], f["step"]) for f in frames] == [(0, 19), (4, 23), (8, 27)]
    assert all(np.array_equal(f["flag"], frames[0]["flag"]) for f in frames)  # one flag throughout
    assert not np.array_equal(frames[0]["flag"], frames[0]["before"])  # a new one
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == str(out) and "the flag moved at step 19" in lines[0]
    for f, line in zip(frames, lines[1:-1]):
        assert line.strip().startswith(f"+{f['after_move']} steps") and f"{f['angle']:+6.1f}°" in line
    # three 64 x 48 frames, zoo.STRIP_GAP white columns apart, each a rendered scene, and the robot moves
    from PIL import Image

    with Image.open(out) as image:
        assert image.format == "PNG" and image.mode == "RGB"
        sheet = np.asarray(image).astype(int)
    assert sheet.shape == (48, 3 * 64 + 2 * zoo.STRIP_GAP, 3)
    panels = [sheet[:, i * (64 + zoo.STRIP_GAP) : i * (64 + zoo.STRIP_GAP) + 64] for i in range(3)]
    assert (sheet[:, 64 : 64 + zoo.STRIP_GAP] == 255).all() and all(panel.std() > 5 for panel in panels)
    assert np.abs(panels[0] - panels[2]).max() > 50


@pytest.mark.parametrize(
    "make, words",
    [(lambda tmp: flagrun_policy(tmp, "humanoid_flagrun:HumanoidRun-v0"), ["HumanoidRun-v0", "no flag"]),
     (lambda tmp: str(tmp / "missing.pt"), ["missing.pt", "cannot load checkpoint"]),
     (flagrun_policy, ["no episode of 1", "ran 84 steps after a flag move", "fell"])],
    ids=["running-task", "missing-file", "falls-before-the-flag-moves"],
)  # fmt: skip
def test_strip_refuses_what_it_cannot_film_in_one_line(tmp_path, capsys, make, words):
    out = tmp_path / "strip.png"
    proc = zoo_cli(
        capsys, "strip", make(tmp_path), "--out", str(out), "--episodes", "1", "--width", "64", "--height", "48"
    )
    assert_one_line_error(proc, *words)
    assert not out.exists()


def test_strip_refuses_a_hopper_policy_in_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "benchmark.zoo", "strip", HOPPER, "--out", str(tmp_path / "s.png")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert_one_line_error(proc, "hopper.pt", "a policy of ppo_continuous.py, not of ppo_humanoid.py")
    assert not (tmp_path / "s.png").exists()


def clip_frames(path) -> tuple[list, list[int]]:
    """The frames of an animated WebP, as RGB arrays, and how long each is shown (ms)."""
    from PIL import Image

    frames, durations = [], []
    with Image.open(path) as image:
        assert image.format == "WEBP"
        for i in range(image.n_frames):
            image.seek(i)
            frames.append(np.asarray(image.convert("RGB")).astype(int))
            durations.append(image.info["duration"])
    return frames, durations


@needs_gl
def test_clip_shows_every_few_steps_of_the_policy_at_the_tasks_speed(tmp_path, capsys):
    out = tmp_path / "videos" / "run.webp"
    policy = flagrun_policy(tmp_path, "humanoid_flagrun:HumanoidRun-v0")
    words = ["--every", "3", "--start", "2", "--width", "64", "--height", "48", "--quality", "90"]
    # 0.3 s of 0.0165 s steps, a frame every 3: 6 frames, the steps 2, 5, ... 17 (an untrained robot stands that long)
    proc = zoo_cli(capsys, "clip", policy, "--out", str(out), "--seconds", "0.3", *words)
    assert proc.returncode == 0, proc.stderr
    assert proc.result["steps"] == [2, 5, 8, 11, 14, 17] and proc.result["ended"] is None
    assert proc.stdout.splitlines() == [
        f"humanoid_flagrun:HumanoidRun-v0, seed 10001: steps 2 to 17 (6 frames, 0.3 s), return "
        f"{proc.result['return']:.1f} from the reset", str(out)]  # fmt: skip
    frames, durations = clip_frames(out)
    assert durations == [round(3 * 16.5)] * 6  # each frame lasts its 3 steps: the task's own speed
    assert all(f.shape == (48, 64, 3) and f.std() > 5 for f in frames)  # rendered scenes
    assert np.abs(frames[0] - frames[-1]).max() > 50  # the robot moves
    # the same seed plays the same episode, frame for frame
    again = zoo_cli(capsys, "clip", policy, "--out", str(tmp_path / "again.webp"), "--seconds", "0.3", *words)
    assert again.result == proc.result
    assert all((a == b).all() for a, b in zip(clip_frames(tmp_path / "again.webp")[0], frames))


@needs_gl
def test_clip_films_humanoid_v4_through_the_camera_that_follows_the_robot(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MUJOCO_GL", raising=False)  # headless without being told, as gymnasium's envs are not
    out = tmp_path / "v4.webp"
    proc = zoo_cli(capsys, "clip", flagrun_policy(tmp_path, "Humanoid-v4", obs_dim=376), "--out", str(out),
                   "--seconds", "0.24", "--width", "64", "--height", "48", "--quality", "90")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.result["steps"] == [0, 4, 8, 12] and proc.stdout.startswith("Humanoid-v4, seed 10001: steps 0 to 12")
    frames, durations = clip_frames(out)
    assert durations == [60] * 4 and all(f.std() > 5 for f in frames)  # Humanoid-v4's steps are 0.015 s
    # its first frame is the reset's scene through the model's "track" camera, as --capture-video films it, not
    # through gymnasium's default view
    views = {}
    for name, follow in (("track", True), ("default", False)):
        env = gym.make("Humanoid-v4", render_mode="rgb_array", width=64, height=48)
        env = ppo_humanoid.follow_robot(env) if follow else env
        env.reset(seed=10001)
        views[name] = np.abs(env.render().astype(int) - frames[0]).mean()
        env.close()
    assert views["track"] * 5 < views["default"]  # WebP is lossy: a few levels off on the same view, not tens


@needs_gl
def test_a_clip_ends_where_its_episode_does(tmp_path, capsys):
    out = tmp_path / "fall.webp"
    proc = zoo_cli(capsys, "clip", flagrun_policy(tmp_path, "humanoid_flagrun:HumanoidRun-v0"), "--out", str(out),
                "--seconds", "30", "--width", "64", "--height", "48")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    record = proc.result  # an untrained robot falls within about 40 steps, long before 30 s
    assert record["ended"] == "fell" and len(record["steps"]) < 20 and "the episode fell at step" in proc.stdout
    assert len(clip_frames(out)[0]) == len(record["steps"])


@pytest.mark.parametrize(
    "make, flags, words",
    [(lambda tmp: str(tmp / "missing.pt"), [], ["missing.pt", "cannot load checkpoint"]),
     (lambda tmp: HOPPER, [], ["hopper.pt", "a policy of ppo_continuous.py, not of ppo_humanoid.py"]),
     (lambda tmp: flagrun_policy(tmp, "Humanoid-v4"), [], ["weights do not fit Humanoid-v4"]),
     (lambda tmp: flagrun_policy(tmp, "humanoid_flagrun:HumanoidRun-v0"), ["--start", "500"],
      ["fell", "before --start 500"]),
     (flagrun_policy, ["--seconds", "0"], ["--seconds must be positive"]),
     (flagrun_policy, ["--quality", "101"], ["--quality lie in [0, 100]"]),
     (flagrun_policy, ["--seed", "-1"], ["--seed must be >= 0, got -1"])],
    ids=["missing-file", "another-scripts-policy", "another-task", "falls-before-the-start", "no-time", "quality",
         "negative-seed"],
)  # fmt: skip
def test_clip_refuses_what_it_cannot_film_in_one_line(tmp_path, capsys, make, flags, words):
    out = tmp_path / "clip.webp"
    proc = zoo_cli(capsys, "clip", make(tmp_path), "--out", str(out), "--width", "64", "--height", "48", *flags)
    assert_one_line_error(proc, *words)
    assert not out.exists()


def test_floor_contacts_name_the_robots_bodies_on_the_floor_and_nothing_else():
    # FlagrunHarder starts standing (seed 1) or lying on its belly (seed 0), with its cube parked on the floor
    env = gym.make("humanoid_flagrun:HumanoidFlagrunHarder-v0")
    model, data = env.unwrapped.model, env.unwrapped.data
    torso = model.body("torso").id
    robot = {b for b in range(model.nbody) if model.body_rootid[b] == torso}
    touching = {}
    for seed, steps in ((1, 12), (0, 25)):
        env.reset(seed=seed)
        for _ in range(steps):  # under a zero action, the robot lands on its feet, or settles on the floor
            env.step(np.zeros(17))
        touching[seed] = zoo.floor_contacts(model, data, robot)
        assert data.ncon > len(touching[seed])  # the cube's corners touch the floor too, and are not the robot's
    env.close()
    assert touching[1] == {"left_foot", "right_foot"}  # standing: the feet only
    assert {"pelvis", "left_thigh", "right_thigh"} <= touching[0]  # lying: the body


def test_gait_measures_the_torso_height_and_what_touches_the_floor(tmp_path, capsys):
    policy = flagrun_policy(tmp_path, "humanoid_flagrun:HumanoidRun-v0")
    proc = zoo_cli(capsys, "gait", policy, "--episodes", "2")
    assert proc.returncode == 0, proc.stderr
    episodes = proc.result
    # the episodes of the script's own evaluation, the same seeds: their mean return is the one the script prints
    evaluation = run_script("ppo_humanoid.py", "--eval-checkpoint", policy, "--eval-episodes", "2", cwd=tmp_path)
    mean_return = np.mean([e["return"] for e in episodes])
    assert f"mean return {mean_return:.2f} +- " in evaluation.stdout, evaluation.stdout + evaluation.stderr
    assert [e["seed"] for e in episodes] == [10001, 10002]
    env = gym.make("humanoid_flagrun:HumanoidRun-v0")
    for e in episodes:
        # an untrained robot falls: its torso ends below the 0.78 m that the alive rule reads, having started at
        # the height that the reset's observation gives (its first value is the torso's height - 0.8)
        obs, _ = env.reset(seed=e["seed"])
        assert e["reset_height"] == pytest.approx(obs[0] + humanoid_flagrun.INITIAL_Z, abs=1e-6)
        assert e["ended"] == "fell" and len(e["heights"]) == e["steps"] < 100
        assert e["heights"][-1] < 0.78 <= min(e["heights"][:-1]) and e["heights"][0] > 1.3
        assert e["floor"]["left_foot"] > 0.5 and all(0 < share <= 1 for share in e["floor"].values())
        others = [share for name, share in e["floor"].items() if name not in zoo.FEET | {zoo.NOT_FEET}]
        # the steps with any body but the feet down: at least those of the most touching one, at most all of theirs
        assert max(others, default=0) <= e["floor"].get(zoo.NOT_FEET, 0) <= sum(others)
        assert (zoo.NOT_FEET in e["floor"]) == bool(others)
    env.close()
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 4 and lines[3].startswith("  all 2 episodes: ")
    for e, line in zip(episodes, lines[1:3]):
        median, low, high = np.percentile(e["heights"], [50, 10, 90])
        assert line.startswith(f"  seed {e['seed']}: {e['steps']} steps (fell), return {e['return']:.1f}, torso ")
        assert f"torso {median:.2f} ({low:.2f} to {high:.2f}), lowest {min(e['heights']):.2f}" in line
    # over both episodes, each body's share is the share of all their steps
    steps = sum(e["steps"] for e in episodes)
    for name in episodes[0]["floor"]:
        share = sum(e["floor"].get(name, 0) * e["steps"] for e in episodes) / steps
        assert f"{name} {share:.2f}" in lines[3]


@pytest.mark.parametrize(
    "make, flags, words",
    [(lambda tmp: HOPPER, [], ["hopper.pt", "a policy of ppo_continuous.py, not of ppo_humanoid.py"]),
     (flagrun_policy, ["--episodes", "0"], ["--episodes must be positive"])],
    ids=["another-scripts-policy", "no-episodes"],
)  # fmt: skip
def test_gait_refuses_what_it_cannot_measure_in_one_line(tmp_path, capsys, make, flags, words):
    assert_one_line_error(zoo_cli(capsys, "gait", make(tmp_path), *flags), *words)


def test_gait_follows_the_course_to_the_target(tmp_path, capsys):
    # HumanoidRun's target lies 1 km ahead: each step's move towards it is the progress term of its reward
    # (Φ = −distance / dt), up to the curvature of the distance, millionths of a metre here
    policy = flagrun_policy(tmp_path, "humanoid_flagrun:HumanoidRun-v0")
    proc = zoo_cli(capsys, "gait", policy, "--episodes", "2")
    assert proc.returncode == 0, proc.stderr
    env, act, _ = zoo.humanoid_player(policy, "test", 64, 64)
    for e in proc.result:
        obs, _ = env.reset(seed=e["seed"])
        # the heading of the first step: the angle the reset's observation gives, as sin and cos
        assert e["heading"][0] == pytest.approx(math.degrees(math.atan2(obs[1], obs[2])))
        progress, xy, yaw, done = [], [env.unwrapped.body_xyz[:2].copy()], [env.unwrapped.body_rpy[2]], False
        while not done:
            obs, _, terminated, truncated, info = env.step(act(obs))
            progress.append(info["reward_progress"])
            xy.append(env.unwrapped.body_xyz[:2].copy())
            yaw.append(env.unwrapped.body_rpy[2])
            done = terminated or truncated
        assert len(e["toward"]) == len(e["speed"]) == len(e["heading"]) == e["steps"] == len(progress)
        # where it goes: sideways_angles (tested alone below) of the robot's x, y before each step and after the last,
        # and its torso's yaw before each step
        assert e["steps"] // zoo.SIDEWAYS_STEPS == len(e["sideways"]) >= 2
        assert e["sideways"] == zoo.sideways_angles(xy, yaw[:-1])
        assert np.allclose(e["toward"], progress, rtol=0, atol=1e-3) and np.abs(progress).max() > 0.1
        assert all(s >= abs(t) - 1e-9 for s, t in zip(e["speed"], e["toward"]))  # a move's part is at most the move
        assert e["flags_reached"] == e["flags_timed_out"] == 0
    env.close()
    lines = proc.stdout.strip().splitlines()
    toward = np.concatenate([e["toward"] for e in proc.result])
    heading = np.concatenate([e["heading"] for e in proc.result])
    assert (
        f"{toward.mean():.2f} towards the target, which lies a median {np.median(np.abs(heading)):.0f}° off the "
        f"torso's heading, to its left in {(heading > 0).mean():.2f} of the steps" in lines[3]
    )
    sideways = np.concatenate([e["sideways"] for e in proc.result])
    assert lines[3].endswith(f"; it goes a median {np.median(np.abs(sideways)):.0f}° off its torso's heading (its "
                             "moves over 10 steps)")  # fmt: skip
    assert "flags" not in proc.stdout


def test_sideways_is_the_angle_from_the_heading_at_the_start_of_each_run_of_steps_to_its_move():
    # 25 steps towards -170° (south-west of west) while the torso's yaw reads +170° at the start of each run of 10
    # steps and 0 in between: seen from +170°, a move to -170° lies 20° to the left (not 340° to the right); the last
    # 5 steps are no whole run
    direction = math.radians(-170)
    path = [np.array([math.cos(direction), math.sin(direction)]) * 0.1 * t for t in range(26)]
    yaws = [math.radians(170) if t % 10 == 0 else 0.0 for t in range(25)]
    assert zoo.sideways_angles(path, yaws) == pytest.approx([20.0, 20.0])
    # straight ahead, and a quarter turn to the right of a torso facing +y
    assert zoo.sideways_angles([np.zeros(2)] * 10 + [np.array([1.0, 0.0])], [0.0] * 10) == pytest.approx([0.0])
    assert zoo.sideways_angles([np.zeros(2)] * 10 + [np.array([1.0, 0.0])], [math.pi / 2] * 10) == [-90.0]


@pytest.mark.parametrize("timeout, half, reached", [(10, None, False), (500, 0.01, True)], ids=["timer", "reached"])
def test_gait_counts_the_flags_reached_and_those_their_timer_moved(tmp_path, capsys, monkeypatch, timeout, half,
                                                                 reached):  # fmt: skip
    # An untrained robot falls within about 40 steps near where it stood. With a 10-step timer on the usual field its
    # flags move on the timer alone, in steps 9, 19, 29, ... (the timer counts reset's observation); with every flag
    # within a centimetre of the origin, where the robot stands, each is reached at once and the timer never ends
    monkeypatch.setattr(humanoid_flagrun, "FLAG_TIMEOUT", timeout)
    if half is not None:
        monkeypatch.setattr(humanoid_flagrun, "FLAG_HALF_X", half)
        monkeypatch.setattr(humanoid_flagrun, "FLAG_HALF_Y", half)
    proc = zoo_cli(capsys, "gait", flagrun_policy(tmp_path), "--episodes", "2")
    assert proc.returncode == 0, proc.stderr
    for e, line in zip(proc.result, proc.stdout.splitlines()[1:3]):
        moves = e["flags_reached"] + e["flags_timed_out"]
        if reached:
            assert e["flags_timed_out"] == 0 and e["flags_reached"] >= 10
        else:
            assert e["flags_reached"] == 0 and e["flags_timed_out"] == len(range(timeout - 1, e["steps"] + 1, timeout))
        assert moves > 0 and f"flags reached {e['flags_reached']}, moved by their timer {e['flags_timed_out']}" in line
    total = sum(e["flags_reached"] for e in proc.result), sum(e["flags_timed_out"] for e in proc.result)
    assert f"flags reached {total[0]}, moved by their timer {total[1]}" in proc.stdout.splitlines()[3]


def test_times_down_are_the_stretches_below_the_harder_tasks_line_and_whether_each_ended():
    # the reset lying (0.25 m), up at step 3 (0.8 m is up); still up at step 5 (0.8), down at steps 6 and 7, up at 8;
    # down again at 9 to the episode's end
    heights = [0.3, 0.5, 0.8, 1.2, 0.8, 0.7, 0.6, 1.0, 0.5]
    assert zoo.times_down(heights, 0.25) == [(0, 3, True), (6, 2, True), (9, 1, False)]
    assert zoo.times_down([1.3, 1.2, 1.4], 1.4) == []  # never down
    assert zoo.times_down([0.2] * 4, 0.45) == [(0, 5, False)]  # a lying start that stays down


def test_a_fall_is_the_cubes_when_the_cube_touched_the_robot_in_the_60_steps_before_it():
    down = [(0, 5, True), (100, 20, True), (300, 10, True), (500, 10, False)]  # a lying start, then three falls
    # the lying start is no fall; the fall at 100 comes 60 steps after a touch, the one at 300 61 steps after one and
    # before another, the one at 500 in the step of a touch
    assert zoo.falls_after_touches(down, [3, 40, 239, 305, 500]) == 2
    assert zoo.falls_after_touches(down, []) == 0


@pytest.mark.parametrize("every", [15, 10_000], ids=["thrown-every-15-frames", "never-thrown"])
def test_gait_on_harder_counts_getting_up_the_cubes_and_the_falls_they_cause(tmp_path, capsys, monkeypatch, every):
    # A cube every 15 frames while the robot is up (it flies about 10 steps): an untrained robot that stands about 40
    # steps is hit before it falls, and that fall counts as one the cube may have caused; with none thrown, nothing
    # touches it and its fall is not the cube's
    monkeypatch.setattr(humanoid_flagrun, "THROW_AFTER", 0)
    monkeypatch.setattr(humanoid_flagrun, "THROW_EVERY", every)
    policy = flagrun_policy(tmp_path, "humanoid_flagrun:HumanoidFlagrunHarder-v0")
    proc = zoo_cli(capsys, "gait", policy, "--episodes", "2")  # seed 10001 starts upright, 10002 on its back
    assert proc.returncode == 0, proc.stderr
    upright, lying = proc.result
    assert (upright["start"], lying["start"]) == ("upright", "back")
    # a robot that cannot get up stays down from its lying start until the task ends the episode, 170 frames down
    assert lying["down"] == [(0, 171, False)] and lying["steps"] == 170
    assert lying["throws"] == lying["hits"] == lying["knocked"] == 0  # no cube flies at a robot that is down
    # the upright robot falls once and stays down: its first step below 0.8 m starts the stretch
    first = next(step for step, h in enumerate(upright["heights"], 1) if h < humanoid_flagrun.DOWN_Z)
    assert upright["down"] == [(first, upright["steps"] + 1 - first, False)]
    # the throws are the task's: replayed, a step throws when its frame counter is due while the robot is up
    env, act, _ = zoo.humanoid_player(policy, "test", 64, 64)
    task, (obs, _) = env.unwrapped, env.reset(seed=upright["seed"])
    due, done = 0, False
    while not done:
        due += task.frame % every == 0 and task.frame > 0 and task.on_ground == 0
        obs, _, terminated, truncated, _ = env.step(act(obs))
        done = terminated or truncated
    env.close()
    assert upright["throws"] == due
    if every == 15:
        assert upright["throws"] >= 2 and upright["hits"] >= 1 and upright["knocked"] == 1
    else:
        assert upright["throws"] == upright["hits"] == upright["knocked"] == 0
    lines = proc.stdout.strip().splitlines()
    assert lines[1].endswith(
        f"; getting up (start: upright): lying starts 0, up in 0; falls from up 1, up again 0; cubes thrown "
        f"{upright['throws']}, touched the robot {upright['hits']}, falls within 60 steps of a touch "
        f"{upright['knocked']}"
    )
    assert "; getting up: lying starts 1, up in 0; falls from up 1, up again 0; cubes thrown" in lines[3]
