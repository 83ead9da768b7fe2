"""PPO on Atari: Schulman et al. 2017, "Proximal Policy Optimization Algorithms", Table 5 and §6.4.

Defaults are Table 5 (8 actors, T=128, Adam 2.5e-4 × α, 3 epochs, minibatch 32 × 8, gamma 0.99, lambda 0.95,
eps 0.1 × α, c1 = 1, c2 = 0.01, α annealed from 1 to 0 over 10M steps). The envs are ale-py's C++ AtariVectorEnv
(no-op starts, frame skip 4 with max-pooling, 84x84 grayscale, a stack of 4, FIRE on reset; sticky actions as the id
registers them: none for -v4 ids and bare names, the paper's protocol, 0.25 for ALE/...-v5). As the paper's
openai/baselines wrappers, a lost life ends the episode for bootstrapping and the next action is FIRE (not trained
on); the agent learns from sign-clipped rewards, and the logged return is the real score of a whole game, over all
its lives. Same skeleton as ppo_continuous.py.

    python ppo_atari.py --env-id BreakoutNoFrameskip-v4
"""

import csv
import difflib
import math
import os
import re
import signal
import sys
import time
from dataclasses import dataclass, replace
from typing import Literal, Optional

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import tyro
from ale_py import Action, roms
from ale_py.vector_env import AtariVectorEnv
from torch.utils.tensorboard import SummaryWriter


@dataclass
class Args:
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
    """name of this experiment; part of the run folder runs/{env_id}__{exp_name}__{seed}__{time}"""
    seed: int = 1
    """seed of torch and the environments: the same seed on the same machine gives the same returns, bit for bit"""
    cuda: bool = True
    """train on a GPU when one is present (the CNN wants it); the first line printed names the device; --no-cuda: CPU"""
    torch_deterministic: bool = True
    """on a GPU: cuDNN's deterministic algorithms, TF32 off, deterministic cuBLAS, so that a seed repeats bit for bit;
    --no-torch-deterministic trades that for speed. No effect on the CPU, which repeats either way"""
    track: bool = False
    """also log to Weights & Biases (works without an account under WANDB_MODE=offline)"""
    wandb_project_name: str = "ppo-paper"
    """the wandb project (the entity is your default, or WANDB_ENTITY)"""
    capture_video: bool = False
    """training: record games of env 0 as the agent sees them (84x84 grayscale) to runs/{run_name}/videos. With
    --eval-checkpoint: record the first game as the emulator draws it (210x160, in colour) to videos/{file}.mp4"""
    save_model: bool = False
    """write runs/{run_name}/checkpoint.pt every --save-interval iterations and at the end (Ctrl-C always saves)"""
    save_interval: int = 10
    """iterations between checkpoints when --save-model is on"""
    resume: Optional[str] = None
    """continue the run saved in this checkpoint with its flags: the learner exactly (weights, optimizer, RNG, step),
    in new games (ale-py cannot save its emulators)"""
    eval_checkpoint: Optional[str] = None
    """instead of training, play the policy of this file: a run's checkpoint.pt, or a trained policy of models/
    (models/README.md). Sampled from π, seeded: the same mean every time"""
    eval_episodes: int = 10
    """games for --eval-checkpoint, played side by side; each score is a whole game's, over all its lives"""
    eval_max_steps: Optional[int] = None
    """stop each game of --eval-checkpoint after this many agent steps, for a quick look or a test: a game cut short
    counts its score so far, and the printed line says how many were cut. None: play every game to its end"""
    eval_greedy: bool = False
    """evaluate the most probable action instead of a sample: off by default, since π is the policy PPO trained and
    the paper scored, and a greedy Atari policy can repeat itself until the 108,000-frame limit"""

    # Table 5 of the paper
    env_id: str = "BreakoutNoFrameskip-v4"
    """an Atari game: BreakoutNoFrameskip-v4, ALE/Breakout-v5 or breakout name the same ROM; the id sets the sticky
    actions (v4 and a bare name: none, the paper's protocol; ALE/...-v5: 0.25, gymnasium's v5 protocol)"""
    total_timesteps: int = 10_000_000
    """agent steps in all (Table 5: 10M steps = 40M frames)"""
    num_envs: int = 8
    """Table 5 "number of actors" (8): games stepped in lockstep by ale-py's C++ threads"""
    num_steps: int = 128
    """Table 5 "horizon (T)" (128): steps per actor in each rollout; the batch is num_envs * num_steps"""
    learning_rate: float = 2.5e-4
    """Table 5 "Adam stepsize" (2.5e-4 × α)"""
    update_epochs: int = 3
    """Table 5 "num. epochs" (3; CleanRL uses 4): passes over each batch (K in Algorithm 1)"""
    minibatch_size: int = 256
    """Table 5 "minibatch size" (32 × 8 = 256): M in Algorithm 1; must divide the batch"""
    gamma: float = 0.99
    """Table 5 "discount (gamma)" (0.99)"""
    gae_lambda: float = 0.95
    """Table 5 "GAE parameter (lambda)" (0.95): 0 trusts the critic, 1 the Monte-Carlo return"""

    # The surrogate objective, §6.1 and Table 1
    objective: Literal["clip", "kl-fixed", "kl-adaptive", "none"] = "clip"
    """clip: L^CLIP (7); kl-fixed / kl-adaptive: L^KLPEN (8) with fixed or adapted beta; none: L^CPI (6)"""
    clip_coef: float = 0.1
    """epsilon of L^CLIP (Table 5: 0.1 × α); also the value-clip range"""
    anneal_clip: bool = True
    """anneal epsilon with α from 1 to 0, as Table 5 does (CleanRL keeps it fixed)"""
    kl_beta: float = 1.0
    """beta of L^KLPEN: the fixed value (Table 1: 0.3 to 10), or the starting value of the adaptive rule (1)"""
    kl_target: float = 0.01
    """d_targ of the adaptive rule (Table 1: 0.003, 0.01, 0.03): halve beta below d_targ/1.5, double above 1.5*d_targ"""
    vf_coef: float = 1.0
    """c1 of (9) on L^VF = (V - V_targ)^2 (Table 5: 1; CleanRL's 0.5 on half the squared error is 0.25 here). Both
    pass the Breakout 1M-step target (benchmark/RESULTS.md)"""
    ent_coef: float = 0.01
    """c2 of (9): entropy bonus (Table 5: 0.01)"""
    network: Literal["nature", "a3c"] = "nature"
    """§6.4: "we used the same policy network architecture as [Mni+16]" (A3C's: conv 16 8x8 stride 4, conv 32 4x4
    stride 2, fully connected 256). nature: the Nature CNN (conv 32-64-64, fully connected 512), which the code
    released with the paper (baselines' CnnPolicy) and CleanRL use, and so every public figure we compare with"""

    # Implementation details [not in paper]. The defaults are openai/baselines ppo2's (November 2017), as CleanRL's;
    # the code released with the paper (baselines ppo1, July 2017) differs where a flag says so
    orthogonal_init: bool = True
    """[not in paper] orthogonal weights (gain √2; policy head 0.01, value head 1), zero biases (ppo2; ppo1: normc)"""
    adam_eps: float = 1e-5
    """[not in paper] Adam's epsilon (ppo2 1e-5; ppo1 at release and PyTorch 1e-8): damps steps on tiny gradients"""
    anneal_lr: bool = True
    """anneal the learning rate with α from 1 to 0 over training, as Table 5 does"""
    norm_adv: bool = True
    """[not in paper] Â to mean 0, std 1 in each minibatch (ppo2; ppo1: once over the batch): scale-free steps"""
    clip_reward: bool = True
    """learn from sign(r) in {-1, 0, 1}, as the paper's Atari code did; the logged return stays the real score"""
    life_loss_done: bool = True
    """a lost life ends the episode for bootstrapping and GAE (the game itself goes on, with no reset), as the paper's
    openai/baselines EpisodicLifeEnv"""
    fire_on_life_loss: bool = True
    """after a lost life the next action is FIRE, which serves the ball in Breakout, as the paper's openai/baselines
    wrappers do (FireResetEnv on reset after each life); the forced step is not trained on, its reward counts in the
    score. Off: the agent must learn to serve, and a game where it does not runs to the time limit"""
    sticky_actions: Optional[float] = None
    """probability that the emulator repeats the last action at each frame (Machado et al. 2018); None: the id's own,
    as ale-py registers it in gymnasium: 0.25 for ALE/...-v5 and -v0 ids, 0 for -v4 ids and bare names (the paper)"""
    max_episode_frames: Optional[int] = None
    """[not in paper] truncate a game after this many frames; None: the id's own. The paper's NoFrameskip-v4 ids (gym
    0.9, 2017) stopped a game after frameskip x 100,000 frames: 400,000 (SpaceInvaders, frameskip 3: 300,000), as do
    -v4 ids and bare names here; ALE/...-v5 and -v0 ids: 108,000 (30 minutes, Machado et al. 2018, ale-py's)"""
    env_threads: int = 2
    """C++ threads of ale-py's vector env"""
    torch_threads: int = 2
    """torch threads on the CPU: for the CNN two beat one here (see benchmark/RESULTS.md)"""
    max_grad_norm: float = 0.5
    """[not in paper] clip the global gradient norm of each minibatch step to this (ppo2 0.5; ppo1: no clip)"""
    clip_vloss: bool = True
    """[not in paper] clip the value update like the policy ratio: the larger of the clipped and unclipped squared
    errors (ppo2; ppo1 at release)"""
    bootstrap_truncated: bool = True
    """bootstrap a truncation (--max-episode-frames) from V(real final observation); off treats it as a termination"""


