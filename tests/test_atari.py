"""ppo_atari.py on the real emulator: short runs, the real game score, life losses, the α schedule, the seed's (9)."""

import math
import os

import numpy as np
import pytest
import torch

import ppo_atari
from tests.helpers import one_torch_thread, only_run_dir, run_script, scalars  # noqa: F401 (autouse fixture)

# one thread each: on a busy machine a second thread only waits for a core
TINY = ["--num-envs", "2", "--num-steps", "32", "--minibatch-size", "32", "--update-epochs", "2",
        "--total-timesteps", "256", "--save-model", "--no-cuda",
        "--torch-threads", "1", "--env-threads", "1"]  # fmt: skip


@pytest.mark.parametrize("env_id, network", [("BreakoutNoFrameskip-v4", "nature"), ("ALE/Pong-v5", "a3c")])
def test_a_few_iterations_run_with_finite_losses_and_the_alpha_schedule(tmp_path, env_id, network):
    proc = run_script("ppo_atari.py", "--env-id", env_id, "--network", network, *TINY, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    folder = only_run_dir(tmp_path)
    ckpt = torch.load(os.path.join(folder, "checkpoint.pt"), weights_only=True)
    assert ckpt["global_step"] == 256 and ckpt["iteration"] == 4
    for tag in ("losses/policy_loss", "losses/value_loss", "losses/entropy", "losses/approx_kl"):
        values = scalars(folder, tag)
        assert len(values) == 4 and all(math.isfinite(v) for v in values), tag
    # α = 1, 3/4, 1/2, 1/4 over the 4 iterations: Table 5's lr 2.5e-4 α and ε 0.1 α
    alpha = [1.0, 0.75, 0.5, 0.25]
    assert scalars(folder, "charts/learning_rate") == pytest.approx([2.5e-4 * a for a in alpha])
    assert scalars(folder, "charts/clip_coef") == pytest.approx([0.1 * a for a in alpha])
    assert ckpt["agent"]["actor.weight"].shape[1] == {"nature": 512, "a3c": 256}[network]
    # the checkpoint's network is the one --eval-checkpoint builds
    path = os.path.join(folder, "checkpoint.pt")
    proc = run_script("ppo_atari.py", "--eval-checkpoint", path, "--eval-episodes", "1", cwd=tmp_path, timeout=300)
    assert proc.returncode == 0 and "over 1 games" in proc.stdout, proc.stderr


def test_alpha_falls_linearly_from_one():
    assert [ppo_atari.annealed(i, 4) for i in range(1, 5)] == [1.0, 0.75, 0.5, 0.25]


def test_env_ids_map_to_roms_and_unknown_games_get_close_names(tmp_path):
    for env_id, game in [("BreakoutNoFrameskip-v4", "breakout"), ("ALE/Breakout-v5", "breakout"),
                         ("MsPacmanNoFrameskip-v4", "ms_pacman"), ("SpaceInvaders-v4", "space_invaders"),
                         ("pong", "pong")]:  # fmt: skip
        assert ppo_atari.atari_game(env_id) == game
    proc = run_script("ppo_atari.py", "--env-id", "BreakotNoFrameskip-v4", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "breakout" in proc.stderr and "--env-id" in proc.stderr
    proc = run_script("ppo_atari.py", "--env-id", "Qqqqqqqq-v4", cwd=tmp_path, timeout=60)  # no name is close
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: --env-id Qqqqqqqq-v4: no Atari game 'qqqqqqqq' in ale-py", proc.stderr


def test_seed_full_objective_through_the_scripts_loss():
    entropy = ppo_atari.categorical_entropy(torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64).log())
    assert round(entropy.item(), 3) == 1.030
    v_loss = ppo_atari.value_loss(torch.tensor([0.5]), torch.tensor([0.5]), torch.tensor([0.81]))
    loss = ppo_atari.total_loss(torch.tensor(1.2), v_loss, entropy, vf_coef=1.0, ent_coef=0.01)  # c1, c2 of Table 5
    assert round(-loss.item(), 3) == 1.114
    assert ppo_atari.Args().vf_coef == 1.0 and ppo_atari.Args().ent_coef == 0.01


def fire_gain(module) -> tuple[float, float]:
    """Algorithm 1's step 3 on a made-up batch: 256 states of noise, each action in a quarter of them, and Â > 0
    exactly where the action was FIRE (1). The mean change of log π over one update() of `module` (ppo_atari.py or a
    fork of it), where the action was FIRE and where it was not."""
    torch.manual_seed(0)
    args = module.Args(num_envs=8, num_steps=32, minibatch_size=64)
    agent = module.Agent(4)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=args.adam_eps)
    obs = torch.randint(0, 256, (32, 8, 4, 84, 84), dtype=torch.uint8)
    actions = torch.arange(256).view(32, 8) % 4
    with torch.inference_mode():
        logits, values = agent(obs.view(256, 4, 84, 84))
        logprobs = module.categorical_log_prob(logits, actions.view(256))  # what the rollout stores with each action
    rollout = {"obs": obs.numpy(), "actions": actions.numpy(), "logits": logits.view(32, 8, 4).numpy(),
               "logprobs": logprobs.view(32, 8).numpy(), "served": np.zeros((32, 8), dtype=bool)}  # fmt: skip
    advantages = np.where(actions.numpy() == 1, 1.0, -0.5).astype(np.float32)
    batch = module.flatten_batch(rollout, advantages, values.view(32, 8).numpy(), torch.device("cpu"))
    metrics = module.update(agent, optimizer, batch, 0.0, args.clip_coef, args)
    assert metrics["losses/kl"] > 0 and metrics["losses/clipfrac"] >= 0
    with torch.inference_mode():
        new_logits, _ = agent(batch["obs"])
    gain = module.categorical_log_prob(new_logits, batch["actions"]) - batch["logprobs"]  # log π / π_old
    fire = batch["actions"] == 1
    return gain[fire].mean().item(), gain[~fire].mean().item()


