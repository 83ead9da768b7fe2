"""The code-level details of ppo1 (openai/baselines' pposgd at the paper's release, July 2017) as flags of
ppo_continuous.py: each does what its docstring says, on numbers the test can check by hand. That the defaults
still train bit for bit as before is benchmark/bitcheck.py's job."""

import shlex

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn as nn

import ppo_continuous as ppo
from benchmark import presets
from tests import fake_envs  # noqa: F401  (registers the fake envs)
from tests.helpers import assert_one_line_error, run_script


def ppo1_args() -> ppo.Args:
    """Args as the table1-ppo1 preset gives them."""
    import tyro

    return tyro.cli(ppo.Args, args=shlex.split(presets.PPO1))


def test_the_ppo1_flag_set_sets_each_detail_away_from_the_defaults():
    args, default = ppo1_args(), ppo.Args()
    expected = {"obs_clip": 5.0, "obs_std_floor": 0.1, "obs_stats_update": "batch", "norm_adv_scope": "batch",
                "max_grad_norm": None, "norm_reward": False, "anneal_lr": False, "adam_eps": 1e-8, "clip_vloss": True,
                "vf_coef": 0.5, "bootstrap_truncated": False, "normc_init": True, "clip_actions": False}  # fmt: skip
    for name, value in expected.items():
        assert getattr(args, name) == value != getattr(default, name), name


def test_normc_gives_each_unit_weights_of_norm_1_and_the_policy_head_001():
    torch.manual_seed(0)
    agent = ppo.Agent(11, 3, normc=True)
    for net, head_norm in ((agent.actor_mean, 0.01), (agent.critic, 1.0)):
        layers = [m for m in net if isinstance(m, nn.Linear)]
        for layer in layers:
            # torch stores (out, in): a row is one unit's incoming weights, ppo1's column of its (in, out) matrix
            norms = layer.weight.norm(dim=1)
            expected = head_norm if layer is layers[-1] else 1.0
            assert torch.allclose(norms, torch.full_like(norms, expected), rtol=1e-5), (net, layer)
            assert torch.equal(layer.bias, torch.zeros_like(layer.bias))
        # a Gaussian direction, not orthogonal rows: the rows of the 64x64 layer are not orthogonal to each other
        gram = layers[1].weight @ layers[1].weight.T
        assert (gram - torch.diag(gram.diag())).abs().max() > 0.1


def test_the_std_floor_divides_by_max_of_std_and_floor():
    rms = ppo.RunningMeanStd(2)
    rms.mean, rms.var = np.array([1.0, 1.0]), np.array([1e-6, 4.0])  # std 0.001 (floored to 0.1) and 2
    obs = np.array([[1.2, 3.0]])
    floored = ppo.normalize_obs(obs, rms, ppo.Args(obs_std_floor=0.1), update=False)
    assert floored == pytest.approx(np.array([[0.2 / 0.1, 2.0 / 2.0]]))
    # without the floor, ppo2's sqrt(var + 1e-8): the first dimension is blown up to the clip
    plain = ppo.normalize_obs(obs, rms, ppo.Args(), update=False)
    assert plain[0, 0] == 10.0 and plain[0, 1] == pytest.approx(1.0)


def chain_rollout(args: ppo.Args):
    envs = ppo.make_envs(args, run_dir="unused")
    agent = ppo.Agent(2, 1)
    carry = ppo.start_carry(envs, args)
    rollout = ppo.collect_rollout(envs, agent, carry, args, 0, [])
    return agent, carry, rollout


