"""PPO with nothing but NumPy on a corridor: Schulman et al. 2017, "Proximal Policy Optimization Algorithms".

For readers who want to see every gradient. The corridor has `--length` cells: the agent starts in the middle and
steps left or right; reaching either end ends the episode, with reward +1 on the right and −1 on the left. The policy
is a table of softmax logits θ[s, a] and the critic a table V[s], so each objective's exact gradient is a few lines of
NumPy written out by hand: no autodiff, no torch. `--objective` picks L^CLIP (7), L^CPI (6) or L^PG (2). Each progress
line prints the largest change of any action probability during the update (max|Δπ|): with K epochs on one batch
the clipped objective moves each probability by about ε of its old value, the unclipped ones by as much as they like.

Defaults are the paper's Table 3 (T = 2048, 10 epochs, minibatch 64, λ = 0.95, ε = 0.2) with the seed corridor's
γ = 0.95 and plain gradient steps of size 0.5 on both tables: ten iterations, about a second.

    python ppo_gridworld_numpy.py --objective none
"""

import math
import sys
from dataclasses import dataclass, fields
from typing import Literal

import numpy as np
import tyro


@dataclass
class Args:
    seed: int = 1
    """seed of np.random.default_rng, the only source of randomness: the same seed gives the same output; 0 to
    2**32 - 1"""
    length: int = 7
    """cells in the corridor, both terminal ends included (at least 3); the agent starts at length // 2"""
    total_timesteps: int = 20_480
    """environment steps in all: total_timesteps // num_steps iterations (10 by default; the policy has settled by
    then, because the states it has learned to avoid are no longer visited)"""
    num_steps: int = 2048
    """Table 3 "horizon (T)" (2048): steps per rollout, the batch; episodes restart in the middle within it. A large
    batch still visits the cells near the left end while the policy is learning to avoid them"""
    learning_rate: float = 0.5
    """α of plain gradient ascent on the logit table (the paper uses Adam on networks); typical 0.25 to 1"""
    vf_learning_rate: float = 0.5
    """step size of plain gradient descent on L^VF for the value table; at most 0.5, so that no step overshoots its
    targets even when one state fills a whole minibatch"""
    update_epochs: int = 10
    """Table 3 "num. epochs" (10): K of Algorithm 1, passes over each batch; typical 3 to 10"""
    minibatch_size: int = 64
    """Table 3 "minibatch size" (64): M of Algorithm 1, samples per gradient step; must divide --num-steps"""
    gamma: float = 0.95
    """discount γ: the seed corridor's 0.95 (Table 3: 0.99)"""
    gae_lambda: float = 0.95
    """Table 3 "GAE parameter (lambda)" (0.95): 0 trusts the critic, 1 the Monte-Carlo return"""
    objective: Literal["clip", "none", "pg"] = "clip"
    """clip: L^CLIP (7); none: L^CPI (6), the ratio without a clip; pg: L^PG (2), the vanilla policy gradient"""
    clip_coef: float = 0.2
    """ε of L^CLIP (Table 1: 0.1, 0.2, 0.3; 0.2 is best)"""
    norm_adv: bool = True
    """[not in paper] normalize advantages to mean 0, std 1 over the batch, so the step size is scale-free. Over the
    batch, not each minibatch: once the policy has settled, a minibatch's advantages are all near 0, and dividing by
    their tiny std would blow the critic's small errors up into full-size steps"""
    log_interval: int = 1
    """print a progress line every this many iterations (and after the first and the last)"""


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2, no traceback."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def validate(args: Args) -> None:
    """Check the flags once, right after parsing, before anything is printed."""
    for field in fields(args):  # every float flag: inf or nan would only train into a table of NaNs
        value = getattr(args, field.name)
        if isinstance(value, float) and not math.isfinite(value):
            fail(f"--{field.name.replace('_', '-')} must be a finite number, got {value}")
    if not 0 <= args.seed < 2**32:  # numpy's seeding raises on a negative seed; one 32-bit word
        fail(f"--seed must lie in [0, 2**32), got {args.seed}")
    for name in ("total_timesteps", "num_steps", "minibatch_size", "update_epochs", "learning_rate",
                 "vf_learning_rate", "clip_coef", "log_interval"):  # fmt: skip
        if not getattr(args, name) > 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if args.length < 3:
        fail(f"--length must be at least 3 (two terminal ends and a start between them), got {args.length}")
    if not 0 < args.gamma <= 1:
        fail(f"--gamma must lie in (0, 1], got {args.gamma}")
    if not 0 <= args.gae_lambda <= 1:
        fail(f"--gae-lambda must lie in [0, 1], got {args.gae_lambda}")
    if args.num_steps % args.minibatch_size:
        fail(f"--minibatch-size {args.minibatch_size} does not divide the batch size {args.num_steps} (num_steps)")
    if args.total_timesteps < args.num_steps:
        fail(f"--total-timesteps {args.total_timesteps} is less than one batch ({args.num_steps})")


