"""ppo_humanoid.py, §6.3's variant of ppo_continuous.py: Table 4's stepsize rule and log-std anneal, and its envs in
worker processes, whose number must not change a result, which resume exactly and leave no process behind."""

import glob
import importlib
import math
import os
import pathlib
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest
import torch

import ppo_humanoid
from tests.helpers import ROOT, assert_one_line_error, only_run_dir, read_episodes, run_script, scalar_events, scalars

# §6.3's flagrun task (humanoid_flagrun.py) with episodes cut at 30 steps, so that a short run ends episodes both
# ways: a fall terminates one (the starting policy falls in 20 to 40 steps), the time limit truncates the others; its
# task state (the flag, the potential) must pass through the workers into a checkpoint and back. The scripts make it
# as --env-id tests.test_humanoid:FlagrunShort-v0
gym.register("FlagrunShort-v0", entry_point="humanoid_flagrun:HumanoidEnv", max_episode_steps=30,
             kwargs={"task": "flagrun"})  # fmt: skip
TINY = ["--env-id", "tests.test_humanoid:FlagrunShort-v0", "--num-envs", "4", "--num-steps", "64",
        "--minibatch-size", "128", "--save-model"]  # fmt: skip


def load(folder: str) -> dict:
    return torch.load(os.path.join(folder, "checkpoint.pt"), weights_only=True)


def children(pid: int) -> set[int]:
    """The processes whose parent is pid (Linux: /proc)."""
    found = set()
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()  # after the command's name: state, parent, ...
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.split("/")[2]))
    return found