def test_batch_statistics_stay_frozen_in_the_rollout_and_take_in_its_observations_after_it():
    # Chain-v0's observation is [t, episode]: t runs 0, 1, 2 and then a new episode starts
    args = ppo.Args(env_id="tests.fake_envs:Chain-v0", num_envs=2, num_steps=6, obs_stats_update="batch",
                    norm_reward=False)  # fmt: skip
    agent, carry, rollout = chain_rollout(args)
    assert carry.obs_rms.count == 1e-4 and np.all(carry.obs_rms.var == 1)  # untouched: mean 0, var 1, as created
    raw = rollout["raw_obs"]  # (T, N, 2): what each step acted on
    assert raw[:, 0, 0].tolist() == [0, 1, 2, 0, 1, 2] and raw[:, 0, 1].tolist() == [0, 0, 0, 1, 1, 1]
    assert np.array_equal(rollout["obs"], raw.astype(np.float32))  # normalized by mean 0, std 1: the raw numbers
    advantages, values = ppo.estimate_advantages(agent, rollout, carry.next_obs, args)
    batch = ppo.flatten_batch(rollout, advantages, values, torch.device("cpu"))
    ppo.refresh_obs_stats(agent, rollout, batch, carry, args)
    flat = raw.reshape(-1, 2)
    assert carry.obs_rms.count == pytest.approx(12 + 1e-4)
    assert carry.obs_rms.mean == pytest.approx(flat.mean(0), rel=1e-4)
    assert carry.obs_rms.var == pytest.approx(flat.var(0), rel=1e-3)
    renormalized = (flat - carry.obs_rms.mean) / np.sqrt(carry.obs_rms.var + 1e-8)
    assert batch["obs"].numpy() == pytest.approx(renormalized, rel=1e-5)
    # the next rollout starts from the last observation, [0, 2] in each env, normalized by the new statistics
    assert carry.raw_next_obs.tolist() == [[0, 2], [0, 2]]
    assert carry.next_obs == pytest.approx((carry.raw_next_obs - carry.obs_rms.mean) / np.sqrt(carry.obs_rms.var))


def test_step_statistics_take_in_each_observation_as_it_comes():
    args = ppo.Args(env_id="tests.fake_envs:Chain-v0", num_envs=2, num_steps=6, norm_reward=False)
    _, carry, rollout = chain_rollout(args)
    assert carry.obs_rms.count == pytest.approx(2 * (6 + 1) + 1e-4)  # the first observations and 6 steps, in 2 envs
    assert not np.array_equal(rollout["obs"][1:], rollout["raw_obs"][1:].astype(np.float32))  # normalized as they came


def test_batch_statistics_returns_keep_the_rollouts_values_and_v_old_is_v_at_the_renormalized_batch():
    args = ppo.Args(env_id="tests.fake_envs:Chain-v0", num_envs=2, num_steps=6, obs_stats_update="batch",
                    norm_reward=False, clip_vloss=True)  # fmt: skip
    agent, carry, rollout = chain_rollout(args)
    advantages, values = ppo.estimate_advantages(agent, rollout, carry.next_obs, args)
    batch = ppo.flatten_batch(rollout, advantages, values, torch.device("cpu"))
    sampled_with = batch["logprobs"].clone()
    ppo.refresh_obs_stats(agent, rollout, batch, carry, args)
    renormalized = torch.from_numpy(ppo.normalize_obs(rollout["raw_obs"].reshape(12, 2), carry.obs_rms, args, False))
    with torch.no_grad():
        at_new_stats = agent.get_value(renormalized)
    assert torch.equal(batch["obs"], renormalized)
    assert torch.allclose(batch["values"], at_new_stats)
    assert not torch.allclose(batch["values"], torch.from_numpy(values.reshape(-1)))  # the statistics did move
    assert torch.allclose(batch["returns"], torch.from_numpy((advantages + values).reshape(-1)))
    with torch.no_grad():
        means, logstds = agent.get_policy(renormalized)
    assert torch.allclose(batch["means"], means)  # π_old at the renormalized observations, as ppo1's oldpi
    assert torch.allclose(batch["logprobs"], ppo.gaussian_log_prob(batch["actions"], means, logstds))
    assert not torch.allclose(batch["logprobs"], sampled_with)  # not what the rollout sampled with: ppo1's order
    assert not batch["logstds"].requires_grad  # π_old is data: no gradient may flow into it


