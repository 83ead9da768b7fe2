"""Break the scripts on purpose, one break at a time, and check that the fast tests catch every break.

    python -m tests.mutants               # every break; exit 1 if one survived or no longer matches its script
    python -m tests.mutants -k trpo       # only the breaks whose name contains "trpo"
    python -m tests.mutants --list        # the breaks, and whether each still matches its script; runs nothing
    python -m tests.mutants --all         # name every fast test that fails on each break, not only the first

Each break is (script, exact source text, replacement, name). The repo's code and tests are copied to a scratch
folder once. The unbroken copy must pass the fast tests first; then, for each break, its text is replaced in the
copy, the fast tests run (stopping at the first failure, unless --all) and the original is put back. A break is
CAUGHT when a test fails, SURVIVED when all pass. Its text must occur exactly once in its script: a text that no
longer matches (the scripts get refactored) is reported as STALE, never skipped in silence.

Not a test module itself (pytest collects test_*.py only); tests/test_mutants.py checks that every text matches.
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Break(NamedTuple):
    script: str
    text: str
    replacement: str
    name: str
    also: tuple = ()  # more (text, replacement) pairs of the same break, each also found exactly once


TORCH_SCRIPTS = ("ppo_continuous.py", "trpo.py", "reinforce_baseline.py", "ppo_atari.py")  # each has its own GAE
MUJOCO_SCRIPTS = TORCH_SCRIPTS[:3]

BREAKS = [
    # TRPO: the step, the trust region and the line search
    Break("trpo.py", "gaussian_kl(old_means, old_logstds, mean, logstd)",
          "gaussian_kl(mean, logstd, old_means, old_logstds)", "trpo: KL[pi, pi_old] instead of KL[pi_old, pi]"),
    Break("trpo.py", "full_step = torch.sqrt(", "full_step = 0.25 * torch.sqrt(", "trpo: full step x 0.25"),
    Break("trpo.py", "full_step = torch.sqrt(", "full_step = 25 * torch.sqrt(", "trpo: full step x 25"),
    Break("trpo.py", "x = conjugate_gradient(fvp, g, args.cg_iters)", "x = g", "trpo: x = g, no conjugate gradient"),
    Break("trpo.py", "if kl <= max_kl and surrogate_new > surrogate_old:", "if kl <= max_kl:",
          "trpo: line search without 'surrogate improved'"),
    # vanilla PG
    Break("reinforce_baseline.py", "loss = -pg_objective(", "loss = pg_objective(",
          "reinforce_baseline: policy gradient sign flipped"),
    # PPO: the ratio and L^CLIP, in the update of each PPO script
    Break("ppo_continuous.py", 'ratio = (logprob - mb["logprobs"]).exp()', 'ratio = (mb["logprobs"] - logprob).exp()',
          "ppo_continuous: update's ratio inverted, pi_old / pi"),
    Break("ppo_atari.py", 'ratio = (logprob - mb["logprobs"]).exp()', 'ratio = (mb["logprobs"] - logprob).exp()',
          "ppo_atari: update's ratio inverted, pi_old / pi"),
    *(brk for script in ("ppo_continuous.py", "ppo_atari.py") for brk in (
        Break(script, "ratio.clamp(1 - clip_coef, 1 + clip_coef)", "ratio.clamp(1 + clip_coef, 1 - clip_coef)",
              f"{script[:-3]}: clip range turned around"),
        Break(script, "ratio.clamp(1 - clip_coef, 1 + clip_coef)", "ratio.clamp(max=1 + clip_coef)",
              f"{script[:-3]}: ratio clipped above only"),
        Break(script, "torch.min(ratio * advantages", "torch.max(ratio * advantages", f"{script[:-3]}: max in L^CLIP"),
        Break(script, "np.where(terminated, 0.0, next_values)", "np.where(False, 0.0, next_values)",
              f"{script[:-3]}: termination bootstraps from the reset observation"),
    )),
    # PPO: GAE and the bootstrap at episode ends
    Break("ppo_continuous.py", "dones = (terminated | truncated)", "dones = (terminated)",
          "ppo_continuous: truncation does not end the GAE sum"),
    Break("ppo_atari.py", 'dones = (rollout["terminated"] | rollout["truncated"])', 'dones = (rollout["terminated"])',
          "ppo_atari: truncation does not end the GAE sum"),
    Break("ppo_continuous.py", "raw_final_obs[i] = raw_obs[i]", "raw_final_obs[i] = env.reset()[0]",
          "ppo_continuous: final observation taken after the reset"),
    # Atari's protocol: a lost life ends the episode for bootstrapping; the forced FIRE is not π's action
    Break("ppo_atari.py", "terminated[step] |= life_lost & args.life_loss_done", "pass",
          "ppo_atari: a lost life does not stop bootstrapping"),
    Break("ppo_atari.py", 'clip_coef, kl, kl_beta, mb["weights"])', "clip_coef, kl, kl_beta)",
          "ppo_atari: the forced FIRE steps enter the policy loss"),
    # the skeleton's GAE and truncation bootstrap, in each script's copy
    *(Break(script, "decay = gamma * gae_lambda * (1.0 - dones)", "decay = gamma * gae_lambda * np.ones_like(dones)",
            f"{script[:-3]}: GAE without its done mask")
      for script in TORCH_SCRIPTS),
    *(Break(script, "final_values if bootstrap_truncated else 0.0", "next_values if bootstrap_truncated else 0.0",
            f"{script[:-3]}: truncation bootstraps from the reset observation")
      for script in TORCH_SCRIPTS),
    # the copies of the shared math in trpo.py and reinforce_baseline.py
    Break("trpo.py", "(var_old + (mean_old - mean) ** 2) / (2 * var)", "(var + (mean_old - mean) ** 2) / (2 * var_old)",
          "trpo: gaussian_kl's variances swapped"),
    Break("trpo.py", "math.log(2 * math.pi * math.e)", "math.log(2 * math.pi)", "trpo: gaussian_entropy without e"),
    *(Break(script, "mean + np.exp(logstd) * noise[step]", "mean + noise[step]",
            f"{script[:-3]}: the rollout samples with sigma 1, not the policy's") for script in MUJOCO_SCRIPTS),
    Break("reinforce_baseline.py", "** 2 - logstd - 0.5 * math.log(2 * math.pi)", "** 2 - 0.5 * math.log(2 * math.pi)",
          "reinforce_baseline: gaussian_log_prob without -log sigma"),
    Break("reinforce_baseline.py", "(diff * (x - mean)).sum(0)", "(diff * diff).sum(0)",
          "reinforce_baseline: RunningMeanStd's variance update"),
    # forking is safe (tests/test_fork.py): the checks that stop a fork which would train silently wrong
    *(Break(script, call, "None", f"{script[:-3]}: the on-policy check off") for script, call in (
        ("ppo_continuous.py", 'check_on_policy(logprob, mb["logprobs"])'),
        ("trpo.py", "check_on_policy(logprob, old_logprobs)"),
        ("reinforce_baseline.py", 'check_on_policy(logprob, batch["logprobs"])'),
        ("ppo_atari.py", 'check_on_policy(logprob, mb["logprobs"])'))),
    *(Break(script, "if not gap <= 1e-4 * (1 + old_logprob", "if not gap <= 1e4 * (1 + old_logprob",
            f"{script[:-3]}: the on-policy check lets a gap of 1e4 pass") for script in TORCH_SCRIPTS),
    Break("ppo_continuous.py", "shuffled = {key: column[perm] for key, column in columns.items()}",
          'shuffled = {key: columns[key][perm] for key in ("obs", "actions", "logprobs", "means", "logstds", '
          '"advantages", "values", "returns")}', "ppo_continuous: the minibatches carry a fixed list of columns"),
    *(Break(script, "elif column.shape[:1] != (T * N,):", "elif False:",
            f"{script[:-3]}: a batch column of another shape passes in silence") for script in TORCH_SCRIPTS),
    # Figure 3's last two methods: CEM, and A2C with ACER's trust region and TensorFlow's RMSProp
    Break("cem.py", "torch.argsort(scores, descending=True)", "torch.argsort(scores, descending=False)",
          "cem: the elite chosen from the worst"),
    Break("reinforce_baseline.py", "return g - excess /", "return g + 0 * excess /",
          "reinforce_baseline: trust-region projection off"),
    Break("reinforce_baseline.py", "gaussian_kl(average_mean, average_logstd, *phi)",
          "gaussian_kl(*phi, average_mean, average_logstd)", "reinforce_baseline: the trust region's KL turned around"),
    Break("reinforce_baseline.py", 'state["square_avg"] = torch.ones_like(p)',
          'state["square_avg"] = torch.zeros_like(p)', "reinforce_baseline: TF RMSProp's mean square starts at 0"),
    # ppo1's code-level details as flags of ppo_continuous.py (tests/test_ppo1_details.py)
    Break("ppo_continuous.py", "weight.norm(dim=1, keepdim=True)", "weight.norm(dim=0, keepdim=True)",
          "ppo_continuous: normc scales each input's weights, not each unit's"),
    Break("ppo_continuous.py", "np.maximum(obs_rms.var, args.obs_std_floor**2) if", "obs_rms.var + 1e-8 if",
          "ppo_continuous: the observation std floor ignored"),
    Break("ppo_continuous.py", "carry.obs_rms.update(raw)", "pass",
          "ppo_continuous: the batch's observations never reach the statistics"),
    Break("ppo_continuous.py", 'columns["advantages"] = normalize_advantages(batch["advantages"], batch_size)',
          'columns["advantages"] = batch["advantages"]', "ppo_continuous: --norm-adv-scope batch does not normalize"),
    Break("ppo_continuous.py", "if args.clip_actions else actions", "if True else actions",
          "ppo_continuous: --no-clip-actions still clips"),
    Break("ppo_continuous.py", 'batch["values"] = agent.get_value(batch["obs"])', "pass",
          "ppo_continuous: V_old from the old statistics with --obs-stats-update batch"),
    # Atari at the paper's scale: the frame limit of the paper's ids, and §6.4's network
    Break("ppo_atari.py", "return (3 if atari_game(args.env_id) == \"space_invaders\" else 4) * 100_000",
          "return 108_000", "ppo_atari: v4 ids get today's 108,000-frame limit"),
    Break("ppo_atari.py", "max_steps = math.ceil(episode_frame_limit(args) / FRAME_SKIP)",
          "max_steps = math.ceil(108_000 / FRAME_SKIP)", "ppo_atari: the rollout ignores the id's frame limit"),
    Break("ppo_atari.py", "layer_init(nn.Conv2d(4, 16, 8, stride=4)", "layer_init(nn.Conv2d(4, 32, 8, stride=4)",
          "ppo_atari: the a3c network's first conv has 32 filters",
          also=(("layer_init(nn.Conv2d(16, 32, 4, stride=2)", "layer_init(nn.Conv2d(32, 32, 4, stride=2)"),)),
    # bitcheck's comparison of two runs' checkpoints: bit for bit, a NaN the same NaN
    Break("benchmark/bitcheck.py", "and bits[0] == bits[1]", "and True",
          "bitcheck: tensors of the same shape and dtype compared as equal whatever their values"),
    Break("benchmark/bitcheck.py", "a == b or both_nan", "a == b or isinstance(a, float)",
          "bitcheck: any two floats compared as equal"),
    # the verdict on Table 6: which side of the paper's PPO a game's score lies, and how far counts as "at"
    Break("benchmark/report.py", 'side = "above" if diff > 0 else "below"', 'side = "above" if diff < 0 else "below"',
          "report: an Atari score below the paper's is called above"),
    Break("benchmark/report.py", "if abs(diff) <= spread:", "if True:",
          "report: any one-seed Atari score is at the paper's, whatever CleanRL's seed spread"),
    # the leave-one-out verdict (issue #45): a detail explains ppo1's fall when its removal wins back half of it
    Break("benchmark/report.py", 'r["closes"].get(e, 0) >= 0.5]', 'r["closes"].get(e, 0) >= 0.0]',
          "report: any gain beyond the noise explains ppo1's fall, however small"),
    Break("benchmark/report.py", 'c["diff"] / falls[e]', 'c["diff"]', "report: the share of the fall is the change"),
    Break("benchmark/report.py", "for e in tasks if not unfinished else []:", "for e in tasks:",
          "report: ppo1's fall explained before every detail's runs are in"),
    Break("benchmark/report.py", "whole = [p for p in back if not any(part_of(p, r) for r in back)]", "whole = back",
          "report: a part of a detail counted as a detail of its own"),
    # the grid runner: a Ctrl-C must stop the running script and every run still to come
    Break("benchmark/run.py", "        request_stop(list(self.pending.values()), self.args.results_dir)\n",
          "        pass\n", "runner: Ctrl-C writes no stop files, so the next run starts anyway"),
    Break("benchmark/run.py", "[f.result() for f in self.pending if not f.cancelled() and f.exception() is None]",
          "[]", "runner: a run that finishes as Ctrl-C comes is left out of the table"),
    Break("benchmark/run.py", "signal.signal(s, lambda signum, _: caught.append(signum))",
          "signal.signal(s, signal.getsignal(s))", "runner: a Ctrl-C cuts the recording of a finished run short"),
    Break("benchmark/run.py", "wait(self.pending, timeout=0.5, return_when=FIRST_COMPLETED).done",
          "wait(self.pending, return_when=FIRST_COMPLETED).done", "runner: a Ctrl-C taken by a worker thread waits "
          "for the run to end"),
    Break("benchmark/run.py", "signal.signal(signal.SIGINT, signal.default_int_handler)", "pass",
          "runner: `kill -INT` of a runner started with & stops nothing"),
    # §6.3: the humanoid tasks and Table 4's variant
    Break("humanoid_flagrun.py", "FLAG_TIMEOUT = 200", "FLAG_TIMEOUT = 150", "humanoid_flagrun: v1's flag timer (150)"),
    Break("humanoid_flagrun.py", "progress = self.potential - potential_old",
          "progress = potential_old - self.potential", "humanoid_flagrun: progress away from the target"),
    Break("humanoid_flagrun.py", "return 2.0 if z > 0.78 else -1.0", "return 2.0 if z > 0.5 else -1.0",
          "humanoid_flagrun: alive down to 0.5 m"),
    Break("humanoid_flagrun.py", "self.frame % THROW_EVERY == 0 and self.frame > THROW_AFTER",
          "self.frame % THROW_EVERY == 0", "humanoid_flagrun: cubes from the first frame"),
    Break("ppo_humanoid.py", "return stepsize / 1.5", "return stepsize * 1.5",
          "ppo_humanoid: stepsize grows when KL is too large"),
    Break("ppo_humanoid.py", "agent.actor_logstd.fill_(", "agent.actor_logstd.add_(0 * ",
          "ppo_humanoid: the log-std is never annealed"),
    Break("ppo_humanoid.py", "torch.set_num_threads(args.update_threads)", "torch.set_num_threads(1)",
          "ppo_humanoid: the update on one thread whatever --update-threads says"),
    Break("benchmark/throughput.py", "action = ppo_humanoid.env_actions(mean + np.exp(logstd)",
          "action = 0 * ppo_humanoid.env_actions(mean + np.exp(logstd)",
          "throughput: a trained robot's bare stepping ignores its policy"),
    Break("benchmark/stages.py", "spent[name][len(iteration_ends)] += total - inner",
          "spent[name][len(iteration_ends)] += total", "stages: a stage's row counts the stages timed inside it"),
    Break("benchmark/zoo.py", "duration=round(1000 * cmd.every * dt)", "duration=round(1000 * dt)",
          "zoo: a clip plays --every times faster than the task"),
    Break("benchmark/zoo.py", "if step >= cmd.start and (step - cmd.start) % cmd.every == 0:",
          "if step % cmd.every == 0:", "zoo: a clip ignores --start"),
    Break("benchmark/zoo.py", "            if body in bodies:", "            if True:",
          "zoo: gait counts the cube on the floor as a part of the robot"),
    Break("benchmark/zoo.py", "reset_height, heights, touches, total, done = float(data.xipos[torso, 2])",
          "reset_height, heights, touches, total, done = float(data.xpos[torso, 2])",
          "zoo: gait reads the torso's frame, not its center of mass that the alive rule reads",
          also=(("heights.append(float(data.xipos[torso, 2]))", "heights.append(float(data.xpos[torso, 2]))"),)),
    Break("benchmark/run.py", "paths = [path, *filter(None, [env_module(path, env_id)])]", "paths = [path]",
          "run: an edited env module (humanoid_flagrun.py) leaves the run clean"),
    Break("benchmark/zoo.py", "toward.append(float(moved @ (target - xy))",
          "toward.append(float(moved @ (xy - target))",
          "zoo: gait counts a move away from the target as towards it"),
    Break("benchmark/zoo.py", "reached, timed_out = reached + within, timed_out + (not within)",
          "reached, timed_out = reached + (not within), timed_out + within",
          "zoo: gait counts a flag reached as moved by its timer, and one timed out as reached"),
    Break("benchmark/zoo.py", "(dx, dy), yaw = path[t + SIDEWAYS_STEPS] - path[t], yaws[t]",
          "(dx, dy), yaw = path[t + SIDEWAYS_STEPS] - path[t], yaws[t + SIDEWAYS_STEPS - 1]",
          "zoo: gait sees where the robot goes from its torso's heading at the end of the move, not at its start"),
    Break("benchmark/zoo.py", "angles.append((math.degrees(math.atan2(dy, dx) - yaw) + 180) % 360 - 180)",
          "angles.append(math.degrees(math.atan2(dy, dx) - yaw))",
          "zoo: gait's angle from the heading to where the robot goes is not brought into [-180, 180)"),
    Break("benchmark/zoo.py", "        if height < DOWN_Z and first is None:",
          "        if height <= DOWN_Z and first is None:",
          "zoo: gait counts a torso at exactly 0.8 m as down, where Harder's rule has it up"),
    Break("benchmark/zoo.py", "if jump > THROW_JUMP and np.linalg.norm(", "if jump > 0.3 and np.linalg.norm(",
          "zoo: gait counts each step of a flying cube as a throw"),
    Break("benchmark/zoo.py", "any(first - THROWN_DOWN <= t <= first for t in touches)",
          "any(first <= t for t in touches)", "zoo: gait blames the cube for a fall only when it touched after it"),
    *(Break(script, "getattr(data, name)[...] = value.numpy()", "pass",
            f"{script[:-3]}: a resume recomputes what the last step left (Humanoid's reward moves)")
      for script in (*MUJOCO_SCRIPTS, "ppo_humanoid.py")),
]  # fmt: skip

# The fast tests: the math on small tensors, the rollout on a chain env, a few seconds of training on a bandit.
# Cheapest first, so that -x stops early. About 30 s on this 2-core machine with both cores busy with other work.
FAST_TESTS = [
    "tests/test_ppo_math.py",
    "tests/test_rollout.py",
    "tests/test_trpo.py",
    "tests/test_reinforce.py::test_seed_policy_gradient_through_the_scripts_loss",
    "tests/test_reinforce.py::test_one_vanilla_pg_step_makes_the_better_actions_more_likely",
    "tests/test_training.py::test_each_update_makes_the_better_actions_more_likely",
    "tests/test_atari.py::test_update_makes_the_better_actions_more_likely",
    "tests/test_atari.py::test_advantages_of_a_rollout_stop_at_a_time_limit_and_bootstrap_from_the_real_last_frame",
    "tests/test_atari.py::test_a_life_loss_stops_bootstrapping_and_the_next_transition_is_kept",
    "tests/test_atari_protocol.py::test_the_forced_fire_steps_do_not_enter_the_policy_loss",
    "tests/test_cem.py::test_refit_takes_mean_and_variance_of_the_best_scored_samples",
    "tests/test_ppo1_details.py",
    "tests/test_humanoid_envs.py",
    "tests/test_humanoid.py::test_stepsize_rule_is_the_footnotes",
    "tests/test_humanoid.py::test_logstd_is_set_by_the_linear_anneal_not_learned",
    "tests/test_humanoid.py::test_a_restored_env_steps_as_the_saved_one",
    "tests/test_humanoid.py::test_one_or_two_workers_give_the_same_run",
    "tests/test_humanoid.py::test_the_update_runs_on_update_threads_and_the_rollout_on_one",
    "tests/test_atari_protocol.py::test_the_frame_limit_follows_the_id_and_the_flag_overrides",
    "tests/test_atari_protocol.py::test_the_rollout_truncates_at_the_ids_limit",
    "tests/test_atari.py::test_the_a3c_network_is_the_one_section_6_4_names",
    "tests/test_reinforce.py::test_tensorflow_rmsprop_first_steps_match_the_closed_form",
    "tests/test_reinforce.py::test_trust_region_step_leaves_a_small_step_and_cuts_a_large_one_to_the_bound",
    "tests/test_reinforce.py::test_trust_region_gradients_wrt_the_gaussians_statistics",
    "tests/test_fork.py",
    "tests/test_report.py::test_atari_against_table_6",
    "tests/test_report.py::test_leave_one_out_names_the_detail_whose_removal_moves_the_score",
    "tests/test_benchmark.py::test_sigint_between_two_runs_stops_the_grid_and_starts_no_other",
    "tests/test_benchmark.py::test_a_signal_taken_by_a_worker_thread_stops_the_wait_at_once",
    "tests/test_benchmark.py::test_a_run_that_finishes_as_the_grid_stops_is_handed_back_by_stop",
    "tests/test_benchmark.py::test_an_interrupt_while_an_outcome_is_recorded_waits_for_the_end_of_it",
    "tests/test_benchmark.py::test_dirty_also_means_the_env_module_beside_the_script_differs_from_its_commit",
    "tests/test_humanoid.py::test_throughput_times_a_trained_robot_by_its_own_policy",
    "tests/test_benchmark.py::test_the_stage_profile_accounts_for_every_stage_of_an_iteration[mujoco]",
    "tests/test_zoo.py::test_clip_shows_every_few_steps_of_the_policy_at_the_tasks_speed",
    "tests/test_zoo.py::test_floor_contacts_name_the_robots_bodies_on_the_floor_and_nothing_else",
    "tests/test_zoo.py::test_gait_measures_the_torso_height_and_what_touches_the_floor",
    "tests/test_zoo.py::test_gait_follows_the_course_to_the_target",
    "tests/test_zoo.py::test_sideways_is_the_angle_from_the_heading_at_the_start_of_each_run_of_steps_to_its_move",
    "tests/test_zoo.py::test_gait_counts_the_flags_reached_and_those_their_timer_moved",
    "tests/test_zoo.py::test_times_down_are_the_stretches_below_the_harder_tasks_line_and_whether_each_ended",
    "tests/test_zoo.py::test_a_fall_is_the_cubes_when_the_cube_touched_the_robot_in_the_60_steps_before_it",
    "tests/test_zoo.py::test_gait_on_harder_counts_getting_up_the_cubes_and_the_falls_they_cause",
    "tests/test_bitcheck.py::test_first_difference_names_where_two_checkpoints_differ",
]


def occurrences(brk: Break, root: str = ROOT) -> int:
    """How often the break's text stands in its script; with `also`, the count of the text found least or most
    often, so that 1 means every one of its texts stands exactly once."""
    with open(os.path.join(root, brk.script)) as f:
        source = f.read()
    counts = [source.count(text) for text in (brk.text, *(text for text, _ in brk.also))]
    return next((count for count in counts if count != 1), 1)


def apply(brk: Break, source: str) -> str:
    for text, replacement in ((brk.text, brk.replacement), *brk.also):
        source = source.replace(text, replacement)
    return source


def copy_repo(destination: str) -> None:
    """What the fast tests need: the top-level scripts, tests/ and benchmark/'s modules, as they are in the tree."""
    for pattern in ("*.py", "pyproject.toml", "tests/*.py", "benchmark/*.py"):
        for path in glob.glob(os.path.join(ROOT, pattern)):
            target = os.path.join(destination, os.path.relpath(path, ROOT))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(path, target)


