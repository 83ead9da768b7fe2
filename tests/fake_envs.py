"""Tiny deterministic environments whose rewards and episode ends the tests control.

Used in-process and by the scripts themselves through gymnasium's "module:EnvId" syntax,
e.g. `--env-id tests.fake_envs:Chain-v0` with the repo root on PYTHONPATH.
"""

import gymnasium as gym
import numpy as np


class ChainEnv(gym.Env):
    """Observation [t, episode]: the step within the episode and the episode's index. Reward at step t: rewards[t].

    Terminates after step `terminate_at` (if given); a time limit (max_episode_steps) truncates otherwise.
    Actions are ignored, so every rollout of it is known in advance.
    """

    def __init__(self, rewards=(1.0, 2.0, 3.0, 4.0, 5.0, 6.0), terminate_at=None, nan_at=None):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.rewards, self.terminate_at, self.nan_at = rewards, terminate_at, nan_at
        self.t, self.episode, self.total_steps = 0, -1, 0

    def _obs(self):
        return np.array([self.t, self.episode], dtype=np.float64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.episode = 0, self.episode + 1
        return self._obs(), {}

    def step(self, action):
        reward = self.rewards[self.t % len(self.rewards)]
        self.total_steps += 1
        if self.nan_at is not None and self.total_steps >= self.nan_at:
            reward = float("nan")
        terminated = self.terminate_at is not None and self.t == self.terminate_at
        self.t += 1
        return self._obs(), reward, terminated, False, {}


class DiscreteEnv(ChainEnv):
    """The same chain with a discrete action space, which the continuous-control scripts must refuse."""

    def __init__(self):
        super().__init__()
        self.action_space = gym.spaces.Discrete(2)


class BanditEnv(gym.Env):
    """One constant observation; the reward is −a²: actions near 0 are better, so a policy-gradient step on a batch
    of it must narrow the Gaussian (its log-std, and so the logged entropy, falls). A time limit ends each episode."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2), {}

    def step(self, action):
        return np.zeros(2), -(float(action[0]) ** 2), False, False, {}


gym.register("Chain-v0", entry_point=ChainEnv, max_episode_steps=3)
gym.register("ChainTerminal-v0", entry_point=ChainEnv, max_episode_steps=100, kwargs={"terminate_at": 2})
gym.register("ChainNan-v0", entry_point=ChainEnv, max_episode_steps=50, kwargs={"nan_at": 300})
gym.register("ChainDiscrete-v0", entry_point=DiscreteEnv, max_episode_steps=3)
gym.register("Bandit-v0", entry_point=BanditEnv, max_episode_steps=16)
