"""The cross-entropy method (Szita and Lőrincz 2006) on MuJoCo, in the skeleton of ppo_continuous.py.

Figure 3's derivative-free baseline (§6.2): search the policy's parameters directly. Each iteration samples a
population of parameter vectors θ_i ~ N(μ, diag(σ² + extra²)), scores each by the undiscounted return of its own
episodes, keeps the elite fraction with the highest scores, and refits μ and σ² to the elite; the extra variance
falls linearly to 0 over the first part of training, so the search does not collapse early. The policy is
ppo_continuous.py's policy network (2x64 tanh, the same initialization) acting deterministically, a = μ_θ(s), on
observations normalized as there: the comparison isolates the algorithm. `diff ppo_continuous.py cem.py` shows what
a gradient-free search keeps and drops: no critic, no advantages, no optimizer.

    python cem.py --env-id Hopper-v4
"""

import csv
import math
import os
import signal
import sys
import time
import warnings
from dataclasses import dataclass, replace
from typing import Optional

import gymnasium as gym
import mujoco
import numpy as np
import torch
import torch.nn as nn
import tyro
from torch.utils.tensorboard import SummaryWriter

# The v4 MuJoCo tasks are the ones the published PPO results use; gymnasium's note that v5 exists is expected here.
warnings.filterwarnings("ignore", message=".*-v4 is out of date", category=DeprecationWarning)


@dataclass
class Args:
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
    """name of this experiment; part of the run folder runs/{env_id}__{exp_name}__{seed}__{time}"""
    seed: int = 1
    """seed of torch and the environment: the same seed on the same machine gives the same returns, bit for bit"""
    track: bool = False
    """also log to Weights & Biases (works without an account under WANDB_MODE=offline)"""
    wandb_project_name: str = "ppo-paper"
    """the wandb project (the entity is your default, or WANDB_ENTITY)"""
    capture_video: bool = False
    """record episodes to runs/{run_name}/videos; with --eval-checkpoint, every evaluation episode (needs moviepy;
    MuJoCo renders headless with MUJOCO_GL=egl, the default here, or osmesa)"""
    save_model: bool = False
    """write runs/{run_name}/checkpoint.pt after every iteration (Ctrl-C and SIGTERM always save)"""
    resume: Optional[str] = None
    """continue the run saved in this checkpoint exactly where it stopped; the checkpoint's flags are used"""
    eval_checkpoint: Optional[str] = None
    """instead of training, run the policy of this checkpoint's mean μ and print its mean return"""
    eval_episodes: int = 10
    """episodes for --eval-checkpoint"""

    env_id: str = "Hopper-v4"
    """a MuJoCo task with a continuous (Box) action space"""
    total_timesteps: int = 1_000_000
    """environment steps in all (Figure 3: 1M); the iteration the budget runs out in is not refitted"""

    # The cross-entropy method: the defaults were chosen by a sweep on Hopper-v4 at 300k steps, 2 seeds, of 8 settings
    # around modular_rl's and rllab's (benchmark/RESULTS.md lists them all with their scores)
    population_size: int = 20
    """parameter vectors sampled per iteration (the sweep's pick; modular_rl: 200; rllab, Duan et al. 2016: 100)"""
    elite_frac: float = 0.2
    """fraction of the population, the best scored, that μ and σ² are refitted to (modular_rl 0.2; rllab 0.05)"""
    episodes_per_sample: int = 1
    """episodes that score each sample: their mean undiscounted return (modular_rl and rllab: 1)"""
    init_std: float = 0.1
    """σ of every parameter at the start, around μ = the network's initialization (the sweep's pick; modular_rl: 1,
    which on this network's scale left Hopper near its random return)"""
    extra_std: float = 0.01
    """std of the extra noise added to σ² when sampling, at the start (modular_rl: 0.01; rllab: 1)"""
    extra_decay: float = 0.5
    """the extra variance falls linearly to 0 over this fraction of --total-timesteps (modular_rl: half the
    iterations; rllab: 100 iterations)"""

    # Implementation details [not in CEM's sources], as ppo_continuous.py's, so that the algorithm alone differs
    orthogonal_init: bool = True
    """[not in paper] orthogonal weights (gain √2; policy head 0.01), zero biases: the initial μ (ppo2; ppo1: normc)"""
    norm_obs: bool = True
    """[not in paper] observations by a running mean and std, frozen within an iteration so that every sample of
    the population sees the same normalization; updated after it with all its observations"""
    obs_clip: float = 10.0
    """[not in paper] clip normalized observations to [-obs_clip, obs_clip] (ppo2 10; ppo1 5)"""


