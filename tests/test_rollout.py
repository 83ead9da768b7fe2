"""Rollout boundaries on gymnasium 1.x, proved on a chain env whose rewards and episode ends the test controls.

Chain-v0: the observation is [t, episode], the reward of step t is t + 1, and a time limit truncates after 3 steps.
The critic is replaced by V(s) = 10 t + 1, so every value and bootstrap below can be checked by hand.
"""

import numpy as np
import pytest
import torch
import torch.nn as nn

import ppo_atari
from tests.helpers import script_modules

T, N = 7, 2  # two full episodes of 3 steps, then one step of a third; two envs in lockstep


# The rollout is shared skeleton: each script must get every case right
MODULES = script_modules()
# GAE and the bootstrap at episode ends: ppo_atari.py keeps its own copy of the same functions
WITH_ATARI = [*MODULES, pytest.param(ppo_atari, id="ppo_atari.py")]


def rollout(ppo, env_id: str, bootstrap_truncated: bool = True):
    args = ppo.Args(env_id=env_id, num_envs=N, num_steps=T, gamma=0.5, gae_lambda=0.5, norm_obs=False,
                    norm_reward=False, bootstrap_truncated=bootstrap_truncated)  # fmt: skip
    envs = ppo.make_envs(args, run_dir="unused")
    agent = ppo.Agent(2, 1)
    agent.critic = nn.Linear(2, 1)
    with torch.no_grad():
        agent.critic.weight.copy_(torch.tensor([[10.0, 0.0]]))
        agent.critic.bias.fill_(1.0)
    carry = ppo.start_carry(envs, args)
    episodes = []
    batch = ppo.collect_rollout(envs, agent, carry, args, 0, episodes)
    advantages, values = ppo.estimate_advantages(agent, batch, carry.next_obs, args)
    return batch, advantages, values, episodes, carry


@pytest.mark.parametrize("ppo", MODULES)
def test_no_autoreset_transition_enters_the_batch(ppo):
    batch, _, values, episodes, carry = rollout(ppo, "tests.fake_envs:Chain-v0")
    for i in range(N):
        assert batch["obs"][:, i, 0].tolist() == [0, 1, 2, 0, 1, 2, 0]  # the step within the episode
        assert batch["obs"][:, i, 1].tolist() == [0, 0, 0, 1, 1, 1, 2]  # the episode
        assert batch["rewards"][:, i].tolist() == [1, 2, 3, 1, 2, 3, 1]  # every reward is a real one
        assert batch["truncated"][:, i].tolist() == [0, 0, 1, 0, 0, 1, 0]
        assert not batch["terminated"].any()
        assert values[:, i].tolist() == [1, 11, 21, 1, 11, 21, 1]
    assert carry.next_obs.tolist() == [[1, 2], [1, 2]]  # the observation after the batch: step 1 of episode 2
    assert episodes == [(6, 6.0, 3), (6, 6.0, 3), (12, 6.0, 3), (12, 6.0, 3)]  # (global step, return, length)


@pytest.mark.parametrize("ppo", MODULES)
def test_truncation_bootstraps_from_the_real_final_observation(ppo):
    batch, advantages, _, _, _ = rollout(ppo, "tests.fake_envs:Chain-v0")
    # the real last observation [3, episode], kept although the env was reset to [0, episode + 1] in the same step
    assert batch["final_obs"][2].tolist() == [[3, 0], [3, 0]]
    assert batch["final_obs"][5].tolist() == [[3, 1], [3, 1]]
    # δ_t = r + γ V(s_{t+1}) − V(s_t): 1 + 0.5·11 − 1 = 5.5, 2 + 0.5·21 − 11 = 1.5, 3 + 0.5·V([3, ·]) − 21 = −2.5;
    # Â_t = δ_t + γλ Â_{t+1} with γλ = 0.25, cut at each episode end; the last step bootstraps from V([1, 2]) = 11
    expected = [5.71875, 0.875, -2.5, 5.71875, 0.875, -2.5, 5.5]
    for i in range(N):
        assert advantages[:, i].tolist() == pytest.approx(expected)


