"""TRPO (trpo.py): the seed's §2.2 numbers, conjugate gradient, the Fisher-vector product, and a real update."""

import numpy as np
import pytest
import torch
import torch.nn as nn
from torch.distributions import Categorical, Normal, kl_divergence

import trpo

# The seed's batch: (action, advantage) for C, A, B; actions 0, 1, 2 are A, B, C; π_old uniform
ACTIONS = torch.tensor([2, 0, 1])
ADVANTAGES = torch.tensor([1.0, -1.0, 0.5], dtype=torch.float64)
PI_NEW = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)


def softmax_policy():
    """A 3-action softmax policy at the uniform π_old, and evaluate(θ) for trpo.line_search: (L(θ), exact KL)."""
    logits = torch.zeros(3, dtype=torch.float64)
    old = Categorical(logits=logits.clone())

    def evaluate(theta):
        logratio = torch.log_softmax(theta, 0)[ACTIONS] - old.logits[ACTIONS]
        kl = kl_divergence(old, Categorical(logits=theta))
        return trpo.surrogate(logratio.exp(), ADVANTAGES).item(), kl.item()

    return logits, evaluate


def test_seed_surrogate_and_kl_of_the_step_to_pi_new():
    logratio = PI_NEW.log()[ACTIONS] - torch.full((3,), 1 / 3, dtype=torch.float64).log()[ACTIONS]
    assert round(trpo.surrogate(logratio.exp(), ADVANTAGES).item(), 2) == 0.45
    assert round(trpo.approx_kl(logratio).item(), 3) == 0.070  # exact here: each action once under a uniform π_old


def test_line_search_rejects_the_seed_step_that_breaks_the_trust_region():
    logits, evaluate = softmax_policy()
    full_step = PI_NEW.log() - logits  # from uniform to π_new = (0.2, 0.3, 0.5)
    assert evaluate(full_step)[0] == pytest.approx(0.45) and evaluate(full_step)[1] == pytest.approx(0.0702, abs=1e-4)
    theta, fraction, gain, kl = trpo.line_search(evaluate, logits, full_step, 0.01, 0.8, 1)
    assert (fraction, gain, kl) == (0.0, 0.0, 0.0)  # KL 0.070 > δ = 0.01: rejected
    assert theta is logits  # θ_old is the result


def test_line_search_backtracks_into_the_trust_region():
    logits, evaluate = softmax_policy()
    full_step = PI_NEW.log() - logits
    theta, fraction, gain, kl = trpo.line_search(evaluate, logits, full_step, 0.01, 0.8, 10)
    assert 0 < fraction < 1 and gain > 0 and kl <= 0.01 and torch.equal(theta, logits + fraction * full_step)
    k = round(np.log(fraction) / np.log(0.8))
    assert k >= 1 and fraction == pytest.approx(0.8**k)  # a whole number of backtracks
    # the first shorter step is the one taken: one step longer breaks δ
    assert evaluate(full_step * fraction / 0.8)[1] > 0.01
    assert evaluate(full_step * fraction) == pytest.approx((ADVANTAGES.mean().item() + gain, kl))  # L(θ_old) = Ê[Â]


def test_conjugate_gradient_solves_a_symmetric_positive_definite_system():
    generator = torch.Generator().manual_seed(0)
    m = torch.randn(8, 8, dtype=torch.float64, generator=generator)
    a, b = m @ m.T + 0.5 * torch.eye(8, dtype=torch.float64), torch.randn(8, dtype=torch.float64, generator=generator)
    x = trpo.conjugate_gradient(lambda v: a @ v, b, iters=50)
    torch.testing.assert_close(x, torch.linalg.solve(a, b))
    assert torch.equal(
        trpo.conjugate_gradient(lambda v: a @ v, torch.zeros(8, dtype=torch.float64), 10), torch.zeros(8)
    )