# NETWORKS: the policy and the value function


def layer_init(layer: nn.Module, std: float, orthogonal: bool) -> nn.Module:
    if orthogonal:
        nn.init.orthogonal_(layer.weight, std)
        nn.init.constant_(layer.bias, 0.0)
    return layer


class Agent(nn.Module):
    """A CNN trunk shared by a softmax policy head and a value head: the Nature CNN (Mnih et al. 2015), or A3C's
    smaller one (Mnih et al. 2016), which §6.4 names."""

    def __init__(self, num_actions: int, orthogonal: bool = True, network: str = "nature"):
        super().__init__()
        if network == "a3c":
            self.network = nn.Sequential(
                layer_init(nn.Conv2d(4, 16, 8, stride=4), math.sqrt(2), orthogonal),
                nn.ReLU(),
                layer_init(nn.Conv2d(16, 32, 4, stride=2), math.sqrt(2), orthogonal),
                nn.ReLU(),
                nn.Flatten(),
                layer_init(nn.Linear(32 * 9 * 9, 256), math.sqrt(2), orthogonal),
                nn.ReLU(),
            )
        else:
            self.network = nn.Sequential(
                layer_init(nn.Conv2d(4, 32, 8, stride=4), math.sqrt(2), orthogonal),
                nn.ReLU(),
                layer_init(nn.Conv2d(32, 64, 4, stride=2), math.sqrt(2), orthogonal),
                nn.ReLU(),
                layer_init(nn.Conv2d(64, 64, 3, stride=1), math.sqrt(2), orthogonal),
                nn.ReLU(),
                nn.Flatten(),
                layer_init(nn.Linear(64 * 7 * 7, 512), math.sqrt(2), orthogonal),
                nn.ReLU(),
            )
        width = [m for m in self.network if isinstance(m, nn.Linear)][-1].out_features  # the trunk's: 512 or 256
        self.actor = layer_init(nn.Linear(width, num_actions), 0.01, orthogonal)  # near-uniform π at the start
        self.critic = layer_init(nn.Linear(width, 1), 1.0, orthogonal)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and V(s) of uint8 frames (B, 4, 84, 84), scaled to [0, 1] here so that buffers stay uint8."""
        # channels-last (NHWC) memory is the layout the CPU's convolution kernels want: the same math, but no
        # reordering inside each conv, which made the update much faster here (benchmark/RESULTS.md, Throughput)
        hidden = self.network(obs.contiguous(memory_format=torch.channels_last).float() / 255.0)
        return self.actor(hidden), self.critic(hidden).squeeze(-1)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self(obs)[1]


# ALGO LOGIC: the math, as small pure functions


def categorical_log_prob(logits: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    # log π(a|s) = log softmax(logits)_a
    return torch.log_softmax(logits, -1).gather(-1, action.unsqueeze(-1)).squeeze(-1)


def categorical_entropy(logits: torch.Tensor) -> torch.Tensor:
    # S[π] = −Σ_a π(a) log π(a)
    logp = torch.log_softmax(logits, -1)
    return -(logp.exp() * logp).sum(-1)


def categorical_kl(logits_old: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    # KL[π_old, π] = Σ_a π_old(a) (log π_old(a) − log π(a))
    logp_old, logp = torch.log_softmax(logits_old, -1), torch.log_softmax(logits, -1)
    return (logp_old.exp() * (logp_old - logp)).sum(-1)


def annealed(iteration: int, num_iterations: int) -> float:
    # α of Table 5: 1 at the first iteration, falling linearly towards 0 at the end of training
    return 1.0 - (iteration - 1.0) / num_iterations


def approx_kl(logratio: torch.Tensor) -> torch.Tensor:
    # Ê[(r − 1) − log r]: an unbiased, never-negative sample estimate of KL[π_old, π] (a diagnostic)
    return ((logratio.exp() - 1) - logratio).mean()


def policy_objective(ratio, advantages, objective: str, clip_coef: float, kl=None, kl_beta: float = 0.0, weights=None):
    """The surrogate L(θ) to maximize: one row of Table 1. `kl` is KL[π_old, π] per sample (penalty rows only);
    `weights` (from sample_weights) leave out the steps whose action π did not choose."""
    if objective == "clip":
        # L^CLIP = Ê[min(r Â, clip(r, 1 − ε, 1 + ε) Â)]  (7)
        terms = torch.min(ratio * advantages, ratio.clamp(1 - clip_coef, 1 + clip_coef) * advantages)
    elif objective in ("kl-fixed", "kl-adaptive"):
        # L^KLPEN = Ê[r Â − β KL[π_old, π]]  (8)
        terms = ratio * advantages - kl_beta * kl
    else:
        # L^CPI = Ê[r Â]  (6): no clipping or penalty
        terms = ratio * advantages
    return (terms if weights is None else terms * weights).mean()


def sample_weights(valid: torch.Tensor, minibatch_size: int) -> torch.Tensor:
    """Per-sample weights that turn each minibatch's mean into the mean over its valid samples (valid: 1 or 0):
    Ê over M samples of w x = Σ_valid x / n_valid. All ones, exactly, in a minibatch with nothing left out."""
    rows = valid.view(-1, minibatch_size)  # (B / M, M)
    return (rows * (minibatch_size / rows.sum(1, keepdim=True).clamp(min=1))).view(-1)


def normalize_advantages(advantages: torch.Tensor, minibatch_size: int, valid=None) -> torch.Tensor:
    """[not in paper] Â to mean 0, std 1 within each minibatch, so the step size does not depend on the reward scale.
    All minibatches of a shuffled batch in one call (one row each): the same numbers as one call per minibatch.
    With `valid` (1 or 0 per sample), the mean and std are over the valid samples; the others get values weighing 0."""
    rows = advantages.view(-1, minibatch_size)  # (B / M, M)
    if valid is None:
        return ((rows - rows.mean(1, keepdim=True)) / (rows.std(1, keepdim=True) + 1e-8)).view(-1)
    mask = valid.view(-1, minibatch_size)
    count = mask.sum(1, keepdim=True)
    mean = (rows * mask).sum(1, keepdim=True) / count.clamp(min=1)
    std = (((rows - mean) ** 2 * mask).sum(1, keepdim=True) / (count - 1).clamp(min=1)).sqrt()  # Bessel, as .std()
    return ((rows - mean) / (std + 1e-8)).view(-1)


def value_loss(values, old_values, returns, clip_coef: Optional[float] = None):
    # L^VF = Ê[(V_θ(s_t) − V_targ)²]  (9)
    loss = (values - returns) ** 2
    if clip_coef is not None:  # [not in paper] V_clip = V_old + clip(V − V_old, −ε, ε); take the larger error
        clipped = old_values + (values - old_values).clamp(-clip_coef, clip_coef)
        loss = torch.max(loss, (clipped - returns) ** 2)
    return loss.mean()


def total_loss(policy_obj, v_loss, entropy, vf_coef: float, ent_coef: float):
    # −L^{CLIP+VF+S} = −(L − c1 L^VF + c2 S)  (9): the optimizer minimizes, the paper maximizes
    return -(policy_obj - vf_coef * v_loss + ent_coef * entropy)


def update_kl_beta(kl_beta: float, kl: float, kl_target: float) -> float:
    # §4: d < d_targ / 1.5 → β ← β / 2;  d > d_targ × 1.5 → β ← β × 2
    return kl_beta / 2 if kl < kl_target / 1.5 else kl_beta * 2 if kl > kl_target * 1.5 else kl_beta


def check_on_policy(logprob: torch.Tensor, old_logprob: torch.Tensor) -> None:
    """Before the update's first gradient step θ = θ_old, so the update's log π_θ(a_t|s_t) must be the log-probability
    the rollout sampled each action with, up to float rounding. If not, the rollout sampled from other logits than
    the update scores as π_θold (an edit made in one and not the other), and PPO would train off-policy in silence:
    stop instead. The bound is float32 rounding, which grows with the size of the terms summed."""
    gap = (logprob.detach() - old_logprob).abs().max().item()
    if not gap <= 1e-4 * (1 + old_logprob.abs().max().item()):  # also stops on nan
        sys.exit(f"error: the update's log π_θold(a|s) differs from the rollout's by up to {gap:.3g}: the rollout "
                 "sampled from other logits than the update scores; compute both with agent(obs)")  # fmt: skip


def bootstrap_values(values, final_values, last_value, terminated, truncated, bootstrap_truncated: bool = True):
    """V(s_{t+1}) for each step t of a (T, N) rollout, from the values of the observations that followed it.

    Not done: the value of the next observation in the buffer (last_value after the rollout's last step).
    terminated: 0, the episode has no future. truncated (time limit): V(real final observation), or 0 when off.
    """
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


def explained_variance(advantages: np.ndarray, values: np.ndarray) -> float:
    """1 − Var[V_targ − V] / Var[V_targ] with V_targ = Â + V: 1 is a perfect critic, 0 no better than a constant."""
    return float(1 - np.var(advantages) / (np.var(advantages + values) + 1e-8))


# ALGO LOGIC: the rollout (Algorithm 1, step 1) and the advantages (step 2)


FRAME_SKIP = 4  # frames per agent step, max-pooled over the last two (Mnih et al. 2015, as the paper's Atari code)
SCREEN = (210, 160)  # the Atari 2600's screen as ALE draws every game: rows, columns


def atari_game(env_id: str) -> str:
    """The ROM name of an id: BreakoutNoFrameskip-v4, ALE/Breakout-v5 and breakout all give breakout."""
    name = re.sub(r"(NoFrameskip|Deterministic)?-v\d+$", "", env_id.split("/")[-1])
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()  # MsPacman → ms_pacman


def sticky_actions(args: Args) -> float:
    """--sticky-actions, or the id's own: ale-py registers its -v0 and ALE/...-v5 ids with repeat_action_probability
    0.25 and its -v4 ids with 0 (ale_py/registration.py); a bare ROM name gets the paper's protocol, 0."""
    if args.sticky_actions is not None:
        return args.sticky_actions
    return 0.25 if re.search(r"-v[05]$", args.env_id) else 0.0


def episode_frame_limit(args: Args) -> int:
    """--max-episode-frames, or the id's own: gym 0.9 (the paper's) registered each NoFrameskip-v4 id with
    max_episode_steps = frameskip x 100,000, the frameskip of its Deterministic twin (3 for SpaceInvaders, 4 for the
    rest); -v4 ids and bare names get that. The ids of sticky actions, ALE/...-v5 and -v0, get today's ale-py
    registration, max_num_frames_per_episode = 108,000."""
    if args.max_episode_frames is not None:
        return args.max_episode_frames
    if re.search(r"-v[05]$", args.env_id):
        return 108_000
    return (3 if atari_game(args.env_id) == "space_invaders" else 4) * 100_000


def make_envs(args: Args, run_dir: str, screen: bool = False) -> AtariVectorEnv:
    """ale-py's vector env: preprocessing in C++ threads, about 3x faster than gymnasium's Python wrappers.

    A game over resets the game in the same step (SAME_STEP). Four of its options are traps for PPO, so they stay off
    and the script does their job itself: its episodic_life resets the whole game on a life loss, its life_loss_info
    marks a termination that no reset follows, its reward clipping would hide the game's score, and its time limit
    resets the game in the step that reaches it, reporting the new game's lives, which hides a life lost in that step.
    screen=True: the same games (protocol, seeds, emulator), but each observation is the emulator's own screen after
    the step, (1, 210, 160, 3) RGB, neither max-pooled, scaled nor grayed: for a video of what the agent played.
    """
    if screen:  # at the screen's own size ale-py copies each pixel as the emulator drew it, without resampling
        view = dict(maxpool=False, img_height=SCREEN[0], img_width=SCREEN[1], grayscale=False, stack_num=1)
    else:
        view = dict(maxpool=True, img_height=84, img_width=84, grayscale=True, stack_num=4)
    return AtariVectorEnv(
        atari_game(args.env_id), args.num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
        noop_max=30, frameskip=FRAME_SKIP, **view,
        use_fire_reset=True, repeat_action_probability=sticky_actions(args),
        max_num_frames_per_episode=2**31 - 1,  # never reached: collect_rollout applies --max-episode-frames
        episodic_life=False, life_loss_info=False, reward_clipping=False, num_threads=args.env_threads,
    )  # fmt: skip


def fire_action(envs: AtariVectorEnv) -> int:
    """FIRE's index in the game's action set, or -1 for a game without FIRE (nothing to serve after a lost life)."""
    action_set = list(envs.ale.get_action_set())
    return action_set.index(Action.FIRE) if Action.FIRE in action_set else -1


@dataclass
class Carry:
    """What one rollout hands to the next: the env's last observation and the running games' counters."""

    next_obs: np.ndarray  # (num_envs, 4, 84, 84) uint8
    lives: np.ndarray  # (num_envs,) lives left, to see a life being lost
    episode_return: np.ndarray  # (num_envs,) raw score of the running games, over all lives
    episode_length: np.ndarray  # (num_envs,) agent steps of the running games, for the time limit
    serve: np.ndarray  # (num_envs,) bool: the game lost a life on the last step, so its next action is FIRE
    fire: int  # FIRE's index in the action set, -1 when the game has none
    frames: list  # env 0's frames of the running game, when recording video
    video_dir: str = ""  # where the videos go
    games: int = 0  # games env 0 finished, for the video schedule


def start_carry(envs: AtariVectorEnv, args: Args, seed: int, video_dir: str = "") -> Carry:
    """Reset the games with a seed; fresh counters."""
    next_obs, info = envs.reset(seed=seed)
    zeros = np.zeros(args.num_envs)
    serve = np.zeros(args.num_envs, dtype=bool)
    return Carry(next_obs, info["lives"].copy(), zeros.copy(), zeros.copy(), serve, fire_action(envs), [], video_dir)


def save_video(frames: list, path: str) -> None:
    import imageio.v2 as imageio  # ships with moviepy; imported only when recording

    os.makedirs(os.path.dirname(path), exist_ok=True)
    imageio.mimsave(path, frames, fps=15)


def collect_rollout(envs, agent: Agent, carry: Carry, args: Args, global_step: int, episodes: list) -> dict:
    """Run the policy for num_steps steps in each env (Algorithm 1, "run policy π_θold in environment for T steps").

    A game over resets the game in the same step (SAME_STEP): each stored transition is real and the reset observation
    only becomes the next step's input. The time limit is applied here, so a truncated game's real last observation
    (kept for bootstrapping) and lives are seen before its reset. After a lost life the next action is FIRE
    (--fire-on-life-loss); `served` marks those steps, which the update leaves out.
    Each action is stored with the distribution it was sampled from, π_θold(·|s) (its logits), and its
    log-probability under it, which the update scores as π_θold; the shared trunk gives V(s) with them.
    Finished games are appended to `episodes` as (global_step, score, length).
    """
    T, N, device = args.num_steps, args.num_envs, next(agent.parameters()).device
    obs = np.zeros((T, N) + carry.next_obs.shape[1:], dtype=np.uint8)  # (T, N, 4, 84, 84): uint8, 1/4 of float32
    final_obs = {}  # (t, i) → real last observation of a truncated game
    actions = np.zeros((T, N), dtype=np.int64)
    logits = np.zeros((T, N, envs.single_action_space.n), dtype=np.float32)  # (T, N, num_actions): π_old
    logprobs = np.zeros((T, N), dtype=np.float32)  # log π_old(a_t|s_t)
    values, rewards = np.zeros((T, N), dtype=np.float32), np.zeros((T, N), dtype=np.float32)
    terminated = np.zeros((T, N), dtype=bool)
    truncated = np.zeros((T, N), dtype=bool)
    served = np.zeros((T, N), dtype=bool)  # the action was the forced FIRE, not π's
    max_steps = math.ceil(episode_frame_limit(args) / FRAME_SKIP)  # ale-py's rule: truncate once steps × 4 >= frames
    # a ~ π(·|s) by the Gumbel-max trick, argmax(logits + g): all the noise g ~ Gumbel(0, 1) drawn at once
    gumbel = -torch.empty(logits.shape).exponential_().log().numpy()
    for step in range(T):
        obs[step] = carry.next_obs
        with torch.inference_mode():
            step_logits, step_values = agent(torch.from_numpy(carry.next_obs).to(device))
        logits[step], values[step] = step_logits.cpu().numpy(), step_values.cpu().numpy()
        actions[step] = (logits[step] + gumbel[step]).argmax(-1)
        served[step] = carry.serve
        actions[step, carry.serve] = carry.fire  # serve again after a lost life, as baselines' FireResetEnv
        # at sampling time, from the very logits sampled from (a served step: FIRE's, which the loss leaves out)
        logprobs[step] = categorical_log_prob(torch.from_numpy(logits[step]), torch.from_numpy(actions[step])).numpy()
        next_obs, reward, terminated[step], _, info = envs.step(actions[step])
        global_step += N
        carry.episode_return += reward  # the real score: whole games, every life, unclipped
        carry.episode_length += 1
        # terminated: the game is over (no future, V = 0); truncated: the time limit cut it (V(final obs) follows)
        truncated[step] = (carry.episode_length >= max_steps) & ~terminated[step]
        game_over = terminated[step] | truncated[step]
        # a lost life ends the episode for bootstrapping only: no reset follows, and the next transition is kept.
        # On a truncation step too: no bootstrap past a lost life (terminated wins over truncated in the bootstrap)
        life_lost = (info["lives"] < carry.lives) & ~terminated[step]
        carry.lives = info["lives"].copy()
        carry.serve = life_lost & ~truncated[step] & args.fire_on_life_loss & (carry.fire >= 0)
        if args.capture_video:
            carry.frames.append(info["final_obs"][0, -1] if terminated[step, 0] else next_obs[0, -1])
        terminated[step] |= life_lost & args.life_loss_done
        rewards[step] = np.sign(reward) if args.clip_reward else reward
        if game_over.any():
            for i in np.flatnonzero(game_over):
                episodes.append((global_step, float(carry.episode_return[i]), int(carry.episode_length[i])))
                if truncated[step, i] and not terminated[step, i]:
                    final_obs[step, i] = next_obs[i].copy()  # the real last observation: no reset yet
            carry.episode_return[game_over], carry.episode_length[game_over] = 0, 0
            if truncated[step].any():  # new games for the truncated ones, from each env's own seeded RNG as ale-py
                reset_obs, reset_info = envs.reset(options={"reset_mask": truncated[step].copy()})
                next_obs[truncated[step]] = reset_obs[truncated[step]]
                carry.lives[truncated[step]] = reset_info["lives"][truncated[step]]
            if args.capture_video and game_over[0]:  # games 0, 1, 8, 27, 64, ... as gymnasium's RecordVideo
                if round(carry.games ** (1 / 3)) ** 3 == carry.games:
                    save_video(carry.frames, f"{carry.video_dir}/game-{carry.games}.mp4")
                carry.frames, carry.games = [], carry.games + 1
        carry.next_obs = next_obs
    return {"obs": obs, "final_obs": final_obs, "actions": actions, "logits": logits, "logprobs": logprobs,
            "values": values, "rewards": rewards, "terminated": terminated, "truncated": truncated,
            "served": served}  # fmt: skip


def estimate_advantages(agent: Agent, rollout: dict, next_obs: np.ndarray, args: Args):
    """Â (11)-(12) and V(s_t) for a (T, N) rollout; V(s_t) came with the actions, only bootstrap values are new."""
    device = next(agent.parameters()).device
    values, final_values = rollout["values"], np.zeros_like(rollout["values"])
    with torch.inference_mode():
        last_value = agent.value(torch.from_numpy(next_obs).to(device)).cpu().numpy()  # (N,)
        if rollout["final_obs"]:
            frames = torch.from_numpy(np.stack(list(rollout["final_obs"].values()))).to(device)
            final_values[tuple(zip(*rollout["final_obs"]))] = agent.value(frames).cpu().numpy()
    next_values = bootstrap_values(
        values, final_values, last_value, rollout["terminated"], rollout["truncated"], args.bootstrap_truncated
    )
    dones = (rollout["terminated"] | rollout["truncated"]).astype(np.float32)
    return compute_gae(rollout["rewards"], values, next_values, dones, args.gamma, args.gae_lambda), values


def flatten_batch(rollout: dict, advantages: np.ndarray, values: np.ndarray, device: torch.device) -> dict:
    """The (T, N) rollout as a batch of B = T·N samples. Every entry is a per-sample column: the update shuffles each
    one and cuts it into minibatches, so a column added here reaches every minibatch as mb[key]. The rule: a column
    of shape (T, N, ...) is flattened to (B, ...), one of shape (B, ...) is taken as it is, any other stops the run.
    π_θold is what the rollout sampled from (its logits, and each action's log-probability under them); the returns
    are V_targ = Â + V_old, with V_old = V(s_t) as the rollout computed it."""
    T, N = advantages.shape
    columns = {"obs": rollout["obs"], "actions": rollout["actions"], "logprobs": rollout["logprobs"],
               "logits": rollout["logits"], "advantages": advantages, "values": values,
               "returns": advantages + values,
               # the one mask of the forced FIRE: 1 where π chose the action, 0 where the script served after a lost
               # life. No log π of an action the policy did not choose enters the loss (its policy, KL and entropy
               # terms, and the advantages' mean and std); V still learns from those states
               "valid": (~rollout["served"]).astype(np.float32)}  # fmt: skip
    batch = {}
    for key, column in columns.items():
        column = torch.as_tensor(column)
        if column.shape[:2] == (T, N):
            column = column.reshape(T * N, *column.shape[2:])
        elif column.shape[:1] != (T * N,):
            sys.exit(f"error: batch column {key!r} has shape {tuple(column.shape)}; a per-sample column is (T, N, ...)"
                     f" = ({T}, {N}, ...) or (T·N, ...) = ({T * N}, ...)")  # fmt: skip
        batch[key] = column.to(device)
    return batch


# ALGO LOGIC: the update (Algorithm 1, step 3)


def update(agent: Agent, optimizer: torch.optim.Optimizer, batch: dict, kl_beta: float, clip_coef: float,
           args: Args) -> dict:  # fmt: skip
    """Algorithm 1's "optimize surrogate L wrt θ, with K epochs and minibatch size M ≤ NT", then how far π moved
    from π_old and how well V fits, over the whole batch. Returns the metrics."""
    value_clip = clip_coef if args.clip_vloss else None
    uses_kl = args.objective in ("kl-fixed", "kl-adaptive")
    batch_size = args.num_envs * args.num_steps
    last_logits, last_values = torch.zeros_like(batch["logits"]), torch.zeros_like(batch["values"])
    any_served = not bool(batch["valid"].all())  # else the plain per-minibatch statistics: cheaper, the same numbers
    for epoch in range(args.update_epochs):
        # shuffle every column once per epoch, then cut it into minibatches: views, not gathers
        perm = torch.randperm(batch_size, device=batch["obs"].device)
        shuffled = {key: column[perm] for key, column in batch.items()}
        shuffled["index"] = perm  # where each sample sits in the batch: the diagnostics use its last outputs
        # the mask `valid` as weights: each minibatch's mean becomes the mean over the steps π chose
        shuffled["weights"] = sample_weights(shuffled["valid"], args.minibatch_size)  # exactly 1 when none was served
        if args.norm_adv:
            valid = shuffled["valid"] if any_served else None
            shuffled["advantages"] = normalize_advantages(shuffled["advantages"], args.minibatch_size, valid)
        for start in range(0, batch_size, args.minibatch_size):
            mb = {key: column[start : start + args.minibatch_size] for key, column in shuffled.items()}
            logits, new_values = agent(mb["obs"])
            last_logits[mb["index"]], last_values[mb["index"]] = logits.detach(), new_values.detach()
            logprob = categorical_log_prob(logits, mb["actions"])
            if epoch == 0 and start == 0:  # θ = θ_old yet: the update must score what the rollout sampled from
                check_on_policy(logprob, mb["logprobs"])
            ratio = (logprob - mb["logprobs"]).exp()  # r_t(θ) = π_θ(a_t|s_t) / π_θold(a_t|s_t)
            kl = categorical_kl(mb["logits"], logits) if uses_kl else None
            pg_obj = policy_objective(ratio, mb["advantages"], args.objective, clip_coef, kl, kl_beta, mb["weights"])
            v_loss = value_loss(new_values, mb["values"], mb["returns"], value_clip)
            entropy = (categorical_entropy(logits) * mb["weights"]).mean()
            loss = total_loss(pg_obj, v_loss, entropy, args.vf_coef, args.ent_coef)
            optimizer.zero_grad()
            loss.backward()
            # [not in paper] clip the global gradient norm: g ← g · min(1, max_grad_norm / ‖g‖)
            nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
            optimizer.step()
    return diagnostics(agent, batch, (last_logits, last_values), kl_beta, clip_coef, value_clip, args)


def diagnostics(agent: Agent, batch: dict, last_outputs: tuple, kl_beta: float, clip_coef: float,
                value_clip: Optional[float], args: Args) -> dict:  # fmt: skip
    """Over the whole batch: how far did π move from π_old, how well does V fit? kl-adaptive adapts β on KL[π_old, π]
    after the update (§4), so it makes one more CNN pass over the batch, as ppo_continuous.py; the other objectives
    use each sample's outputs from the last epoch (last_outputs), which cost no pass but came before some steps."""
    with torch.inference_mode():
        if args.objective == "kl-adaptive":
            outputs = [agent(x) for x in batch["obs"].split(args.minibatch_size)]
            logits, values = torch.cat([o[0] for o in outputs]), torch.cat([o[1] for o in outputs])
        else:
            logits, values = last_outputs
        own = batch["valid"].bool()  # the policy's diagnostics leave out the forced FIRE steps, as its loss does
        logratio = categorical_log_prob(logits[own], batch["actions"][own]) - batch["logprobs"][own]
        ratio, kl = logratio.exp(), categorical_kl(batch["logits"][own], logits[own])
        pg_obj = policy_objective(ratio, batch["advantages"][own], args.objective, clip_coef, kl, kl_beta)
        return {
            "losses/policy_loss": -pg_obj.item(),
            "losses/value_loss": value_loss(values, batch["values"], batch["returns"], value_clip).item(),
            "losses/entropy": categorical_entropy(logits[own]).mean().item(),
            "losses/approx_kl": approx_kl(logratio).item(),
            "losses/kl": kl.mean().item(),
            "losses/clipfrac": ((ratio - 1).abs() > clip_coef).float().mean().item(),
            "charts/clip_coef": clip_coef,
        }


# Algorithm 1


def train(args: Args, ckpt: Optional[dict] = None) -> None:
    device = select_device(args)  # first: the device is the first line a run prints
    batch_size = args.num_envs * args.num_steps
    num_iterations = args.total_timesteps // batch_size
    run_dir, writer = open_run(args, ckpt)
    checkpoint_path = os.path.join(run_dir, "checkpoint.pt")

    # TRY NOT TO MODIFY: seeding
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)

    envs = make_envs(args, run_dir)
    agent = Agent(envs.single_action_space.n, args.orthogonal_init, args.network).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=args.adam_eps, fused=True)
    global_step, start_iteration, kl_beta = 0, 1, args.kl_beta
    if ckpt is not None:  # continue the learner exactly where the checkpoint stopped
        restore_checkpoint(ckpt, agent, optimizer)
        global_step, start_iteration, kl_beta = ckpt["global_step"], ckpt["iteration"] + 1, ckpt["kl_beta"]
    # ale-py's vector env cannot save its emulators: a resumed run starts new games (seeded by the step), so resume
    # is exact for the learner (weights, optimizer, CPU and CUDA RNG, step) but not for the games in progress
    carry = start_carry(envs, args, args.seed + global_step, video_dir=os.path.join(run_dir, "videos"))
    csv_file = open_episodes_csv(run_dir, global_step if ckpt else None)
    stop = catch_stop_signals()  # Ctrl-C or SIGTERM: finish the iteration in progress, save a checkpoint, then exit
    recent_returns, start_time, start_step = [], time.time(), global_step

    for iteration in range(start_iteration, num_iterations + 1):
        alpha = annealed(iteration, num_iterations)  # Table 5: lr and ε anneal with α from 1 to 0
        optimizer.param_groups[0]["lr"] = args.learning_rate * (alpha if args.anneal_lr else 1.0)
        clip_coef = args.clip_coef * (alpha if args.anneal_clip else 1.0)

        # ALG STEP 1: run policy π_θold for T timesteps in each of the N environments
        episodes = []  # (global step, score, length) of the games that end in this rollout
        rollout = collect_rollout(envs, agent, carry, args, global_step, episodes)
        global_step += batch_size

        # ALG STEP 2: compute advantage estimates Â_1, ..., Â_T; π_θold and V(s_t) came with the rollout
        advantages, values = estimate_advantages(agent, rollout, carry.next_obs, args)  # (T, N) each
        batch = flatten_batch(rollout, advantages, values, device)

        # ALG STEP 3: optimize the surrogate L wrt θ, with K epochs and minibatch size M ≤ NT; then θ_old ← θ
        metrics = update(agent, optimizer, batch, kl_beta, clip_coef, args)
        if not all(torch.isfinite(p).all() for p in agent.parameters()):  # NaN weights stay NaN: stop before saving
            sys.exit(f"error: non-finite loss in the update at step {global_step}; stopped, last checkpoint kept")
        metrics["losses/explained_variance"] = explained_variance(advantages, values)
        if args.objective == "kl-adaptive":
            kl_beta = update_kl_beta(kl_beta, metrics["losses/kl"], args.kl_target)
        if args.objective in ("kl-fixed", "kl-adaptive"):
            metrics["charts/kl_beta"] = kl_beta

        # TRY NOT TO MODIFY: logging, checkpoints, progress
        csv.writer(csv_file).writerows(episodes)
        csv_file.flush()
        recent_returns = (recent_returns + [episode_return for _, episode_return, _ in episodes])[-100:]
        sps = int((global_step - start_step) / (time.time() - start_time))
        metrics.update({"charts/SPS": sps, "charts/learning_rate": optimizer.param_groups[0]["lr"]})
        log_metrics(writer, episodes, metrics, global_step)
        if stop or (args.save_model and (iteration % args.save_interval == 0 or iteration == num_iterations)):
            writer.flush()  # the events up to this step are on disk before the checkpoint that a resume starts from
            save_checkpoint(checkpoint_path, args, agent, optimizer, global_step=global_step, iteration=iteration,
                            kl_beta=kl_beta)  # fmt: skip
        print_progress(iteration, num_iterations, global_step, sps, recent_returns, args)
        if stop:
            writer.close()  # flush the last iterations' events: TensorBoard writes them in batches
            print(f"\ninterrupted: checkpoint at step {global_step} saved; continue with --resume {checkpoint_path}")
            sys.exit(128 + stop[0])

    steps, elapsed = global_step - start_step, time.time() - start_time
    print(f"\ndone: {steps} steps in {elapsed:.2f} s ({steps / elapsed:.0f} SPS); run folder {run_dir}")
    envs.close()
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


