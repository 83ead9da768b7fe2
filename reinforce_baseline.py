"""REINFORCE with a learned baseline (vanilla policy gradient) on MuJoCo, in the skeleton of ppo_continuous.py.

The method PPO set out to fix (§2.1): ascend L^PG = Ê[log π_θ(a_t|s_t) Â_t], one gradient step per batch, with Â
from GAE against a value-network baseline (λ = 1 gives the Monte-Carlo return minus V). `--update-epochs K` reuses
each batch K times: the destructively large updates the paper warns of, visible in the logged KL.
`diff ppo_continuous.py reinforce_baseline.py` shows what PPO's ratio, clipping and minibatch epochs add.

Figure 3's other baselines (§6.2) are sets of flags: vanilla PG with the adaptive stepsize of the paper's footnote
(`--adaptive-lr --no-anneal-lr`: after each batch the policy's stepsize shrinks 1.5x when the KL is above twice
`--kl-target` and grows 1.5x when it is below half), and A2C (`--optimizer rmsprop` and openai/baselines' a2c
settings: 16 actors x 5 steps, one step on π and one on V per batch). benchmark/presets.py spells both out.

    python reinforce_baseline.py --env-id Hopper-v4
"""

import copy
import csv
import math
import os
import signal
import sys
import time
import warnings
from dataclasses import dataclass, replace
from typing import Literal, Optional

import gymnasium as gym
import mujoco
import numpy as np
import torch
import torch.nn as nn
import tyro
from torch.utils.tensorboard import SummaryWriter

# The v4 MuJoCo tasks are the ones the published PPO results use; gymnasium's note that v5 exists is expected here.
warnings.filterwarnings("ignore", message=".*-v4 is out of date", category=DeprecationWarning)


@dataclass
class Args:
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
    """name of this experiment; part of the run folder runs/{env_id}__{exp_name}__{seed}__{time}"""
    seed: int = 1
    """seed of torch and the environments: the same seed on the same machine gives the same returns, bit for bit"""
    cuda: bool = False
    """train on a GPU when one is present. Off by default: for 64-unit networks and one env the CPU is faster"""
    track: bool = False
    """also log to Weights & Biases (works without an account under WANDB_MODE=offline)"""
    wandb_project_name: str = "ppo-paper"
    """the wandb project (the entity is your default, or WANDB_ENTITY)"""
    capture_video: bool = False
    """film env 0's episodes to runs/{run_name}/videos, or every --eval-checkpoint episode (needs moviepy; headless)"""
    save_model: bool = False
    """write runs/{run_name}/checkpoint.pt after every iteration (Ctrl-C and SIGTERM always save)"""
    resume: Optional[str] = None
    """continue the run saved in this checkpoint exactly where it stopped; the checkpoint's flags are used"""
    eval_checkpoint: Optional[str] = None
    """instead of training, run the deterministic policy of this checkpoint and print its mean return"""
    eval_episodes: int = 10
    """episodes for --eval-checkpoint"""

    # Table 3 of the paper
    env_id: str = "Hopper-v4"
    """a MuJoCo task with a continuous (Box) action space"""
    total_timesteps: int = 1_000_000
    """environment steps in all (Table 3 and Figure 3: 1M)"""
    num_envs: int = 1
    """Table 3 "number of actors" (1): parallel environments stepped in lockstep"""
    num_steps: int = 2048
    """Table 3 "horizon (T)" (2048): steps per actor in each rollout; the batch is num_envs * num_steps"""
    learning_rate: float = 3e-4
    """Adam stepsize of the policy; typical 1e-4 to 1e-3"""
    update_epochs: int = 1
    """policy-gradient steps on each batch, each on the whole batch. 1 is vanilla PG; more reuses the batch (§2.1)"""
    vf_learning_rate: float = 1e-3
    """Adam stepsize of the value function (the baseline)"""
    vf_epochs: int = 5
    """passes of the value function's Adam over each batch"""
    minibatch_size: int = 64
    """minibatch of the value function's Adam steps; must divide the batch"""
    gamma: float = 0.99
    """Table 3 "discount (gamma)" (0.99)"""
    gae_lambda: float = 0.95
    """Table 3 "GAE parameter (lambda)" (0.95): 0 trusts the critic, 1 the Monte-Carlo return"""

    # Figure 3's baselines (§6.2): vanilla PG with an adaptive stepsize, and A2C (benchmark/presets.py has the flags)
    adaptive_lr: bool = False
    """§6.2 footnote (Berkeley deep RL hw4): stepsize of π / 1.5 if KL > 2 kl_target, x 1.5 if < kl_target / 2"""
    kl_target: float = 2e-3
    """target KL[π_old, π] of --adaptive-lr (hw4: 2e-3); the stepsize starts at --learning-rate (hw4: 1e-3)"""
    optimizer: Literal["adam", "rmsprop", "rmsprop-tf"] = "adam"
    """both networks' optimizer: adam (with --adam-eps); rmsprop, PyTorch's RMSprop; or rmsprop-tf, TensorFlow 1's
    RMSProp as openai/baselines' a2c ran it: the mean square starts at 1, not 0, and ε sits inside the square root"""
    rmsprop_alpha: float = 0.99
    """RMSProp's decay of the running mean square (openai/baselines a2c: 0.99)"""
    rmsprop_eps: float = 1e-5
    """RMSProp's epsilon (openai/baselines a2c: 1e-5, inside TensorFlow's square root; PyTorch adds it outside)"""
    trust_region: bool = False
    """A2C with a trust region (Figure 3): ACER's efficient trust region (Wang et al. 2016, §3.3) on the policy step,
    against an average policy network; on-policy, no replay"""
    tr_delta: float = 1.0
    """δ of the trust region: the most the step may raise KL[π_avg, π] to first order, per state (openai/baselines
    acer: 1; ACER's MuJoCo runs: 0.1 to 2)"""
    tr_alpha: float = 0.99
    """decay of the average policy network, θ_avg ← α θ_avg + (1 − α) θ after each step (openai/baselines acer: 0.99;
    ACER's MuJoCo runs: 0.995)"""
    vf_coef: float = 1.0
    """c1: weight of L^VF in the value step (openai/baselines a2c: 0.5); acts only via --max-grad-norm and the eps"""
    ent_coef: float = 0.0
    """c2: entropy bonus added to L^PG (vanilla PG: none; openai/baselines a2c: 0.01)"""

    # Implementation details [not in paper], the same as ppo_continuous.py's (ppo2's, as CleanRL's), so that the
    # update alone differs between the two; each names its source
    orthogonal_init: bool = True
    """[not in paper] orthogonal weights (gain √2; policy head 0.01, value head 1), zero biases (ppo2; ppo1: normc)"""
    adam_eps: float = 1e-5
    """[not in paper] Adam's epsilon (ppo2 1e-5; ppo1 at release and PyTorch 1e-8): damps steps on tiny gradients"""
    anneal_lr: bool = True
    """[not in paper for MuJoCo] anneal the stepsize linearly to 0 over training (ppo2; ppo1 at release: constant)"""
    norm_adv: bool = True
    """[not in paper] normalize advantages to mean 0, std 1 over the batch, so the step size is scale-free"""
    norm_obs: bool = True
    """[not in paper] observations by a running mean and std (ppo1, ppo2, trpo_mpi): MuJoCo's differ wildly in scale"""
    obs_clip: float = 10.0
    """[not in paper] clip normalized observations to [-obs_clip, obs_clip] (ppo2 10; ppo1 and trpo_mpi 5)"""
    norm_reward: bool = True
    """[not in paper] rewards / a running std of the discounted return: V's targets stay near 1 (ppo2; ppo1: none)"""
    reward_clip: float = 10.0
    """[not in paper] clip scaled rewards to [-reward_clip, reward_clip] (ppo2)"""
    max_grad_norm: Optional[float] = None
    """[not in paper] clip the global gradient norm of each step to this (None: no clip; openai/baselines a2c: 0.5)"""
    bootstrap_truncated: bool = True
    """[ours] bootstrap a time-limit truncation from V(real final obs); off: a termination (ppo1, ppo2, CleanRL)"""