def run_fast_tests(scratch: str, timeout: float, stop_at_first: bool) -> tuple[str, list[str], float, str]:
    """(outcome, failed tests, seconds, output): outcome is "passed", "failed" or "timeout"."""
    # no bytecode: a patched file of the same size and mtime second must not load a stale .pyc
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": scratch}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *(["-x"] if stop_at_first else []),
           *FAST_TESTS]  # fmt: skip
    start = time.time()
    # its own process group, so that a timeout kills all it started, but this session: on Linux a new session is a new
    # autogroup at nice 0, which would undo `echo 19 > /proc/self/autogroup` (README, "Other work beside a grid")
    proc = subprocess.Popen(cmd, cwd=scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            process_group=0)  # fmt: skip
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the pytest run and anything it started
        output, _ = proc.communicate()
        return "timeout", [], time.time() - start, output
    if proc.returncode == 0:
        return "passed", [], time.time() - start, output
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", output, re.MULTILINE) or [f"pytest's exit code {proc.returncode}"]
    return "failed", failed, time.time() - start, output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", default="", help="only the breaks whose name contains this")
    parser.add_argument("--list", action="store_true", help="list the breaks and whether each matches; run nothing")
    parser.add_argument("--all", action="store_true", help="run every fast test on each break, naming all that fail")
    parser.add_argument("--timeout", type=float, default=300, help="seconds for one run of the fast tests")
    opts = parser.parse_args()
    breaks = [b for b in BREAKS if opts.k in b.name]
    width = max(len(b.name) for b in breaks)
    stale = [b for b in breaks if occurrences(b) != 1]
    for b in stale:
        print(f"{b.name:{width}}  STALE: found {occurrences(b)} times in {b.script}, not once: {b.text!r}")
    if opts.list:
        for b in breaks:
            if b not in stale:
                print(f"{b.name:{width}}  {b.script}: {b.text!r} -> {b.replacement!r}")
        return int(bool(stale))
    if len(stale) == len(breaks):
        return 1

    with tempfile.TemporaryDirectory(prefix="mutants-") as scratch:
        copy_repo(scratch)
        outcome, failed, seconds, output = run_fast_tests(scratch, opts.timeout, stop_at_first=False)
        if outcome != "passed":
            print(output[-5000:])
            print(f"the unbroken code does not pass the fast tests ({outcome}: {', '.join(failed)}); nothing to test")
            return 2
        print(f"{'unbroken code':{width}}  passes the fast tests ({seconds:.0f} s)", flush=True)
        survived = []
        for b in breaks:
            if b in stale:
                continue
            path = os.path.join(scratch, b.script)
            with open(path) as f:
                original = f.read()
            try:
                with open(path, "w") as f:
                    f.write(apply(b, original))
                outcome, failed, seconds, _ = run_fast_tests(scratch, opts.timeout, stop_at_first=not opts.all)
            finally:
                with open(path, "w") as f:
                    f.write(original)
            if outcome == "passed":
                survived.append(b)
            verdict = {"passed": "SURVIVED", "failed": f"CAUGHT by {', '.join(failed)}",
                       "timeout": f"CAUGHT by the timeout: the fast tests ran over {opts.timeout:.0f} s"}  # fmt: skip
            print(f"{b.name:{width}}  {verdict[outcome]} ({seconds:.0f} s)", flush=True)
    print(f"{len(breaks) - len(survived) - len(stale)} of {len(breaks)} caught, {len(survived)} survived, "
          f"{len(stale)} stale")  # fmt: skip
    return int(bool(survived or stale))


if __name__ == "__main__":
    sys.exit(main())
