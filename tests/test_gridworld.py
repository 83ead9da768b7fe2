"""ppo_gridworld_numpy.py: the seed's worked numbers, hand-written gradients against finite differences, the §2.1
warning, learning with the defaults, determinism, no torch, bad input, and a run that overflows."""

import contextlib
import dataclasses
import io
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import ppo_gridworld_numpy as grid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The seed's batch: (action, advantage) for C, A, B; actions 0, 1, 2 are A, B, C; one state, so every s_t is 0
SEED_STATES = np.zeros(3, dtype=int)
SEED_ACTIONS = np.array([2, 0, 1])
SEED_ADVANTAGES = np.array([1.0, -1.0, 0.5])
UNIFORM_LOGPROBS = np.full(3, math.log(1 / 3))  # log π_old(a_t) at the uniform policy


def quiet_train(args: grid.Args):
    """Run the script's own training loop; returns (π table, V table, what it printed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        probs, values = grid.train(args)
    return probs, values, out.getvalue()


def test_seed_policy_gradient_and_lpg():
    uniform = grid.softmax(np.zeros((3, 3)))
    # 1[k = a] − π(k): (−⅓, −⅓, ⅔) for C, (⅔, −⅓, −⅓) for A, (−⅓, ⅔, −⅓) for B
    directions = grid.grad_log_prob(uniform, SEED_ACTIONS)
    assert np.allclose(directions, [[-1 / 3, -1 / 3, 2 / 3], [2 / 3, -1 / 3, -1 / 3], [-1 / 3, 2 / 3, -1 / 3]])
    g_hat = grid.policy_gradient(uniform, SEED_STATES, SEED_ACTIONS, SEED_ADVANTAGES, (1, 3))[0]
    assert [round(g, 3) for g in g_hat] == [-0.389, 0.111, 0.278]
    # L^PG and its gradient through the objective the training loop uses
    l_pg, grad = grid.policy_objective(
        np.zeros((1, 3)), SEED_STATES, SEED_ACTIONS, UNIFORM_LOGPROBS, SEED_ADVANTAGES, "pg", 0.2
    )
    assert round(l_pg, 3) == -0.183
    assert np.allclose(grad[0], g_hat)


def test_seed_surrogate_and_kl():
    pi_old, pi_new = np.full(3, 1 / 3), np.array([0.2, 0.3, 0.5])
    logits = np.log(pi_new)[None]  # softmax(log π_new) = π_new
    ratio = np.exp(grid.log_softmax(logits)[0] - np.log(pi_old))
    assert [round(r, 2) for r in ratio] == [0.6, 0.9, 1.5]
    surrogate, _ = grid.policy_objective(
        logits, SEED_STATES, SEED_ACTIONS, UNIFORM_LOGPROBS, SEED_ADVANTAGES, "none", 0.2
    )
    assert round(surrogate, 2) == 0.45
    kl = grid.kl_divergence(pi_old, pi_new)
    assert round(float(kl), 3) == 0.07
    assert not kl <= 0.01  # the step fails TRPO's trust region δ = 0.01


def test_seed_gae():
    rewards, values = np.array([0.0, 0.0, 1.0]), np.array([0.5, 0.6, 0.8])
    terminated = np.array([False, False, True])
    # the episode's cells 0, 1, 2 lead to 1, 2, and the end (cell 3, worth 99 to show it is never read)
    next_values = grid.bootstrap_values(np.array([0.5, 0.6, 0.8, 99.0]), np.array([1, 2, 3]), terminated)
    assert next_values.tolist() == [0.6, 0.8, 0.0]

    def gae(lam):
        return grid.compute_gae(rewards, values, next_values, terminated, 0.9, lam)

    assert [round(a, 2) for a in gae(0.0)] == [0.04, 0.12, 0.2]  # λ = 0: Â_t = δ_t
    assert [round(a, 3) for a in gae(0.8)] == [0.23, 0.264, 0.2]
    assert round(gae(1.0)[0], 3) == 0.31  # λ = 1: 0.9² × 1 − 0.5


def test_rollout_boundaries():
    """Terminal steps bootstrap from 0 and cut the GAE sum; the rollout's last step bootstraps from V(next state)."""
    assert grid.env_step(1, 0, 7) == (0, -1.0, True)
    assert grid.env_step(5, 1, 7) == (6, 1.0, True)
    assert grid.env_step(3, 1, 7) == (4, 0.0, False)
    args = grid.Args(num_steps=50, length=5)
    logits = np.zeros((5, 2))
    rollout, state = grid.collect_rollout(logits, 2, args, np.random.default_rng(0))
    starts = np.flatnonzero(rollout["terminated"][:-1]) + 1
    assert (rollout["states"][starts] == 2).all()  # episodes restart in the middle
    assert rollout["terminated"].any()
    values = np.arange(5.0)  # V[s] = s, terminal cells included, to see what is read
    next_values = grid.bootstrap_values(values, rollout["next_states"], rollout["terminated"])
    assert (next_values[rollout["terminated"]] == 0).all()
    assert (next_values[~rollout["terminated"]] == rollout["next_states"][~rollout["terminated"]]).all()
    assert state == (2 if rollout["terminated"][-1] else rollout["next_states"][-1])
    # a two-step rollout that stops mid-episode: Â_1 = r + γ V(s_2) − V(s_1), bootstrapped, not cut
    adv = grid.compute_gae(np.zeros(2), np.array([1.0, 2.0]), np.array([2.0, 3.0]), np.zeros(2, bool), 0.5, 1.0)
    assert adv.tolist() == [0.0 + 0.5 * 2.0 - 1.0 + 0.5 * (0.5 * 3.0 - 2.0), 0.5 * 3.0 - 2.0]


