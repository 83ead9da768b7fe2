"""The paper's experiments as grids: which scripts, with which flags, on which tasks and seeds.

A method is one script with one set of flags; its tag names it in folder names and reports. A preset's grid is
methods x tasks x seeds, each run with --total-timesteps. `python -m benchmark.run --preset NAME` runs one; its
--env-ids, --seeds and --total-timesteps scale it down.
"""

from dataclasses import dataclass
from typing import Optional

# The 7 MuJoCo tasks of Table 1 and Figure 3 (§6.1), as gymnasium's v4 versions
MUJOCO_TASKS = [
    "HalfCheetah-v4",
    "Hopper-v4",
    "InvertedDoublePendulum-v4",
    "InvertedPendulum-v4",
    "Reacher-v4",
    "Swimmer-v4",
    "Walker2d-v4",
]
# The Table 6 games that shared/reference/targets.md gives figures for (the paper has 49)
ATARI_GAMES = [
    "BreakoutNoFrameskip-v4",
    "PongNoFrameskip-v4",
    "BeamRiderNoFrameskip-v4",
    "SpaceInvadersNoFrameskip-v4",
    "SeaquestNoFrameskip-v4",
    "QbertNoFrameskip-v4",
    "EnduroNoFrameskip-v4",
]


@dataclass(frozen=True)
class Method:
    script: str
    """a training script: a path, or the name of one at the top of the repo"""
    tag: str
    """the method's name in folder names and reports: letters, digits, '.', '+', '-' and single '_'"""
    flags: str = ""
    """flags that make the method, e.g. "--objective clip --clip-coef 0.2"; "" is the script's defaults"""
    label: str = ""
    """the algorithm's name in plot legends, e.g. "PPO (clip)"; "" shows script and tag"""


@dataclass(frozen=True)
class Table1Setting:
    """A row of the paper's Table 1: an objective of §6.1, the flags of ppo_continuous.py that select it, its score."""

    tag: str
    flags: str
    group: str
    """Table 1's objective, which groups the bars of the plot"""
    setting: str
    paper_score: float
    """the paper's average normalized score over 7 tasks x 3 seeds"""

    @property
    def label(self) -> str:
        return f"PPO, {self.group}{', ' + self.setting if self.setting else ''}"


# Table 1 of the paper (§6.1): 7 MuJoCo tasks x 3 seeds, 1M steps; random policy = 0, best setting = 1 per task
TABLE1 = [
    Table1Setting("none", "--objective none", "no clipping or penalty", "", -0.39),
    Table1Setting("clip-0.1", "--objective clip --clip-coef 0.1", "clipping", "ε = 0.1", 0.76),
    Table1Setting("clip-0.2", "--objective clip --clip-coef 0.2", "clipping", "ε = 0.2", 0.82),
    Table1Setting("clip-0.3", "--objective clip --clip-coef 0.3", "clipping", "ε = 0.3", 0.70),
    Table1Setting(
        "kl-adaptive-0.003", "--objective kl-adaptive --kl-target 0.003", "adaptive KL", "d_targ=0.003", 0.68
    ),
    Table1Setting("kl-adaptive-0.01", "--objective kl-adaptive --kl-target 0.01", "adaptive KL", "d_targ=0.01", 0.74),
    Table1Setting("kl-adaptive-0.03", "--objective kl-adaptive --kl-target 0.03", "adaptive KL", "d_targ=0.03", 0.71),
    Table1Setting("kl-fixed-0.3", "--objective kl-fixed --kl-beta 0.3", "fixed KL", "β = 0.3", 0.62),
    Table1Setting("kl-fixed-1", "--objective kl-fixed --kl-beta 1", "fixed KL", "β = 1", 0.71),
    Table1Setting("kl-fixed-3", "--objective kl-fixed --kl-beta 3", "fixed KL", "β = 3", 0.72),
    Table1Setting("kl-fixed-10", "--objective kl-fixed --kl-beta 10", "fixed KL", "β = 10", 0.69),
]