def test_fisher_vector_product_equals_the_explicit_hessian_of_the_mean_kl():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    logstd = nn.Parameter(torch.tensor([0.1, -0.2], dtype=torch.float64))
    params = [*net.parameters(), logstd]
    obs = torch.randn(16, 3, dtype=torch.float64)
    with torch.no_grad():
        old_mean, old_logstd = net(obs), logstd.clone()
    sizes = [p.numel() for p in params]

    def mean_kl(flat_params):
        weights = [f.view_as(p) for f, p in zip(flat_params.split(sizes), params)]
        mean = torch.func.functional_call(net, dict(zip(dict(net.named_parameters()), weights[:-1])), (obs,))
        return trpo.gaussian_kl(old_mean, old_logstd, mean, weights[-1]).mean()

    theta = nn.utils.parameters_to_vector(params).detach()
    hessian = torch.autograd.functional.hessian(mean_kl, theta)
    fvp = trpo.fisher_vector_product(mean_kl(nn.utils.parameters_to_vector(params)), params, damping=0.1)
    v = torch.randn(theta.numel(), dtype=torch.float64)
    torch.testing.assert_close(fvp(v), hessian @ v + 0.1 * v)


def real_batch():
    """An agent and the batch of one real rollout of it (2048 InvertedPendulum steps), with π_θold as it sampled."""
    torch.manual_seed(0)
    args = trpo.Args(env_id="InvertedPendulum-v4", num_steps=2048, seed=3)
    envs = trpo.make_envs(args, run_dir="unused")
    agent = trpo.Agent(4, 1)
    carry = trpo.start_carry(envs, args)
    rollout = trpo.collect_rollout(envs, agent, carry, args, 0, [])
    advantages, values = trpo.estimate_advantages(agent, rollout, carry.next_obs, args)
    return agent, trpo.flatten_batch(rollout, advantages, values, torch.device("cpu")), args


def test_a_real_update_stays_in_the_trust_region_and_does_not_lower_the_surrogate():
    agent, batch, args = real_batch()
    obs, actions, old_logprobs = batch["obs"], batch["actions"], batch["logprobs"]
    old_means, old_logstds = batch["means"], batch["logstds"]  # π_θold as the rollout sampled from it, per sample
    assert obs.shape == (2048, 4) and actions.shape == old_means.shape == old_logstds.shape == (2048, 1)
    advantages = (batch["advantages"] - batch["advantages"].mean()) / batch["advantages"].std()
    before = trpo.surrogate(torch.ones(2048), advantages).item()  # r = 1 at θ_old

    step = trpo.trpo_step(agent, obs, actions, old_logprobs, old_means, old_logstds, advantages, args)

    with torch.no_grad():
        mean, logstd = agent.get_policy(obs)
        kl = trpo.gaussian_kl(old_means, old_logstds, mean, logstd).mean().item()
        ratio = (trpo.gaussian_log_prob(actions, mean, logstd) - old_logprobs).exp()
        after = trpo.surrogate(ratio, advantages).item()
    assert step["charts/step_rejected"] == 0.0 and 0 < step["charts/backtrack_fraction"] <= 1
    assert 0 < kl <= args.max_kl
    assert after > before and after - before == pytest.approx(step["losses/surrogate_gain"], rel=1e-4)


def test_trpo_step_stops_when_the_rollout_sampled_from_another_policy_than_it_scores():
    agent, batch, args = real_batch()
    advantages = (batch["advantages"] - batch["advantages"].mean()) / batch["advantages"].std()
    old = nn.utils.parameters_to_vector(agent.parameters()).detach().clone()
    shifted = batch["means"] + 0.1  # the rollout's mean off the network's: the actions came from another π
    logprobs = trpo.gaussian_log_prob(batch["actions"], shifted, batch["logstds"])
    with pytest.raises(SystemExit, match="^error: the update's log π_θold"):
        trpo.trpo_step(agent, batch["obs"], batch["actions"], logprobs, shifted, batch["logstds"], advantages, args)
    assert torch.equal(nn.utils.parameters_to_vector(agent.parameters()), old)  # stopped before any step


