"""The seed's worked numbers (shared/seeds/000) and the paper's properties, through ppo_continuous.py's functions;
the math every MuJoCo script keeps its own copy of (Gaussian, running statistics, the rollout's sampling) in each."""

import math

import numpy as np
import pytest
import torch
from torch.distributions import Categorical, Normal, kl_divergence

import ppo_atari
import ppo_continuous as ppo
from tests.helpers import script_modules

MODULES = script_modules()  # the MuJoCo scripts, which share their skeleton

# The surrogate objectives have a copy in each PPO script
PPO_SCRIPTS = pytest.mark.parametrize("script", [ppo, ppo_atari], ids=["ppo_continuous", "ppo_atari"])

# The seed's batch: (action, advantage) for C, A, B; actions 0, 1, 2 are A, B, C
ACTIONS = torch.tensor([2, 0, 1])
ADVANTAGES = torch.tensor([1.0, -1.0, 0.5], dtype=torch.float64)
PI_OLD = torch.full((3,), 1 / 3, dtype=torch.float64)
PI_NEW = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)


def seed_logratio():
    # log π_new(a_t) − log π_old(a_t) for the batch's actions
    return PI_NEW.log()[ACTIONS] - PI_OLD.log()[ACTIONS]


@PPO_SCRIPTS
def test_ratios_surrogate_kl_and_penalty(script):
    logratio = seed_logratio()
    ratio = logratio.exp()
    # in A, B, C order
    assert ratio[[1, 2, 0]].tolist() == pytest.approx([0.6, 0.9, 1.5], abs=1e-12)
    assert script.policy_objective(ratio, ADVANTAGES, "none", 0.2).item() == pytest.approx(0.45, abs=1e-12)
    kl = script.approx_kl(logratio)  # the batch holds each action once under a uniform π_old, so this is exact
    exact = kl_divergence(Categorical(probs=PI_OLD), Categorical(probs=PI_NEW)).item()  # Σ π_old log(π_old/π_new)
    assert kl.item() == pytest.approx(exact, abs=1e-12)
    assert round(kl.item(), 3) == 0.070
    assert not kl.item() <= 0.01  # the step fails the trust region δ = 0.01
    penalty = script.policy_objective(ratio, ADVANTAGES, "kl-fixed", 0.2, kl.expand(3), kl_beta=1.0)
    assert round(penalty.item(), 3) == 0.380
    adaptive = script.policy_objective(ratio, ADVANTAGES, "kl-adaptive", 0.2, kl.expand(3), kl_beta=1.0)
    assert adaptive.item() == penalty.item()


def test_full_objective_eq9():  # ppo_atari.py's copy: tests/test_atari.py, with its categorical entropy
    v_loss = ppo.value_loss(torch.tensor([0.5]), torch.tensor([0.5]), torch.tensor([0.81]))
    assert v_loss.item() == pytest.approx(0.0961, abs=1e-6)
    loss = ppo.total_loss(torch.tensor(1.2), v_loss, torch.tensor(1.030), vf_coef=1.0, ent_coef=0.01)
    assert round(-loss.item(), 3) == 1.114  # the optimizer minimizes −L^{CLIP+VF+S}


def seed_gae(gae_lambda):
    rewards = np.array([[0.0], [0.0], [1.0]], dtype=np.float64)  # (T=3, N=1)
    values = np.array([[0.5], [0.6], [0.8]])
    terminated = np.array([[False], [False], [True]])  # V(s_T) = 0 after the episode ends
    truncated = np.zeros_like(terminated)
    next_values = ppo.bootstrap_values(values, np.zeros_like(values), np.array([99.0]), terminated, truncated)
    return ppo.compute_gae(rewards, values, next_values, terminated.astype(np.float64), 0.9, gae_lambda)[:, 0]


def test_gae_seed_numbers():
    assert np.round(seed_gae(0.0), 2).tolist() == [0.04, 0.12, 0.2]  # λ = 0: Â_t = δ_t
    assert np.round(seed_gae(0.8), 3).tolist() == [0.23, 0.264, 0.2]
    assert round(float(seed_gae(1.0)[0]), 3) == 0.31  # λ = 1: 0.81 − 0.5, the Monte-Carlo return minus V


def clip_gradient(script, r, advantage, objective="clip", eps=0.2):
    ratio = torch.tensor([r], dtype=torch.float64, requires_grad=True)
    script.policy_objective(ratio, torch.tensor([advantage], dtype=torch.float64), objective, eps).backward()
    return ratio.grad.item()


@PPO_SCRIPTS
@pytest.mark.parametrize("r, advantage", [(1.21, 1.0), (1.5, 2.0), (0.79, -1.0), (0.3, -0.5)])
def test_clip_gradient_is_zero_beyond_the_clip_in_the_advantage_direction(script, r, advantage):
    assert clip_gradient(script, r, advantage) == 0.0


@PPO_SCRIPTS
@pytest.mark.parametrize("r, advantage", [(1.0, 1.0), (0.85, -1.0), (1.19, 0.5), (0.5, 1.0), (1.6, -1.0)])
def test_clip_gradient_equals_unclipped_inside_or_against_the_advantage(script, r, advantage):
    # inside [1−ε, 1+ε], or moving against Â (r < 1−ε with Â > 0, r > 1+ε with Â < 0): the min keeps r Â
    assert clip_gradient(script, r, advantage) == clip_gradient(script, r, advantage, "none") == advantage


