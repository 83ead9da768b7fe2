"""The three humanoid tasks of the paper's §6.3 (Figure 4), rebuilt as gymnasium envs on MuJoCo.

The paper trained on Roboschool's v0 tasks (openai/roboschool at c1cb983, May 2017, Bullet physics). Roboschool no
longer installs, so this module rebuilds them on MuJoCo's humanoid (gymnasium's humanoid.xml, edited in code):

    HumanoidRun-v0            RoboschoolHumanoid-v0: run forward, to a target 1 km ahead (x = 1000)
    HumanoidFlagrun-v0        RoboschoolHumanoidFlagrun-v0: run to a flag that moves every 200 steps or when reached
    HumanoidFlagrunHarder-v0  RoboschoolHumanoidFlagrunHarder-v0: the same, pelted by a cube, half the starts lying

    import humanoid_flagrun  # or gymnasium.make("humanoid_flagrun:HumanoidFlagrun-v0") from any script
    env = gymnasium.make("HumanoidFlagrun-v0")  # 1000-step episodes, as Roboschool registered them

What follows Roboschool v0 (read from its source):
- Action: 17 values in [-1, 1]; torque = 0.41 × motor power × clip(a, ±1), power 100 (abdomen, hips x and z),
  300 (hips y), 200 (knees), 75 (shoulders, elbows). dt = 0.0165 s: 4 substeps of 0.004125 s.
- Observation (44 values, clipped to ±5): torso height − 0.8; sin and cos of the angle from the torso's yaw to the
  target (the only way the target enters); 0.3 × the torso's velocity rotated into its yaw frame (3); roll, pitch;
  for each of the 17 joints (qpos order) its position scaled to [-1, 1] between its limits and 0.1 × its speed;
  1 per foot touching the floor. The feet contacts lag one step, as in Roboschool (measured after the observation).
- Reward = alive + progress + electricity + joints_at_limit + feet_collision, each term in info["reward_<term>"]:
  alive +2 while the torso is above 0.78 m, else −1 and the episode ends; progress = the change of the potential
  −distance_to_target / dt (distance from the mean x, y of the robot's bodies); electricity = c × mean|a × 0.1 ×
  joint speed| − 0.425 × mean a² (c = −8.5; Harder's −2.125); joints_at_limit = −0.1 per joint past 0.99 of its
  scaled range; feet_collision = −1 per foot touching anything but the floor (the other leg, the cube).
- Flagrun: random starting yaw; flag uniform in |x| ≤ 13.125, |y| ≤ 6.25; moved when the robot is within 1 m or
  when its 200-step timer runs out (the timer also counts reset's observation, so the first move is at step 199,
  then every 200); the potential is reset on a move, so that step's progress is 0.
- Harder: half the starts lying (on the belly, torso at 0.45 m, or on the back at 0.25 m); one 0.1 m cube of
  0.6 kg, parked at (−1.5, 0, 0.05) at reset, thrown in the step where the frame counter (steps done before this
  one) is a multiple of 30 above 100 while the robot is not down: from 4 m at a random azimuth, 1 m above the
  torso, at 20–30 m/s towards where the torso will be when it arrives, plus U(−1, 1) m/s per axis. alive = 1 +
  clip(z_torso, 0, 0.8) / 0.8 while the robot has been down (z < 0.8; +1 per step down, −1 per step up) fewer
  than 170 frames, else −1 and the episode ends. potential = flag potential + 100 × that leak, with the flag part
  frozen while the torso is below 0.8 (no progress by crawling).

Where this differs from Roboschool v0:
- MuJoCo instead of Bullet: soft contacts, RK4 and PGS (gymnasium's options), so gaits and falls differ in detail.
- The body: gymnasium's humanoid.xml (same geometry as Roboschool's humanoid_symmetric.xml) with its joint
  stiffness, damping and armature kept: Bullet's MJCF import may not apply them, MuJoCo needs them to stay stable.
  Taken from humanoid_symmetric.xml: hip_y range −120..20°, friction 0.8 and condim 3 on every geom (MuJoCo takes
  the larger friction of a contact's two geoms, Bullet by default their product).
- Gears: gymnasium's humanoid gives gears 100/300/200 and 25 on the arms with controls in ±0.4; here the gears are
  Roboschool's 0.41 × power (41, 123, 82, 30.75 N·m) with controls in ±1, so the arms are 3× gymnasium's.
- Actuators in joint (qpos) order, abdomen_z first, so that action i drives joint i (gymnasium lists abdomen_y first).
- Positions are MuJoCo's body centers of mass (Bullet reports links' centers of mass); Bullet's link list for the
  mean x, y may include the helper links it makes for multi-joint bodies, here it is the 13 bodies.
- A thrown cube starts with no spin (Roboschool set only its linear velocity); it has the robot's friction, 0.8.
- The observation space is declared as [−5, 5] (Roboschool: unbounded), the range of the clipped values.
- The flag is a red ball of 0.2 m radius at 0.2 m on a 1.5 m pole, visual only; the running task has none.
- Not a difference, but beware: summaries of these tasks often quote v1 (July 2017), which changed v0 as follows;
  v0 is built here, as the paper's Figure 4 names v0 (read from openai/roboschool's history, c1cb983):
  Flagrun's electricity is not halved, the flag timer is 200 steps (v1: 150), the yaw is uniform over the circle
  (v1: ±π/16), Harder's alive bonus is 1 + clip(z_torso, 0, 0.8)/0.8 (v1: 0.5 + 1.5 × clip(0.7 z_torso + 0.3
  z_pelvis, 0, 0.7)/0.7), electricity /4 throughout (v1: /5 down, /2 up), the cube is 0.6 kg (v1: 1.2 kg).

Checkpoints: the physics lives in MuJoCo (env.unwrapped.model/data, mjSTATE_INTEGRATION holds qpos, qvel, ctrl,
the flag's mocap position, warm start), the RNG in env.unwrapped.np_random; the rest of the task (potential, target,
flag timer, frame counter, down counter, crawl potentials, feet contacts) is get_task_state() -> dict of torch
tensors and Python numbers, which loads with torch.load(weights_only=True). A script's env_state should include it,
and its set_env_state call set_task_state after restoring the MuJoCo state.
"""