# NETWORKS: the policy


# The activations the rollout's NumPy policy (Agent.numpy_mean) can follow; any other layer in actor_mean stops the run
NUMPY_ACTIVATIONS = {nn.Tanh: np.tanh, nn.ReLU: lambda x: np.maximum(x, 0), nn.Identity: lambda x: x}


class Agent(nn.Module):
    """ppo_continuous.py's policy MLP of 2x64 tanh units (§6.1), deterministic: its output is the action."""

    def __init__(self, obs_dim: int, act_dim: int, orthogonal: bool = True):
        super().__init__()

        def linear(in_dim: int, out_dim: int, std: float) -> nn.Linear:
            layer = nn.Linear(in_dim, out_dim)
            if orthogonal:  # [not in paper] orthogonal weights with gain std, zero biases
                nn.init.orthogonal_(layer.weight, std)
                nn.init.constant_(layer.bias, 0.0)
            return layer

        def mlp(out_dim: int, out_std: float) -> nn.Sequential:
            hidden = math.sqrt(2)
            return nn.Sequential(
                linear(obs_dim, 64, hidden), nn.Tanh(), linear(64, 64, hidden), nn.Tanh(), linear(64, out_dim, out_std)
            )

        self.actor_mean = mlp(act_dim, 0.01)  # a small last layer starts the policy near mean 0

    def numpy_mean(self):
        """μ(s) in NumPy with the current weights, for the rollout, where a torch call costs ~10x its arithmetic.
        It follows actor_mean layer by layer, so an edit of the network carries over; a layer it cannot follow, or
        a result that differs from actor_mean's on a probe input, stops the run: the rollout must sample from the
        very network the update scores."""
        layers = []
        for module in self.actor_mean if isinstance(self.actor_mean, nn.Sequential) else [self.actor_mean]:
            if isinstance(module, nn.Linear):
                weight = module.weight.detach().cpu().numpy().T
                bias = module.bias.detach().cpu().numpy() if module.bias is not None else 0.0
                layers.append(lambda x, weight=weight, bias=bias: x @ weight + bias)
            elif type(module) in NUMPY_ACTIVATIONS:
                layers.append(NUMPY_ACTIVATIONS[type(module)])
            else:
                sys.exit(f"error: the rollout's NumPy policy has no {type(module).__name__} (in actor_mean): add it to "
                         "NUMPY_ACTIVATIONS, or sample the rollout's actions with actor_mean in torch")  # fmt: skip

        def policy_mean(obs: np.ndarray) -> np.ndarray:
            for layer in layers:
                obs = layer(obs)
            return obs

        probe = np.random.default_rng(0).standard_normal((8, self.actor_mean[0].in_features), dtype=np.float32)
        with torch.inference_mode():  # a generator of its own: the training RNG is not touched
            expected = self.actor_mean(torch.from_numpy(probe)).numpy()
        # float32 rounding grows with the size of the terms summed, not of the result: compare against that scale
        if np.abs(policy_mean(probe) - expected).max() > 1e-4 * (1 + np.abs(expected).max()):
            sys.exit("error: the rollout's NumPy policy (numpy_mean) and actor_mean give different means, so the "
                     "rollout would sample from another network than the update scores: make them agree")  # fmt: skip
        return policy_mean


# ALGO LOGIC: the math, as small pure functions


def sample_population(mean: torch.Tensor, std: torch.Tensor, size: int) -> torch.Tensor:
    # θ_i = μ + σ ⊙ z_i with z_i ~ N(0, I): (size, D)
    return mean + std * torch.randn(size, mean.numel(), dtype=mean.dtype)


def elite_size(elite_frac: float, population_size: int) -> int:
    return max(1, math.ceil(elite_frac * population_size))


def refit(population: torch.Tensor, scores: torch.Tensor, elite_frac: float) -> tuple[torch.Tensor, torch.Tensor]:
    """μ and σ² of the elite: the ⌈elite_frac · P⌉ samples with the highest scores (the maximum-likelihood fit of a
    diagonal Gaussian to them, variance over n, not n − 1)."""
    elite = population[torch.argsort(scores, descending=True)[: elite_size(elite_frac, len(scores))]]
    return elite.mean(0), elite.var(0, correction=0)