def one_env_batch(agent, obs: torch.Tensor, actions: torch.Tensor, advantages: torch.Tensor) -> dict:
    """The batch flatten_batch makes of a rollout of one env that sampled `actions` at `obs` from the agent, V = 0."""
    with torch.no_grad():
        means, logstds = (x.detach() for x in agent.get_policy(obs))
    rollout = {name: x[:, None].numpy() for name, x in (("obs", obs), ("actions", actions), ("means", means),
                                                        ("logstds", logstds))}  # fmt: skip
    values = np.zeros((len(obs), 1), np.float32)
    return ppo.flatten_batch(rollout, advantages[:, None].numpy(), values, torch.device("cpu"))


def seen_by_the_update(scope: str, monkeypatch) -> list[torch.Tensor]:
    """The advantages each minibatch of one update() scores, in order, under --norm-adv-scope `scope`."""
    seen = []
    objective = ppo.policy_objective

    def recording(ratio, advantages, *rest, **kwargs):
        seen.append(advantages.detach().clone())
        return objective(ratio, advantages, *rest, **kwargs)

    monkeypatch.setattr(ppo, "policy_objective", recording)
    args = ppo.Args(num_steps=256, minibatch_size=64, update_epochs=1, norm_adv_scope=scope)
    torch.manual_seed(0)
    agent = ppo.Agent(3, 1)
    advantages = torch.linspace(0, 10, 256) ** 2  # far from mean 0, std 1, and ordered: minibatches differ
    batch = one_env_batch(agent, torch.randn(256, 3), torch.randn(256, 1), advantages)
    ppo.update(agent, torch.optim.Adam(agent.parameters(), lr=1e-4), batch, 0.0, args)
    return seen[:4]  # the 4 minibatches of the one epoch; the diagnostics' call comes after


def test_batch_scope_standardizes_the_advantages_once_over_the_batch(monkeypatch):
    minibatches = seen_by_the_update("batch", monkeypatch)
    whole = torch.cat(minibatches)
    assert abs(whole.mean().item()) < 1e-5 and whole.std().item() == pytest.approx(1.0, abs=1e-5)
    assert max(abs(mb.mean().item()) for mb in minibatches) > 0.05  # a minibatch keeps its own offset


def test_minibatch_scope_standardizes_each_minibatch(monkeypatch):
    for mb in seen_by_the_update("minibatch", monkeypatch):
        assert abs(mb.mean().item()) < 1e-5 and mb.std().item() == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("max_grad_norm, clipped", [(0.5, True), (None, False), (float("inf"), False)])
def test_the_gradient_clip_can_be_off(monkeypatch, max_grad_norm, clipped):
    norms = []
    step = torch.optim.Adam.step

    def recording(self, *a, **kw):  # the global norm of the gradient Adam is given
        grads = [p.grad for group in self.param_groups for p in group["params"]]
        norms.append(torch.linalg.vector_norm(torch.cat([g.reshape(-1) for g in grads])).item())
        return step(self, *a, **kw)

    monkeypatch.setattr(torch.optim.Adam, "step", recording)
    args = ppo.Args(num_steps=128, minibatch_size=64, update_epochs=1, max_grad_norm=max_grad_norm)
    torch.manual_seed(0)
    agent = ppo.Agent(3, 1)
    batch = one_env_batch(agent, torch.randn(128, 3), torch.randn(128, 1) * 3, torch.randn(128))
    batch["returns"] = torch.full((128,), 100.0)  # V far from its targets: a large value gradient
    ppo.update(agent, torch.optim.Adam(agent.parameters(), lr=1e-4), batch, 0.0, args)
    assert len(norms) == 2
    if clipped:
        assert max(norms) <= 0.5 + 1e-5
    else:
        assert min(norms) > 5  # the raw gradient, untouched