import importlib
import math
import os
import xml.etree.ElementTree as ET
from typing import Literal, Optional

import gymnasium as gym
import mujoco
import numpy as np
import torch

# Roboschool's scene: 4 Bullet substeps of 0.0165 / 4 s per env step
FRAME_SKIP = 4
DT = 0.0165
# motor power per joint, in joint order; Roboschool's torque is 0.41 × power × clip(a, ±1)
JOINT_POWER = {
    "abdomen_z": 100, "abdomen_y": 100, "abdomen_x": 100,
    "right_hip_x": 100, "right_hip_z": 100, "right_hip_y": 300, "right_knee": 200,
    "left_hip_x": 100, "left_hip_z": 100, "left_hip_y": 300, "left_knee": 200,
    "right_shoulder1": 75, "right_shoulder2": 75, "right_elbow": 75,
    "left_shoulder1": 75, "left_shoulder2": 75, "left_elbow": 75,
}  # fmt: skip
POWER_SCALE = 0.41
INITIAL_Z = 0.8  # the observation's height is torso z − 0.8
# reward coefficients of Roboschool's forward walkers, × 4.25 for the humanoid's 17 joints
ELECTRICITY_COST = -8.5  # per mean |a × 0.1 × joint speed|
STALL_TORQUE_COST = -0.425  # per mean a²
JOINTS_AT_LIMIT_COST = -0.1  # per joint past 0.99 of its scaled range
FOOT_COLLISION_COST = -1.0  # per foot touching anything but the floor
# the flag's field: Roboschool's stadium half length and width (105 × 0.25, 50 × 0.25), × 0.5 "more compact"
FLAG_HALF_X, FLAG_HALF_Y = 105 * 0.25 * 0.5, 50 * 0.25 * 0.5
FLAG_TIMEOUT = 200
RUN_TARGET = (1000.0, 0.0)  # RoboschoolHumanoid: a target a kilometer ahead
# Harder: the cube and when it flies
CUBE_HALF, CUBE_MASS, CUBE_PARK = 0.05, 0.6, (-1.5, 0.0, 0.05)
THROW_EVERY, THROW_AFTER, THROW_FROM, THROW_UP, THROW_SPEED = 30, 100, 4.0, 1.0, (20.0, 30.0)
DOWN_Z, DOWN_FRAMES = 0.8, 170