def extra_variance(extra_std: float, global_step: int, decay_steps: float) -> float:
    # extra² · max(0, 1 − t / t_decay): the added exploration noise falls linearly to 0
    return extra_std**2 * max(0.0, 1.0 - global_step / decay_steps) if decay_steps > 0 else 0.0


# ALGO LOGIC: the rollout: each sample's episodes


def make_env(args: Args, run_dir: str) -> gym.Env:
    """One copy of the task: the population's samples play their episodes in turn."""
    if args.capture_video:  # MuJoCo renders without a display, unless the user chose another backend
        os.environ.setdefault("MUJOCO_GL", "egl")
        env = follow_robot(gym.make(args.env_id, render_mode="rgb_array"))
        return gym.wrappers.RecordVideo(env, f"{run_dir}/videos")
    return gym.make(args.env_id)


class RunningMeanStd:
    """Running mean and variance of a stream of batches (Welford's update, one batch at a time)."""

    def __init__(self, shape=()):
        self.mean, self.var, self.count = np.zeros(shape), np.ones(shape), 1e-4

    def update(self, x: np.ndarray) -> None:
        # mean' = mean + Σ(x − mean) / n';  M2' = M2 + Σ(x − mean)(x − mean'), with M2 = var · n
        total = self.count + x.shape[0]
        diff = x - self.mean
        mean = self.mean + diff.sum(0) / total
        self.var = (self.var * self.count + (diff * (x - mean)).sum(0)) / total
        self.mean, self.count = mean, total

    def state(self) -> dict:
        return {"mean": torch.as_tensor(self.mean), "var": torch.as_tensor(self.var), "count": self.count}

    def load(self, state: dict) -> None:
        self.mean, self.var, self.count = state["mean"].numpy(), state["var"].numpy(), state["count"]


def normalize_obs(obs: np.ndarray, obs_rms: RunningMeanStd, args: Args, update: bool = True) -> np.ndarray:
    if not args.norm_obs:
        return obs.astype(np.float32)
    if update:
        obs_rms.update(obs)
    obs = (obs - obs_rms.mean) / np.sqrt(obs_rms.var + 1e-8)
    return obs.clip(-args.obs_clip, args.obs_clip).astype(np.float32)


def play_episode(env: gym.Env, policy_mean, obs_rms: RunningMeanStd, args: Args, max_steps: int) -> tuple:
    """One episode of the deterministic policy a = μ_θ(s), clipped to the action space, with the frozen observation
    statistics: (return, length, raw observations), or (None, steps, observations) when the step budget (max_steps)
    ran out before the episode ended."""
    obs, _ = env.reset()
    raw_obs, total, low, high = [obs], 0.0, env.action_space.low, env.action_space.high
    for step in range(1, max_steps + 1):
        action = policy_mean(normalize_obs(obs[None], obs_rms, args, update=False))[0]
        obs, reward, terminated, truncated, _ = env.step(action.clip(low, high))
        total += float(reward)
        if terminated or truncated:
            return total, step, raw_obs
        raw_obs.append(obs)
    return None, max_steps, raw_obs


def score_population(env: gym.Env, agent: Agent, population: torch.Tensor, obs_rms: RunningMeanStd, args: Args,
                     global_step: int, episodes: list) -> tuple[Optional[torch.Tensor], int, list]:  # fmt: skip
    """Each sample's score: the mean undiscounted return of its episodes. Finished episodes go to `episodes` as
    (global_step, return, length). Returns (scores, the global step after them, the raw observations), scores None
    when the budget (--total-timesteps) ran out before the last sample was scored."""
    scores, observations = torch.zeros(len(population), dtype=torch.float64), []
    for i, theta in enumerate(population):
        nn.utils.vector_to_parameters(theta, agent.actor_mean.parameters())
        policy_mean = agent.numpy_mean()
        for _ in range(args.episodes_per_sample):
            episode_return, length, raw_obs = play_episode(
                env, policy_mean, obs_rms, args, args.total_timesteps - global_step
            )
            global_step += length
            observations += raw_obs
            if episode_return is None:
                return None, global_step, observations
            episodes.append((global_step, episode_return, length))
            scores[i] += episode_return / args.episodes_per_sample
    return scores, global_step, observations


