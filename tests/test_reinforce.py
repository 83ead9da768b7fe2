"""Vanilla policy gradient (reinforce_baseline.py): the seed's §2.1 numbers, the destructive reuse of a batch, and
Figure 3's other baselines (§6.2) as flags of the script: vanilla PG with an adaptive stepsize, and A2C."""

import copy
import math
import os
import shlex

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

import reinforce_baseline
from benchmark import presets
from tests.helpers import only_run_dir, read_episodes, run_script, scalars, train_in_process

# The two Figure 3 methods exactly as the figure3 grid runs them (benchmark/presets.py gives the source of each value)
VPG_ADAPTIVE = shlex.split(presets.VPG_ADAPTIVE)
A2C = shlex.split(presets.A2C)
A2C_TRUST_REGION = shlex.split(presets.A2C_TRUST_REGION)


def test_seed_policy_gradient_through_the_scripts_loss():
    # the batch (action, advantage) = (C, +1), (A, −1), (B, +0.5) at the uniform softmax policy; A, B, C = 0, 1, 2
    logits = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    logprob = torch.log_softmax(logits, 0)[torch.tensor([2, 0, 1])]
    loss_pg = reinforce_baseline.pg_objective(logprob, torch.tensor([1.0, -1.0, 0.5], dtype=torch.float64))
    loss_pg.backward()
    assert round(loss_pg.item(), 3) == -0.183
    assert [round(g, 3) for g in logits.grad.tolist()] == [-0.389, 0.111, 0.278]  # ĝ: push A down, C up, B a little


def test_reusing_the_batch_moves_the_policy_much_further(tmp_path):
    kl = {}
    for epochs in (1, 10):
        os.makedirs(tmp_path / str(epochs))
        flags = ["--env-id", "Hopper-v4", "--total-timesteps", "4096", "--update-epochs", str(epochs)]
        proc = run_script("reinforce_baseline.py", *flags, cwd=tmp_path / str(epochs), timeout=120)
        assert proc.returncode == 0, proc.stderr
        kl[epochs] = scalars(only_run_dir(tmp_path / str(epochs)), "losses/kl")
    # the first batch is the same for both runs; ten steps on it move π far more than one
    assert kl[10][0] > 5 * kl[1][0] > 0


def test_adaptive_stepsize_rule_on_numbers():
    rule, target = reinforce_baseline.adapt_stepsize, 2e-3  # the course's target
    assert rule(3e-4, 5e-3, target) == pytest.approx(2e-4)  # KL > 2 x target: / 1.5
    assert rule(3e-4, 9e-4, target) == pytest.approx(4.5e-4)  # KL < target / 2: x 1.5
    for kl in (1e-3, 2e-3, 4e-3):  # within [target / 2, 2 x target], the edges included: unchanged
        assert rule(3e-4, kl, target) == 3e-4