# ppo1: the code released with the paper, openai/baselines' pposgd at commit da99706 (2017-07-20, "ppo and trpo"),
# MuJoCo as its run_mujoco.py ran it. Table 3's values are the script's defaults and run_mujoco.py's (2048 steps,
# clip 0.2, entcoeff 0, 10 epochs, Adam 3e-4, minibatch 64, gamma 0.99, lambda 0.95, 64x2 tanh), so only the
# implementation details differ from ppo_continuous.py's defaults; each flag and where ppo1 has it:
# --obs-clip 5, --obs-std-floor 0.1: mlp_policy.py clips (ob - mean) / std to ±5; common/mpi_running_mean_std.py
#   has std = sqrt(max(sumsq/count - mean², 1e-2))
# --obs-stats-update batch: pposgd_simple.py calls pi.ob_rms.update(ob) once per batch, after the advantages (from
#   the rollout's vpred) and before assign_old_eq_new, so oldpi takes the new statistics: π_old and V_old are scored
#   at the renormalized batch
# --norm-adv-scope batch: pposgd_simple.py, atarg = (atarg - atarg.mean()) / atarg.std(), once per batch
# --max-grad-norm None: pposgd_simple.py, adam.update(g, ...) on the raw flat gradient
# --no-norm-reward: run_mujoco.py's env is gym.make + bench.Monitor, no reward wrapper
# --no-anneal-lr: run_mujoco.py leaves schedule='constant' (lrmult 1: the stepsize and the clip ε stay fixed)
# --adam-eps 1e-8: common/mpi_adam.py, MpiAdam(epsilon=1e-08)
# --clip-vloss --vf-coef 0.5: pposgd_simple.py, vf_loss = .5 * mean(max((V - R)², (V_clipped - R)²)) with V clipped
#   to oldpi.vpred ± clip_param, added to the loss with weight 1: in (9)'s terms c1 = 0.5 on (V - V_targ)². π and V
#   are separate networks there and Adam's steps are scale-free, so c1 hardly matters
# --no-bootstrap-truncated: pposgd_simple.py, the time limit's done ends the GAE sum as a termination does
# --normc-init: mlp_policy.py, U.dense(..., normc_initializer(1.0)), 0.01 for the policy head, zero biases
#   (common/tf_util.py), log-std 0
# --no-clip-actions: pposgd_simple.py, env.step(ac) with the sampled action, unclipped
# Not reproduced: ppo1's running statistics start at count 1e-2 (ours 1e-4; both mean 0, var 1, so the same first
# rollout), its Adam puts ε beside sqrt(v) before the bias correction (ours after: a shift of ε's size only), and
# the std of its advantage standardization divides by n (ours n - 1: a factor 1.0002 at 2048).
PPO1 = (
    "--obs-clip 5 --obs-std-floor 0.1 --obs-stats-update batch --norm-adv-scope batch --max-grad-norm None"
    " --no-norm-reward --no-anneal-lr --adam-eps 1e-8 --clip-vloss --vf-coef 0.5 --no-bootstrap-truncated"
    " --normc-init --no-clip-actions"
)
# ppo1's ten details, as benchmark/RESULTS.md's table has them: each the flags of PPO1 that make it
PPO1_DETAILS = {
    "obs-clip": "--obs-clip 5 --obs-std-floor 0.1",
    "obs-stats-batch": "--obs-stats-update batch",
    "adv-batch": "--norm-adv-scope batch",
    "no-grad-clip": "--max-grad-norm None",
    "raw-rewards": "--no-norm-reward",
    "constant-lr": "--no-anneal-lr --adam-eps 1e-8",
    "vf-clip": "--clip-vloss --vf-coef 0.5",
    "truncation-ends": "--no-bootstrap-truncated",
    "normc": "--normc-init",
    "unclipped-actions": "--no-clip-actions",
}
assert " ".join(PPO1_DETAILS.values()) == PPO1  # the ten make up ppo1's set, in its order


# A detail of two flags whose removal alone wins back a fall is split, on that setting's tasks: one of its flags left
# out, the other kept. With no clipping, constant-lr (issue #45's leave-one-out runs): is it the constant stepsize
# or Adam's ε of 1e-8? {setting's tag: {part: the flags left out}}
PPO1_PARTS = {"none": {"constant-lr-schedule": "--no-anneal-lr"}}


def ppo1_without(detail: str) -> str:
    """ppo1's flag set with one detail (or one part of a detail, PPO1_PARTS) left out: our default in its place."""
    if detail not in PPO1_DETAILS:
        (flags,) = [flags for parts in PPO1_PARTS.values() for name, flags in parts.items() if name == detail]
        return " ".join(PPO1.replace(flags, " ").split())
    return " ".join(flags for name, flags in PPO1_DETAILS.items() if name != detail)