# ALGO LOGIC: the cross-entropy method


def train(args: Args, ckpt: Optional[dict] = None) -> None:
    run_dir, writer = open_run(args, ckpt)
    checkpoint_path = os.path.join(run_dir, "checkpoint.pt")

    # TRY NOT TO MODIFY: seeding
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # small networks: threads cost more than they give, and runs stay bit-for-bit equal

    env = make_env(args, run_dir)
    agent = Agent(env.observation_space.shape[0], env.action_space.shape[0], args.orthogonal_init)
    # the search distribution over the policy's parameters: μ starts at the network's initialization
    mean = nn.utils.parameters_to_vector(agent.actor_mean.parameters()).detach().clone()
    var = torch.full_like(mean, args.init_std**2)
    obs_rms = RunningMeanStd(env.observation_space.shape)
    env.reset(seed=args.seed)
    global_step, iteration = 0, 0
    if ckpt is not None:  # continue exactly where the checkpoint stopped
        mean, var = ckpt["mean"], ckpt["var"]
        restore_checkpoint(ckpt, obs_rms, env)
        global_step, iteration = ckpt["global_step"], ckpt["iteration"]
    csv_file = open_episodes_csv(run_dir, global_step if ckpt else None)
    stop = catch_stop_signals()  # Ctrl-C or SIGTERM: finish the iteration in progress, save a checkpoint, then exit
    recent_returns, start_time, start_step = [], time.time(), global_step

    while global_step < args.total_timesteps:
        iteration, previous_step = iteration + 1, global_step
        # sample the population: σ² plus the extra variance, which decays over the first --extra-decay of training
        extra = extra_variance(args.extra_std, global_step, args.extra_decay * args.total_timesteps)
        population = sample_population(mean, torch.sqrt(var + extra), args.population_size)

        # score each sample by the undiscounted return of its episodes, with the observation statistics frozen
        episodes = []  # (global step, return, length) of the episodes that end in this iteration
        scores, global_step, observations = score_population(env, agent, population, obs_rms, args, global_step,
                                                             episodes)  # fmt: skip
        if args.norm_obs:
            obs_rms.update(np.array(observations))

        # refit μ and σ² to the elite; the policy to keep is the new mean
        metrics = {}
        if scores is not None:  # the budget ran out in this iteration: no refit on a part of the population
            mean, var = refit(population, scores, args.elite_frac)
            elite_scores = scores.topk(elite_size(args.elite_frac, len(scores))).values
            metrics = {
                "charts/population_score": scores.mean().item(),  # the mean return of this iteration's samples
                "charts/elite_score": elite_scores.mean().item(),
                "charts/elite_std": torch.sqrt(var).mean().item(),  # the refitted σ, averaged over the parameters
                "charts/extra_std": math.sqrt(extra),
            }
        nn.utils.vector_to_parameters(mean, agent.actor_mean.parameters())

        # TRY NOT TO MODIFY: logging, checkpoints, progress
        csv.writer(csv_file).writerows(episodes)
        csv_file.flush()
        recent_returns = (recent_returns + [episode_return for _, episode_return, _ in episodes])[-100:]
        sps = int((global_step - start_step) / (time.time() - start_time))
        metrics["charts/SPS"] = sps
        log_metrics(writer, episodes, metrics, global_step)
        if args.save_model or stop:
            writer.flush()  # the events up to this step are on disk before the checkpoint that a resume starts from
            save_checkpoint(checkpoint_path, args, agent, obs_rms, env, mean=mean, var=var, global_step=global_step,
                            iteration=iteration)  # fmt: skip
        print_progress(previous_step, global_step, sps, recent_returns, args)
        if stop:
            writer.close()  # flush the last iterations' events: TensorBoard writes them in batches
            print(f"\ninterrupted: checkpoint at step {global_step} saved; continue with --resume {checkpoint_path}")
            sys.exit(128 + stop[0])

    steps, elapsed = global_step - start_step, time.time() - start_time
    print(f"\ndone: {steps} steps in {elapsed:.2f} s ({steps / elapsed:.0f} SPS); run folder {run_dir}")
    env.close()  # RecordVideo writes the episode it is recording
    writer.close()
    csv_file.close()