def test_adaptive_stepsize_logs_a_learning_rate_that_follows_the_kl(tmp_path):
    flags = ["--env-id", "Hopper-v4", "--num-steps", "256", "--total-timesteps", "3072", *VPG_ADAPTIVE]
    proc = run_script("reinforce_baseline.py", *flags, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    folder = only_run_dir(tmp_path)
    lr, kl = scalars(folder, "charts/learning_rate"), scalars(folder, "losses/kl")
    assert len(lr) == len(kl) == 12 and len(set(lr)) > 1, lr
    # each logged stepsize is the rule applied to the one before (1e-3 at first) and that batch's KL
    for before, after, batch_kl in zip([1e-3, *lr[:-1]], lr, kl):
        assert after == pytest.approx(reinforce_baseline.adapt_stepsize(before, batch_kl, 2e-3), rel=1e-5)


def test_a2c_flags_take_one_policy_step_and_one_value_step_per_batch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    steps = []  # per optimizer.step: the optimizer, and which of its groups (policy, value) has gradients

    def record(optimizer, *_):
        group = optimizer.param_groups[0]
        moved = tuple(any(p.grad is not None for p in g["params"]) for g in optimizer.param_groups)
        steps.append((type(optimizer).__name__, group["alpha"], group["eps"], moved))

    hook = register_optimizer_step_pre_hook(record)
    try:
        train_in_process(reinforce_baseline, *A2C, "--env-id", "InvertedPendulum-v4", "--total-timesteps", "400")
    finally:
        hook.remove()
    # 400 steps = 5 batches of 16 actors x 5 steps; in each, one RMSProp step (TensorFlow's, as baselines' a2c) on
    # π's loss, then one on V's
    policy_step, value_step = ("TFRMSprop", 0.99, 1e-5, (True, False)), ("TFRMSprop", 0.99, 1e-5, (False, True))
    assert steps == [policy_step, value_step] * 5


def test_one_vanilla_pg_step_makes_the_better_actions_more_likely(tmp_path, monkeypatch):
    # Bandit-v0 pays −a²: the actions nearest π's mean 0 have the positive advantages, and ∂ log π(a)/∂ log σ = z² − 1
    # is negative for them (z = a/σ), so ascending L^PG narrows π: log σ falls, and their log-probs rise. Adam's
    # first step moves each weight by its stepsize α against the loss gradient: log σ goes from 0 to −α exactly.
    monkeypatch.chdir(tmp_path)
    flags = ["--env-id", "tests.fake_envs:Bandit-v0", "--num-steps", "256", "--total-timesteps", "256"]
    train_in_process(reinforce_baseline, *flags, "--learning-rate", "3e-4")
    (entropy,) = scalars(only_run_dir(tmp_path), "losses/entropy")  # Σ_i log σ_i + ½ log 2πe, after the step
    assert entropy == pytest.approx(0.5 * math.log(2 * math.pi * math.e) - 3e-4, abs=1e-6)


@pytest.mark.parametrize(
    "flags, total_timesteps",
    [(VPG_ADAPTIVE, 163840), (A2C, 200000), (A2C_TRUST_REGION, 200000)],
    ids=["vpg-adaptive", "a2c", "a2c-trust-region"],
)
def test_figure3_baseline_learns_inverted_pendulum(tmp_path, flags, total_timesteps):
    # only the budget is the test's: 80 batches of 2048 for vanilla PG, 2500 batches of 80 for A2C (TensorFlow's
    # RMSProp, as baselines' a2c, takes smaller first steps than PyTorch's, with which 1250 batches were enough)
    proc = run_script("reinforce_baseline.py", "--env-id", "InvertedPendulum-v4", "--total-timesteps",
                      str(total_timesteps), *flags, cwd=tmp_path, timeout=240)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    last100 = [float(row[1]) for row in read_episodes(only_run_dir(tmp_path))[-100:]]
    assert sum(last100) / len(last100) >= 500, f"mean of the last 100 episodes {sum(last100) / len(last100)}"


def test_tensorflow_rmsprop_first_steps_match_the_closed_form():
    # openai/baselines' a2c optimizer: ms starts at 1 and ε sits inside the root. With a constant gradient g = 0.01,
    # lr 7e-4, α 0.99, ε 1e-5: ms_1 = 0.99 + 0.01 g², θ_1 = −lr g / √(ms_1 + ε); ms_2 = 0.99 ms_1 + 0.01 g², and so on
    theta = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    optimizer = reinforce_baseline.TFRMSprop([theta], lr=7e-4, alpha=0.99, eps=1e-5)
    g, ms, expected = 0.01, 1.0, 0.0
    for _ in range(3):
        theta.grad = torch.full_like(theta, g)
        optimizer.step()
        ms = 0.99 * ms + 0.01 * g**2
        expected -= 7e-4 * g / math.sqrt(ms + 1e-5)
        assert theta.item() == pytest.approx(expected, rel=1e-12)
    # about lr · g per step: 10 times smaller than PyTorch's first RMSprop step, lr · g / (√(0.01 g²) + ε) ≈ 9.9 lr
    assert -theta.item() / 3 == pytest.approx(7e-4 * g, rel=2e-2)


def test_trust_region_step_leaves_a_small_step_and_cuts_a_large_one_to_the_bound():
    g = torch.tensor([[1.0, 2.0], [3.0, -1.0], [2.0, 2.0]], dtype=torch.float64)
    k = torch.tensor([[0.5, 0.0], [1.0, 1.0], [0.0, 0.0]], dtype=torch.float64)
    z = reinforce_baseline.trust_region_step(g, k, delta=1.0)
    # row 0: kᵀg = 0.5 ≤ δ, z = g; row 1: kᵀg = 2 > δ, z = g − (2 − 1) / 2 · k = (2.5, −1.5), kᵀz = δ; row 2: k = 0
    assert z.tolist() == [[1.0, 2.0], [2.5, -1.5], [2.0, 2.0]]
    assert (k[1] @ z[1]).item() == 1.0


def test_trust_region_gradients_wrt_the_gaussians_statistics():
    # one state, one action dimension: μ = 0.5, log σ = 0 (σ = 1); the average network's μ_a = 0, log σ_a = log 2;
    # the action a = 1.5 with Â = 2, c2 = 0.01. By hand, for φ = (μ, log σ):
    # g = (Â (a − μ) / σ², Â ((a − μ)² / σ² − 1) + c2) = (2, 0.01)
    # k = ∇_φ KL[π_a, π] = ((μ − μ_a) / σ², 1 − (σ_a² + (μ_a − μ)²) / σ²) = (0.5, 1 − 4.25) = (0.5, −3.25)
    f64 = {"dtype": torch.float64}
    g, k = reinforce_baseline.trust_region_g_and_k(
        torch.tensor([[0.5]], **f64), torch.tensor([[0.0]], **f64), torch.tensor([[1.5]], **f64),
        torch.tensor([2.0], **f64), torch.tensor([[0.0]], **f64), torch.tensor([math.log(2)], **f64), ent_coef=0.01,
    )  # fmt: skip
    assert g.tolist() == [pytest.approx([2.0, 0.01])] and k.tolist() == [pytest.approx([0.5, -3.25])]


def test_average_network_follows_the_policy_with_decay_alpha():
    average, params = [torch.tensor([1.0, -2.0]), torch.tensor(4.0)], [torch.tensor([3.0, 2.0]), torch.tensor(0.0)]
    reinforce_baseline.update_average(average, params, alpha=0.75)  # 0.75 θ_avg + 0.25 θ
    assert average[0].tolist() == [1.5, -1.0] and average[1].item() == 3.0


@pytest.mark.parametrize("trust_region", [False, True], ids=["vanilla-pg", "a2c-trust-region"])
def test_the_update_stops_when_the_rollout_sampled_from_another_policy_than_it_scores(trust_region):
    torch.manual_seed(0)
    args = reinforce_baseline.Args(env_id="InvertedPendulum-v4", num_steps=256, trust_region=trust_region)
    envs = reinforce_baseline.make_envs(args, run_dir="unused")
    agent = reinforce_baseline.Agent(4, 1)
    carry = reinforce_baseline.start_carry(envs, args)
    rollout = reinforce_baseline.collect_rollout(envs, agent, carry, args, 0, [])
    advantages, values = reinforce_baseline.estimate_advantages(agent, rollout, carry.next_obs, args)

    def update(agent, rollout) -> None:
        batch = reinforce_baseline.flatten_batch(rollout, advantages, values, torch.device("cpu"))
        average = copy.deepcopy(agent).requires_grad_(False)
        reinforce_baseline.update(agent, torch.optim.Adam(agent.parameters()), batch, args, average)

    moved = copy.deepcopy(agent)
    update(moved, rollout)  # on-policy: the update runs and moves π
    assert not torch.equal(moved.actor_logstd, agent.actor_logstd)
    before = [p.detach().clone() for p in agent.parameters()]
    with pytest.raises(SystemExit, match="^error: the update's log π_θold"):
        update(agent, {**rollout, "logstds": rollout["logstds"] + 0.1})  # σ of another π than the network's
    assert all(torch.equal(p, q) for p, q in zip(agent.parameters(), before))  # stopped before any step