# The Table 1 settings run with ppo1's details: no clipping and clip 0.2 first (--tags ppo1-none ppo1-clip-0.2), then,
# after the Atari grid, as time allows, four more: the other two clip settings and adaptive KL 0.01 (the paper's
# own example of d_targ) and 0.03
PPO1_SETTINGS = ["none", "clip-0.2", "clip-0.1", "clip-0.3", "kl-adaptive-0.01", "kl-adaptive-0.03"]


# Figure 3's vanilla policy gradient "with adaptive stepsize" (the paper's footnote to §6.2, which points to the
# Berkeley deep RL course's homework 4): after each batch the Adam stepsize is divided by 1.5 when KL[π_old, π] > 2 x
# target and multiplied by 1.5 when KL < target / 2 (--adaptive-lr); hw4's target 2e-3 and initial stepsize 1e-3;
# no schedule (the rule owns the stepsize). Everything else is reinforce_baseline.py's defaults: one Adam step on the
# whole 2048-step batch, the value baseline as the script trains it.
VPG_ADAPTIVE = "--adaptive-lr --kl-target 2e-3 --learning-rate 1e-3 --no-anneal-lr"
# A2C (Mnih et al. 2016, synchronous form) with openai/baselines' a2c defaults: nenvs 16 actors in lockstep (also the
# paper's 16 actor-learner threads), nsteps 5, n-step returns bootstrapped from V (GAE lambda 1) and raw advantages
# (no normalization), one gradient step per batch (whole batch of 16 x 5 = 80) on the policy and one on the value
# function, RMSProp lr 7e-4 with alpha 0.99 and eps 1e-5 for both, vf_coef 0.5, ent_coef 0.01, max_grad_norm 0.5,
# linear lr decay. Observation and reward normalization stay on, as baselines' VecNormalize does for MuJoCo.
# The optimizer is TensorFlow 1's RMSProp as baselines ran it (--optimizer rmsprop-tf: the mean square starts at 1,
# ε inside the root). Figure 3's first 21 A2C runs used PyTorch's RMSprop (A2C_TORCH_RMSPROP): kept for one release.
A2C_TORCH_RMSPROP = (
    "--num-envs 16 --num-steps 5 --gae-lambda 1 --no-norm-adv --update-epochs 1 --vf-epochs 1 --minibatch-size 80"
    " --optimizer rmsprop --learning-rate 7e-4 --vf-learning-rate 7e-4 --rmsprop-alpha 0.99 --rmsprop-eps 1e-5"
    " --vf-coef 0.5 --ent-coef 0.01 --max-grad-norm 0.5 --anneal-lr"
)
A2C = A2C_TORCH_RMSPROP.replace("--optimizer rmsprop ", "--optimizer rmsprop-tf ")
# A2C with a trust region (Figure 3): A2C's flags and ACER's efficient trust region on the policy step (Wang et al.
# 2016, §3.3), on-policy, against an average policy network. δ and α: openai/baselines' acer has δ = 1, α = 0.99;
# ACER's MuJoCo runs α = 0.995 and δ in [0.1, 2]. A sweep of δ in {0.1, 1} x α in {0.99, 0.995} on Hopper-v4 (300k
# steps, 2 seeds; benchmark/results/a2c-trust-region-sweep.csv, benchmark/RESULTS.md) put baselines' values first
A2C_TRUST_REGION = A2C + " --trust-region --tr-delta 1 --tr-alpha 0.99"
# The cross-entropy method: cem.py's defaults, chosen by a sweep of 8 settings on Hopper-v4 (300k steps, 2 seeds;
# benchmark/results/cem-sweep.csv, benchmark/RESULTS.md)
CEM = ""


# Prefixes of a Table 1 setting rerun with the same flags by a later version of ppo_continuous.py whose arithmetic is
# not bit-identical to the one that trained benchmark/results/table1.csv (tags "<prefix>-<setting>"): the report
# scores them as it scores a variant with other details, on table1's scale beside the committed row
RERUNS = {"plain": "ppo_continuous.py in plain PyTorch (issue #44: torch policy in the rollout, per-tensor Adam)"}