def finite_difference(f, x, h=1e-6):
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        grad[i] = (f(x + e) - f(x - e)) / (2 * h)
    return grad


@pytest.mark.parametrize("objective", ["clip", "none", "pg"])
def test_gradient_matches_finite_differences(objective):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(4, 3))  # 4 states, 3 actions; state 3 has no samples, its gradient row stays 0
    states = np.array([0, 0, 1, 1, 2, 2, 0, 1, 2, 0])
    actions = np.array([0, 1, 2, 0, 1, 2, 2, 1, 0, 0])
    # r_t inside [0.8, 1.2] and outside it on both sides, with positive and negative advantages
    ratios = np.array([0.5, 0.9, 1.1, 1.5, 0.7, 1.3, 0.95, 1.6, 0.6, 1.05])
    advantages = np.array([1.0, -0.5, 2.0, -1.0, -1.5, 0.7, -0.3, 1.2, 0.4, -2.0])
    logprobs = grid.log_softmax(logits[states])[np.arange(10), actions]
    old_logprobs = logprobs - np.log(ratios)  # so that π_θ / π_θold = ratios at `logits`
    weights = grid.surrogate_weights(logprobs, old_logprobs, advantages, "clip", 0.2)
    # the clip switches off: r > 1.2 with Â > 0, r < 0.8 with Â < 0; the other side of the clip still pulls
    assert (weights == 0).tolist() == [False, False, False, False, True, True, False, True, False, False]

    def objective_at(x):
        return grid.policy_objective(x, states, actions, old_logprobs, advantages, objective, 0.2)[0]

    _, grad = grid.policy_objective(logits, states, actions, old_logprobs, advantages, objective, 0.2)
    assert np.allclose(grad, finite_difference(objective_at, logits), atol=1e-8, rtol=1e-6)
    assert (grad[3] == 0).all() and np.abs(grad[:3]).min() > 1e-3