# RUN MANAGEMENT: validation, checkpoints and resume, env state, the run folder, signals, CSV and TensorBoard,
# progress, evaluation. Not the algorithm: a fork rarely needs to change anything below


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2, no traceback."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def describe(e: Exception) -> str:
    """An exception in one short line: its type and the first line of its message (which may be empty)."""
    lines = str(e).splitlines()
    return f"{type(e).__name__}: {lines[0][:200]}" if lines else type(e).__name__


def make_env_or_fail(env_id: str, flag: str, **kwargs) -> gym.Env:
    try:
        return gym.make(env_id, **kwargs)
    except Exception as e:  # an unknown id, a module that is not there, a missing dependency
        fail(f"{flag}: cannot make {env_id} ({describe(e)})")


def follow_robot(env: gym.Env) -> gym.Env:
    """Film a MuJoCo task through its model's "track" camera, which follows the robot: gymnasium's default view stays
    where the episode began, and a runner leaves it. A task without one (a pendulum, Reacher) keeps the default view."""
    renderer = getattr(env.unwrapped, "mujoco_renderer", None)
    if renderer is not None:
        renderer.camera_id = mujoco.mj_name2id(env.unwrapped.model, mujoco.mjtObj.mjOBJ_CAMERA, "track")
    return env


def validate(args: Args) -> None:
    """Check the flags once, right after parsing, so that a typo fails in a second instead of after an hour."""
    for name, value in vars(args).items():  # inf and nan pass every comparison below, or none
        if isinstance(value, float) and not math.isfinite(value):
            fail(f"--{name.replace('_', '-')} must be a finite number, got {value}")
    if not 0 <= args.seed < 2**32:  # NumPy's seed range
        fail(f"--seed must lie in [0, 2**32), got {args.seed}")
    for name in ("total_timesteps", "population_size", "episodes_per_sample", "init_std", "obs_clip"):
        if not getattr(args, name) > 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if not (0 < args.elite_frac <= 1 and args.extra_std >= 0 and args.extra_decay >= 0):
        fail("--elite-frac must lie in (0, 1], --extra-std and --extra-decay must be >= 0")
    env = make_env_or_fail(args.env_id, "--env-id")
    if not isinstance(env.action_space, gym.spaces.Box):
        fail(f"--env-id {args.env_id} has a {type(env.action_space).__name__} action space; this script needs a Box")
    env.close()


def load_checkpoint(path: str, flag: str) -> dict:
    """A run's checkpoint, or a policy file of models/ (the weights, the flags and where they came from, as
    models/README.md lists). Both hold only tensors and plain Python values, so they load with weights_only=True."""
    script = os.path.basename(__file__)
    try:  # missing, truncated, not a checkpoint, an older version's flags: all the same to the user
        ckpt = torch.load(path, weights_only=True, map_location="cpu")
        if ckpt.get("script", script) != script:  # a policy file names its script; another script's flags won't fit
            fail(f"{flag} {path}: a policy of {ckpt['script']}, not of {script}")
        ckpt["args"] = Args(**ckpt["args"])
        return ckpt
    except Exception as e:  # fail() exits with SystemExit, which is no Exception: it passes through
        fail(f"{flag} {path}: cannot load checkpoint ({describe(e)})")


def load_resumable(path: str, argv: list[str]) -> dict:
    """A checkpoint that --resume can continue exactly. A run continues with its own flags, so other flags given with
    --resume are refused rather than ignored; and an env whose state a checkpoint cannot hold (one without MuJoCo
    physics, e.g. Pendulum-v1) would continue from another state, so it is refused too."""
    others = [arg.split("=")[0] for arg in argv if arg.startswith("--") and arg.split("=")[0] != "--resume"]
    if others:
        fail(f"--resume continues the saved run with its saved flags; drop {' '.join(others)} (or start a new run)")
    ckpt = load_checkpoint(path, "--resume")
    if "envs" not in ckpt:  # a policy file keeps what acting needs, not the search and env states a run continues from
        fail(f"--resume {path}: a policy file (weights and flags) cannot continue a run; --eval-checkpoint plays it")
    if not all("physics" in state for state in ckpt["envs"]):
        fail(f"--resume {path}: {ckpt['args'].env_id} has no MuJoCo state to save, so the run cannot continue "
             "exactly; start a new run (--eval-checkpoint still evaluates this checkpoint)")  # fmt: skip
    return ckpt