class RecordingEnv(fake_envs.ChainEnv):
    """The chain, remembering every action it is given."""

    given = []

    def step(self, action):
        RecordingEnv.given.append(np.array(action))
        return super().step(action)


gym.register("RecordingChain-v0", entry_point=RecordingEnv, max_episode_steps=3)


@pytest.mark.parametrize("clip_actions", [True, False])
def test_the_env_sees_the_sample_unclipped_without_clip_actions(clip_actions):
    RecordingEnv.given.clear()
    args = ppo.Args(env_id="RecordingChain-v0", num_steps=200, clip_actions=clip_actions)
    envs = ppo.make_envs(args, run_dir="unused")
    agent = ppo.Agent(2, 1)
    with torch.no_grad():
        agent.actor_logstd.fill_(1.0)  # σ = e: most samples fall outside [-1, 1]
    rollout = ppo.collect_rollout(envs, agent, ppo.start_carry(envs, args), args, 0, [])
    given, sampled = np.array(RecordingEnv.given)[:, 0], rollout["actions"][:, 0, 0]
    assert np.abs(sampled).max() > 1.5  # the buffer keeps the sample either way
    expected = sampled.clip(-1, 1) if clip_actions else sampled
    assert np.array_equal(given, expected)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--max-grad-norm", "0"], "--max-grad-norm must be positive (or None: no clip), got 0.0"),
        (["--max-grad-norm", "nan"], "--max-grad-norm must be a finite number"),
        (["--obs-std-floor", "-1"], "--obs-std-floor must be >= 0"),
    ],
)
def test_bad_values_of_the_ppo1_flags_are_refused(tmp_path, flags, message):
    proc = run_script("ppo_continuous.py", *flags, cwd=tmp_path, timeout=120)
    assert_one_line_error(proc, message)


def test_the_bitcheck_covers_the_grids_flag_set():
    # a change to ppo_continuous.py while the table1-ppo1 grid runs must be checked bit for bit on ppo1's flags too
    from benchmark.bitcheck import CASES

    assert any(presets.PPO1 in case for case in CASES["ppo_continuous.py"])


def test_each_leave_one_out_run_has_ppo1s_details_but_one_and_our_default_in_its_place():
    import dataclasses

    import tyro

    def parsed(flags: str) -> dict:
        return dataclasses.asdict(tyro.cli(ppo.Args, args=flags.split()))

    defaults = dataclasses.asdict(ppo.Args())
    for tag, tasks in (("none", {"HalfCheetah-v4", "Reacher-v4"}), ("clip-0.2", {"Hopper-v4", "Walker2d-v4"})):
        preset = presets.PRESETS[f"ppo1-leave-one-out-{tag}"]
        assert set(preset.env_ids) == tasks and preset.seeds == [1, 2, 3] and preset.total_timesteps == 1_000_000
        (setting,) = [s for s in presets.TABLE1 if s.tag == tag]
        full = parsed(f"{presets.PPO1} {setting.flags}")  # the table1-ppo1 run these are compared with
        parts = presets.PPO1_PARTS.get(tag, {})  # a part of a detail, left out alone
        details = {**presets.PPO1_DETAILS, **parts}
        assert [m.tag for m in preset.methods] == [f"ppo1-no-{d}-{tag}" for d in details]
        for method, detail in zip(preset.methods, details):
            args = parsed(method.flags)
            changed = {name for name in args if args[name] != full[name]}
            own = set(parsed(details[detail])) - {  # the fields the detail's own flags set
                name for name, value in parsed(details[detail]).items() if value == defaults[name]
            }
            assert changed == own and all(args[name] == defaults[name] for name in changed), (detail, changed)
    # with no clipping, the constant stepsize alone: the schedule anneals, Adam's ε stays ppo1's
    schedule = parsed(presets.ppo1_without("constant-lr-schedule"))
    assert schedule["anneal_lr"] and schedule["adam_eps"] == 1e-8