TASKS = ("run", "flagrun", "harder")


def humanoid_xml(task: str, width: int, height: int) -> str:
    """gymnasium's humanoid.xml with Roboschool's motors, timestep and frictions, a flag, and Harder's cube."""
    path = os.path.join(os.path.dirname(gym.__file__), "envs", "mujoco", "assets", "humanoid.xml")
    root = ET.parse(path).getroot()
    root.find("option").set("timestep", repr(DT / FRAME_SKIP))
    # humanoid_symmetric.xml's contact: friction 0.8 with condim 3 on every geom, the floor included
    root.find("default/geom").attrib.update(condim="3", friction="0.8 0.1 0.1")
    world = root.find("worldbody")
    floor = world.find("geom[@name='floor']")
    floor.attrib.update(friction="0.8 0.1 0.1", size="100 100 0.125")  # runners leave gymnasium's 20 m square
    root.find("asset/material[@name='MatPlane']").set("texrepeat", "300 300")  # the same 0.67 m squares
    for name in ("right_hip_y", "left_hip_y"):
        world.find(f".//joint[@name='{name}']").set("range", "-120 20")  # humanoid_symmetric.xml's range
    actuators = root.find("actuator")
    for motor in list(actuators):
        actuators.remove(motor)
    for name, power in JOINT_POWER.items():  # joint order, so that action i drives joint i
        gear = repr(POWER_SCALE * power)
        ET.SubElement(actuators, "motor", name=name, joint=name, gear=gear, ctrlrange="-1 1", ctrllimited="true")
    ET.SubElement(root.find("visual"), "global", offwidth=str(width), offheight=str(height))
    if task != "run":  # the flag: seen, never touched (contype and conaffinity 0); a mocap body, so it moves freely
        flag = ET.SubElement(world, "body", name="flag", mocap="true", pos="0 0 0")
        ET.SubElement(flag, "geom", name="flag_ball", type="sphere", size="0.2", pos="0 0 0.2",
                      rgba="1 0.5 0.5 1", contype="0", conaffinity="0", mass="0")  # fmt: skip
        ET.SubElement(flag, "geom", name="flag_pole", type="cylinder", size="0.02 0.75", pos="0 0 0.75",
                      rgba="1 0.5 0.5 1", contype="0", conaffinity="0", mass="0")  # fmt: skip
    if task == "harder":  # Roboschool's cube.urdf of v0: 0.1 m, 0.6 kg
        cube = ET.SubElement(world, "body", name="cube", pos=" ".join(map(str, CUBE_PARK)))
        ET.SubElement(cube, "freejoint", name="cube")
        ET.SubElement(cube, "geom", name="cube", type="box", size=f"{CUBE_HALF} {CUBE_HALF} {CUBE_HALF}",
                      mass=str(CUBE_MASS), rgba="0.9 0.9 0.9 1")  # fmt: skip
    return ET.tostring(root, encoding="unicode")


def quat_from_rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """(w, x, y, z) of the rotation yaw about z, then pitch about y, then roll about x (Bullet's Pose.set_rpy)."""
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    return np.array([cy * cr * cp + sy * sr * sp, cy * sr * cp - sy * cr * sp,
                     cy * cr * sp + sy * sr * cp, sy * cr * cp - cy * sr * sp])  # fmt: skip


def rpy_from_quat(q: np.ndarray) -> tuple[float, float, float]:
    """Roll, pitch, yaw of a (w, x, y, z) quaternion: the inverse of quat_from_rpy (Bullet's Pose.rpy)."""
    w, x, y, z = q
    roll = math.atan2(2 * (y * z + x * w), w * w - x * x - y * y + z * z)
    pitch = math.asin(min(1.0, max(-1.0, -2 * (x * z - y * w))))
    yaw = math.atan2(2 * (x * y + z * w), w * w + x * x - y * y - z * z)
    return roll, pitch, yaw