def test_update_makes_the_better_actions_more_likely():
    # One update() must raise π(FIRE|s) and lower π of the other actions in those same states. An update that climbs
    # the wrong way (the ratio inverted to π_old / π, a max in L^CLIP) fails.
    gain_fire, gain_other = fire_gain(ppo_atari)
    assert gain_fire > 0.01 and gain_other < -0.005, (gain_fire, gain_other)


def test_advantages_of_a_rollout_stop_at_a_time_limit_and_bootstrap_from_the_real_last_frame():
    # estimate_advantages on a rollout of 4 steps, r = 1, V(s_t) = 2, 4, 2, 4; the game is cut by the time limit at
    # t = 1. V is made up: 12 for the real last frame of the cut game (all zeros), 8 for the frame after the rollout.
    # γ = λ = 0.5: the numbers of tests/test_rollout.py's truncated env, Â = (1.75, 3, 1.25, 1).
    args = ppo_atari.Args(num_envs=1, num_steps=4, gamma=0.5, gae_lambda=0.5)
    agent = ppo_atari.Agent(4)
    agent.value = lambda frames: torch.where(frames.flatten(1).amax(1) == 0, 12.0, 8.0)
    truncated = np.zeros((4, 1), dtype=bool)
    truncated[1, 0] = True
    rollout = {"values": np.array([[2.0], [4.0], [2.0], [4.0]], dtype=np.float32), "rewards": np.ones((4, 1)),
               "terminated": np.zeros((4, 1), dtype=bool), "truncated": truncated,
               "final_obs": {(1, 0): np.zeros((4, 84, 84), dtype=np.uint8)}}  # fmt: skip
    advantages, _ = ppo_atari.estimate_advantages(agent, rollout, np.ones((1, 4, 84, 84), dtype=np.uint8), args)
    assert advantages[:, 0].tolist() == [1.75, 3.0, 1.25, 1.0]


def play(env_id: str, steps: int, seed: int = 5):
    """The script's own rollout, one step at a time: per step the lives left, the batch's flags and the games."""
    args = ppo_atari.Args(env_id=env_id, num_envs=1, num_steps=1, seed=seed, env_threads=1)
    envs = ppo_atari.make_envs(args, run_dir="")
    torch.manual_seed(seed)
    agent = ppo_atari.Agent(envs.single_action_space.n)
    carry = ppo_atari.start_carry(envs, args, seed)
    steps_out, episodes = [], []
    for step in range(steps):
        rollout = ppo_atari.collect_rollout(envs, agent, carry, args, step, episodes)
        steps_out.append({"obs": rollout["obs"][0, 0], "action": int(rollout["actions"][0, 0]),
                          "reward": float(rollout["rewards"][0, 0]), "terminated": bool(rollout["terminated"][0, 0]),
                          "lives": int(carry.lives[0]), "next_obs": carry.next_obs[0].copy()})  # fmt: skip
        if episodes:
            return steps_out, episodes, args
    raise AssertionError(f"no game ended in {steps} steps")