class LinearGaussian(nn.Module):
    """π(a|s) = N(w·s + b, σ²), the smallest policy of trpo_step's shape, whose Fisher matrix is known in closed form:
    E[x xᵀ] / σ² on the mean's weights and bias (x = (s, 1)), and 2 on log σ."""

    def __init__(self, weight, bias, logstd):
        super().__init__()
        self.actor_mean = nn.Linear(len(weight), 1).double()
        self.actor_logstd = nn.Parameter(torch.tensor([logstd], dtype=torch.float64))
        with torch.no_grad():
            self.actor_mean.weight.copy_(torch.tensor([weight]))
            self.actor_mean.bias.fill_(bias)

    def get_policy(self, obs):  # as trpo.Agent's: the mean and the log-std, one row per state
        mean = self.actor_mean(obs)
        return mean, self.actor_logstd.expand_as(mean)

    def theta(self) -> torch.Tensor:
        """θ in trpo_step's order: the mean's weights, its bias, log σ."""
        return nn.utils.parameters_to_vector([*self.actor_mean.parameters(), self.actor_logstd]).detach().clone()

    def distribution(self, obs, theta) -> Normal:
        return Normal(obs @ theta[:-2] + theta[-2], theta[-1].exp())


def take_trpo_step(agent, obs, actions, advantages, **flags):
    """trpo_step on a batch from `agent`: its result, θ_old, θ after it, and the two functions of θ it must respect,
    the surrogate L(θ) = Ê[r Â] and the mean KL[π_old, π_θ], both computed here from torch.distributions."""
    theta_old = agent.theta()
    old = agent.distribution(obs, theta_old)
    old_logprobs = old.log_prob(actions[:, 0])

    def surrogate(theta):
        return ((agent.distribution(obs, theta).log_prob(actions[:, 0]) - old_logprobs).exp() * advantages).mean()

    def kl(theta):
        return kl_divergence(old, agent.distribution(obs, theta)).mean()

    old_means, args = old.mean[:, None].clone(), trpo.Args(**flags)
    step = trpo.trpo_step(agent, obs, actions, old_logprobs, old_means, theta_old[-1:], advantages, args)
    return step, theta_old, agent.theta(), surrogate, kl


def linear_gaussian_batch():
    """64 states of unequal scales (F is far from a multiple of I), actions from π_old (σ_old = 1, a = μ + z), and
    advantages that favour actions near the mean and, a little, above it: the natural step narrows π."""
    generator = torch.Generator().manual_seed(0)
    obs = torch.randn(64, 2, dtype=torch.float64, generator=generator) * torch.tensor([2.0, 0.5]) + torch.tensor([0, 1])
    z = torch.randn(64, dtype=torch.float64, generator=generator)
    agent = LinearGaussian([0.3, -0.2], 0.1, 0.0)
    with torch.no_grad():
        actions = agent.actor_mean(obs) + z[:, None]
    return agent, obs, actions, z, (1 - z**2) + 0.3 * z


def natural_step(obs, z, advantages, max_kl: float, damping: float):
    """F + λI, g and the full step sqrt(2δ / xᵀ(F + λI)x) x, with x = (F + λI)⁻¹ g solved directly, in closed form at
    σ_old = 1: g = ∇ Ê[r Â] = Ê[Â ∇ log π] = Ê[Â (z x, z² − 1)]."""
    x = torch.cat([obs, torch.ones(len(obs), 1, dtype=torch.float64)], 1)
    fisher = torch.block_diag(x.T @ x / len(obs), torch.tensor([[2.0]], dtype=torch.float64))
    damped = fisher + damping * torch.eye(len(fisher), dtype=torch.float64)
    g = torch.cat([(advantages * z) @ x / len(obs), (advantages * (z**2 - 1)).mean()[None]])
    solution = torch.linalg.solve(damped, g)
    return damped, g, torch.sqrt(2 * max_kl / (solution @ damped @ solution)) * solution