def validate(args: Args) -> None:
    """Check the flags once, right after parsing, so that a typo fails in a second instead of after an hour."""
    for name, value in vars(args).items():  # inf and nan pass every comparison below, or none
        if isinstance(value, float) and not math.isfinite(value):
            fail(f"--{name.replace('_', '-')} must be a finite number, got {value}")
    if not 0 <= args.seed < 2**32:  # NumPy's seed range
        fail(f"--seed must lie in [0, 2**32), got {args.seed}")
    for name in ("total_timesteps", "num_envs", "num_steps", "minibatch_size", "update_epochs", "save_interval",
                 "eval_episodes", "learning_rate", "clip_coef", "kl_target", "adam_eps", "env_threads",
                 "torch_threads", "max_grad_norm"):  # fmt: skip
        if not getattr(args, name) > 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if not (0 < args.gamma <= 1 and 0 <= args.gae_lambda <= 1 and args.kl_beta >= 0):
        fail("--gamma must lie in (0, 1], --gae-lambda in [0, 1], --kl-beta must be >= 0")
    if args.max_episode_frames is not None and not args.max_episode_frames > 0:
        fail(f"--max-episode-frames must be positive (or None: the id's own), got {args.max_episode_frames}")
    if args.sticky_actions is not None and not 0 <= args.sticky_actions <= 1:
        fail(f"--sticky-actions is a probability in [0, 1], got {args.sticky_actions}")
    batch_size = args.num_envs * args.num_steps
    if batch_size % args.minibatch_size:
        fail(f"--minibatch-size {args.minibatch_size} does not divide the batch size {batch_size} (num_envs*num_steps)")
    if args.total_timesteps < batch_size:
        fail(f"--total-timesteps {args.total_timesteps} is less than one batch ({batch_size})")
    if args.norm_adv and args.minibatch_size < 2:  # the std of one sample is nan
        fail("--norm-adv standardizes Â within each minibatch, which needs --minibatch-size >= 2 (or --no-norm-adv)")
    check_game(args.env_id, f"--env-id {args.env_id}")