# What mj_step leaves computed from the state before its last integration, and an env may read before its next step
# (Humanoid's and Ant's reward: the centre of mass or torso position before the step). mj_forward on the restored
# state would give those of the state after it, and the first reward after a resume would differ from the run's.
DERIVED = ("xpos", "xquat", "xmat", "xipos", "ximat", "subtree_com", "subtree_linvel", "subtree_angmom", "cinert",
           "cvel", "cacc", "cfrc_int", "cfrc_ext", "qfrc_actuator", "actuator_force", "geom_xpos", "geom_xmat",
           "site_xpos", "site_xmat", "sensordata")  # fmt: skip


def env_state(env: gym.Env) -> dict:
    """Everything that decides an env's future: its RNG, its time-limit counter and its MuJoCo physics."""
    state = {"rng": env.unwrapped.np_random.bit_generator.state, "steps": env.get_wrapper_attr("_elapsed_steps")}
    if isinstance(getattr(env.unwrapped, "data", None), mujoco.MjData):  # the tests' fake envs have no physics
        model, data = env.unwrapped.model, env.unwrapped.data
        physics = np.empty(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_INTEGRATION))
        mujoco.mj_getState(model, data, physics, mujoco.mjtState.mjSTATE_INTEGRATION)
        state["physics"] = torch.from_numpy(physics)
        state["derived"] = {name: torch.from_numpy(getattr(data, name).copy()) for name in DERIVED}
    if hasattr(env.unwrapped, "get_task_state"):  # the humanoid_flagrun tasks' own state (the target, its timer, ...)
        state["task"] = env.unwrapped.get_task_state()  # tensors and Python numbers, which weights_only loads
    return state


def set_env_state(env: gym.Env, state: dict) -> None:
    env.unwrapped.np_random.bit_generator.state = state["rng"]
    env.set_wrapper_attr("_elapsed_steps", state["steps"])
    if "physics" in state:
        model, data = env.unwrapped.model, env.unwrapped.data
        mujoco.mj_setState(model, data, state["physics"].numpy(), mujoco.mjtState.mjSTATE_INTEGRATION)
        mujoco.mj_forward(model, data)
        for name, value in state.get("derived", {}).items():  # none in a checkpoint of before 2026-12-06
            getattr(data, name)[...] = value.numpy()
    if "task" in state:
        env.unwrapped.set_task_state(state["task"])  # after the physics and the RNG


def open_run(args: Args, ckpt: Optional[dict]) -> tuple[str, SummaryWriter]:
    """The run folder (a resumed run keeps its checkpoint's), TensorBoard there, and wandb when --track."""
    new_run_dir = f"runs/{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
    run_dir = os.path.dirname(os.path.abspath(args.resume)) if ckpt else new_run_dir
    os.makedirs(run_dir, exist_ok=True)
    if args.track:
        import wandb

        wandb.init(project=args.wandb_project_name, sync_tensorboard=True,
                   config=vars(args), name=os.path.basename(run_dir), save_code=True)  # fmt: skip
    # on resume, drop the events logged after the checkpoint (steps > its global_step): the run logs them again
    writer = SummaryWriter(run_dir, purge_step=ckpt["global_step"] + 1 if ckpt else None)
    table = "\n".join(f"|{k}|{v}|" for k, v in vars(args).items())
    writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + table)
    return run_dir, writer


def save_checkpoint(path: str, args: Args, agent: Agent, obs_rms: RunningMeanStd, env: gym.Env, **progress) -> None:
    """Everything --resume needs to continue exactly: flags, the search distribution (in progress), the policy of its
    mean, the observation statistics, the RNG and the env state."""
    torch.save({
        "args": vars(args), **progress, "agent": agent.state_dict(), "obs_rms": obs_rms.state(),
        "envs": [env_state(env)], "torch_rng": torch.get_rng_state(),
    }, path + ".tmp")  # fmt: skip
    os.replace(path + ".tmp", path)  # write, then rename: a cut-off save keeps the last one


def restore_checkpoint(ckpt: dict, obs_rms: RunningMeanStd, env: gym.Env) -> None:
    obs_rms.load(ckpt["obs_rms"])
    set_env_state(env, ckpt["envs"][0])
    torch.set_rng_state(ckpt["torch_rng"])