class HumanoidEnv(gym.Env):
    """Roboschool's v0 humanoid tasks on MuJoCo; `task` picks run, flagrun or harder (see the module docstring)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 60}  # Roboschool's video rate (1 / dt is 60.6)

    def __init__(self, task: Literal["run", "flagrun", "harder"] = "flagrun", render_mode: Optional[str] = None,
                 width: int = 600, height: int = 400):  # fmt: skip
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.task, self.render_mode, self.width, self.height = task, render_mode, width, height
        self.model = mujoco.MjModel.from_xml_string(humanoid_xml(task, width, height))
        self.data = mujoco.MjData(self.model)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (len(JOINT_POWER),), np.float32)
        self.observation_space = gym.spaces.Box(-5.0, 5.0, (8 + 2 * len(JOINT_POWER) + 2,), np.float32)
        self.dt = DT
        # Harder cares less for electricity: "just stand up!"
        self.electricity_cost = ELECTRICITY_COST / 4 if task == "harder" else ELECTRICITY_COST

        m = self.model
        joint_ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name) for name in JOINT_POWER]
        self.joint_qpos = m.jnt_qposadr[joint_ids]  # (17,)
        self.joint_qvel = m.jnt_dofadr[joint_ids]  # (17,)
        self.joint_low, self.joint_high = m.jnt_range[joint_ids].T  # radians
        body = lambda name: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        self.torso = body("torso")
        # the robot's 13 bodies: the torso's subtree (the world is body 0, the flag and the cube are not in it)
        self.robot_bodies = np.array([b for b in range(m.nbody) if m.body_rootid[b] == self.torso])
        geom = lambda name: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, name)
        self.floor, self.feet = geom("floor"), np.array([geom("right_foot"), geom("left_foot")])
        if task == "harder":  # the cube's free joint: position and quaternion (7), linear and angular velocity (6)
            cube_joint = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "cube")
            self.cube_qpos, self.cube_qvel = m.jnt_qposadr[cube_joint], m.jnt_dofadr[cube_joint]
        self._gl = None  # the renderer's GL context, scene and camera, made by the first render()
        self._set_defaults()

    def _set_defaults(self) -> None:
        """The task state of a fresh episode, before reset draws its start: every field get_task_state returns."""
        self.target = np.array(RUN_TARGET)  # (x, y) the robot runs to: the flag, or a kilometer ahead
        self.potential = 0.0  # the potential of the last step; progress is its change
        self.flag_timeout = FLAG_TIMEOUT  # steps left before the flag moves
        self.frame = 0  # steps done in this episode (Roboschool's frame counter, which schedules the cube)
        self.on_ground = 0  # Harder: +1 per step down, −1 per step up; 170 ends the episode
        self.crawl_start = math.nan  # Harder: the flag potential frozen when the torso went down (nan: up)
        self.crawl_ignored = 0.0  # Harder: the flag potential gained while down, which never counts
        self.feet_contact = np.zeros(2)  # right, left foot on the floor, as of the last step (the observation lags)

    # ---------------------------------------------------------------------------------------------------------------
    # the gymnasium API

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        super().reset(seed=seed)
        rng = self.np_random
        mujoco.mj_resetData(self.model, self.data)
        self._set_defaults()
        qpos = self.data.qpos
        # every joint at U(−0.1, 0.1) rad, at rest
        qpos[self.joint_qpos] = rng.uniform(-0.1, 0.1, size=len(JOINT_POWER))
        start = "upright"
        if self.task != "run":  # random yaw; Harder: half the starts lying on the belly or the back
            yaw, pitch, z = rng.uniform(-3.14, 3.14), 0.0, 1.4
            if self.task == "harder" and rng.integers(2) == 0:  # pitch +90°: face down; 270°: face up
                start, pitch, z = (
                    ("belly", math.pi / 2, 0.45) if rng.integers(2) == 0 else ("back", 1.5 * math.pi, 0.25)
                )
            qpos[0:3] = (0.0, 0.0, z)
            qpos[3:7] = quat_from_rpy(0.0, pitch, yaw)
            self._move_flag()
        if self.task == "harder":
            qpos[self.cube_qpos : self.cube_qpos + 7] = (*CUBE_PARK, 1.0, 0.0, 0.0, 0.0)
        mujoco.mj_forward(self.model, self.data)
        self._measure()
        obs = self._observe()
        self.potential = self._potential()
        return obs, {"start": start, "target": self.target.copy()}

    def step(self, action):
        a = np.asarray(action, dtype=np.float64)
        if not np.isfinite(a).all():
            raise ValueError(f"the action must be finite, got {a}")
        # torque = 0.41 × power × clip(a, ±1): the gear holds 0.41 × power
        self.data.ctrl[:] = np.clip(a, -1.0, 1.0)
        mujoco.mj_step(self.model, self.data, nstep=FRAME_SKIP)
        mujoco.mj_forward(self.model, self.data)  # positions, velocities and contacts of the state reached
        obs, terms, terminated = self._evaluate(a)
        self.frame += 1
        info = {f"reward_{k}": v for k, v in terms.items()}
        info.update(target=self.target.copy(), on_ground=self.on_ground)
        return obs, sum(terms.values()), terminated, False, info

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        if self._gl is None:
            # headless by default; MUJOCO_GL=osmesa or glfw picks another backend, as for gymnasium's MuJoCo envs
            os.environ.setdefault("MUJOCO_GL", "egl")
            context = importlib.import_module(f"mujoco.{os.environ['MUJOCO_GL']}").GLContext(self.width, self.height)
            context.make_current()
            mjr = mujoco.MjrContext(self.model, mujoco.mjtFontScale.mjFONTSCALE_150)
            mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, mjr)
            self._gl = (context, mjr, mujoco.MjvScene(self.model, maxgeom=1000), mujoco.MjvCamera(), mujoco.MjvOption())
        context, mjr, scene, camera, option = self._gl
        context.make_current()
        mujoco.mj_kinematics(self.model, self.data)  # a flag moved since the last physics step is drawn where it is
        # follow the torso from 4 m behind it and 20° off the line to the target, 15° down: the robot at the center,
        # the flag ahead in view at any distance
        x, y = self.data.xpos[self.torso, :2]
        camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        camera.lookat[:] = (x, y, 1.0)
        camera.distance, camera.elevation = 4.0, -15.0
        camera.azimuth = math.degrees(math.atan2(self.target[1] - y, self.target[0] - x)) + 20.0
        mujoco.mjv_updateScene(self.model, self.data, option, None, camera, mujoco.mjtCatBit.mjCAT_ALL, scene)
        viewport = mujoco.MjrRect(0, 0, self.width, self.height)
        mujoco.mjr_render(viewport, scene, mjr)
        rgb = np.empty((self.height, self.width, 3), dtype=np.uint8)
        mujoco.mjr_readPixels(rgb, None, viewport, mjr)
        return rgb[::-1].copy()  # OpenGL's rows run bottom up

    def close(self):
        if self._gl is not None:
            self._gl[0].free()
            self._gl = None

    # ---------------------------------------------------------------------------------------------------------------
    # checkpoints: what decides the future besides the MuJoCo state and the RNG

    def get_task_state(self) -> dict:
        """The task's own state, as torch tensors and Python numbers (loads with torch.load(weights_only=True))."""
        return {
            "target": torch.from_numpy(self.target.copy()),
            "potential": float(self.potential),
            "flag_timeout": int(self.flag_timeout),
            "frame": int(self.frame),
            "on_ground": int(self.on_ground),
            "crawl_start": float(self.crawl_start),
            "crawl_ignored": float(self.crawl_ignored),
            "feet_contact": torch.from_numpy(self.feet_contact.copy()),
        }

    def set_task_state(self, state: dict) -> None:
        """Restore get_task_state's dict; call it after restoring the MuJoCo state and the RNG."""
        self.target = state["target"].numpy().astype(np.float64)
        self.potential = float(state["potential"])
        self.flag_timeout, self.frame, self.on_ground = state["flag_timeout"], state["frame"], state["on_ground"]
        self.crawl_start, self.crawl_ignored = float(state["crawl_start"]), float(state["crawl_ignored"])
        self.feet_contact = state["feet_contact"].numpy().astype(np.float64)
        if self.task != "run":
            self.data.mocap_pos[0, :2] = self.target
        self._measure()

    # ---------------------------------------------------------------------------------------------------------------
    # the task: one step's observation, reward terms and end, in Roboschool's order

    def _evaluate(self, a: np.ndarray) -> tuple[np.ndarray, dict, bool]:
        """After the physics of a step: the observation, the five reward terms and whether the episode ended."""
        self._measure()
        obs = self._observe()  # moves the flag when due, and then resets the potential
        alive = self._alive()  # Harder: throws the cube and counts the steps down
        potential_old, self.potential = self.potential, self._potential()
        # progress = Φ(s') − Φ(s), Φ = −distance / dt (Harder adds 100 × the alive leak)
        progress = self.potential - potential_old
        # feet: which touch the floor (the next observation's contacts), which touch anything else (a cost)
        touching_floor, touching_other = self._feet_touching()
        self.feet_contact = touching_floor.astype(np.float64)
        feet_collision = FOOT_COLLISION_COST * float(touching_other.sum())
        # electricity = c · mean|a · 0.1 q̇| + c_stall · mean a², of the unclipped action as in Roboschool
        electricity = self.electricity_cost * float(np.abs(a * self.joint_speed).mean())
        electricity += STALL_TORQUE_COST * float(np.square(a).mean())
        joints_at_limit = JOINTS_AT_LIMIT_COST * float(np.count_nonzero(np.abs(self.joint_pos) > 0.99))
        terms = {"alive": alive, "progress": progress, "electricity": electricity,
                 "joints_at_limit": joints_at_limit, "feet_collision": feet_collision}  # fmt: skip
        terminated = alive < 0 or not np.isfinite(obs).all()
        return obs, terms, bool(terminated)

    def _measure(self) -> None:
        """The robot's joints, position, orientation and velocity, from MuJoCo's data after mj_forward."""
        d = self.data
        q = d.qpos[self.joint_qpos]
        # joint position scaled to [-1, 1] between its limits; speed × 0.1 ("10 rad/s is 1")
        self.joint_pos = 2 * (q - 0.5 * (self.joint_low + self.joint_high)) / (self.joint_high - self.joint_low)
        self.joint_speed = 0.1 * d.qvel[self.joint_qvel]
        # x, y: the mean of the bodies' centers of mass; z: the torso's, "more informative than the mean"
        com = d.xipos[self.robot_bodies]
        self.body_xyz = np.array([com[:, 0].mean(), com[:, 1].mean(), d.xipos[self.torso, 2]])
        self.body_rpy = rpy_from_quat(d.xquat[self.torso])
        velocity = np.empty(6)
        mujoco.mj_objectVelocity(self.model, d, mujoco.mjtObj.mjOBJ_BODY, self.torso, velocity, 0)
        self.torso_velocity = velocity[3:].copy()  # linear, world frame, at the torso's center of mass

    def _target_geometry(self) -> tuple[float, float]:
        """The distance from the robot to the target, and the target's direction (world yaw)."""
        dx, dy = self.target - self.body_xyz[:2]
        return math.hypot(dx, dy), math.atan2(dy, dx)

    def _observe(self) -> np.ndarray:
        """Roboschool's calc_state; in the flag tasks it also moves the flag when reached or when its timer ends."""
        if self.task != "run":
            self.flag_timeout -= 1
            if self._target_geometry()[0] < 1 or self.flag_timeout <= 0:
                self._move_flag()
                self.potential = self._potential()  # a new flag is no progress
        roll, pitch, yaw = self.body_rpy
        angle_to_target = self._target_geometry()[1] - yaw
        # the torso's velocity seen from its yaw frame: rotate by −yaw
        c, s = math.cos(yaw), math.sin(yaw)
        vx, vy, vz = self.torso_velocity
        v_local = (c * vx + s * vy, -s * vx + c * vy, vz)
        more = [self.body_xyz[2] - INITIAL_Z, math.sin(angle_to_target), math.cos(angle_to_target),
                0.3 * v_local[0], 0.3 * v_local[1], 0.3 * v_local[2], roll, pitch]  # fmt: skip
        joints = np.stack([self.joint_pos, self.joint_speed], axis=1).ravel()  # (pos, speed) per joint
        obs = np.concatenate([more, joints, self.feet_contact]).astype(np.float32)
        return np.clip(obs, -5.0, 5.0)

    def _move_flag(self) -> None:
        """A new flag anywhere on the compact field, with a fresh timer; the observation sees it at once."""
        self.target = np.array([self.np_random.uniform(-FLAG_HALF_X, FLAG_HALF_X),
                                self.np_random.uniform(-FLAG_HALF_Y, FLAG_HALF_Y)])  # fmt: skip
        self.data.mocap_pos[0, :2] = self.target
        self.flag_timeout = FLAG_TIMEOUT

    def _alive_leak(self) -> float:
        """Harder's alive bonus, 1 on the floor to 2 at torso height 0.8 and above."""
        return 1.0 + float(np.clip(self.body_xyz[2], 0.0, DOWN_Z)) / DOWN_Z

    def _alive(self) -> float:
        """+2 while the torso is above 0.78, else −1 (the end). Harder: throw the cube when due, count steps down."""
        z = self.body_xyz[2]
        if self.task != "harder":
            return 2.0 if z > 0.78 else -1.0
        if self.frame % THROW_EVERY == 0 and self.frame > THROW_AFTER and self.on_ground == 0:
            self._throw_cube()
        if z < DOWN_Z:
            self.on_ground += 1
        elif self.on_ground > 0:
            self.on_ground -= 1
        # ends when the robot cannot get up in 170 frames, "to save computation and decorrelate observations"
        return self._alive_leak() if self.on_ground < DOWN_FRAMES else -1.0

    def _throw_cube(self) -> None:
        """The cube from 4 m at a random azimuth and 1 m up, at 20–30 m/s, at where the torso will be on arrival."""
        rng = self.np_random
        angle = rng.uniform(-3.14, 3.14)
        speed = rng.uniform(*THROW_SPEED)
        # the torso's position when the cube arrives, at its present velocity
        aim = self.body_xyz + self.torso_velocity * (THROW_FROM / speed)
        start = aim + np.array([THROW_FROM * math.cos(angle), THROW_FROM * math.sin(angle), THROW_UP])
        velocity = (aim - start) * speed / np.linalg.norm(aim - start) + rng.uniform(-1.0, 1.0, size=3)
        self.data.qpos[self.cube_qpos : self.cube_qpos + 7] = (*start, 1.0, 0.0, 0.0, 0.0)
        self.data.qvel[self.cube_qvel : self.cube_qvel + 6] = (*velocity, 0.0, 0.0, 0.0)
        mujoco.mj_forward(self.model, self.data)  # keep the data coherent with the cube's new place

    def _potential(self) -> float:
        """Φ = −distance / dt: one step of running at v m/s earns v · dt / dt ≈ 2-3 per step.

        Harder adds 100 × the alive leak (standing up is worth 100) and freezes the flag part while the torso is
        below 0.8, so that crawling towards the flag earns nothing.
        """
        flag_potential = -self._target_geometry()[0] / self.dt
        if self.task != "harder":
            return flag_potential
        if self.body_xyz[2] < DOWN_Z:
            if math.isnan(self.crawl_start):
                self.crawl_start = flag_potential - self.crawl_ignored
            self.crawl_ignored = flag_potential - self.crawl_start
            flag_potential = self.crawl_start
        else:
            flag_potential -= self.crawl_ignored
            self.crawl_start = math.nan
        return flag_potential + 100 * self._alive_leak()

    def _feet_touching(self) -> tuple[np.ndarray, np.ndarray]:
        """Per foot (right, left): whether it touches the floor, and whether it touches anything else."""
        contacts = self.data.contact
        pairs = contacts.geom[: self.data.ncon]  # (ncon, 2)
        floor, other = np.zeros(2, dtype=bool), np.zeros(2, dtype=bool)
        for i, foot in enumerate(self.feet):
            mine = (pairs == foot).any(axis=1)
            partner = pairs[mine].sum(axis=1) - foot  # the other geom of each of this foot's contacts
            floor[i], other[i] = (partner == self.floor).any(), (partner != self.floor).any()
        return floor, other


# gymnasium.make("humanoid_flagrun:HumanoidFlagrun-v0") imports this module, which registers the three ids
for _env_id, _task in (("HumanoidRun-v0", "run"), ("HumanoidFlagrun-v0", "flagrun"),
                       ("HumanoidFlagrunHarder-v0", "harder")):  # fmt: skip
    if _env_id not in gym.registry:
        gym.register(_env_id, "humanoid_flagrun:HumanoidEnv", max_episode_steps=1000, kwargs={"task": _task})