def check_game(env_id: str, flag: str) -> None:
    game = atari_game(env_id)
    if game not in roms.get_all_rom_ids():
        close = difflib.get_close_matches(game, roms.get_all_rom_ids(), n=4)
        fail(f"{flag}: no Atari game {game!r} in ale-py" + (f"; close names: {', '.join(close)}" if close else ""))


def select_device(args: Args) -> torch.device:
    """The device to train on, named in the first line the run prints; --cuda without a GPU says why, once.
    With --torch-deterministic on a GPU: cuDNN's deterministic kernels, no TF32, deterministic algorithms."""
    if args.cuda and torch.cuda.is_available():
        device = torch.device("cuda")
        print(f"device: cuda ({torch.cuda.get_device_name(device)}, torch {torch.__version__})", flush=True)
        if args.torch_deterministic:  # cuDNN and TF32 would make GPU runs unrepeatable
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # read when cuBLAS starts, after this
            torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
            torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False  # full fp32, not TF32
            torch.use_deterministic_algorithms(True, warn_only=True)  # the deterministic kernel where there is one
        return device
    why = "a CPU-only build" if torch.version.cuda is None else "a CUDA build, but it sees no GPU"
    print("device: cpu" + (f" (--cuda is on, but torch {torch.__version__} is {why})" if args.cuda else ""), flush=True)
    return torch.device("cpu")


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
    """A checkpoint for --resume. A run continues with its own flags, so other flags given with --resume are refused
    rather than ignored."""
    others = [arg.split("=")[0] for arg in argv if arg.startswith("--") and arg.split("=")[0] != "--resume"]
    if others:
        fail(f"--resume continues the saved run with its saved flags; drop {' '.join(others)} (or start a new run)")
    ckpt = load_checkpoint(path, "--resume")
    if "optimizer" not in ckpt:  # a policy file keeps what acting needs, not what learning does
        fail(f"--resume {path}: a trained policy (weights only: no optimizer or RNG state) cannot be resumed; "
             "play it with --eval-checkpoint")  # fmt: skip
    return ckpt