def open_episodes_csv(run_dir: str, resumed_at: Optional[int]):
    """episodes.csv, one row per finished episode; on resume, without the rows written after the checkpoint."""
    path, rows = os.path.join(run_dir, "episodes.csv"), [["global_step", "episodic_return", "episodic_length"]]
    if resumed_at is not None and os.path.exists(path):
        with open(path) as f:
            rows += [row for row in list(csv.reader(f))[1:] if int(row[0]) <= resumed_at]
    csv_file = open(path, "w", newline="")
    csv.writer(csv_file).writerows(rows)
    return csv_file


def catch_stop_signals() -> list:
    """Ctrl-C or SIGTERM: note it in the returned list (a second one kills), so the loop can save and exit."""
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: stop.append(signum) or signal.signal(signum, signal.SIG_DFL))
    return stop


def log_metrics(writer: SummaryWriter, episodes: list, metrics: dict, global_step: int) -> None:
    for episode_step, episode_return, length in episodes:
        writer.add_scalar("charts/episodic_return", episode_return, episode_step)
        writer.add_scalar("charts/episodic_length", length, episode_step)
    for name, value in metrics.items():
        writer.add_scalar(name, value, global_step)


def print_progress(previous_step: int, global_step: int, sps: int, recent_returns: list, args: Args):
    """A live line on a terminal; ten lines in a log file, one as each tenth of the steps is passed."""
    tty = sys.stdout.isatty()
    if tty or 10 * global_step // args.total_timesteps > 10 * previous_step // args.total_timesteps:
        recent = f"{np.mean(recent_returns):9.1f}" if recent_returns else "        -"
        eta = (args.total_timesteps - global_step) / max(sps, 1) / 60
        line = f"step {global_step:9}/{args.total_timesteps}  SPS {sps:5}  return(100) {recent}  ETA {eta:5.1f} min"
        print("\r" + line if tty else line, end="" if tty else "\n", flush=True)


def evaluate(args: Args) -> list:
    """Run the policy of a checkpoint's mean μ (deterministic) with its frozen observation statistics; with
    --capture-video, film every episode to runs/eval__{env_id}__{time}/videos."""
    if args.eval_episodes <= 0:
        fail(f"--eval-episodes must be positive, got {args.eval_episodes}")
    ckpt = load_checkpoint(args.eval_checkpoint, "--eval-checkpoint")
    saved, obs_rms = ckpt["args"], RunningMeanStd()
    if args.capture_video:  # MuJoCo renders without a display, unless the user chose another backend
        os.environ.setdefault("MUJOCO_GL", "egl")
    render_mode = "rgb_array" if args.capture_video else None
    env = make_env_or_fail(saved.env_id, f"--eval-checkpoint {args.eval_checkpoint}", render_mode=render_mode)
    if args.capture_video:
        video_dir = f"runs/eval__{saved.env_id}__{int(time.time())}/videos"
        env = gym.wrappers.RecordVideo(follow_robot(env), video_dir, episode_trigger=lambda episode: True)
    obs_rms.load(ckpt["obs_rms"])
    agent = Agent(env.observation_space.shape[0], env.action_space.shape[0])
    agent.load_state_dict(ckpt["agent"])
    policy_mean, returns = agent.numpy_mean(), []
    for episode in range(args.eval_episodes):
        obs, _ = env.reset(seed=saved.seed + 10_000 + episode)  # seeds the training runs never used
        done, total = False, 0.0
        while not done:
            action = policy_mean(normalize_obs(obs[None], obs_rms, saved, update=False))[0]
            obs, reward, terminated, truncated, _ = env.step(action.clip(env.action_space.low, env.action_space.high))
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    env.close()  # RecordVideo writes the last episode's video on close
    mean, std = np.mean(returns), np.std(returns)
    print(f"eval {saved.env_id}: mean return {mean:.2f} +- {std:.2f} over {len(returns)} episodes")
    if args.capture_video:
        print(f"videos: {video_dir}")
    return returns


if __name__ == "__main__":
    args, ckpt = tyro.cli(Args), None
    if args.eval_checkpoint:
        evaluate(args)
        sys.exit(0)
    if args.resume:  # continue exactly: the saved flags, the search distribution, statistics, RNG and env state
        ckpt = load_resumable(args.resume, sys.argv[1:])
        args = replace(ckpt["args"], resume=args.resume)
    validate(args)
    train(args, ckpt)