@pytest.mark.parametrize("ppo", MODULES)
def test_truncation_without_bootstrap_counts_as_termination(ppo):
    _, advantages, _, _, _ = rollout(ppo, "tests.fake_envs:Chain-v0", bootstrap_truncated=False)
    # 3 − 21 = −18 at the time limit; 1.5 + 0.25·(−18) = −3; 5.5 + 0.25·(−3) = 4.75
    expected = [4.75, -3.0, -18.0, 4.75, -3.0, -18.0, 5.5]
    for i in range(N):
        assert advantages[:, i].tolist() == pytest.approx(expected)


@pytest.mark.parametrize("ppo", MODULES)
def test_termination_stops_bootstrapping(ppo):
    batch, advantages, _, episodes, _ = rollout(ppo, "tests.fake_envs:ChainTerminal-v0")  # terminates after step t = 2
    assert batch["terminated"][:, 0].tolist() == [0, 0, 1, 0, 0, 1, 0]
    assert not batch["truncated"].any() and not batch["final_obs"].any()
    for i in range(N):
        assert advantages[:, i].tolist() == pytest.approx([4.75, -3.0, -18.0, 4.75, -3.0, -18.0, 5.5])
    assert [e[1] for e in episodes] == [6.0] * 4


@pytest.mark.parametrize("ppo", WITH_ATARI)
def test_bootstrap_values_cases(ppo):
    values = np.array([[1.0], [2.0], [3.0], [4.0]])
    final = np.full_like(values, 50.0)
    terminated = np.array([[0], [1], [0], [0]], dtype=bool)
    truncated = np.array([[0], [0], [1], [0]], dtype=bool)
    on = ppo.bootstrap_values(values, final, np.array([9.0]), terminated, truncated, True)
    off = ppo.bootstrap_values(values, final, np.array([9.0]), terminated, truncated, False)
    assert on[:, 0].tolist() == [2.0, 0.0, 50.0, 9.0]  # next value, terminal 0, V(final obs), rollout end
    assert off[:, 0].tolist() == [2.0, 0.0, 0.0, 9.0]


@pytest.mark.parametrize("ppo", WITH_ATARI)
def test_gae_cuts_an_episode_that_ends_mid_rollout(ppo):
    # Two envs, four steps, r = 1 and V(s_t) = (2, 4, 2, 4) in both, V = 8 after the rollout; γ = 0.5, λ = 0.5.
    # Env 0's episode terminates at t = 1, env 1's is truncated there, and V(its real final observation) = 12.
    rewards, values = np.ones((4, 2)), np.array([[2.0, 2.0], [4.0, 4.0], [2.0, 2.0], [4.0, 4.0]])
    final_values = np.zeros((4, 2))
    final_values[1, 1] = 12.0
    terminated, truncated = np.zeros((2, 4, 2), dtype=bool)
    terminated[1, 0] = truncated[1, 1] = True
    next_values = ppo.bootstrap_values(values, final_values, np.array([8.0, 8.0]), terminated, truncated)
    assert next_values.tolist() == [[4, 4], [0, 12], [4, 4], [8, 8]]  # V(s_t+1): 0 after a termination
    dones = (terminated | truncated).astype(np.float64)
    advantages = ppo.compute_gae(rewards, values, next_values, dones, 0.5, 0.5)
    # δ_t = r + γ V(s_t+1) − V(s_t) = (1, −3, 1, 1) for env 0 and (1, 3, 1, 1) for env 1. From the end, Â = δ + γλ Â':
    # Â_3 = 1, Â_2 = 1 + 0.25 = 1.25; the episode ended at t = 1, so Â_1 = δ_1 alone; Â_0 = 1 + 0.25 Â_1
    assert advantages[:, 0].tolist() == [0.25, -3.0, 1.25, 1.0]
    assert advantages[:, 1].tolist() == [1.75, 3.0, 1.25, 1.0]
    # λ = 1, env 1: each Â_t + V(s_t) is the discounted return of its own episode, bootstrapped at its end
    monte_carlo = ppo.compute_gae(rewards, values, next_values, dones, 0.5, 1.0)[:, 1] + values[:, 1]
    assert monte_carlo.tolist() == [1 + 0.5 * (1 + 0.5 * 12), 1 + 0.5 * 12, 1 + 0.5 * (1 + 0.5 * 8), 1 + 0.5 * 8]
