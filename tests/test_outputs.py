"""What a run shows and writes besides TensorBoard and episodes.csv: progress, wandb offline logs, videos."""

import glob
import os
import pty

import gymnasium as gym
import pytest

from tests.helpers import SCRIPTS, only_run_dir, run_script

TINY = ["--env-id", "InvertedPendulum-v4", "--num-steps", "512", "--total-timesteps", "1024"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_track_logs_to_wandb_offline_without_an_account(tmp_path, monkeypatch, script):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))  # no account, no settings from $HOME
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb-cache"))
    proc = run_script(script, *TINY, "--track", cwd=tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (log,) = glob.glob(str(tmp_path / "wandb" / "offline-run-*" / "run-*.wandb"))
    with open(log, "rb") as f:
        data = f.read()
    # the flags went in as the run's config, and the TensorBoard scalars were synced as its history
    for text in (b"InvertedPendulum-v4", b"env_id", b"losses/value_loss", b"charts/episodic_return"):
        assert text in data, text
    # wandb's own folder stays outside the TensorBoard log dir: inside it, the sync copies its own copies, endlessly
    assert not os.path.exists(os.path.join(only_run_dir(tmp_path), "wandb"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_capture_video_records_episodes_as_mp4(tmp_path, script):
    proc = run_script(script, *TINY, "--num-envs", "2", "--capture-video", cwd=tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    video_dir = os.path.join(only_run_dir(tmp_path), "videos")
    videos = glob.glob(os.path.join(video_dir, "*.mp4"))
    first = os.path.join(video_dir, "rl-video-episode-0.mp4")
    assert first in videos, videos
    with open(first, "rb") as f:
        header = f.read(12)
    assert header[4:8] == b"ftyp" and os.path.getsize(first) > 1000  # an MP4 with frames in it


@pytest.mark.parametrize("script", SCRIPTS)
def test_progress_is_one_live_line_on_a_terminal(tmp_path, script):
    leader, follower = pty.openpty()
    flags = ["--env-id", "InvertedPendulum-v4", "--num-steps", "256", "--total-timesteps", "1024"]
    proc = run_script(script, *flags, cwd=tmp_path, timeout=120, stdout=follower)
    os.close(follower)
    out = os.read(leader, 1 << 16).decode()
    os.close(leader)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # one line, rewritten after each of the 4 iterations, with the step, SPS, recent return and time left
    assert out.count("\rstep ") == 4 and "SPS" in out and "return(100)" in out and "ETA" in out, out
    assert out.count("\n") <= 2  # the live line, then the summary: no scrolling log on a terminal


@pytest.mark.parametrize("script", SCRIPTS)
def test_eval_checkpoint_films_the_mujoco_scene_following_the_robot(tmp_path, script):
    # what a person watches: the rendered scene in colour, every evaluation episode, through the camera that follows
    # the robot (gymnasium's default view stays put and a trained runner leaves it within seconds)
    import imageio.v3 as iio
    import mujoco

    proc = run_script(script, "--env-id", "InvertedDoublePendulum-v4", "--num-steps", "512", "--total-timesteps", "512",
                      "--save-model", cwd=tmp_path, timeout=180)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    checkpoint = os.path.join(only_run_dir(tmp_path), "checkpoint.pt")
    proc = run_script(script, "--eval-checkpoint", checkpoint, "--eval-episodes", "2", "--capture-video",
                      cwd=tmp_path, timeout=180)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    video_dir = proc.stdout.split("videos: ")[1].strip()
    videos = sorted(glob.glob(os.path.join(tmp_path, video_dir, "*.mp4")))
    assert [os.path.basename(v) for v in videos] == ["rl-video-episode-0.mp4", "rl-video-episode-1.mp4"]
    frames = iio.imread(videos[0])  # (frames, height, width, 3)
    assert frames.ndim == 4 and frames.shape[1:] == (480, 480, 3) and len(frames) > 5, frames.shape
    assert (abs(frames[..., 0].astype(int) - frames[..., 2]) > 40).any(axis=(1, 2)).all()  # colour in every frame
    assert not (frames[0] == frames[-1]).all()  # it moves

    module = __import__(script[: -len(".py")])
    for env_id, camera in (("Hopper-v4", "track"), ("InvertedPendulum-v4", None)):
        env = module.follow_robot(gym.make(env_id, render_mode="rgb_array"))
        model = env.unwrapped.model
        expected = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera) if camera else -1
        assert env.unwrapped.mujoco_renderer.camera_id == expected and (camera is None or expected >= 0)
        env.close()
