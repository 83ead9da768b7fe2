"""TRPO (trpo.py): the seed's §2.2 numbers, conjugate gradient, the Fisher-vector product, and a real update."""

import numpy as np
import pytest
import torch
import torch.nn as nn
from torch.distributions import Categorical, kl_divergence

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
        logits.copy_(theta)
        logratio = torch.log_softmax(logits, 0)[ACTIONS] - old.logits[ACTIONS]
        kl = kl_divergence(old, Categorical(logits=logits))
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
    fraction, gain, kl = trpo.line_search(evaluate, torch.zeros(3, dtype=torch.float64), full_step, 0.01, 0.8, 1)
    assert (fraction, gain, kl) == (0.0, 0.0, 0.0)  # KL 0.070 > δ = 0.01: rejected
    assert torch.equal(logits, torch.zeros(3, dtype=torch.float64))  # the old parameters are back


def test_line_search_backtracks_into_the_trust_region():
    logits, evaluate = softmax_policy()
    full_step = PI_NEW.log() - logits
    fraction, gain, kl = trpo.line_search(evaluate, torch.zeros(3, dtype=torch.float64), full_step, 0.01, 0.8, 10)
    assert 0 < fraction < 1 and gain > 0 and kl <= 0.01
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


def test_a_real_update_stays_in_the_trust_region_and_does_not_lower_the_surrogate():
    torch.manual_seed(0)
    args = trpo.Args(env_id="InvertedPendulum-v4", num_steps=2048, seed=3)
    envs = trpo.make_envs(args, run_dir="unused")
    agent = trpo.Agent(4, 1)
    carry = trpo.start_carry(envs, args)
    batch = trpo.collect_rollout(envs, agent, carry, args, 0, [])
    advantages, _ = trpo.estimate_advantages(agent, batch, carry.next_obs, args)
    obs, actions = torch.from_numpy(batch["obs"].reshape(2048, 4)), torch.from_numpy(batch["actions"].reshape(2048, 1))
    advantages = torch.from_numpy(advantages.reshape(-1))
    advantages = (advantages - advantages.mean()) / advantages.std()
    with torch.no_grad():
        old_means, old_logstd = agent.actor_mean(obs), agent.actor_logstd.clone()
        old_logprobs = trpo.gaussian_log_prob(actions, old_means, old_logstd)
    before = trpo.surrogate(torch.ones(2048), advantages).item()  # r = 1 at θ_old

    step = trpo.trpo_step(agent, obs, actions, old_logprobs, old_means, old_logstd, advantages, args)

    with torch.no_grad():
        mean = agent.actor_mean(obs)
        kl = trpo.gaussian_kl(old_means, old_logstd, mean, agent.actor_logstd).mean().item()
        ratio = (trpo.gaussian_log_prob(actions, mean, agent.actor_logstd) - old_logprobs).exp()
        after = trpo.surrogate(ratio, advantages).item()
    assert step["charts/step_rejected"] == 0.0 and 0 < step["charts/backtrack_fraction"] <= 1
    assert 0 < kl <= args.max_kl
    assert after > before and after - before == pytest.approx(step["losses/surrogate_gain"], rel=1e-4)
