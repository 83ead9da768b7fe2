"""Time from a script's start to its first env step, in parts: imports, envs and network, the optimizer, the step.

    python benchmark/startup.py --scripts ppo_continuous.py trpo.py reinforce_baseline.py --repeats 5

Each measurement is a new Python process (imports are what is measured, so nothing may be cached in this one) that
imports the script as a module, builds its envs and Agent, constructs the optimizer the script uses (fused Adam),
and takes one env step. Median of --repeats processes per script. Constructing torch.optim.Adam imports
torch._dynamo (torch.optim wraps its own methods in torch._disable_dynamo), which is why it has a line of its own.
"""

import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass, field

import tyro

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = """
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import importlib
script = importlib.import_module(sys.argv[2])
import torch
t1 = time.perf_counter()
args = script.Args(env_id=sys.argv[3])
envs = script.make_envs(args, "unused")
agent = script.Agent(envs[0].observation_space.shape[0], envs[0].action_space.shape[0], args.orthogonal_init)
t2 = time.perf_counter()
torch.optim.Adam(agent.parameters(), lr=1e-3, eps=args.adam_eps, fused=True)  # fused Adam, as the scripts
t3 = time.perf_counter()
envs[0].reset(seed=1)
envs[0].step(envs[0].action_space.sample())
t4 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "envs and agent": t2 - t1, "Adam": t3 - t2, "first step": t4 - t3}))
"""


@dataclass
class Args:
    scripts: list[str] = field(default_factory=lambda: ["ppo_continuous.py"])
    """MuJoCo training scripts at the top of the repo"""
    env_id: str = "Hopper-v4"
    """the task whose env is built and stepped"""
    repeats: int = 5
    """processes per script; the median of each part is reported"""


def main(args: Args) -> None:
    print("| script | imports (s) | envs and agent (s) | Adam, with torch._dynamo (s) | first step (s) | total (s) |")
    print("|-|-|-|-|-|-|")
    for script in args.scripts:
        parts = []
        for _ in range(args.repeats):
            cmd = [sys.executable, "-c", PROBE, ROOT, script.removesuffix(".py"), args.env_id]
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            if proc.returncode != 0:
                sys.exit(f"error: {script} failed: {proc.stderr.strip().splitlines()[-1:]}")
            parts.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        medians = {key: statistics.median(p[key] for p in parts) for key in parts[0]}
        total = statistics.median(sum(p.values()) for p in parts)
        print(f"| {script} | " + " | ".join(f"{v:.3f}" for v in medians.values()) + f" | {total:.2f} |")


if __name__ == "__main__":
    main(tyro.cli(Args))
