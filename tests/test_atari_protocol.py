"""ppo_atari.py's game protocol on the real emulator: FIRE after a lost life, the time limit, sticky actions per id,
the loss without the forced steps, the KL that adapts β, a seeded evaluation and the device line."""

import os

import numpy as np
import pytest
import torch

import ppo_atari
from tests.helpers import one_torch_thread, only_run_dir, run_script, scalars  # noqa: F401 (autouse fixture)

NOOP, FIRE, LEFT = 0, 1, 3  # Breakout's minimal action set: NOOP, FIRE, RIGHT, LEFT
ONE_THREAD = ["--torch-threads", "1", "--env-threads", "1"]  # fast on a busy machine too


def noop_agent(num_actions: int, margin: float = 50.0) -> ppo_atari.Agent:
    """A policy whose most probable action is NOOP in every state; with the default margin it always picks NOOP
    (Gumbel noise never beats 50), so it never serves the ball by itself."""
    torch.manual_seed(0)
    agent = ppo_atari.Agent(num_actions)
    with torch.no_grad():
        agent.actor.weight.zero_()
        agent.actor.bias.copy_(torch.tensor([margin] + [0.0] * (num_actions - 1)))
    return agent


def play(steps: int, **flags):
    """One Breakout game of the NOOP policy through the script's rollout, one step at a time, until it ends."""
    args = ppo_atari.Args(env_id="BreakoutNoFrameskip-v4", num_envs=1, num_steps=1, seed=3, env_threads=1, **flags)
    envs = ppo_atari.make_envs(args, run_dir="")
    agent = noop_agent(envs.single_action_space.n)
    carry = ppo_atari.start_carry(envs, args, args.seed)
    out, episodes = [], []
    for step in range(steps):
        rollout = ppo_atari.collect_rollout(envs, agent, carry, args, step, episodes)
        out.append({key: rollout[key][0, 0] for key in ("actions", "served", "terminated", "truncated")})
        out[-1].update(lives=int(carry.lives[0]), final_obs=rollout["final_obs"].get((0, 0)))
        out[-1]["next_obs"] = carry.next_obs[0].copy()
        if episodes:
            return out, episodes
    return out, episodes


def test_after_a_lost_life_the_next_action_is_fire_and_is_marked_as_forced():
    steps, episodes = play(2000)
    assert len(episodes) == 1, "the NOOP policy's game must end: the script serves after each lost life"
    lost = [t for t in range(len(steps) - 1) if steps[t]["terminated"]]
    assert len(lost) == 4  # five lives: four lost mid-game, then the game ends
    for t, s in enumerate(steps):
        forced = t - 1 in lost
        assert s["served"] == forced and s["actions"] == (FIRE if forced else NOOP), t
    # off: the agent must serve itself, and the NOOP policy never does, so no second life is lost
    steps, episodes = play(300, fire_on_life_loss=False)
    assert not episodes and sum(s["terminated"] for s in steps) == 1 and not any(s["served"] for s in steps)


def test_a_life_lost_on_the_truncation_step_is_not_bootstrapped():
    steps, _ = play(2000)
    second_loss = [t for t, s in enumerate(steps) if s["terminated"]][1]
    # the time limit falls on the step that loses the second life: no bootstrap from V(final obs) past that loss
    steps, episodes = play(2000, max_episode_frames=4 * (second_loss + 1))
    last = steps[-1]
    assert len(steps) == second_loss + 1 and episodes[0][2] == second_loss + 1
    assert last["truncated"] and last["terminated"] and last["final_obs"] is None
    values, final_values, last_value = np.ones((1, 1)), np.full((1, 1), 7.0), np.full(1, 5.0)
    next_values = ppo_atari.bootstrap_values(values, final_values, last_value, np.array([[last["terminated"]]]),
                                             np.array([[last["truncated"]]]))  # fmt: skip
    assert next_values[0, 0] == 0.0
    assert last["lives"] == 5  # a new game, which ale-py served itself: the script forces nothing
    # the time limit one step earlier, where no life is lost: a truncation, bootstrapped from the real last frame
    steps, _ = play(2000, max_episode_frames=4 * second_loss)
    last = steps[-1]
    assert last["truncated"] and not last["terminated"] and last["final_obs"] is not None
    assert not np.array_equal(last["final_obs"], last["next_obs"])  # the next input is the new game's first frame