def test_logged_return_is_the_unclipped_score_of_the_whole_game():
    steps, episodes, args = play("SpaceInvadersNoFrameskip-v4", 5000)
    ((_, score, length),) = episodes
    assert length == len(steps)
    # a plain ale-py env with the same preprocessing and seed, playing the same actions, scores the same game
    plain = ppo_atari.AtariVectorEnv("space_invaders", 1, noop_max=30, repeat_action_probability=0.0,
                                     reward_clipping=False, episodic_life=False, num_threads=1)  # fmt: skip
    plain.reset(seed=args.seed)
    raw = 0.0
    for s in steps:
        _, reward, terminated, _, _ = plain.step(np.array([s["action"]]))
        raw += float(reward[0])
    assert terminated[0] and score == raw
    clipped = sum(s["reward"] for s in steps)  # what the agent learned from
    assert score > clipped > 0  # invaders are worth 5 to 30 points; the clipped sum counts them as 1


def test_a_life_loss_stops_bootstrapping_and_the_next_transition_is_kept():
    steps, episodes, _ = play("BreakoutNoFrameskip-v4", 5000)
    losses = [t for t in range(1, len(steps) - 1) if steps[t]["lives"] < steps[t - 1]["lives"]]
    assert len(losses) == 4  # five lives: four are lost mid-game, the fifth ends it
    for t in losses:
        assert steps[t]["terminated"]  # no bootstrap across the life loss: V(s_{t+1}) counts 0
        # no reset: the next transition starts from the frame the game showed, and it is in the batch
        assert np.array_equal(steps[t + 1]["obs"], steps[t]["next_obs"])
    assert sum(s["terminated"] for s in steps) == 5 and steps[-1]["terminated"]
    assert len(episodes) == 1  # one game, however many lives
    values = np.ones((3, 1))
    terminated = np.array([[False], [True], [False]])
    next_values = ppo_atari.bootstrap_values(values * [[1], [2], [3]], values, np.array([4.0]), terminated,
                                             np.zeros_like(terminated))  # fmt: skip
    assert next_values[:, 0].tolist() == [2.0, 0.0, 4.0]


def test_the_a3c_network_is_the_one_section_6_4_names():
    agent = ppo_atari.Agent(4, network="a3c")
    shapes = [tuple(p.shape) for p in agent.network.parameters()]
    # conv 16 8x8 stride 4, conv 32 4x4 stride 2, fully connected 256 (Mnih et al. 2016), on 84x84x4 frames
    assert shapes == [(16, 4, 8, 8), (16,), (32, 16, 4, 4), (32,), (256, 32 * 9 * 9), (256,)]
    assert agent.actor.in_features == agent.critic.in_features == 256
    logits, value = agent(torch.zeros(2, 4, 84, 84, dtype=torch.uint8))
    assert logits.shape == (2, 4) and value.shape == (2,)
    nature = ppo_atari.Agent(4)
    assert [tuple(p.shape) for p in nature.network.parameters()][::2] == [
        (32, 4, 8, 8), (64, 32, 4, 4), (64, 64, 3, 3), (512, 64 * 7 * 7)]  # fmt: skip


def test_same_seed_same_games_and_the_saved_model_evaluates(tmp_path):
    folders = []
    for name in ("a", "b"):
        os.makedirs(tmp_path / name)
        # Breakout: an untrained agent's games are short (five lost serves), so evaluating two of them is quick
        proc = run_script("ppo_atari.py", "--env-id", "BreakoutNoFrameskip-v4", *TINY, cwd=tmp_path / name, timeout=300)
        assert proc.returncode == 0, proc.stderr
        folders.append(only_run_dir(tmp_path / name))
    a, b = (torch.load(os.path.join(f, "checkpoint.pt"), weights_only=True) for f in folders)
    for key, value in a["agent"].items():
        assert torch.equal(value, b["agent"][key]), key
    assert scalars(folders[0], "losses/value_loss") == scalars(folders[1], "losses/value_loss")
    path = os.path.join(folders[0], "checkpoint.pt")
    proc = run_script("ppo_atari.py", "--eval-checkpoint", path, "--eval-episodes", "2", cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "over 2 games" in proc.stdout and 0 <= float(proc.stdout.split("mean return")[1].split()[0]) <= 864