def open_run(args: Args, ckpt: Optional[dict]) -> tuple[str, SummaryWriter]:
    """The run folder (a resumed run keeps its checkpoint's), TensorBoard there, and wandb when --track."""
    new_run_dir = f"runs/{args.env_id.replace('/', '-')}__{args.exp_name}__{args.seed}__{int(time.time())}"
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


def save_checkpoint(path: str, args: Args, agent: Agent, optimizer, **progress) -> None:
    """What --resume needs to continue the learner exactly: flags, weights, optimizer, CPU and CUDA RNG, progress."""
    device = next(agent.parameters()).device
    cuda_rng = {"cuda_rng": torch.cuda.get_rng_state(device)} if device.type == "cuda" else {}
    torch.save({
        "args": vars(args), **progress, "agent": agent.state_dict(), "optimizer": optimizer.state_dict(),
        "torch_rng": torch.get_rng_state(), **cuda_rng,
    }, path + ".tmp")  # fmt: skip
    os.replace(path + ".tmp", path)  # write, then rename: a cut-off save keeps the last one


def restore_checkpoint(ckpt: dict, agent: Agent, optimizer) -> None:
    agent.load_state_dict(ckpt["agent"])
    optimizer.load_state_dict(ckpt["optimizer"])
    torch.set_rng_state(ckpt["torch_rng"])
    device = next(agent.parameters()).device
    if device.type == "cuda" and "cuda_rng" in ckpt:  # the GPU's RNG draws the minibatch shuffles there
        torch.cuda.set_rng_state(ckpt["cuda_rng"], device)