@pytest.mark.parametrize(
    "env_id, frames",
    [("BreakoutNoFrameskip-v4", 400_000), ("PongNoFrameskip-v4", 400_000), ("SpaceInvadersNoFrameskip-v4", 300_000),
     ("Breakout-v4", 400_000), ("breakout", 400_000), ("space_invaders", 300_000), ("ALE/Breakout-v5", 108_000),
     ("ALE/SpaceInvaders-v5", 108_000), ("Breakout-v0", 108_000)],
)  # fmt: skip
def test_the_frame_limit_follows_the_id_and_the_flag_overrides(env_id, frames):
    # the paper's gym 0.9 registered NoFrameskip-v4 with max_episode_steps = frameskip x 100,000 (frameskip 3 for
    # SpaceInvaders, 4 for the rest); ale-py registers ALE/...-v5 with 108,000 frames
    assert ppo_atari.episode_frame_limit(ppo_atari.Args(env_id=env_id)) == frames
    assert ppo_atari.episode_frame_limit(ppo_atari.Args(env_id=env_id, max_episode_frames=1200)) == 1200
    if "-v5" in env_id or "-v0" in env_id:  # the sticky-action ids: the same number as ale-py's own registration
        import gymnasium as gym

        assert gym.spec(env_id).kwargs["max_num_frames_per_episode"] == frames


def test_the_rollout_truncates_at_the_ids_limit(monkeypatch):
    # the id's limit, not a number of the script's own, decides where the rollout truncates: made small here
    monkeypatch.setattr(ppo_atari, "episode_frame_limit", lambda args: 4 * 40)
    steps, episodes = play(2000, fire_on_life_loss=False)  # the NOOP policy loses one life, then waits forever
    assert len(steps) == 40 and steps[-1]["truncated"] and episodes[0][2] == 40


def test_v5_ids_get_sticky_actions_and_the_flag_overrides(monkeypatch, tmp_path):
    import gymnasium as gym

    for env_id in ("ALE/Breakout-v5", "BreakoutNoFrameskip-v4", "Breakout-v4", "Breakout-v0", "ALE/Pong-v5"):
        registered = gym.spec(env_id).kwargs["repeat_action_probability"]  # ale-py's own registration
        assert ppo_atari.sticky_actions(ppo_atari.Args(env_id=env_id)) == registered, env_id
    assert ppo_atari.sticky_actions(ppo_atari.Args(env_id="breakout")) == 0.0  # the paper's protocol
    assert ppo_atari.sticky_actions(ppo_atari.Args(env_id="ALE/Breakout-v5", sticky_actions=0.0)) == 0.0
    made = {}
    monkeypatch.setattr(ppo_atari, "AtariVectorEnv", lambda game, n, **kwargs: made.update(kwargs))
    ppo_atari.make_envs(ppo_atari.Args(env_id="ALE/Breakout-v5"), run_dir="")
    assert made["repeat_action_probability"] == 0.25
    ppo_atari.make_envs(ppo_atari.Args(env_id="BreakoutNoFrameskip-v4", sticky_actions=0.1), run_dir="")
    assert made["repeat_action_probability"] == 0.1
    proc = run_script("ppo_atari.py", "--sticky-actions", "1.5", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "error: --sticky-actions is a probability in [0, 1], got 1.5"
    ]


def test_masked_normalization_and_weights_use_only_the_valid_samples():
    advantages = torch.randn(64, generator=torch.Generator().manual_seed(0)) * 3 + 1
    valid = (torch.arange(64) % 5 != 0).float()  # 13 of 64 left out
    normalized = ppo_atari.normalize_advantages(advantages, 32, valid)
    weights = ppo_atari.sample_weights(valid, 32)
    for rows in range(2):
        part = slice(32 * rows, 32 * (rows + 1))
        keep = valid[part].bool()
        alone = ppo_atari.normalize_advantages(advantages[part][keep], int(keep.sum()))  # only the valid ones
        torch.testing.assert_close(normalized[part][keep], alone)
        x = torch.randn(32)
        torch.testing.assert_close((x * weights[part]).mean(), x[keep].mean())
    assert torch.equal(ppo_atari.sample_weights(torch.ones(64), 32), torch.ones(64))  # nothing left out: exactly 1


def train_weights(tmp_path, monkeypatch, name: str, forced_action: int) -> tuple[dict, int]:
    """Train one iteration in-process, with the forced steps' recorded action replaced by forced_action."""
    collect, served = ppo_atari.collect_rollout, []

    def collect_and_relabel(*a, **k):
        rollout = collect(*a, **k)
        served.append(int(rollout["served"].sum()))
        forced = rollout["served"]
        rollout["actions"][forced] = forced_action  # after the env stepped: only the update sees it
        # with its log π_old, as the rollout stores each action's (the update checks that they agree)
        logits, actions = torch.from_numpy(rollout["logits"][forced]), torch.from_numpy(rollout["actions"][forced])
        rollout["logprobs"][forced] = ppo_atari.categorical_log_prob(logits, actions).numpy()
        return rollout

    monkeypatch.setattr(ppo_atari, "collect_rollout", collect_and_relabel)
    monkeypatch.setattr(ppo_atari.signal, "signal", lambda *a: None)  # leave pytest's Ctrl-C alone
    os.makedirs(tmp_path / name)
    monkeypatch.chdir(tmp_path / name)
    args = ppo_atari.Args(env_id="BreakoutNoFrameskip-v4", num_envs=2, num_steps=96, minibatch_size=64,
                          update_epochs=2, total_timesteps=192, save_model=True, cuda=False, seed=2,
                          torch_threads=1, env_threads=1)  # fmt: skip
    ppo_atari.train(args)
    ckpt = torch.load(os.path.join(only_run_dir(tmp_path / name), "checkpoint.pt"), weights_only=True)
    return ckpt["agent"], served[0]