def test_adaptive_beta_rule():
    assert ppo.update_kl_beta(1.0, 0.005, 0.01) == 0.5  # d < d_targ / 1.5: halve
    assert ppo.update_kl_beta(1.0, 0.016, 0.01) == 2.0  # d > 1.5 d_targ: double
    assert ppo.update_kl_beta(1.0, 0.01, 0.01) == 1.0
    assert ppo.update_kl_beta(3.0, 0.01 / 1.5 + 1e-9, 0.01) == 3.0  # inside the band: unchanged
    assert ppo.update_kl_beta(3.0, 0.015, 0.01) == 3.0


@pytest.mark.parametrize("module", MODULES)
def test_gaussian_functions_match_torch_distributions(module):
    torch.manual_seed(0)
    mean_old, mean, action = torch.randn(5, 3), torch.randn(5, 3), torch.randn(5, 3)
    logstd_old, logstd = torch.randn(3) * 0.3, torch.randn(3) * 0.3
    old, new = Normal(mean_old, logstd_old.exp()), Normal(mean, logstd.exp())
    torch.testing.assert_close(module.gaussian_log_prob(action, mean, logstd), new.log_prob(action).sum(-1))
    torch.testing.assert_close(module.gaussian_entropy(logstd), new.entropy()[0].sum())
    kl = module.gaussian_kl(mean_old, logstd_old, mean, logstd)
    torch.testing.assert_close(kl, kl_divergence(old, new).sum(-1))  # KL[π_old, π]
    assert (kl - kl_divergence(new, old).sum(-1)).abs().min() > 0.01  # not KL[π, π_old]: the inputs tell them apart
    assert module.gaussian_kl(mean, logstd, mean, logstd).abs().max().item() < 1e-6


def test_value_clipping_takes_the_larger_error():
    old, target = torch.tensor([0.0, 0.0]), torch.tensor([1.0, -1.0])
    new = torch.tensor([0.5, 0.5])  # moved 0.5 from old, beyond ε = 0.2
    # unclipped errors (0.25, 2.25); clipped V = 0.2 gives (0.64, 1.44): the max is (0.64, 2.25)
    assert ppo.value_loss(new, old, target, 0.2).item() == pytest.approx((0.64 + 2.25) / 2)
    assert ppo.value_loss(new, old, target).item() == pytest.approx((0.25 + 2.25) / 2)


@PPO_SCRIPTS
@pytest.mark.parametrize("minibatch_size", [64, 256])
def test_advantages_are_normalized_within_each_minibatch(script, minibatch_size):
    advantages = torch.randn(2048, generator=torch.Generator().manual_seed(minibatch_size)) * 5 + 3
    normalized = script.normalize_advantages(advantages, minibatch_size)
    # the same numbers, bit for bit, as normalizing each minibatch on its own (what the update did before)
    one_by_one = [(mb - mb.mean()) / (mb.std() + 1e-8) for mb in advantages.split(minibatch_size)]
    assert torch.equal(normalized, torch.cat(one_by_one))
    for mb in normalized.split(minibatch_size):
        assert abs(mb.mean().item()) < 1e-5 and mb.std().item() == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("module", MODULES)
def test_running_mean_std_matches_numpy(module):
    rms, data = module.RunningMeanStd(3), np.random.default_rng(0).normal(2.0, 3.0, (500, 3))
    for chunk in np.split(data, [1, 7, 100, 260]):
        rms.update(chunk)
    np.testing.assert_allclose(rms.mean, data.mean(0), rtol=1e-5)
    np.testing.assert_allclose(rms.var, data.var(0), rtol=1e-4)
    assert math.isclose(rms.count, 500, rel_tol=1e-6)


@pytest.mark.parametrize("module", MODULES)
def test_the_rollout_keeps_the_gaussian_each_action_was_sampled_from(module):
    # the rollout samples from get_policy itself (weights away from their start: biases not zero) and stores it
    torch.manual_seed(0)
    args = module.Args(env_id="tests.fake_envs:Chain-v0", num_envs=2, num_steps=1000)
    envs = module.make_envs(args, run_dir="unused")
    agent = module.Agent(2, 1)
    with torch.no_grad():
        for p in agent.parameters():
            p.add_(0.3 * torch.randn_like(p))
    rollout = module.collect_rollout(envs, agent, module.start_carry(envs, args), args, 0, [])
    with torch.no_grad():
        mean, logstd = agent.get_policy(torch.from_numpy(rollout["obs"]))
    np.testing.assert_allclose(rollout["means"], mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rollout["logstds"], logstd.detach().numpy(), rtol=1e-6)  # a view of the weights
    assert np.ptp(rollout["means"]) > 0.1  # the observations move the mean: a constant would prove nothing
    z = ((rollout["actions"] - rollout["means"]) / np.exp(rollout["logstds"])).ravel()  # N(0, 1) if sampled from π
    assert abs(z.mean()) < 0.1 and abs(z.std() - 1) < 0.05, (z.mean(), z.std())


@pytest.mark.parametrize("module", MODULES)
def test_the_on_policy_check_passes_rounding_and_stops_on_another_distribution(module):
    old = torch.tensor([-3.0, -0.5, -40.0])
    module.check_on_policy(old * (1 + 1e-6), old)  # float32 rounding of another batch shape: passes
    for new in (old + torch.tensor([0.0, 0.01, 0.0]), torch.tensor([-3.0, float("nan"), -40.0])):
        with pytest.raises(SystemExit) as stop:
            module.check_on_policy(new, old)
        assert str(stop.value.code).startswith("error: ") and "\n" not in str(stop.value.code)