# NETWORKS: the policy and the value function


class Agent(nn.Module):
    """Separate policy and value MLPs of 2x64 tanh units (§6.1); Gaussian policy with a state-independent log-std."""

    def __init__(self, obs_dim: int, act_dim: int, orthogonal: bool = True):
        super().__init__()

        def linear(in_dim: int, out_dim: int, std: float) -> nn.Linear:
            layer = nn.Linear(in_dim, out_dim)
            if orthogonal:  # [not in paper] orthogonal weights with gain std, zero biases
                nn.init.orthogonal_(layer.weight, std)
                nn.init.constant_(layer.bias, 0.0)
            return layer

        def mlp(out_dim: int, out_std: float) -> nn.Sequential:
            hidden = math.sqrt(2)
            return nn.Sequential(
                linear(obs_dim, 64, hidden), nn.Tanh(), linear(64, 64, hidden), nn.Tanh(), linear(64, out_dim, out_std)
            )

        self.critic = mlp(1, 1.0)
        self.actor_mean = mlp(act_dim, 0.01)  # a small last layer starts the policy near mean 0
        self.actor_logstd = nn.Parameter(torch.zeros(act_dim))

    def get_value(self, obs: torch.Tensor) -> torch.Tensor:
        """V(s), one number per observation."""
        return self.critic(obs).squeeze(-1)

    def get_policy(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """π_θ(·|s) as the mean and log-std of a diagonal Gaussian, one row per observation. The rollout samples from
        it and the update scores it: the one place to change the policy's distribution."""
        mean = self.actor_mean(obs)
        return mean, self.actor_logstd.expand_as(mean)


# ALGO LOGIC: the math, as small pure functions


class TFRMSprop(torch.optim.Optimizer):
    """RMSProp as TensorFlow 1 computes it (tf.train.RMSPropOptimizer, openai/baselines' a2c): the running mean square
    starts at 1, and ε sits inside the square root: ms ← α ms + (1 − α) g²;  θ ← θ − lr g / √(ms + ε). PyTorch's
    RMSprop starts ms at 0 and adds ε outside the root, so its first steps are up to √(1 / (1 − α)) = 10x larger for
    α = 0.99, and far more for gradients smaller than 1."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-5):
        super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps})

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["square_avg"] = torch.ones_like(p)
                square_avg = state["square_avg"]
                square_avg.mul_(group["alpha"]).addcmul_(p.grad, p.grad, value=1 - group["alpha"])
                p.addcdiv_(p.grad, (square_avg + group["eps"]).sqrt(), value=-group["lr"])


def gaussian_log_prob(action: torch.Tensor, mean: torch.Tensor, logstd: torch.Tensor) -> torch.Tensor:
    # log π(a|s) = Σ_i [−(a_i − μ_i)² / 2σ_i² − log σ_i − ½ log 2π]
    return (-0.5 * ((action - mean) / logstd.exp()) ** 2 - logstd - 0.5 * math.log(2 * math.pi)).sum(-1)


def gaussian_entropy(logstd: torch.Tensor) -> torch.Tensor:
    # S[π] = Σ_i (log σ_i + ½ log 2πe)
    return (logstd + 0.5 * math.log(2 * math.pi * math.e)).sum(-1)


def gaussian_kl(mean_old: torch.Tensor, logstd_old: torch.Tensor, mean: torch.Tensor, logstd: torch.Tensor):
    # KL[π_old, π] = Σ_i [log σ_i/σ_old,i + (σ_old,i² + (μ_old,i − μ_i)²) / 2σ_i² − ½], exact for diagonal Gaussians
    var_old, var = torch.exp(2 * logstd_old), torch.exp(2 * logstd)
    return (logstd - logstd_old + (var_old + (mean_old - mean) ** 2) / (2 * var) - 0.5).sum(-1)


def approx_kl(logratio: torch.Tensor) -> torch.Tensor:
    # Ê[(r − 1) − log r]: an unbiased, never-negative sample estimate of KL[π_old, π] (a diagnostic)
    return ((logratio.exp() - 1) - logratio).mean()


def explained_variance(advantages: np.ndarray, values: np.ndarray) -> float:
    # 1 − Var[V_targ − V] / Var[V_targ] with V_targ = Â + V: 1 is a perfect critic, 0 no better than a constant
    return float(1 - np.var(advantages) / (np.var(advantages + values) + 1e-8))


def pg_objective(logprob, advantages):
    # L^PG = Ê[log π_θ(a_t|s_t) Â_t]  (2): its gradient is the policy-gradient estimator ĝ (1)
    return (logprob * advantages).mean()


def trust_region_step(g: torch.Tensor, k: torch.Tensor, delta: float) -> torch.Tensor:
    """ACER's efficient trust region (Wang et al. 2016, eq. 12), per state (a row each): the step z closest to the
    gradient g (of the policy objective wrt the distribution's statistics φ) whose first-order change of
    KL[π_avg, π_φ], kᵀz, is at most δ (k: that KL's gradient wrt φ): z* = g − max(0, (kᵀg − δ) / ‖k‖²) k."""
    # k = 0 (π = π_avg, as at the start) leaves g alone: kᵀg = 0 ≤ δ, and the clamp keeps 0 / 0 away
    excess = ((k * g).sum(-1, keepdim=True) - delta).clamp(min=0)
    return g - excess / (k * k).sum(-1, keepdim=True).clamp(min=1e-12) * k


def update_average(average, params, alpha: float) -> None:
    # the average policy network: θ_avg ← α θ_avg + (1 − α) θ, in place
    for average_param, param in zip(average, params):
        average_param.mul_(alpha).add_(param.detach(), alpha=1 - alpha)


def adapt_stepsize(stepsize: float, kl: float, kl_target: float) -> float:
    """The adaptive stepsize of the paper's vanilla PG (footnote to §6.2), as the code it points to (the Berkeley deep
    RL course's homework 4) sets it after each batch: KL > 2 x target → stepsize / 1.5; KL < target / 2 → x 1.5."""
    if kl > 2 * kl_target:
        return stepsize / 1.5
    if kl < kl_target / 2:
        return stepsize * 1.5
    return stepsize


def value_loss(values, old_values, returns, clip_coef: Optional[float] = None):
    # L^VF = Ê[(V_θ(s_t) − V_targ)²]  (9)
    loss = (values - returns) ** 2
    if clip_coef is not None:  # [not in paper] V_clip = V_old + clip(V − V_old, −ε, ε); take the larger error
        clipped = old_values + (values - old_values).clamp(-clip_coef, clip_coef)
        loss = torch.max(loss, (clipped - returns) ** 2)
    return loss.mean()


def check_on_policy(logprob: torch.Tensor, old_logprob: torch.Tensor) -> None:
    """Before the update's first gradient step θ = θ_old, so the update's log π_θ(a_t|s_t) must be the log-probability
    the rollout sampled each action with, up to float rounding. If not, the rollout sampled from another distribution
    than the update scores as π_θold (an edit made in one and not the other), and PPO would train off-policy in
    silence: stop instead. The bound is float32 rounding, which grows with the size of the terms summed."""
    gap = (logprob.detach() - old_logprob).abs().max().item()
    if not gap <= 1e-4 * (1 + old_logprob.abs().max().item()):  # also stops on nan
        sys.exit(f"error: the update's log π_θold(a|s) differs from the rollout's by up to {gap:.3g}: the rollout "
                 "sampled from another distribution than the update scores; compute π in Agent.get_policy")  # fmt: skip


def bootstrap_values(values, final_values, last_value, terminated, truncated, bootstrap_truncated: bool = True):
    """V(s_{t+1}) for each step t of a (T, N) rollout: the next observation's value (last_value after the last step);
    0 after a termination; after a truncation (time limit) V(real final observation), or 0 when that is off."""
    next_values = np.concatenate([values[1:], last_value[None]])
    next_values = np.where(truncated, final_values if bootstrap_truncated else 0.0, next_values)
    return np.where(terminated, 0.0, next_values).astype(values.dtype)


def compute_gae(rewards, values, next_values, dones, gamma: float, gae_lambda: float) -> np.ndarray:
    """Generalized advantage estimates (11)-(12) for (T, N) arrays; `dones` cuts the sum where an episode ended."""
    deltas = rewards + gamma * next_values - values  # δ_t = r_t + γ V(s_{t+1}) − V(s_t)
    decay = gamma * gae_lambda * (1.0 - dones)  # γλ, or 0 where the episode ended at t
    advantages = np.zeros_like(rewards)
    last = np.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        last = deltas[t] + decay[t] * last  # Â_t = δ_t + γλ Â_{t+1}
        advantages[t] = last
    return advantages


# ALGO LOGIC: the rollout (Algorithm 1, step 1) and the advantages (step 2)


def make_envs(args: Args, run_dir: str) -> list[gym.Env]:
    """N copies of the task in a plain list, not a vector env: the rollout's resets stay in plain sight, 8% faster."""

    def make_env(i: int) -> gym.Env:
        if args.capture_video and i == 0:  # MuJoCo renders without a display, unless the user chose another backend
            os.environ.setdefault("MUJOCO_GL", "egl")
            env = follow_robot(gym.make(args.env_id, render_mode="rgb_array"))
            return gym.wrappers.RecordVideo(env, f"{run_dir}/videos")
        return gym.make(args.env_id)

    return [make_env(i) for i in range(args.num_envs)]


class RunningMeanStd:
    """Running mean and variance of a stream of batches (Welford's update, one batch at a time)."""

    def __init__(self, shape=()):
        self.mean, self.var, self.count = np.zeros(shape), np.ones(shape), 1e-4

    def update(self, x: np.ndarray) -> None:
        # mean' = mean + Σ(x − mean) / n';  M2' = M2 + Σ(x − mean)(x − mean'), with M2 = var · n
        total = self.count + x.shape[0]
        diff = x - self.mean
        mean = self.mean + diff.sum(0) / total
        self.var = (self.var * self.count + (diff * (x - mean)).sum(0)) / total
        self.mean, self.count = mean, total

    def state(self) -> dict:
        return {"mean": torch.as_tensor(self.mean), "var": torch.as_tensor(self.var), "count": self.count}

    def load(self, state: dict) -> None:
        self.mean, self.var, self.count = state["mean"].numpy(), state["var"].numpy(), state["count"]


def normalize_obs(obs: np.ndarray, obs_rms: RunningMeanStd, args: Args, update: bool = True) -> np.ndarray:
    if not args.norm_obs:
        return obs.astype(np.float32)
    if update:
        obs_rms.update(obs)
    obs = (obs - obs_rms.mean) / np.sqrt(obs_rms.var + 1e-8)
    return obs.clip(-args.obs_clip, args.obs_clip).astype(np.float32)


def scale_rewards(raw_reward: np.ndarray, carry: "Carry", args: Args) -> np.ndarray:
    """[not in paper] r / std of the discounted return, clipped (ppo2): V's targets stay near 1. Raw r when off."""
    if not args.norm_reward:
        return raw_reward
    carry.discounted_return = carry.discounted_return * args.gamma + raw_reward
    carry.ret_rms.update(carry.discounted_return)
    return (raw_reward / np.sqrt(carry.ret_rms.var + 1e-8)).clip(-args.reward_clip, args.reward_clip)


def env_actions(actions: np.ndarray, space: gym.spaces.Box) -> np.ndarray:
    """What the env is given for the sampled (or mean) actions: clipped to its bounds (ppo_continuous.py's default)."""
    return actions.clip(space.low, space.high)


@dataclass
class Carry:
    """What one rollout hands to the next, and a checkpoint keeps: per env, the last observation as the env returned
    it and normalized, the discounted return (for reward scaling) and the episode's raw return and length so far;
    and the running statistics of observations and discounted returns."""

    raw_next_obs: np.ndarray  # (N, obs_dim)
    next_obs: np.ndarray  # (N, obs_dim), normalized: the policy's input
    discounted_return: np.ndarray  # (N,)
    episode_return: np.ndarray  # (N,)
    episode_length: np.ndarray  # (N,)
    obs_rms: RunningMeanStd
    ret_rms: RunningMeanStd


CARRIED = ("raw_next_obs", "next_obs", "discounted_return", "episode_return", "episode_length")  # the arrays


def start_carry(envs: list[gym.Env], args: Args) -> Carry:
    """Env i starts with seed + i; the statistics start at mean 0, variance 1."""
    space = envs[0].observation_space
    obs_rms = RunningMeanStd(space.shape)
    first_obs = np.array([env.reset(seed=args.seed + i)[0] for i, env in enumerate(envs)], dtype=space.dtype)
    next_obs = normalize_obs(first_obs, obs_rms, args)
    return Carry(first_obs, next_obs, *np.zeros((3, args.num_envs)), obs_rms, RunningMeanStd())


def collect_rollout(envs: list, agent: Agent, carry: Carry, args: Args, global_step: int, episodes: list) -> dict:
    """Algorithm 1's "run policy π_θold for T timesteps" in each env, resetting an env in the step its episode ends:
    every stored transition is real. Each action is stored with the Gaussian it was sampled from (its mean and
    log-std), which the update scores as π_θold. Finished episodes go to `episodes` as (global_step, return, length).
    Returns (T, N, ...) arrays."""
    T, N, device = args.num_steps, args.num_envs, next(agent.parameters()).device
    obs_shape, act_shape = (T, N) + carry.next_obs.shape[1:], (T, N) + envs[0].action_space.shape
    rollout = {"obs": np.zeros(obs_shape, np.float32), "raw_obs": np.zeros(obs_shape),  # the policy's input; the envs'
               "final_obs": np.zeros(obs_shape, np.float32),  # normalized real last observation of truncated episodes
               "actions": np.zeros(act_shape, np.float32), "means": np.zeros(act_shape, np.float32),
               "logstds": np.zeros(act_shape, np.float32), "rewards": np.zeros((T, N), np.float32),
               "terminated": np.zeros((T, N), bool), "truncated": np.zeros((T, N), bool)}  # fmt: skip
    noise = torch.randn(act_shape).numpy()  # z ~ N(0, I) for a = μ(s) + σ(s) z: one call, not one per step
    (raw_obs, raw_final_obs), raw_reward = np.zeros((2, *carry.raw_next_obs.shape)), np.zeros(N)  # (N, ...) each
    with torch.inference_mode():  # θ_old is frozen for the whole rollout: no autograd
        for step in range(T):
            policy = agent.get_policy(torch.from_numpy(carry.next_obs).to(device))  # π_θold(·|s), one row per env
            mean, logstd = (x.numpy(force=True) for x in policy)
            rollout["actions"][step] = mean + np.exp(logstd) * noise[step]  # a ~ π_θold(·|s)
            rollout["obs"][step], rollout["means"][step], rollout["logstds"][step] = carry.next_obs, mean, logstd
            rollout["raw_obs"][step] = carry.raw_next_obs
            terminated, truncated = rollout["terminated"][step], rollout["truncated"][step]
            given = env_actions(rollout["actions"][step], envs[0].action_space)  # the rollout keeps the sample
            for i, env in enumerate(envs):
                raw_obs[i], raw_reward[i], terminated[i], truncated[i], _ = env.step(given[i])
                if terminated[i] or truncated[i]:  # keep the real final observation, then begin a new episode
                    raw_final_obs[i] = raw_obs[i]
                    raw_obs[i] = env.reset()[0]
            global_step += N
            carry.episode_return += raw_reward
            carry.episode_length += 1
            rollout["rewards"][step] = scale_rewards(raw_reward, carry, args)
            for i in np.flatnonzero(terminated | truncated):
                episodes.append((global_step, float(carry.episode_return[i]), int(carry.episode_length[i])))
                if truncated[i]:
                    rollout["final_obs"][step, i] = normalize_obs(raw_final_obs[i][None], carry.obs_rms, args, False)[0]
                carry.episode_return[i], carry.episode_length[i], carry.discounted_return[i] = 0, 0, 0
            carry.raw_next_obs = raw_obs.copy()
            carry.next_obs = normalize_obs(raw_obs, carry.obs_rms, args)
    return rollout


def estimate_advantages(agent: Agent, rollout: dict, next_obs: np.ndarray, args: Args):
    """Â (11)-(12) and V(s_t) for a (T, N) rollout; the critic runs once over the whole batch, not once per step."""
    device = next(agent.parameters()).device
    with torch.inference_mode():
        values, final_values, last_value = (
            agent.get_value(torch.from_numpy(x).to(device)).cpu().numpy()
            for x in (rollout["obs"], rollout["final_obs"], next_obs)
        )  # (T, N), (T, N), (N,)
    terminated, truncated = rollout["terminated"], rollout["truncated"]
    next_values = bootstrap_values(values, final_values, last_value, terminated, truncated, args.bootstrap_truncated)
    dones = (terminated | truncated).astype(np.float32)
    return compute_gae(rollout["rewards"], values, next_values, dones, args.gamma, args.gae_lambda), values


def flatten_batch(rollout: dict, advantages: np.ndarray, values: np.ndarray, device: torch.device) -> dict:
    """The (T, N) rollout as a batch of B = T·N samples. Every entry is a per-sample column: the update shuffles each
    one and cuts it into minibatches, so a column added here reaches every minibatch as mb[key]. The rule: a column
    of shape (T, N, ...) is flattened to (B, ...), one of shape (B, ...) is taken as it is, any other stops the run.
    π_θold is what the rollout sampled from (means, log-stds, and each action's log-probability under them); the
    returns are Â + V(s_t) as the advantages saw it, and V_old, which value clipping keeps V near, is that V(s_t)."""
    T, N = advantages.shape
    columns = {"obs": rollout["obs"], "actions": rollout["actions"], "means": rollout["means"],
               "logstds": rollout["logstds"], "advantages": advantages, "values": values,
               "returns": advantages + values}  # fmt: skip
    batch = {}
    for key, column in columns.items():
        column = torch.as_tensor(column)
        if column.shape[:2] == (T, N):
            column = column.reshape(T * N, *column.shape[2:])
        elif column.shape[:1] != (T * N,):
            sys.exit(f"error: batch column {key!r} has shape {tuple(column.shape)}; a per-sample column is (T, N, ...)"
                     f" = ({T}, {N}, ...) or (T·N, ...) = ({T * N}, ...)")  # fmt: skip
        batch[key] = column.to(device)
    batch["logprobs"] = gaussian_log_prob(batch["actions"], batch["means"], batch["logstds"])  # log π_θold(a_t|s_t)
    return batch


# ALGO LOGIC: the update (Algorithm 1, step 3)


def update(agent: Agent, optimizer, batch: dict, args: Args, average: Optional[Agent] = None) -> dict:
    """Algorithm 1's step 3 for vanilla PG: K gradient steps on L^PG with the whole batch (K = 1: vanilla PG), then
    fit the baseline V; then how far π moved from π_old and how well V fits, over the whole batch. Returns metrics.
    With --trust-region, each policy step is ACER's, against the average policy network `average` (a copy of the
    agent, updated here after each step)."""
    policy_advantages = batch["advantages"]
    if args.norm_adv:
        policy_advantages = (policy_advantages - policy_advantages.mean()) / (policy_advantages.std() + 1e-8)
    cut = []  # --trust-region: per policy step, the fraction of states where the trust region cut the step
    for epoch in range(args.update_epochs):
        mean, logstd = agent.get_policy(batch["obs"])
        logprob = gaussian_log_prob(batch["actions"], mean, logstd)
        if epoch == 0:  # θ = θ_old yet: the update must score what the rollout sampled from
            check_on_policy(logprob, batch["logprobs"])
        optimizer.zero_grad()
        if args.trust_region:
            cut.append(trust_region_backward(agent, mean, logstd, batch, policy_advantages, average, args))
        else:
            loss = -pg_objective(logprob, policy_advantages)
            if args.ent_coef:  # −(L^PG + c2 S[π]): A2C's entropy bonus
                loss = loss - args.ent_coef * gaussian_entropy(logstd).mean()
            loss.backward()
        if args.max_grad_norm:  # [not in paper] g ← g · min(1, max_grad_norm / ‖g‖), over π's gradient alone
            nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
        optimizer.step()
        if args.trust_region:
            update_average(average.parameters(), agent.parameters(), args.tr_alpha)
    batch_size = args.num_envs * args.num_steps
    for _epoch in range(args.vf_epochs):
        # shuffle every column once per epoch, then cut it into minibatches: views, not gathers
        perm = torch.randperm(batch_size, device=batch["obs"].device)
        shuffled = {key: column[perm] for key, column in batch.items()}
        for start in range(0, batch_size, args.minibatch_size):
            mb = {key: column[start : start + args.minibatch_size] for key, column in shuffled.items()}
            # c1 L^VF = c1 Ê[(V_θ(s_t) − V_targ)²]: regression on the returns (c1 = 1 but for A2C's 0.5)
            loss = args.vf_coef * value_loss(agent.get_value(mb["obs"]), mb["values"], mb["returns"])
            optimizer.zero_grad()
            loss.backward()
            if args.max_grad_norm:  # [not in paper] as above, over V's gradient alone (A2C's one network: both)
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
            optimizer.step()
    trust_region = {"charts/trust_region_cut_fraction": float(np.mean(cut))} if cut else {}
    return {**diagnostics(agent, batch, policy_advantages), **trust_region}


def trust_region_backward(agent: Agent, mean, logstd, batch: dict, advantages, average: Agent, args: Args) -> float:
    """The gradient of ACER's trust-region step, into the policy's .grad: per state, g and k with respect to the
    Gaussian's statistics φ = (μ(s), log σ) (`mean`, `logstd`: π_θ at the batch's states, (B, act_dim) each, from
    Agent.get_policy), z* = trust_region_step(g, k, δ), then z* back through the network. Returns the fraction of
    states where the trust region cut the step (kᵀg > δ)."""
    with torch.no_grad():  # the average network's distribution at the same states
        average_mean, average_logstd = average.get_policy(batch["obs"])
    g, k = trust_region_g_and_k(mean, logstd, batch["actions"], advantages, average_mean, average_logstd, args.ent_coef)
    z = trust_region_step(g, k, args.tr_delta)
    # ascend the mean over states of z* · ∂φ/∂θ: the optimizer descends, hence −z / B
    torch.autograd.backward([mean, logstd], list((-z / len(z)).split(mean.shape[-1], dim=-1)))
    return ((k * g).sum(-1) > args.tr_delta).float().mean().item()  # where the trust region cut the step


def trust_region_g_and_k(mean, logstd, actions, advantages, average_mean, average_logstd, ent_coef: float):
    """Per state (B rows), with respect to its own φ = (μ(s), log σ): g, the gradient of the A2C objective
    log π(a|s) Â + c2 S[π(·|s)]; and k, the gradient of KL[π_avg(·|s), π_φ(·|s)], the average network's first."""
    phi = [mean.detach().requires_grad_(), logstd.detach().requires_grad_()]  # φ as leaves: gradients wrt them
    objective = gaussian_log_prob(actions, *phi) * advantages + ent_coef * gaussian_entropy(phi[1])
    g = torch.cat(torch.autograd.grad(objective.sum(), phi), dim=-1)  # (B, 2 act_dim)
    k = torch.cat(torch.autograd.grad(gaussian_kl(average_mean, average_logstd, *phi).sum(), phi), dim=-1)
    return g, k


def diagnostics(agent: Agent, batch: dict, policy_advantages: torch.Tensor) -> dict:
    """Over the whole batch, after the update: how far did π move from π_old, how well does V fit?"""
    with torch.inference_mode():
        mean, logstd = agent.get_policy(batch["obs"])
        logprob = gaussian_log_prob(batch["actions"], mean, logstd)
        logratio, kl = logprob - batch["logprobs"], gaussian_kl(batch["means"], batch["logstds"], mean, logstd)
        pg_obj = pg_objective(logprob, policy_advantages)
        v_loss = value_loss(agent.get_value(batch["obs"]), batch["values"], batch["returns"])
        return {
            "losses/policy_loss": -pg_obj.item(),
            "losses/value_loss": v_loss.item(),
            "losses/entropy": gaussian_entropy(logstd).mean().item(),
            "losses/approx_kl": approx_kl(logratio).item(),
            "losses/kl": kl.mean().item(),
        }


# Algorithm 1


def train(args: Args, ckpt: Optional[dict] = None) -> None:
    batch_size = args.num_envs * args.num_steps
    num_iterations = args.total_timesteps // batch_size
    run_dir, writer = open_run(args, ckpt)
    checkpoint_path = os.path.join(run_dir, "checkpoint.pt")

    # TRY NOT TO MODIFY: seeding
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # small networks: threads cost more than they give, and runs stay bit-for-bit equal
    device = torch.device("cuda" if args.cuda and torch.cuda.is_available() else "cpu")

    envs = make_envs(args, run_dir)
    obs_dim, act_dim = envs[0].observation_space.shape[0], envs[0].action_space.shape[0]
    agent = Agent(obs_dim, act_dim, args.orthogonal_init).to(device)
    # fused: one kernel for all parameters instead of a dozen small ops each (same math, about 20% faster here)
    # two groups: the policy's and the value function's stepsizes; a step moves only the parameters with gradients
    policy_params = [p for name, p in agent.named_parameters() if not name.startswith("critic.")]  # π's: all but V's
    groups = [
        {"params": policy_params, "lr": args.learning_rate},
        {"params": agent.critic.parameters(), "lr": args.vf_learning_rate},
    ]
    if args.optimizer == "rmsprop":  # A2C's optimizer
        optimizer = torch.optim.RMSprop(groups, alpha=args.rmsprop_alpha, eps=args.rmsprop_eps)
    elif args.optimizer == "rmsprop-tf":  # A2C's optimizer as openai/baselines' a2c ran it
        optimizer = TFRMSprop(groups, alpha=args.rmsprop_alpha, eps=args.rmsprop_eps)
    else:
        optimizer = torch.optim.Adam(groups, eps=args.adam_eps, fused=True)
    # --trust-region: the average policy network, a copy of the agent that starts at its weights (V's ride along)
    average = copy.deepcopy(agent).requires_grad_(False) if args.trust_region else None
    carry = start_carry(envs, args)
    global_step, start_iteration = 0, 1
    if ckpt is not None:  # continue exactly where the checkpoint stopped
        restore_checkpoint(ckpt, agent, optimizer, carry, envs)
        global_step, start_iteration = ckpt["global_step"], ckpt["iteration"] + 1
        if average is not None:
            average.load_state_dict(ckpt["average"])
    csv_file = open_episodes_csv(run_dir, global_step if ckpt else None)
    stop = catch_stop_signals()  # Ctrl-C or SIGTERM: finish the iteration in progress, save a checkpoint, then exit
    recent_returns, start_time, start_step = [], time.time(), global_step

    for iteration in range(start_iteration, num_iterations + 1):
        if args.anneal_lr:  # [not in paper for MuJoCo] α anneals linearly from 1 to 0
            for group, lr in zip(optimizer.param_groups, (args.learning_rate, args.vf_learning_rate)):
                group["lr"] = (1.0 - (iteration - 1.0) / num_iterations) * lr

        # ALG STEP 1: run policy π_θold for T timesteps in each of the N environments
        episodes = []  # (global step, return, length) of the episodes that end in this rollout
        rollout = collect_rollout(envs, agent, carry, args, global_step, episodes)
        global_step += batch_size

        # ALG STEP 2: compute advantage estimates Â_1, ..., Â_T; the batch, with π_θold as the rollout sampled from it
        advantages, values = estimate_advantages(agent, rollout, carry.next_obs, args)  # (T, N) each
        batch = flatten_batch(rollout, advantages, values, device)

        # ALG STEP 3: K gradient steps on L^PG with the whole batch (K = 1: vanilla PG), then fit the baseline V
        metrics = update(agent, optimizer, batch, args, average)
        if not all(torch.isfinite(p).all() for p in agent.parameters()):  # NaN weights stay NaN: stop before saving
            sys.exit(f"error: non-finite loss in the update at step {global_step}; stopped, last checkpoint kept")
        metrics["losses/explained_variance"] = explained_variance(advantages, values)
        if args.adaptive_lr:  # the policy's next stepsize; it lives in the optimizer's state, so checkpoints keep it
            policy_group = optimizer.param_groups[0]
            policy_group["lr"] = adapt_stepsize(policy_group["lr"], metrics["losses/kl"], args.kl_target)

        # TRY NOT TO MODIFY: logging, checkpoints, progress
        csv.writer(csv_file).writerows(episodes)
        csv_file.flush()
        recent_returns = (recent_returns + [episode_return for _, episode_return, _ in episodes])[-100:]
        sps = int((global_step - start_step) / (time.time() - start_time))
        metrics.update({"charts/SPS": sps, "charts/learning_rate": optimizer.param_groups[0]["lr"]})
        log_metrics(writer, episodes, metrics, global_step)
        if args.save_model or stop:
            writer.flush()  # the events up to this step are on disk before the checkpoint that a resume starts from
            trust_region = {"average": average.state_dict()} if args.trust_region else {}  # the average network
            save_checkpoint(checkpoint_path, args, agent, optimizer, carry, envs, global_step=global_step,
                            iteration=iteration, **trust_region)  # fmt: skip
        print_progress(iteration, num_iterations, global_step, sps, recent_returns, args)
        if stop:
            writer.close()  # flush the last iterations' events: TensorBoard writes them in batches
            print(f"\ninterrupted: checkpoint at step {global_step} saved; continue with --resume {checkpoint_path}")
            sys.exit(128 + stop[0])

    steps, elapsed = global_step - start_step, time.time() - start_time
    print(f"\ndone: {steps} steps in {elapsed:.2f} s ({steps / elapsed:.0f} SPS); run folder {run_dir}")
    for env in envs:
        env.close()  # RecordVideo writes the episode it is recording
    writer.close()
    csv_file.close()


# RUN MANAGEMENT: validation, checkpoints and resume, env state, the run folder, signals, CSV and TensorBoard,
# progress, evaluation. Not the algorithm: a fork rarely needs to change anything below


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2, no traceback."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def describe(e: Exception) -> str:
    """An exception in one short line: its type and the first line of its message (which may be empty)."""
    lines = str(e).splitlines()
    return f"{type(e).__name__}: {lines[0][:200]}" if lines else type(e).__name__


def make_env_or_fail(env_id: str, flag: str, **kwargs) -> gym.Env:
    try:
        return gym.make(env_id, **kwargs)
    except Exception as e:  # an unknown id, a module that is not there, a missing dependency
        fail(f"{flag}: cannot make {env_id} ({describe(e)})")


def follow_robot(env: gym.Env) -> gym.Env:
    """Film a MuJoCo task through its model's "track" camera, which follows the robot: gymnasium's default view stays
    where the episode began, and a runner leaves it. A task without one (a pendulum, Reacher) keeps the default view."""
    renderer = getattr(env.unwrapped, "mujoco_renderer", None)
    if renderer is not None:
        renderer.camera_id = mujoco.mj_name2id(env.unwrapped.model, mujoco.mjtObj.mjOBJ_CAMERA, "track")
    return env


def validate(args: Args) -> None:
    """Check the flags once, right after parsing, so that a typo fails in a second instead of after an hour."""
    for name, value in vars(args).items():  # inf and nan pass every comparison below, or none
        if isinstance(value, float) and not math.isfinite(value):
            fail(f"--{name.replace('_', '-')} must be a finite number, got {value}")
    if not 0 <= args.seed < 2**32:  # NumPy's seed range
        fail(f"--seed must lie in [0, 2**32), got {args.seed}")
    for name in ("total_timesteps", "num_envs", "num_steps", "minibatch_size", "update_epochs", "learning_rate",
                 "vf_learning_rate", "vf_epochs", "kl_target", "rmsprop_eps", "vf_coef", "adam_eps", "obs_clip",
                 "reward_clip"):  # fmt: skip
        if not getattr(args, name) > 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if not (0 < args.gamma <= 1 and 0 <= args.gae_lambda <= 1):
        fail("--gamma must lie in (0, 1], --gae-lambda in [0, 1]")
    if not 0 <= args.rmsprop_alpha < 1:
        fail(f"--rmsprop-alpha must lie in [0, 1), got {args.rmsprop_alpha}")
    if not (args.tr_delta > 0 and 0 <= args.tr_alpha < 1):
        fail(f"--tr-delta must be positive and --tr-alpha lie in [0, 1), got {args.tr_delta} and {args.tr_alpha}")
    if not args.ent_coef >= 0:
        fail(f"--ent-coef must be >= 0, got {args.ent_coef}")
    if args.max_grad_norm is not None and not args.max_grad_norm > 0:
        fail(f"--max-grad-norm must be positive (or None: no clip), got {args.max_grad_norm}")
    if args.adaptive_lr and args.anneal_lr:  # two rules for one stepsize: the schedule would undo the KL rule
        fail("--adaptive-lr sets the policy's stepsize from the KL each batch; add --no-anneal-lr")
    batch_size = args.num_envs * args.num_steps
    if batch_size % args.minibatch_size:
        fail(f"--minibatch-size {args.minibatch_size} does not divide the batch size {batch_size} (num_envs*num_steps)")
    if args.total_timesteps < batch_size:
        fail(f"--total-timesteps {args.total_timesteps} is less than one batch ({batch_size})")
    if args.norm_adv and batch_size < 2:  # the std of one sample is nan
        fail("--norm-adv standardizes Â over the batch, which needs --num-envs * --num-steps >= 2 (or --no-norm-adv)")
    env = make_env_or_fail(args.env_id, "--env-id")
    if not isinstance(env.action_space, gym.spaces.Box):
        fail(f"--env-id {args.env_id} has a {type(env.action_space).__name__} action space; this script needs a Box")
    env.close()


def load_checkpoint(path: str, flag: str) -> dict:
    """A run's checkpoint, or a policy file of models/ (the weights, the flags and where they came from, as
    models/README.md lists). Both hold only tensors and plain Python values, so they load with weights_only=True."""
    script = os.path.basename(__file__)
    try:  # missing, truncated, not a checkpoint, an older version's flags: all the same to the user
        ckpt = torch.load(path, weights_only=True, map_location="cpu")
        if ckpt.get("script", script) != script:  # a policy file names its script; another script's flags won't fit
            fail(f"{flag} {path}: a policy of {ckpt['script']}, not of {script}")
        ckpt["args"] = Args(**ckpt["args"])
        return ckpt
    except Exception as e:  # fail() exits with SystemExit, which is no Exception: it passes through
        fail(f"{flag} {path}: cannot load checkpoint ({describe(e)})")


def load_resumable(path: str, argv: list[str]) -> dict:
    """A checkpoint that --resume can continue exactly. A run continues with its own flags, so other flags given with
    --resume are refused rather than ignored; and an env whose state a checkpoint cannot hold (one without MuJoCo
    physics, e.g. Pendulum-v1) would continue from another state, so it is refused too."""
    others = [arg.split("=")[0] for arg in argv if arg.startswith("--") and arg.split("=")[0] != "--resume"]
    if others:
        fail(f"--resume continues the saved run with its saved flags; drop {' '.join(others)} (or start a new run)")
    ckpt = load_checkpoint(path, "--resume")
    if "optimizer" not in ckpt:  # a policy file keeps what acting needs, not what learning does
        fail(f"--resume {path}: a policy file (weights and flags) cannot continue a run; --eval-checkpoint plays it")
    if not all(name in ckpt for name in CARRIED):  # written by a version of this script that kept other arrays
        fail(f"--resume {path}: the checkpoint lacks the rollout's carried arrays ({', '.join(CARRIED)}): it comes "
             "from an older version of this script; start a new run (--eval-checkpoint still works)")  # fmt: skip
    if not all("physics" in state for state in ckpt["envs"]):
        fail(f"--resume {path}: {ckpt['args'].env_id} has no MuJoCo state to save, so the run cannot continue "
             "exactly; start a new run (--eval-checkpoint still evaluates this checkpoint)")  # fmt: skip
    return ckpt


# What mj_step leaves computed from the state before its last integration, and an env may read before its next step
# (Humanoid's and Ant's reward: the centre of mass or torso position before the step). mj_forward on the restored
# state would give those of the state after it, and the first reward after a resume would differ from the run's.
DERIVED = ("xpos", "xquat", "xmat", "xipos", "ximat", "subtree_com", "subtree_linvel", "subtree_angmom", "cinert",
           "cvel", "cacc", "cfrc_int", "cfrc_ext", "qfrc_actuator", "actuator_force", "geom_xpos", "geom_xmat",
           "site_xpos", "site_xmat", "sensordata")  # fmt: skip


def env_state(env: gym.Env) -> dict:
    """Everything that decides an env's future: its RNG, its time-limit counter and its MuJoCo physics."""
    state = {"rng": env.unwrapped.np_random.bit_generator.state, "steps": env.get_wrapper_attr("_elapsed_steps")}
    if isinstance(getattr(env.unwrapped, "data", None), mujoco.MjData):  # the tests' fake envs have no physics
        model, data = env.unwrapped.model, env.unwrapped.data
        physics = np.empty(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_INTEGRATION))
        mujoco.mj_getState(model, data, physics, mujoco.mjtState.mjSTATE_INTEGRATION)
        state["physics"] = torch.from_numpy(physics)
        state["derived"] = {name: torch.from_numpy(getattr(data, name).copy()) for name in DERIVED}
    if hasattr(env.unwrapped, "get_task_state"):  # the humanoid_flagrun tasks' own state (the target, its timer, ...)
        state["task"] = env.unwrapped.get_task_state()  # tensors and Python numbers, which weights_only loads
    return state


def set_env_state(env: gym.Env, state: dict) -> None:
    env.unwrapped.np_random.bit_generator.state = state["rng"]
    env.set_wrapper_attr("_elapsed_steps", state["steps"])
    if "physics" in state:
        model, data = env.unwrapped.model, env.unwrapped.data
        mujoco.mj_setState(model, data, state["physics"].numpy(), mujoco.mjtState.mjSTATE_INTEGRATION)
        mujoco.mj_forward(model, data)
        for name, value in state.get("derived", {}).items():  # none in a checkpoint of before 2026-12-06
            getattr(data, name)[...] = value.numpy()
    if "task" in state:
        env.unwrapped.set_task_state(state["task"])  # after the physics and the RNG


def open_run(args: Args, ckpt: Optional[dict]) -> tuple[str, SummaryWriter]:
    """The run folder (a resumed run keeps its checkpoint's), TensorBoard there, and wandb when --track."""
    new_run_dir = f"runs/{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
    run_dir = os.path.dirname(os.path.abspath(args.resume)) if ckpt else new_run_dir
    os.makedirs(run_dir, exist_ok=True)
    if args.track:
        import wandb

        wandb.init(project=args.wandb_project_name, sync_tensorboard=True,
                   config=vars(args), name=os.path.basename(run_dir), save_code=True)  # fmt: skip
    # on resume, drop the events logged after the checkpoint (steps > its global_step): the run logs them again
    writer = SummaryWriter(run_dir, purge_step=ckpt["global_step"] + 1 if ckpt else None)
    table = "\n".join(f"|{k}|{v}|" for k, v in vars(args).items())
    writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + table)
    return run_dir, writer


def save_checkpoint(path: str, args: Args, agent: Agent, optimizer, carry: Carry, envs: list, **progress) -> None:
    """Everything --resume needs to continue exactly: flags, weights, optimizer, statistics, carry, RNG, env states."""
    device = next(agent.parameters()).device  # on a GPU, its RNG draws the minibatch shuffles: it is state too
    cuda_rng = {"cuda_rng": torch.cuda.get_rng_state(device)} if device.type == "cuda" else {}
    torch.save({
        "args": vars(args), **progress, "agent": agent.state_dict(), "optimizer": optimizer.state_dict(),
        "obs_rms": carry.obs_rms.state(), "ret_rms": carry.ret_rms.state(),
        **{name: torch.from_numpy(getattr(carry, name)) for name in CARRIED},
        "envs": [env_state(env) for env in envs], "torch_rng": torch.get_rng_state(), **cuda_rng,
    }, path + ".tmp")  # fmt: skip
    os.replace(path + ".tmp", path)  # write, then rename: a cut-off save keeps the last one


def restore_checkpoint(ckpt: dict, agent: Agent, optimizer, carry: Carry, envs: list) -> None:
    agent.load_state_dict(ckpt["agent"])
    optimizer.load_state_dict(ckpt["optimizer"])
    carry.obs_rms.load(ckpt["obs_rms"])
    carry.ret_rms.load(ckpt["ret_rms"])
    vars(carry).update({name: ckpt[name].numpy() for name in CARRIED})
    for env, state in zip(envs, ckpt["envs"]):
        set_env_state(env, state)
    torch.set_rng_state(ckpt["torch_rng"])
    device = next(agent.parameters()).device
    if device.type == "cuda" and "cuda_rng" in ckpt:
        torch.cuda.set_rng_state(ckpt["cuda_rng"], device)


def open_episodes_csv(run_dir: str, resumed_at: Optional[int]):
    """episodes.csv, one row per finished episode; on resume, without the rows written after the checkpoint."""
    path, rows = os.path.join(run_dir, "episodes.csv"), [["global_step", "episodic_return", "episodic_length"]]
    if resumed_at is not None and os.path.exists(path):
        with open(path) as f:
            rows += [row for row in list(csv.reader(f))[1:] if int(row[0]) <= resumed_at]
    csv_file = open(path, "w", newline="")
    csv.writer(csv_file).writerows(rows)
    return csv_file


def catch_stop_signals() -> list:
    """Ctrl-C or SIGTERM: note it in the returned list (a second one kills), so the loop can save and exit."""
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: stop.append(signum) or signal.signal(signum, signal.SIG_DFL))
    return stop