def open_episodes_csv(run_dir: str, resumed_at: Optional[int]):
    """episodes.csv, one row per finished game; on resume, without the rows written after the checkpoint."""
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
    """Play --eval-episodes games with the policy of a checkpoint or of a models/ file, one game per env, and print
    the mean score with its spread.

    The games are training's: the envs of make_envs with the saved flags, so the policy acts on the very input it was
    trained on (the same frame skip, max-pool, 84x84 grayscale resize, stack, no-op starts and FIRE on reset), and
    each score is a whole game's, over all its lives, as the paper scored. A lost life ends nothing here: as in
    training, the next action is FIRE (--fire-on-life-loss). The actions are sampled from π, with a seeded generator,
    so that two evaluations print the same mean; --eval-greedy takes the most probable action instead.
    --capture-video records game 0 as the emulator draws it: see ScreenRecorder.
    """
    for name in ("eval_episodes", "eval_max_steps"):
        if getattr(args, name) is not None and not getattr(args, name) > 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    ckpt = load_checkpoint(args.eval_checkpoint, "--eval-checkpoint")
    saved = replace(ckpt["args"], num_envs=args.eval_episodes)
    check_game(saved.env_id, f"--eval-checkpoint {args.eval_checkpoint}")
    envs = make_envs(saved, run_dir="")
    torch.set_num_threads(saved.torch_threads)
    agent = Agent(envs.single_action_space.n, network=saved.network)
    try:
        agent.load_state_dict(ckpt["agent"])
    except Exception as e:  # flags that build another network than the weights': --network, or another game's actions
        fail(
            f"--eval-checkpoint {args.eval_checkpoint}: its weights do not fit the network its flags build "
            f"(--network {saved.network}, {envs.single_action_space.n} actions of {saved.env_id}) ({describe(e)})"
        )
    seed = saved.seed + 10_000  # seeds the training runs never used
    obs, info = envs.reset(seed=seed)
    generator = torch.Generator().manual_seed(seed)  # the sampling's own RNG: the same games each time
    if args.capture_video:  # game 0, to videos/ under the file's own name: models/breakout.pt → videos/breakout.mp4
        video_path = os.path.join("videos", os.path.splitext(os.path.basename(args.eval_checkpoint))[0] + ".mp4")
        recorder = ScreenRecorder(saved, seed, video_path)
    fire, lives, serve = fire_action(envs), info["lives"].copy(), np.zeros(args.eval_episodes, dtype=bool)
    scores, lengths = np.zeros(args.eval_episodes), np.zeros(args.eval_episodes)
    finished, cut = np.zeros(args.eval_episodes, dtype=bool), np.zeros(args.eval_episodes, dtype=bool)
    while not finished.all():
        with torch.inference_mode():
            logits, _ = agent(torch.from_numpy(obs))
        if not args.eval_greedy:  # a ~ π(·|s) by the Gumbel-max trick, as in training
            logits = logits - torch.empty(logits.shape).exponential_(generator=generator).log()
        actions = logits.argmax(-1).numpy()
        actions[serve] = fire
        obs, reward, terminated, _, info = envs.step(actions)
        if args.capture_video and not finished[0]:
            recorder.step(actions[0], reward[0], terminated[0], info["lives"][0])
        scores += reward * ~finished
        lengths += 1
        serve = (info["lives"] < lives) & ~terminated & saved.fire_on_life_loss & (fire >= 0)
        lives = info["lives"].copy()
        over = terminated | (lengths * FRAME_SKIP >= episode_frame_limit(saved))
        if args.eval_max_steps is not None:
            cut |= ~finished & ~over & (lengths >= args.eval_max_steps)
        finished |= over | cut
        if args.capture_video and finished[0] and recorder.steps == lengths[0]:  # game 0 ended in this step
            recorder.close()
            print(f"video of game 0 (score {scores[0]:.0f}, {recorder.steps} steps): {video_path}", flush=True)
    mean, std, kind = scores.mean(), scores.std(), "greedy" if args.eval_greedy else "sampled"
    cut_note = f" ({cut.sum()} cut short at --eval-max-steps {args.eval_max_steps}: scores so far)" if cut.any() else ""
    print(f"eval {saved.env_id} ({kind}): mean return {mean:.2f} +- {std:.2f} over {len(scores)} games{cut_note}")
    return scores.tolist()