def test_clip_gradient_is_zero_when_every_sample_is_clipped():
    logits = np.zeros((1, 2))
    logprobs = np.full(2, math.log(0.5))
    # r = 1.5 with Â > 0 and r = 0.5 with Â < 0: both past the clip, the objective is flat
    old = logprobs - np.log([1.5, 0.5])
    _, grad = grid.policy_objective(logits, np.zeros(2, int), np.array([0, 1]), old, np.array([1.0, -1.0]), "clip", 0.2)
    assert (grad == 0).all()


def fixed_batch_update(objective: str, epochs: int):
    """§2.1 made concrete: K epochs on one fixed batch. Cell 2 went left twice (Â = −1), cells 3 and 4 went right."""
    states, actions = np.array([2, 2, 3, 4]), np.array([0, 0, 1, 1])
    logits, values = np.zeros((7, 2)), np.zeros(7)
    batch = {
        "states": states,
        "actions": actions,
        "logprobs": grid.log_softmax(logits)[states, actions],
        "advantages": np.array([-1.0, -1.0, 0.5, 1.0]),
        "returns": np.array([-1.0, -1.0, 0.5, 1.0]),
    }
    args = grid.Args(
        objective=objective, update_epochs=epochs, num_steps=4, minibatch_size=4, learning_rate=0.05, norm_adv=False
    )
    logits, values, max_change, _ = grid.ppo_update(logits, values, batch, args, np.random.default_rng(0))
    return grid.softmax(logits), max_change


def test_lpg_steps_destroy_the_policy_clip_stops():
    old = 0.5  # π_old(left | cell 2)
    probs_pg, change_pg = fixed_batch_update("pg", 300)
    probs_cpi, change_cpi = fixed_batch_update("none", 300)
    probs_clip, change_clip = fixed_batch_update("clip", 300)
    # L^PG's gradient never switches off: the negative-advantage action is pushed towards 0
    assert probs_pg[2, 0] < 0.01
    # L^CLIP stops once the ratio leaves [1 − ε, 1 + ε]: r(left | cell 2) ends just below 1 − ε = 0.8
    ratio = probs_clip[2, 0] / old
    assert 0.8 - 0.015 <= ratio <= 0.8
    assert probs_clip[2, 0] >= (1 - 0.2) * old - 0.01
    assert probs_clip[4, 1] / old == pytest.approx(1.2, abs=0.01)  # and the positive side stops near 1 + ε
    # the largest change of any probability, as the script prints it per iteration
    assert change_clip < 0.11 and change_pg > 0.49 and change_cpi > 0.3


def test_value_regression_on_fixed_targets():
    """V's steps regress on V_targ fixed before the epochs: many epochs reach the mean target of each state."""
    logits, values = np.zeros((5, 2)), np.zeros(5)
    batch = {
        "states": np.array([1, 1, 2, 2]),
        "actions": np.array([0, 1, 0, 1]),
        "logprobs": np.full(4, math.log(0.5)),
        "advantages": np.array([1.0, -1.0, 0.5, 0.5]),
        "returns": np.array([1.0, 0.0, 0.5, 0.3]),
    }
    args = grid.Args(update_epochs=200, num_steps=4, minibatch_size=2)
    _, values, _, _ = grid.ppo_update(logits, values, batch, args, np.random.default_rng(0))
    assert values == pytest.approx([0.0, 0.5, 0.4, 0.0, 0.0], abs=1e-6)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_defaults_learn_to_go_right(seed):
    probs, values, out = quiet_train(grid.Args(seed=seed))
    assert (probs[1:-1, 1] >= 0.9).all(), out
    assert values[0] == values[-1] == 0
    assert "P(right)" in out and len(out.splitlines()) == 1 + 10 + 2 + 7


def test_same_seed_same_output():
    args = grid.Args(seed=7, total_timesteps=8192)
    probs_a, values_a, out_a = quiet_train(args)
    probs_b, values_b, out_b = quiet_train(args)
    assert (probs_a == probs_b).all() and (values_a == values_b).all() and out_a == out_b
    probs_c, _, _ = quiet_train(grid.Args(seed=8, total_timesteps=8192))
    assert not (probs_a == probs_c).all()