def test_the_forced_fire_steps_do_not_enter_the_policy_loss(tmp_path, monkeypatch):
    # whichever action a forced step records, the update is the same, bit for bit: no log π(a|s) of it is used
    fire, served = train_weights(tmp_path, monkeypatch, "fire", FIRE)
    left, _ = train_weights(tmp_path, monkeypatch, "left", LEFT)
    assert served > 0  # the batch had forced steps
    for key, value in fire.items():
        assert torch.equal(value, left[key]), key


def test_kl_adaptive_measures_the_kl_after_the_update(tmp_path):
    # one minibatch step per iteration: the outputs the step computed are the old policy's (KL ~ 0); the KL after it
    # is the policy's move, which β must see
    flags = ["--env-id", "BreakoutNoFrameskip-v4", "--num-envs", "2", "--num-steps", "32", "--minibatch-size", "64",
             "--update-epochs", "1", "--total-timesteps", "128", "--objective", "kl-adaptive", "--no-cuda",
             *ONE_THREAD]  # fmt: skip
    proc = run_script("ppo_atari.py", *flags, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    folder = only_run_dir(tmp_path)
    kls, betas = scalars(folder, "losses/kl"), scalars(folder, "charts/kl_beta")
    assert len(kls) == 2 and all(kl > 1e-6 for kl in kls), kls
    assert betas[0] == ppo_atari.update_kl_beta(1.0, kls[0], 0.01)  # the rule of §4, on that KL


def test_evaluation_is_seeded_and_greedy_on_request(tmp_path, capsys, monkeypatch):
    # a checkpoint whose π picks NOOP with probability e / (e + 3), about 0.48, and the other actions otherwise
    args = ppo_atari.Args(env_id="BreakoutNoFrameskip-v4", seed=4, env_threads=1, torch_threads=1)
    path = str(tmp_path / "checkpoint.pt")
    torch.save({"args": vars(args), "agent": noop_agent(4, margin=1.0).state_dict()}, path)
    make_envs, played = ppo_atari.make_envs, []

    def recording_envs(*a, **k):  # the evaluation's envs, noting every action they are sent
        envs = make_envs(*a, **k)
        step = envs.step
        envs.step = lambda actions: played.append(actions.copy()) or step(actions)
        return envs

    monkeypatch.setattr(ppo_atari, "make_envs", recording_envs)
    runs = []
    for global_seed in (0, 1):  # the global RNG's state must not matter
        torch.manual_seed(global_seed)
        runs.append(ppo_atari.evaluate(ppo_atari.Args(eval_checkpoint=path, eval_episodes=2)))
        runs.append(np.concatenate(played))
        played.clear()
    assert runs[0] == runs[2] and np.array_equal(runs[1], runs[3])
    assert set(runs[1].ravel()) == {0, 1, 2, 3}  # sampled: every action
    greedy = ppo_atari.evaluate(ppo_atari.Args(eval_checkpoint=path, eval_episodes=2, eval_greedy=True))
    assert len(greedy) == 2 and set(np.concatenate(played)) == {NOOP, FIRE}  # NOOP, and FIRE to serve
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == lines[1] and "(sampled)" in lines[0] and "(greedy)" in lines[2]


@pytest.mark.parametrize("cuda_flag", ["--cuda", "--no-cuda"])
def test_the_first_line_names_the_device(tmp_path, cuda_flag):
    flags = ["--num-envs", "2", "--num-steps", "32", "--minibatch-size", "64", "--total-timesteps", "64", cuda_flag,
             *ONE_THREAD]  # fmt: skip
    proc = run_script("ppo_atari.py", *flags, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    if torch.cuda.is_available():
        assert lines[0].startswith("device: cuda" if cuda_flag == "--cuda" else "device: cpu")
    elif cuda_flag == "--cuda":  # said once, on the first line, with the reason
        assert lines[0].startswith("device: cpu (--cuda is on, but torch") and "build" in lines[0]
        assert sum("--cuda" in line for line in proc.stdout.splitlines() + proc.stderr.splitlines()) == 1
    else:
        assert lines[0] == "device: cpu"