class ScreenRecorder:
    """A video of game 0 of make_envs(args) reset with `seed`, in colour and at the screen's own size: step() takes,
    step by step, the action env 0 took and what env 0 reported (reward, game over, lives).

    The frames come from a second emulator (make_envs with screen=True): the same ROM, protocol and seed, given the
    same actions, plays the same game frame for frame, and its reward, game over and lives are checked against env 0's
    at every step. What remains different from what the agent saw: each frame is the last of the step's four, where
    the agent's is the max of the last two, and unscaled RGB, where the agent's is 84x84 grayscale. 15 frames a second,
    one per step: the game's own speed (60 Hz over a frame skip of 4).
    """

    def __init__(self, args: Args, seed: int, path: str):
        import imageio.v2 as imageio  # imageio and its ffmpeg come with moviepy; imported only when recording

        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self.env = make_envs(replace(args, num_envs=1, env_threads=1), run_dir="", screen=True)
        frame, _ = self.env.reset(seed=seed)
        # macro_block_size 1: the default, 16, would pad the 210 rows to 224; 210 and 160 are even, as yuv420p needs
        self.writer = imageio.get_writer(path, fps=60 // FRAME_SKIP, macro_block_size=1)
        self.writer.append_data(frame[0, -1])
        self.steps = 0

    def step(self, action: int, reward: float, game_over: bool, lives: int) -> None:
        frame, screen_reward, screen_over, _, info = self.env.step(np.array([action]))
        self.steps += 1
        if (screen_reward[0], screen_over[0], info["lives"][0]) != (reward, game_over, lives):
            sys.exit(f"error: at step {self.steps} the recording emulator is no longer in the game scored; no video")
        self.writer.append_data(info["final_obs"][0, -1] if screen_over[0] else frame[0, -1])

    def close(self) -> None:
        self.writer.close()
        self.env.close()


if __name__ == "__main__":
    args, ckpt = tyro.cli(Args), None
    if args.eval_checkpoint:
        evaluate(args)
        sys.exit(0)
    if args.resume:  # continue: the saved flags, weights, optimizer, RNG states and step; the games start anew
        ckpt = load_resumable(args.resume, sys.argv[1:])
        args = replace(ckpt["args"], resume=args.resume)
    validate(args)
    train(args, ckpt)