def log_metrics(writer: SummaryWriter, episodes: list, metrics: dict, global_step: int) -> None:
    for episode_step, episode_return, length in episodes:
        writer.add_scalar("charts/episodic_return", episode_return, episode_step)
        writer.add_scalar("charts/episodic_length", length, episode_step)
    for name, value in metrics.items():
        writer.add_scalar(name, value, global_step)


def print_progress(iteration: int, num_iterations: int, global_step: int, sps: int, recent_returns: list, args: Args):
    """A live line on a terminal; ten lines in a log file."""
    tty = sys.stdout.isatty()
    if tty or iteration % max(1, num_iterations // 10) == 0:
        recent = f"{np.mean(recent_returns):9.1f}" if recent_returns else "        -"
        eta = (args.total_timesteps - global_step) / max(sps, 1) / 60
        line = f"step {global_step:9}/{args.total_timesteps}  SPS {sps:5}  return(100) {recent}  ETA {eta:5.1f} min"
        print("\r" + line if tty else line, end="" if tty else "\n", flush=True)


def evaluate(args: Args) -> list:
    """Run the deterministic policy (the Gaussian's mean) of a checkpoint with its frozen observation statistics; with
    --capture-video, film every episode to runs/eval__{env_id}__{time}/videos."""
    if args.eval_episodes <= 0:
        fail(f"--eval-episodes must be positive, got {args.eval_episodes}")
    ckpt = load_checkpoint(args.eval_checkpoint, "--eval-checkpoint")
    saved, obs_rms = ckpt["args"], RunningMeanStd()
    if args.capture_video:  # MuJoCo renders without a display, unless the user chose another backend
        os.environ.setdefault("MUJOCO_GL", "egl")
    render_mode = "rgb_array" if args.capture_video else None
    env = make_env_or_fail(saved.env_id, f"--eval-checkpoint {args.eval_checkpoint}", render_mode=render_mode)
    if args.capture_video:
        video_dir = f"runs/eval__{saved.env_id}__{int(time.time())}/videos"
        env = gym.wrappers.RecordVideo(follow_robot(env), video_dir, episode_trigger=lambda episode: True)
    obs_rms.load(ckpt["obs_rms"])
    agent = Agent(env.observation_space.shape[0], env.action_space.shape[0])
    agent.load_state_dict(ckpt["agent"])
    returns = []
    for episode in range(args.eval_episodes):
        obs, _ = env.reset(seed=saved.seed + 10_000 + episode)  # seeds the training runs never used
        done, total = False, 0.0
        while not done:
            with torch.inference_mode():  # the deterministic policy: the Gaussian's mean
                mean, _ = agent.get_policy(torch.from_numpy(normalize_obs(obs[None], obs_rms, saved, update=False)))
            obs, reward, terminated, truncated, _ = env.step(env_actions(mean[0].numpy(), env.action_space))
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    env.close()  # RecordVideo writes the last episode's video on close
    mean, std = np.mean(returns), np.std(returns)
    print(f"eval {saved.env_id}: mean return {mean:.2f} +- {std:.2f} over {len(returns)} episodes")
    if args.capture_video:
        print(f"videos: {video_dir}")
    return returns


if __name__ == "__main__":
    args, ckpt = tyro.cli(Args), None
    if args.eval_checkpoint:
        evaluate(args)
        sys.exit(0)
    if args.resume:  # continue exactly: the saved flags, weights, statistics, RNG and env states
        ckpt = load_resumable(args.resume, sys.argv[1:])
        args = replace(ckpt["args"], resume=args.resume)
    validate(args)
    train(args, ckpt)