def test_trpo_step_solves_the_fisher_system_and_goes_to_the_edge_of_the_trust_region():
    agent, obs, actions, z, advantages = linear_gaussian_batch()
    step, theta_old, theta_new, _, _ = take_trpo_step(agent, obs, actions, advantages, max_kl=0.1, cg_damping=0.01)
    damped, g, expected = natural_step(obs, z, advantages, 0.1, 0.01)
    fraction = step["charts/backtrack_fraction"]
    assert fraction > 0, step
    full_step = (theta_new - theta_old) / fraction  # the step before backtracking
    torch.testing.assert_close(full_step, expected)  # along (F + λI)⁻¹ g, not along g: their directions differ here
    assert torch.linalg.vector_norm(expected / expected.norm() - g / g.norm()) > 0.05
    assert 0.5 * full_step @ damped @ full_step == pytest.approx(0.1)  # ½ sᵀ(F + λI)s = δ: the quadratic KL's edge


def test_trpo_step_backtracks_to_the_first_step_with_kl_old_new_within_delta():
    agent, obs, actions, z, advantages = linear_gaussian_batch()
    step, theta_old, theta_new, surrogate, kl = take_trpo_step(agent, obs, actions, advantages, max_kl=0.1)
    full_step = natural_step(obs, z, advantages, 0.1, 0.1)[2]
    tries = [theta_old + 0.8**k * full_step for k in range(10)]
    first = next(k for k, theta in enumerate(tries) if kl(theta) <= 0.1 and surrogate(theta) > surrogate(theta_old))
    # narrowing π costs more in KL[π_old, π] than in KL[π, π_old]: the full step is past δ in the first only
    reverse_kl = kl_divergence(agent.distribution(obs, tries[0]), agent.distribution(obs, theta_old)).mean()
    assert first == 1 and kl(tries[0]) > 0.1 >= reverse_kl
    assert step["charts/backtrack_fraction"] == pytest.approx(0.8) and step["charts/step_rejected"] == 0.0
    torch.testing.assert_close(theta_new, tries[1])
    assert kl(theta_new) <= 0.1
    assert step["losses/surrogate_gain"] == pytest.approx((surrogate(theta_new) - surrogate(theta_old)).item())
    assert step["losses/surrogate_gain"] > 0


@pytest.mark.parametrize("backtrack_iters", [10, 2])
def test_trpo_step_backtracks_until_the_surrogate_improves(backtrack_iters):
    # One sample: s = 1, a = μ_old + σ_old with Â = 1. F + λI = [[1 + λ, 1], [1, 1 + λ]] ⊕ (2 + λ) and g = (1, 1, 0),
    # an eigenvector, so x = g / (2 + λ) and the full step is sqrt(δ / (2 + λ)) (1, 1, 0): it moves μ by
    # Δμ = 2 sqrt(δ / (2 + λ)) = 3 at δ = 2.25 (2 + λ). KL[π_old, π] = Δμ² / 2 = 4.5 ≤ δ, there and at every shorter
    # step, but r = exp((1 − (1 − Δμ)²) / 2) overshoots: L = r Â is e^−1.5 at Δμ = 3, e^−0.48 at 2.4 (both below
    # L(θ_old) = 1), e^0.0768 at 1.92. So the second backtrack is the one taken, or, with only two tries, none.
    agent, one = LinearGaussian([0.0], 0.0, 0.0), torch.ones(1, 1, dtype=torch.float64)
    step, theta_old, theta_new, surrogate, kl = take_trpo_step(
        agent, one, one, one[0], max_kl=2.25 * 2.1, cg_damping=0.1, backtrack_iters=backtrack_iters
    )
    full_step = torch.tensor([1.5, 1.5, 0.0], dtype=torch.float64)
    assert kl(theta_old + full_step).item() == pytest.approx(4.5) and surrogate(theta_old + full_step) < 1
    if backtrack_iters == 10:
        assert step["charts/backtrack_fraction"] == pytest.approx(0.64)
        torch.testing.assert_close(theta_new, theta_old + 0.64 * full_step)
        assert step["losses/surrogate_gain"] == pytest.approx(np.exp(0.0768) - 1)
    else:  # rejected: θ_old is back, exactly
        assert step["charts/step_rejected"] == 1.0 and step["charts/backtrack_fraction"] == 0.0
        assert step["losses/surrogate_gain"] == 0.0 and torch.equal(theta_new, theta_old)
