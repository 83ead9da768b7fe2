"""Vanilla policy gradient (reinforce_baseline.py): the seed's §2.1 numbers, and the destructive reuse of a batch."""

import os

import torch

import reinforce_baseline
from tests.helpers import only_run_dir, run_script, scalars


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