# Methods whose runs stay in a results table for one release after another method replaced them, as (script, tag):
# benchmark/report.py lists them in the returns table, labelled, but leaves them out of the plots and the verdicts
SUPERSEDED = {("reinforce_baseline.py", "a2c")}  # A2C on PyTorch's RMSprop, replaced by a2c-tf-rmsprop on 2026-12-02


@dataclass(frozen=True)
class Preset:
    about: str
    methods: list[Method]
    env_ids: list[str]
    seeds: list[int]
    total_timesteps: Optional[int]


PRESETS = {
    "table1": Preset(
        "Table 1: the 11 surrogate objectives of §6.1 on ppo_continuous.py, 7 MuJoCo tasks x 3 seeds, 1M steps",
        [Method("ppo_continuous.py", s.tag, s.flags, s.label) for s in TABLE1],
        MUJOCO_TASKS,
        [1, 2, 3],
        1_000_000,
    ),
    # Table 1 with the code-level details of ppo1 at the paper's release (PPO1 above); tags "ppo1-" + Table 1's tag
    "table1-ppo1": Preset(
        "Table 1 with ppo1's code-level details (baselines pposgd, July 2017): no clipping and clip 0.2 first, then"
        " clip 0.1 and 0.3 and adaptive KL 0.01 and 0.03, 7 MuJoCo tasks x 3 seeds, 1M steps",
        [
            Method("ppo_continuous.py", f"ppo1-{s.tag}", f"{PPO1} {s.flags}", f"{s.label}, ppo1's details")
            for tag in PPO1_SETTINGS
            for s in TABLE1
            if s.tag == tag
        ],
        MUJOCO_TASKS,
        [1, 2, 3],
        1_000_000,
    ),
    # Table 1's clip 0.2 row rerun by the plain-PyTorch ppo_continuous.py (RERUNS): are its results unchanged?
    "table1-plain": Preset(
        "Table 1's clip 0.2 row rerun by ppo_continuous.py in plain PyTorch (not bit-identical to the version that"
        " trained table1), 7 MuJoCo tasks x 3 seeds, 1M steps",
        [
            Method(
                "ppo_continuous.py", "plain-clip-0.2", "--objective clip --clip-coef 0.2", "PPO, ε = 0.2, plain PyTorch"
            )
        ],
        MUJOCO_TASKS,
        [1, 2, 3],
        1_000_000,
    ),
    # Leave one detail out (issue #45): which of ppo1's details makes no clipping fall (Reacher, HalfCheetah) and clip
    # 0.2 lose (Hopper, Walker2d)? ppo1's set minus one detail, tags "ppo1-no-<detail>-<setting>"; compared with the
    # table1-ppo1 runs of the full set
    **{
        f"ppo1-leave-one-out-{tag}": Preset(
            f"ppo1's details minus one at a time (10 flag sets, and PPO1_PARTS' parts of details), Table 1's {tag}, on"
            f" the tasks where ppo1's set moves it most, 3 seeds, 1M steps",
            [
                Method(
                    "ppo_continuous.py",
                    f"ppo1-no-{detail}-{s.tag}",
                    f"{ppo1_without(detail)} {s.flags}",
                    f"{s.label}, ppo1's details but {detail}",
                )
                for detail in (*PPO1_DETAILS, *PPO1_PARTS.get(tag, {}))
                for s in TABLE1
                if s.tag == tag
            ],  # fmt: skip
            tasks,
            [1, 2, 3],
            1_000_000,
        )
        for tag, tasks in (("none", ["HalfCheetah-v4", "Reacher-v4"]), ("clip-0.2", ["Hopper-v4", "Walker2d-v4"]))
    },
    # PPO's method has table1's clip-0.2 tag and flags, so that the two presets share those 21 runs
    "figure3": Preset(
        "Figure 3: PPO (clip, ε = 0.2), TRPO, CEM, vanilla PG with adaptive stepsize, A2C and A2C + trust region,"
        " 7 MuJoCo tasks x 3 seeds, 1M steps",
        [
            Method("ppo_continuous.py", "clip-0.2", "--objective clip --clip-coef 0.2", "PPO (clip)"),
            Method("trpo.py", "default", "", "TRPO"),
            Method("reinforce_baseline.py", "vpg-adaptive", VPG_ADAPTIVE, "Vanilla PG, adaptive stepsize"),
            Method("reinforce_baseline.py", "a2c-tf-rmsprop", A2C, "A2C"),
            Method("reinforce_baseline.py", "a2c-trust-region", A2C_TRUST_REGION, "A2C + trust region"),
            Method("cem.py", "default", CEM, "CEM"),
            # the first A2C row, with PyTorch's RMSprop (finished runs: the runner skips them), kept for one release
            Method("reinforce_baseline.py", "a2c", A2C_TORCH_RMSPROP, "A2C (PyTorch RMSprop, superseded)"),
        ],
        MUJOCO_TASKS,
        [1, 2, 3],
        1_000_000,
    ),
    "atari": Preset(
        "Table 6: ppo_atari.py (Table 5 settings) on Atari games x 3 seeds, 10M steps (40M frames)",
        [Method("ppo_atari.py", "default", "", "PPO")],
        ATARI_GAMES,
        [1, 2, 3],
        10_000_000,
    ),
    # Issue #48: Breakout with CleanRL's three settings where they differ from Table 5 (CleanRL's ppo_atari.py:
    # update_epochs = 4; vf_coef = 0.5 on 0.5 * (V - V_targ)^2, which is 0.25 on the paper's L^VF; clip_coef 0.1 with
    # no annealing, as its anneal_lr anneals only the learning rate), everything else Table 5 as in "atari"
    "atari-cleanrl": Preset(
        "Breakout with CleanRL's settings (4 epochs, c1 = 0.25 on L^VF, constant ε = 0.1), seeds 1 and 2, 10M steps",
        [
            Method(
                "ppo_atari.py",
                "cleanrl",
                "--update-epochs 4 --vf-coef 0.25 --no-anneal-clip",
                "PPO, CleanRL's settings",
            )
        ],
        ["BreakoutNoFrameskip-v4"],
        [1, 2],
        10_000_000,
    ),
    # §6.3 (Figure 4): ppo_humanoid.py with Table 4 on Roboschool's three humanoid tasks, rebuilt on MuJoCo by
    # humanoid_flagrun.py, one seed each as the paper's figure shows; and on gymnasium's Humanoid-v4, the task users
    # know, to set beside public numbers (shared/reference/targets.md). Figure 4's lengths: 50M running, 100M flagrun;
    # FlagrunHarder at 50M, as the issue asks where 100M would pass about 15 hours here (RESULTS.md, §6.3: about 18)
    "humanoid-run": Preset(
        "Figure 4, running: ppo_humanoid.py (Table 4, 32 actors) on HumanoidRun-v0, seed 1, 50M steps",
        [Method("ppo_humanoid.py", "table4", "", "PPO, Table 4, 32 actors")],
        ["humanoid_flagrun:HumanoidRun-v0"],
        [1],
        50_000_000,
    ),
    "humanoid-flagrun": Preset(
        "Figure 4, flagrun: ppo_humanoid.py (Table 4, 128 actors) on HumanoidFlagrun-v0, seed 1, 100M steps",
        [Method("ppo_humanoid.py", "table4-128", "--num-envs 128", "PPO, Table 4, 128 actors")],
        ["humanoid_flagrun:HumanoidFlagrun-v0"],
        [1],
        100_000_000,
    ),
    "humanoid-flagrun-harder": Preset(
        "Figure 4, flagrun harder: ppo_humanoid.py (Table 4, 128 actors) on HumanoidFlagrunHarder-v0, seed 1, 50M steps"
        " (Figure 4: 100M)",
        [Method("ppo_humanoid.py", "table4-128", "--num-envs 128", "PPO, Table 4, 128 actors")],
        ["humanoid_flagrun:HumanoidFlagrunHarder-v0"],
        [1],
        50_000_000,
    ),
    "humanoid-v4": Preset(
        "gymnasium's Humanoid-v4 with Table 4's settings (32 actors), seed 1, 10M steps, beside public PPO numbers",
        [Method("ppo_humanoid.py", "table4", "", "PPO, Table 4, 32 actors")],
        ["Humanoid-v4"],
        [1],
        10_000_000,
    ),
    # The tests' preset: two runs of a few seconds each, most of it Python and torch starting up
    "smoke": Preset(
        "smoke test: ppo_continuous.py on InvertedPendulum-v4, 2 seeds x 1024 steps in batches of 256",
        [Method("ppo_continuous.py", "smoke", "--num-steps 256")],
        ["InvertedPendulum-v4"],
        [1, 2],
        1024,
    ),
}
