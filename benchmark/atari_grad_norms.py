"""How strongly each term of PPO's loss (9) pulls on ppo_atari.py's shared CNN trunk: the gradient norm of each term.

--rollouts rollouts of Table 5's 8 x 128 steps with a fresh network (or a checkpoint's), then, for each of their
minibatches of 256, the norm of the gradient that the policy term L^CLIP, the value term c1 L^VF and the entropy
term c2 S each put on the parameters. With one trunk for both heads, the term with the larger gradient decides
where the trunk's features go. Prints the median norm of each term over the minibatches.

    python -m benchmark.atari_grad_norms                          # fresh network, c1 = 1 (Table 5)
    python -m benchmark.atari_grad_norms --vf-coef 0.25          # the weight of the baselines and CleanRL code
    python -m benchmark.atari_grad_norms --checkpoint runs/.../checkpoint.pt
"""

import statistics
from dataclasses import dataclass
from typing import Optional

import torch
import tyro

import ppo_atari


@dataclass
class Args:
    env_id: str = "BreakoutNoFrameskip-v4"
    """the game"""
    vf_coef: float = 1.0
    """c1 on the paper's L^VF = (V - V_targ)^2 (Table 5: 1)"""
    checkpoint: Optional[str] = None
    """a ppo_atari.py checkpoint to measure instead of a fresh network"""
    rollouts: int = 5
    """rollouts to measure, each of 4 minibatches; rewards are rare early in Breakout, so the norms vary a lot"""
    seed: int = 1
    """seed of the network and the games"""


def main(args: Args) -> None:
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    settings = ppo_atari.Args(env_id=args.env_id, seed=args.seed)
    envs = ppo_atari.make_envs(settings, run_dir="")
    agent = ppo_atari.Agent(envs.single_action_space.n)
    if args.checkpoint:
        agent.load_state_dict(ppo_atari.load_checkpoint(args.checkpoint, "--checkpoint")["agent"])
    carry = ppo_atari.start_carry(envs, settings, args.seed)
    params = list(agent.parameters())
    norms = {"policy L^CLIP": [], f"value {args.vf_coef:g} L^VF": [], f"entropy {settings.ent_coef:g} S": []}
    for _ in range(args.rollouts):
        rollout = ppo_atari.collect_rollout(envs, agent, carry, settings, 0, [])
        advantages, values = ppo_atari.estimate_advantages(agent, rollout, carry.next_obs, settings)
        batch = advantages.size
        obs = torch.from_numpy(rollout["obs"].reshape(batch, 4, 84, 84))
        actions = torch.from_numpy(rollout["actions"].reshape(batch))
        old_logprobs = torch.from_numpy(rollout["logprobs"].reshape(batch))  # log π_old(a|s), as the rollout sampled
        b_advantages, b_values = torch.from_numpy(advantages.reshape(-1)), torch.from_numpy(values.reshape(-1))
        for mb in torch.randperm(batch).split(settings.minibatch_size):
            logits, new_values = agent(obs[mb])
            ratio = (ppo_atari.categorical_log_prob(logits, actions[mb]) - old_logprobs[mb]).exp()
            adv = (b_advantages[mb] - b_advantages[mb].mean()) / (b_advantages[mb].std() + 1e-8)
            terms = [
                ppo_atari.policy_objective(ratio, adv, "clip", settings.clip_coef),
                args.vf_coef * ppo_atari.value_loss(new_values, b_values[mb], b_advantages[mb] + b_values[mb]),
                settings.ent_coef * ppo_atari.categorical_entropy(logits).mean(),
            ]
            for name, term in zip(norms, terms):
                grads = torch.autograd.grad(term, params, retain_graph=True, allow_unused=True)
                flat = torch.cat([g.reshape(-1) for g in grads if g is not None])
                norms[name].append(torch.linalg.vector_norm(flat).item())
    envs.close()
    print(f"{args.env_id}, {'checkpoint ' + args.checkpoint if args.checkpoint else 'fresh network'}:")
    for name, values_ in norms.items():
        print(f"  {name:<18} gradient norm, median of {len(values_)} minibatches: {statistics.median(values_):.3f}")


if __name__ == "__main__":
    main(tyro.cli(Args))