def test_import_does_not_import_torch():
    code = "import ppo_gridworld_numpy, sys; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


@pytest.mark.parametrize(
    "flags, flag_named",
    [
        (["--num-steps", "0"], "--num-steps"),
        (["--minibatch-size", "100"], "--minibatch-size"),
        (["--minibatch-size", "-4"], "--minibatch-size"),
        (["--length", "2"], "--length"),
        (["--total-timesteps", "-5"], "--total-timesteps"),
        (["--update-epochs", "0"], "--update-epochs"),
        (["--learning-rate", "0"], "--learning-rate"),
        (["--gamma", "1.5"], "--gamma"),
        (["--gae-lambda", "2"], "--gae-lambda"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(flags, flag_named, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["ppo_gridworld_numpy.py", *flags])
    with pytest.raises(SystemExit) as exit_info:
        grid.main()
    assert exit_info.value.code == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and flag_named in lines[0], err
    assert out == ""  # nothing trained, nothing printed


def test_bad_input_from_the_command_line_has_no_traceback():
    cmd = [sys.executable, os.path.join(ROOT, "ppo_gridworld_numpy.py"), "--minibatch-size", "100"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "error: --minibatch-size 100 does not divide the batch size 2048 (num_steps)\n"


def run_cli(*flags: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, os.path.join(ROOT, "ppo_gridworld_numpy.py"), *flags]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)


def assert_one_error_line(proc: subprocess.CompletedProcess, code: int) -> str:
    """Exit code `code`, exactly one line on stderr, "error: ...", no traceback; returns that line."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


FLOAT_FLAGS = [f.name for f in dataclasses.fields(grid.Args) if f.type is float]


@pytest.mark.parametrize("name", FLOAT_FLAGS)
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_every_float_flag_must_be_finite(name, value, capsys):
    assert {"learning_rate", "vf_learning_rate", "gamma", "gae_lambda", "clip_coef"} <= set(FLOAT_FLAGS)
    with pytest.raises(SystemExit) as exit_info:
        grid.validate(grid.Args(**{name: value}))
    assert exit_info.value.code == 2
    flag = "--" + name.replace("_", "-")
    assert capsys.readouterr().err == f"error: {flag} must be a finite number, got {value}\n"


@pytest.mark.parametrize(
    "flags",
    [["--learning-rate", "inf"], ["--learning-rate", "nan"], ["--vf-learning-rate", "inf"], ["--clip-coef", "inf"]],
)
def test_non_finite_flag_from_the_command_line_is_refused(flags):
    proc = run_cli(*flags)
    line = assert_one_error_line(proc, 2)
    assert line == f"error: {flags[0]} must be a finite number, got {float(flags[1])}"
    assert proc.stdout == ""  # refused before the first line of the table


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_seed_outside_32_bits_is_refused(seed):
    proc = run_cli("--seed", seed)
    assert assert_one_error_line(proc, 2) == f"error: --seed must lie in [0, 2**32), got {seed}"
    assert proc.stdout == ""


def test_seed_bounds_are_accepted(capsys):
    for seed in (0, 2**32 - 1):
        grid.validate(grid.Args(seed=seed))
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("flag, bad", [("--learning-rate", "KL"), ("--vf-learning-rate", "V")])
def test_overflow_in_training_stops_with_exit_1(flag, bad):
    # finite but huge: π(a|s) becomes exactly 0 (KL = inf), or the value table overflows to inf and NaN
    proc = run_cli(flag, "1e300")
    line = assert_one_error_line(proc, 1)
    assert line.startswith(f"error: non-finite {bad} at iteration 1:") and f"{flag} 1e+300" in line, line
    assert "nan" not in proc.stdout.lower() and "inf" not in proc.stdout.lower()
    assert len(proc.stdout.splitlines()) == 1 and proc.stdout.startswith(" iter")  # the header, no iteration line