def alive(pid: int) -> bool:
    """Whether pid runs: a zombie has exited, and waits only for its new parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def assert_all_exit(pids: set[int], within: float = 10.0) -> None:
    deadline = time.time() + within
    while time.time() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.05)
    assert not any(alive(pid) for pid in pids), f"worker processes left running: {[p for p in pids if alive(p)]}"


def start_and_wait_for_training(cwd, *flags: str, **popen) -> subprocess.Popen:
    """A run in the background, once its first iteration is saved; with its worker processes as `.workers`."""
    env = {**os.environ, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"}
    running = subprocess.Popen([sys.executable, os.path.join(ROOT, "ppo_humanoid.py"), *flags], cwd=cwd, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)  # fmt: skip
    deadline = time.time() + 60
    while time.time() < deadline and not glob.glob(os.path.join(cwd, "runs", "*", "checkpoint.pt")):
        assert running.poll() is None, running.communicate()
        time.sleep(0.05)
    running.workers = children(running.pid)
    assert len(running.workers) == int(flags[flags.index("--num-workers") + 1]), running.workers
    return running


def test_stepsize_rule_is_the_footnotes():
    # after each update: / 1.5 when KL > 2 × target, × 1.5 when KL < target / 2, unchanged in between (edges included)
    rule = ppo_humanoid.adapt_stepsize
    assert rule(3e-4, 0.0201, 0.01) == 3e-4 / 1.5 and rule(3e-4, 1.0, 0.01) == 3e-4 / 1.5
    assert rule(3e-4, 0.0049, 0.01) == 3e-4 * 1.5 and rule(3e-4, 0.0, 0.01) == 3e-4 * 1.5
    for kl in (0.005, 0.01, 0.02):
        assert rule(3e-4, kl, 0.01) == 3e-4
    args = ppo_humanoid.Args()  # Table 4's mode: the KL rule, and no schedule on top of it
    assert args.adaptive_lr and not args.anneal_lr and args.lr_kl_target == 0.01


def test_logstd_is_set_by_the_linear_anneal_not_learned():
    anneal = ppo_humanoid.linear_anneal
    assert anneal(-0.7, -1.6, 1, 4) == -0.7 and anneal(-0.7, -1.6, 4, 4) == -1.6  # first and last iteration
    assert [round(anneal(-0.7, -1.6, i, 4), 12) for i in (2, 3)] == [-1.0, -1.3]
    assert anneal(-0.7, -1.6, 1, 1) == -0.7  # one iteration: the start
    agent = ppo_humanoid.Agent(44, 17)
    assert "actor_logstd" in dict(agent.named_buffers()) and "actor_logstd" not in dict(agent.named_parameters())
    optimizer = torch.optim.Adam(agent.parameters())  # as train() makes it
    assert all(p is not agent.actor_logstd for group in optimizer.param_groups for p in group["params"])
    mean, logstd = agent.get_policy(torch.zeros(3, 44))
    assert logstd.shape == mean.shape == (3, 17)


def test_an_update_on_two_threads_repeats_bit_for_bit():
    # --update-threads: an update at Table 4's sizes (256-128 networks, minibatches of 4096, 2 of them here) on two
    # torch threads gives the same weights each time it runs from the same state, as a run's repeatability needs
    args = ppo_humanoid.Args(num_envs=16, update_epochs=2)  # a batch of 8192
    torch.manual_seed(0)
    batch = {"obs": torch.randn(8192, 44), "actions": torch.randn(8192, 17), "advantages": torch.randn(8192),
             "values": torch.randn(8192), "returns": torch.randn(8192)}  # fmt: skip
    start = ppo_humanoid.Agent(44, 17)
    with torch.no_grad():
        batch["means"], batch["logstds"] = start.get_policy(batch["obs"])
    batch["logprobs"] = ppo_humanoid.gaussian_log_prob(batch["actions"], batch["means"], batch["logstds"])
    threads, weights = torch.get_num_threads(), []
    try:
        torch.set_num_threads(2)
        for _ in range(2):
            agent = ppo_humanoid.Agent(44, 17)
            agent.load_state_dict(start.state_dict())
            optimizer = torch.optim.Adam(agent.parameters(), lr=3e-4, eps=1e-5, fused=True)
            torch.manual_seed(1)  # the minibatches' shuffle
            ppo_humanoid.update(agent, optimizer, batch, 1.0, args)
            weights.append(agent.state_dict())
    finally:
        torch.set_num_threads(threads)
    assert not torch.equal(weights[0]["actor_mean.0.weight"], start.state_dict()["actor_mean.0.weight"])  # it moved
    for key, value in weights[0].items():
        assert torch.equal(value, weights[1][key]), key


def test_the_update_runs_on_update_threads_and_the_rollout_on_one(tmp_path, monkeypatch):
    # the workers use the cores while the rollout runs; the update has them to itself
    seen = {}

    def spy(name):
        real = getattr(ppo_humanoid, name)

        def counted(*args, **kwargs):  # the torch threads in force when train() calls it
            seen.setdefault(name, set()).add(torch.get_num_threads())
            return real(*args, **kwargs)

        monkeypatch.setattr(ppo_humanoid, name, counted)

    spy("update")
    spy("collect_rollout")
    monkeypatch.chdir(tmp_path)
    args = ppo_humanoid.Args(env_id="tests.test_humanoid:FlagrunShort-v0", num_envs=4, num_steps=64,
                             minibatch_size=128, total_timesteps=512, num_workers=1, update_threads=2)  # fmt: skip
    threads = torch.get_num_threads()
    try:
        ppo_humanoid.train(args)
    finally:
        torch.set_num_threads(threads)
    assert seen == {"update": {2}, "collect_rollout": {1}}


@pytest.mark.parametrize("script", ["ppo_humanoid", "ppo_continuous", "trpo", "reinforce_baseline", "cem"])
@pytest.mark.parametrize("env_id", ["Humanoid-v4", "Ant-v4", "humanoid_flagrun:HumanoidFlagrunHarder-v0"])
def test_a_restored_env_steps_as_the_saved_one(tmp_path, env_id, script):
    # Humanoid's and Ant's rewards read body positions that the last step computed before its last integration: a
    # state restored by mj_setState and mj_forward alone would give the first step after a resume another reward.
    # Harder keeps its own state besides (the flag, the potential, the frame counter that times the cube).
    import numpy as np

    saved, restored = gym.make(env_id), gym.make(env_id)
    saved.reset(seed=0)
    restored.reset(seed=1)
    rng = np.random.default_rng(0)
    actions = rng.uniform(-0.4, 0.4, (12, *saved.action_space.shape)).astype(np.float32)
    for action in actions[:7]:
        saved.step(action)
    module = importlib.import_module(script)  # the same two functions in every MuJoCo script
    torch.save(module.env_state(saved), tmp_path / "state.pt")  # as a checkpoint holds it
    module.set_env_state(restored, torch.load(tmp_path / "state.pt", weights_only=True))
    for action in actions[7:]:
        (obs, reward, *ends, _), (obs_r, reward_r, *ends_r, _) = saved.step(action), restored.step(action)
        assert reward == reward_r and np.array_equal(obs, obs_r) and ends == ends_r


def test_one_or_two_workers_give_the_same_run(tmp_path):
    # 4 iterations; the envs split 4 + 0 or 2 + 2: the same episodes, weights and metrics to the last bit
    for workers in ("1", "2"):
        os.makedirs(tmp_path / workers)
        proc = run_script("ppo_humanoid.py", *TINY, "--total-timesteps", "1024", "--num-workers", workers,
                          cwd=tmp_path / workers, timeout=120)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    one, two = only_run_dir(tmp_path / "1"), only_run_dir(tmp_path / "2")
    episodes = read_episodes(one)
    lengths = {int(row[2]) for row in episodes[1:]}
    assert len(episodes) > 25 and 30 in lengths and min(lengths) < 30  # truncations and terminations both
    assert episodes == read_episodes(two)
    for key, value in load(one)["agent"].items():
        assert torch.equal(value, load(two)["agent"][key]), key
    for tag in ("losses/kl", "charts/learning_rate", "losses/entropy", "losses/value_loss"):
        assert scalar_events(one, tag) == scalar_events(two, tag), tag
    # the log-std each update used, from the logged entropy Σ_i (log σ_i + ½ log 2πe) over the 17 actions: the anneal
    logstds = [entropy / 17 - 0.5 * math.log(2 * math.pi * math.e) for entropy in scalars(one, "losses/entropy")]
    assert logstds == pytest.approx([-0.7, -1.0, -1.3, -1.6], abs=1e-5)
    # the stepsize logged is the rule's, which moved it off its start by a power of 1.5
    rates = scalars(one, "charts/learning_rate")
    powers = [math.log(rate / 3e-4, 1.5) for rate in rates]
    assert powers == pytest.approx([round(power) for power in powers], abs=1e-6)
    assert rates[-1] == pytest.approx(load(one)["optimizer"]["param_groups"][0]["lr"]) and rates[-1] != 3e-4


def test_sigterm_saves_and_resume_continues_bit_for_bit(tmp_path):
    flags = [*TINY, "--total-timesteps", "2048", "--num-workers", "2"]  # 8 iterations
    os.makedirs(tmp_path / "whole")
    os.makedirs(tmp_path / "parts")
    proc = run_script("ppo_humanoid.py", *flags, cwd=tmp_path / "whole", timeout=120)
    assert proc.returncode == 0, proc.stderr

    # SIGTERM after the first iteration: the run finishes the iteration in progress, saves, and closes its workers
    running = start_and_wait_for_training(tmp_path / "parts", *flags)
    running.send_signal(signal.SIGTERM)
    out, err = running.communicate(timeout=60)
    assert running.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and "--resume" in out
    assert_all_exit(running.workers)
    folder = only_run_dir(tmp_path / "parts")
    assert 0 < load(folder)["global_step"] < 2048, "the signal must arrive mid-run for this test to mean anything"
    assert load(folder)["optimizer"]["param_groups"][0]["lr"] != 3e-4  # the stepsize the rule moved: state to keep

    proc = run_script("ppo_humanoid.py", "--resume", os.path.join(folder, "checkpoint.pt"), cwd=tmp_path / "parts")
    assert proc.returncode == 0, proc.stderr
    whole = only_run_dir(tmp_path / "whole")
    assert read_episodes(folder) == read_episodes(whole)
    for key, value in load(whole)["agent"].items():
        assert torch.equal(value, load(folder)["agent"][key]), key
    assert load(whole)["optimizer"]["param_groups"][0]["lr"] == load(folder)["optimizer"]["param_groups"][0]["lr"]
    for key in ("mean", "var"):
        assert torch.equal(load(whole)["obs_rms"][key], load(folder)["obs_rms"][key])
    for state, resumed in zip(load(whole)["envs"], load(folder)["envs"]):  # the envs' physics, counters and RNGs
        assert torch.equal(state["physics"], resumed["physics"]) and state["steps"] == resumed["steps"]
        assert state["rng"] == resumed["rng"]
    for tag in ("losses/kl", "charts/learning_rate", "losses/entropy", "losses/policy_loss", "charts/episodic_return"):
        assert scalar_events(folder, tag) == scalar_events(whole, tag), tag


@pytest.mark.parametrize("stop", ["ctrl-c", "sigkill"])
def test_no_worker_outlives_the_run(tmp_path, stop):
    # Ctrl-C reaches the whole process group, workers included: they ignore it, and the main process saves, then
    # closes them. A killed main process saves nothing, but its workers see their pipes close and exit.
    running = start_and_wait_for_training(tmp_path, *TINY, "--total-timesteps", "4096", "--num-workers", "2",
                                          start_new_session=True)  # fmt: skip
    os.killpg(running.pid, signal.SIGINT) if stop == "ctrl-c" else running.kill()
    out, err = running.communicate(timeout=60)
    assert running.returncode == (128 + signal.SIGINT if stop == "ctrl-c" else -signal.SIGKILL), err
    assert_all_exit(running.workers)
    if stop == "ctrl-c":
        assert "Traceback" not in err and "--resume" in out
        assert 0 < load(only_run_dir(tmp_path))["global_step"] < 4096


def test_capture_video_films_env_0_in_its_worker(tmp_path):
    # env 0 lives in worker 0, which renders it and writes the video when the run closes the workers
    flags = ["--env-id", "Humanoid-v4", "--num-envs", "2", "--num-steps", "64", "--minibatch-size", "64",
             "--total-timesteps", "128", "--num-workers", "2", "--capture-video"]  # fmt: skip
    proc = run_script("ppo_humanoid.py", *flags, cwd=tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    first = os.path.join(only_run_dir(tmp_path), "videos", "rl-video-episode-0.mp4")
    with open(first, "rb") as f:
        header = f.read(12)
    assert header[4:8] == b"ftyp" and os.path.getsize(first) > 1000  # an MP4 with frames in it


@pytest.mark.parametrize(
    "flags, flag_named",
    [
        (["--num-workers", "0"], "--num-workers"),
        (["--update-threads", "0"], "--update-threads"),
        (["--anneal-lr"], "--anneal-lr"),
        (["--lr-kl-target", "0"], "--lr-kl-target"),
        (["--hidden-sizes", "64", "0"], "--hidden-sizes"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(tmp_path, flags, flag_named):
    proc = run_script("ppo_humanoid.py", *flags, cwd=tmp_path, timeout=120)
    assert_one_line_error(proc, flag_named)
    assert not (tmp_path / "runs").exists()  # nothing half-made


def test_throughput_times_a_trained_robot_by_its_own_policy(tmp_path, monkeypatch):
    # benchmark/throughput.py --humanoid-checkpoint: the script continues a copy of the checkpoint (the run's own is
    # left as it was), and bare stepping takes the checkpoint's policy's actions, not random ones
    from benchmark import throughput

    running = start_and_wait_for_training(tmp_path, *TINY, "--total-timesteps", "1000000", "--num-workers", "2")
    running.send_signal(signal.SIGTERM)
    running.communicate(timeout=60)
    path = os.path.join(only_run_dir(tmp_path), "checkpoint.pt")
    before = pathlib.Path(path).read_bytes()
    assert throughput.resumed_sps("ppo_humanoid.py", path, seconds=15) > 0  # start-up and a few iterations
    assert pathlib.Path(path).read_bytes() == before

    ckpt = torch.load(path, weights_only=True)
    ckpt["agent"]["actor_logstd"].fill_(-30.0)  # σ ≈ 0: each action is the policy's mean, which is recomputed below
    torch.save(ckpt, path)
    seen, step = [], ppo_humanoid.Envs.step

    def recording_step(self, actions):
        out = step(self, actions)
        seen.append((actions.copy(), out[0].copy()))  # the actions given, and the observations they led to
        return out

    monkeypatch.setattr(ppo_humanoid.Envs, "step", recording_step)
    threads = torch.get_num_threads()
    try:
        assert throughput.bare_humanoid_sps(TINY[1], steps=40, num_envs=4, checkpoint=path) > 0
    finally:
        torch.set_num_threads(threads)
    ckpt = ppo_humanoid.load_checkpoint(path, "--humanoid-checkpoint")
    saved, obs_rms = ckpt["args"], ppo_humanoid.RunningMeanStd()
    obs_rms.load(ckpt["obs_rms"])
    space = gym.make(TINY[1]).action_space
    agent = ppo_humanoid.Agent(seen[0][1].shape[1], space.shape[0], hidden_sizes=saved.hidden_sizes,
                               activation=saved.activation)  # fmt: skip
    agent.load_state_dict(ckpt["agent"])
    assert len(seen) == 10
    for (_, obs), (actions, _) in zip(seen, seen[1:]):
        with torch.inference_mode():
            mean, _ = agent.get_policy(torch.from_numpy(ppo_humanoid.normalize_obs(obs, obs_rms, saved, update=False)))
        np.testing.assert_allclose(actions, ppo_humanoid.env_actions(mean.numpy(), space, saved), atol=1e-6)