def env_step(state: int, action: int, length: int) -> tuple[int, float, bool]:
    """The corridor: action 0 moves left, 1 right; the ends 0 and length − 1 are terminal, worth −1 and +1."""
    next_state = state + (1 if action == 1 else -1)
    terminated = next_state in (0, length - 1)
    reward = (1.0 if next_state == length - 1 else -1.0) if terminated else 0.0
    return next_state, reward, terminated


# ALGO LOGIC: the tabular building blocks; any number of actions, so the seed's three-action examples run as they are


def softmax(logits: np.ndarray) -> np.ndarray:
    # π(a|s) = exp θ[s, a] / Σ_b exp θ[s, b], over the last axis
    z = np.exp(logits - logits.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    # log π(a|s) = θ[s, a] − log Σ_b exp θ[s, b], computed without forming π (no log 0)
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def grad_log_prob(probs: np.ndarray, actions: np.ndarray) -> np.ndarray:
    # ∇_θ[s] log π(a|s) = 1[k = a] − π(k|s), for each logit k: (M, A) from probs (M, A) and actions (M,)
    return np.eye(probs.shape[-1])[actions] - probs


def policy_gradient(probs, states, actions, weights, table_shape) -> np.ndarray:
    """Ê_t[w_t ∇_θ log π(a_t|s_t)] as a (num_states, num_actions) table. With w_t = Â_t it is ĝ (1), the batch
    policy gradient of §2.1; the gradient of every objective here has this form, each with its own weights w_t."""
    grad = np.zeros(table_shape)
    # each sample's row goes to its own state; np.add.at sums the rows of samples that share a state
    np.add.at(grad, states, weights[:, None] * grad_log_prob(probs, actions))
    return grad / len(actions)


def surrogate(logprobs, old_logprobs, advantages, objective: str, clip_coef: float) -> float:
    """The objective L(θ) to maximize, from log π_θ(a_t|s_t) and log π_θold(a_t|s_t) of the batch."""
    if objective == "pg":
        # L^PG = Ê[log π_θ(a_t|s_t) Â_t]  (2)
        return float(np.mean(logprobs * advantages))
    # r_t(θ) = π_θ(a_t|s_t) / π_θold(a_t|s_t)
    ratio = np.exp(logprobs - old_logprobs)
    if objective == "none":
        # L^CPI = Ê[r_t Â_t]  (6)
        return float(np.mean(ratio * advantages))
    # L^CLIP = Ê[min(r_t Â_t, clip(r_t, 1 − ε, 1 + ε) Â_t)]  (7)
    return float(np.mean(np.minimum(ratio * advantages, np.clip(ratio, 1 - clip_coef, 1 + clip_coef) * advantages)))


def surrogate_weights(logprobs, old_logprobs, advantages, objective: str, clip_coef: float) -> np.ndarray:
    """The per-sample weights w_t with ∇_θ L = Ê_t[w_t ∇_θ log π_θ(a_t|s_t)], using ∇r_t = r_t ∇ log π_θ(a_t|s_t)."""
    if objective == "pg":
        # ∇L^PG: w_t = Â_t
        return advantages
    ratio = np.exp(logprobs - old_logprobs)
    if objective == "none":
        # ∇L^CPI: w_t = r_t Â_t
        return ratio * advantages
    # ∇L^CLIP (7): w_t = r_t Â_t where the unclipped term is the min; 0 where the clip holds r_t past 1 ± ε (flat)
    clipped = ((advantages > 0) & (ratio > 1 + clip_coef)) | ((advantages < 0) & (ratio < 1 - clip_coef))
    return np.where(clipped, 0.0, ratio * advantages)


def policy_objective(logits, states, actions, old_logprobs, advantages, objective: str, clip_coef: float):
    """L(θ) and its exact gradient ∇_θ L, a table shaped like `logits`, for one minibatch of (s_t, a_t)."""
    logprobs = log_softmax(logits[states])[np.arange(len(actions)), actions]  # (M,) log π_θ(a_t|s_t)
    value = surrogate(logprobs, old_logprobs, advantages, objective, clip_coef)
    weights = surrogate_weights(logprobs, old_logprobs, advantages, objective, clip_coef)  # (M,)
    return value, policy_gradient(softmax(logits[states]), states, actions, weights, logits.shape)


def kl_divergence(probs_old: np.ndarray, probs_new: np.ndarray) -> np.ndarray:
    # KL[π_old, π_new] = Σ_a π_old(a) log(π_old(a) / π_new(a)), over the last axis
    return np.sum(probs_old * np.log(probs_old / probs_new), axis=-1)


def compute_gae(rewards, values, next_values, terminated, gamma: float, gae_lambda: float) -> np.ndarray:
    """Â (11)-(12) for a 1-D rollout. next_values[t] is V(s_{t+1}): 0 after a terminal step, and V of the state the
    rollout stopped in after its last step when that episode is not over (bootstrapping)."""
    advantages = np.zeros(len(rewards))
    last = 0.0
    for t in reversed(range(len(rewards))):
        # δ_t = r_t + γ V(s_{t+1}) − V(s_t)
        delta = rewards[t] + gamma * next_values[t] - values[t]
        # Â_t = δ_t + γλ Â_{t+1}, the sum cut where an episode ended
        last = delta + gamma * gae_lambda * (1.0 - terminated[t]) * last
        advantages[t] = last
    return advantages


def collect_rollout(logits: np.ndarray, state: int, args: Args, rng: np.random.Generator):
    """Run π_θold for num_steps steps from `state`, restarting episodes in the middle. Returns the rollout, (T,)
    arrays, and the state the next rollout starts from (mid-episode when the last step did not end one)."""
    T = args.num_steps
    probs = softmax(logits)  # θ_old is frozen for the whole rollout
    uniforms = rng.random(T)  # one draw per step, so the same seed gives the same rollout
    states, actions, next_states = (np.zeros(T, dtype=int) for _ in range(3))
    rewards, terminated = np.zeros(T), np.zeros(T, dtype=bool)
    for t in range(T):
        states[t] = state
        # a_t ~ π(·|s_t): right with probability π(right|s_t)
        actions[t] = uniforms[t] < probs[state, 1]
        next_states[t], rewards[t], terminated[t] = env_step(state, actions[t], args.length)
        state = args.length // 2 if terminated[t] else next_states[t]
    rollout = {"states": states, "actions": actions, "next_states": next_states, "rewards": rewards,
               "terminated": terminated}  # fmt: skip
    return rollout, state


def bootstrap_values(values: np.ndarray, next_states: np.ndarray, terminated: np.ndarray) -> np.ndarray:
    """V(s_{t+1}) for each step t. terminated: 0, the episode has no future. Not terminated: V of the next state,
    which for the rollout's last step is the state the rollout stopped in (the bootstrap of the unfinished episode)."""
    return np.where(terminated, 0.0, values[next_states])


def ppo_update(logits, values, batch: dict, args: Args, rng: np.random.Generator):
    """K epochs of minibatch steps (Algorithm 1): gradient ascent on L for θ, descent on (V − V_targ)² for V.
    Returns the new tables, the largest change of any probability during the update, and the clip fraction."""
    logits, values = logits.copy(), values.copy()
    probs_old = softmax(logits)
    visited = np.unique(batch["states"])  # the states whose probabilities the batch can move
    max_change = 0.0
    batch_size = len(batch["states"])
    b_advantages = batch["advantages"]
    if args.norm_adv:  # [not in paper] mean 0, std 1 over the batch
        b_advantages = (b_advantages - b_advantages.mean()) / (b_advantages.std() + 1e-8)
    for _epoch in range(args.update_epochs):
        for mb in rng.permutation(batch_size).reshape(-1, args.minibatch_size):
            states, advantages = batch["states"][mb], b_advantages[mb]
            _, grad = policy_objective(
                logits, states, batch["actions"][mb], batch["logprobs"][mb], advantages, args.objective, args.clip_coef
            )
            # θ ← θ + α ∇_θ L
            logits += args.learning_rate * grad
            # ∇_V L^VF, with L^VF = Ê[(V(s_t) − V_targ,t)²] of (9): Ê[2 (V(s_t) − V_targ,t)], scattered to each s_t
            v_grad = np.zeros_like(values)
            np.add.at(v_grad, states, 2 * (values[states] - batch["returns"][mb]) / len(mb))
            # V ← V − α_V ∇_V L^VF
            values -= args.vf_learning_rate * v_grad
            # max_{s,a} |π_θ(a|s) − π_θold(a|s)|: how far this step has taken any probability
            max_change = max(max_change, float(np.abs(softmax(logits[visited]) - probs_old[visited]).max()))
    ratio = np.exp(log_softmax(logits)[batch["states"], batch["actions"]] - batch["logprobs"])
    clipfrac = float(np.mean(np.abs(ratio - 1) > args.clip_coef))
    return logits, values, max_change, clipfrac


def train(args: Args) -> tuple[np.ndarray, np.ndarray]:
    """Train and print; returns the learned π table (length, 2) and V table (length,)."""
    # TRY NOT TO MODIFY: seeding; this generator draws every random number of the run
    rng = np.random.default_rng(args.seed)
    num_iterations = args.total_timesteps // args.num_steps
    logits = np.zeros((args.length, 2))  # θ[s, a]; a = 0 left, 1 right; the terminal rows are never used
    values = np.zeros(args.length)  # V[s]; the terminal cells stay 0
    state = args.length // 2
    print(f"{'iter':>5} {'step':>7} {'return':>7} {'episodes':>8} {'max|Δπ|':>8} {'KL':>8} {'clipfrac':>8}")
    for iteration in range(1, num_iterations + 1):
        # ALG STEP 1: run policy π_θold in the environment for T timesteps
        batch, state = collect_rollout(logits, state, args, rng)

        # ALG STEP 2: advantage estimates Â_1..Â_T (11)-(12), and log π_θold(a_t|s_t) for the ratio
        next_values = bootstrap_values(values, batch["next_states"], batch["terminated"])
        batch["advantages"] = compute_gae(
            batch["rewards"], values[batch["states"]], next_values, batch["terminated"], args.gamma, args.gae_lambda
        )
        # V_targ = Â + V_old, once, before the epochs: the critic's own updates must not move its targets
        batch["returns"] = batch["advantages"] + values[batch["states"]]
        batch["logprobs"] = log_softmax(logits)[batch["states"], batch["actions"]]

        # ALG STEP 3: optimize the surrogate for K epochs with minibatches of size M
        probs_old = softmax(logits)
        logits, values, max_change, clipfrac = ppo_update(logits, values, batch, args, rng)
        # Ê_t[KL[π_old(·|s_t), π(·|s_t)]] over the batch's states; rounding can leave −1e-17 where π did not move
        kl = max(float(kl_divergence(probs_old[batch["states"]], softmax(logits)[batch["states"]]).mean()), 0.0)
        # a step size too large overflows a table, or drives some π(a|s) to exactly 0 (KL = inf): stop, print no NaNs
        numbers = {"logits": logits, "V": values, "max|Δπ|": max_change, "KL": kl, "clipfrac": clipfrac}
        if bad := [name for name, x in numbers.items() if not np.isfinite(x).all()]:
            rates = f"--learning-rate {args.learning_rate}, --vf-learning-rate {args.vf_learning_rate}"
            sys.exit(f"error: non-finite {', '.join(bad)} at iteration {iteration}: step sizes too large ({rates})")

        # TRY NOT TO MODIFY: progress
        if iteration % args.log_interval == 0 or iteration in (1, num_iterations):
            ends = batch["rewards"][batch["terminated"]]  # each finished episode's return: its one ±1 reward
            ret = f"{ends.mean():+7.2f}" if len(ends) else f"{'-':>7}"
            print(f"{iteration:>5} {iteration * args.num_steps:>7} {ret} {len(ends):>8} {max_change:>8.3f}"
                  f" {kl:>8.4f} {clipfrac:>8.3f}")  # fmt: skip

    probs = softmax(logits)
    print(f"\n{'state':>5} {'P(right)':>8} {'V':>7}")
    for s in range(args.length):
        p_right = "terminal" if s in (0, args.length - 1) else f"{probs[s, 1]:.3f}"
        print(f"{s:>5} {p_right:>8} {values[s]:>+7.3f}")
    return probs, values


def main() -> None:
    args = tyro.cli(Args)
    validate(args)
    with np.errstate(all="ignore"):  # an overflow stops train() with its own one-line error, not numpy's warnings
        train(args)


if __name__ == "__main__":
    main()
