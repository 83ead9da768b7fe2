"""Do ppo_atari.py's frames differ from CleanRL's? The same Breakout frames through both preprocessing chains.

    pip install opencv-python-headless          # not a requirement of this repo: this check alone needs it
    python -m benchmark.atari_obs_check 30      # games of random play (default 20)

Ours (ale-py's AtariVectorEnv, src/ale/vector/preprocessed_env.cpp): the ALE palette's grayscale of each frame, the
max of an agent step's frames 3 and 4, then OpenCV's INTER_AREA resize to 84x84. CleanRL's ppo_atari.py (its
wrappers MaxAndSkipEnv, ResizeObservation, GrayScaleObservation, in that order): the max of frames 3 and 4 in RGB,
INTER_AREA to 84x84 in RGB, then OpenCV's RGB-to-gray. The first game also checks that the emulation of ours equals
AtariVectorEnv's observation at every step, so that the comparison is of the chains the two scripts really use.
Random actions, FIRE every 50 steps and after each lost life (so that the ball is in play); no network. Issue #48.
"""

import sys

import gymnasium as gym
import numpy as np
from ale_py import Action, ALEInterface, roms
from ale_py.vector_env import AtariVectorEnv

try:
    import cv2
except ImportError:
    print("error: this check needs OpenCV: pip install opencv-python-headless", file=sys.stderr)
    sys.exit(2)


def vector_env(seed: int) -> AtariVectorEnv:
    """ale-py's vector env as ppo_atari.py preprocesses, one frame per observation; no no-ops and FIRE on reset, so
    that its reset is reset_game and one FIRE frame, as the emulation's."""
    env = AtariVectorEnv("breakout", 1, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP, noop_max=0, frameskip=4,
                         maxpool=True, img_height=84, img_width=84, grayscale=True, stack_num=1, use_fire_reset=True,
                         repeat_action_probability=0.0, max_num_frames_per_episode=2**31 - 1, episodic_life=False,
                         life_loss_info=False, reward_clipping=False, num_threads=1)  # fmt: skip
    env.reset(seed=seed)
    return env


def play(seed: int, rng: np.random.Generator, check: bool) -> tuple[list, int, int]:
    """One game: per agent step, (mean |difference|, share of pixels that differ, largest difference) of the two
    84x84 frames; and how many steps matched AtariVectorEnv's observation out of how many checked."""
    ale = ALEInterface()
    ale.setInt("random_seed", seed)
    ale.setFloat("repeat_action_probability", 0.0)
    ale.loadROM(roms.get_rom_path("breakout"))
    actions, venv = ale.getMinimalActionSet(), vector_env(seed) if check else None
    ale.reset_game()
    ale.act(Action.FIRE)
    lives, t, diffs, matched, checked = ale.lives(), 0, [], 0, 0
    while not ale.game_over():
        a = 1 if t % 50 == 0 or ale.lives() < lives else int(rng.integers(len(actions)))  # 1: FIRE
        lives, grays, rgbs = ale.lives(), [], []
        for frame in range(4):
            ale.act(actions[a])
            if frame >= 2:  # both chains take the max of the last two frames of the four
                grays.append(ale.getScreenGrayscale().copy())
                rgbs.append(ale.getScreenRGB().copy())
        t += 1
        if ale.game_over():
            break
        ours = cv2.resize(np.maximum(*grays), (84, 84), interpolation=cv2.INTER_AREA)
        resized = cv2.resize(np.maximum(*rgbs), (84, 84), interpolation=cv2.INTER_AREA)
        theirs = cv2.cvtColor(resized, cv2.COLOR_RGB2GRAY)
        if venv is not None:
            checked += 1
            matched += int(np.array_equal(ours, venv.step(np.array([a]))[0][0, 0]))
        d = np.abs(ours.astype(int) - theirs.astype(int))
        diffs.append((d.mean(), (d > 0).mean(), d.max()))
    return diffs, matched, checked


def main(games: int) -> None:
    rng, diffs = np.random.default_rng(0), []
    for game in range(games):
        found, matched, checked = play(100 + game, rng, check=game == 0)
        diffs += found
        if game == 0:
            print(f"game 1: the emulation of ours equals AtariVectorEnv's observation on {matched} of {checked} steps")
    d = np.array(diffs)
    print(
        f"{games} games, {len(d)} steps: ours against CleanRL's 84x84 frames: mean |difference| {d[:, 0].mean():.4f}"
        f" gray levels, {100 * d[:, 1].mean():.3f}% of pixels differ, the largest difference {d[:, 2].max():.0f}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
