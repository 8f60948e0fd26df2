#!/usr/bin/env python3
"""DQN on CartPole in the style of CleanRL's dqn.py, stepping rlswarm.make_vec.

    python examples/cleanrl_dqn.py [--total-steps N] [--seed S] [--num-envs N]

Needs torch (any build: CPU is plenty) beside the rlswarm package. The
structure is CleanRL's single-file DQN (Huang et al. 2022) with
`rlswarm.make_vec("CartPole-v1", 4)` in place of a SyncVectorEnv of
Gymnasium's CartPole; the hyperparameters differ (Adam 1e-3, Huber loss,
Polyak target updates with tau 0.005, exploration over 25k env steps) so that
it solves CartPole in ~100k env steps instead of CleanRL's 500k budget.
Same-step autoreset: where an episode ended, the transition's next
observation is `info["final_obs"][i]`, and only `terminated` (not truncated)
stops the bootstrap (Gymnasium's semantics).

Prints one JSON line per evaluation and, last, {"solved": bool, ...}: solved
when 20 greedy episodes average >= 475 (Gymnasium's threshold for
CartPole-v1). Exit status 0 when solved, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import rlswarm


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--num-envs", type=int, default=4)
    p.add_argument("--total-steps", type=int, default=120_000, help="env steps, all envs")
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--buffer-size", type=int, default=50_000)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--tau", type=float, default=0.005, help="target update rate, per update")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--start-e", type=float, default=1.0)
    p.add_argument("--end-e", type=float, default=0.05)
    p.add_argument("--exploration-steps", type=int, default=25_000, help="env steps to end-e")
    p.add_argument("--learning-starts", type=int, default=2_000)
    p.add_argument("--updates-per-step", type=float, default=0.5, help="per env step")
    p.add_argument("--eval-every", type=int, default=5_000, help="env steps")
    return p.parse_args()


class QNetwork(nn.Module):
    def __init__(self, obs_size: int, num_actions: int) -> None:
        super().__init__()
        self.network = nn.Sequential(
            nn.Linear(obs_size, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, num_actions),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)


class ReplayBuffer:
    """A ring of NumPy arrays; sample() draws uniformly."""

    def __init__(self, capacity: int, obs_shape: tuple[int, ...]) -> None:
        self.obs = np.zeros((capacity, *obs_shape), np.float32)
        self.next_obs = np.zeros((capacity, *obs_shape), np.float32)
        self.actions = np.zeros(capacity, np.int64)
        self.rewards = np.zeros(capacity, np.float32)
        self.terminated = np.zeros(capacity, np.float32)
        self.capacity, self.size, self.pos = capacity, 0, 0

    def add(self, obs, next_obs, actions, rewards, terminated) -> None:
        idx = (self.pos + np.arange(len(actions))) % self.capacity
        self.obs[idx], self.next_obs[idx], self.actions[idx] = obs, next_obs, actions
        self.rewards[idx], self.terminated[idx] = rewards, terminated
        self.pos = (self.pos + len(actions)) % self.capacity
        self.size = min(self.size + len(actions), self.capacity)

    def sample(self, n: int, rng: np.random.Generator):
        idx = rng.integers(0, self.size, n)
        return [torch.from_numpy(a[idx]) for a in
                (self.obs, self.next_obs, self.actions, self.rewards, self.terminated)]


def evaluate(q: QNetwork, episodes: int, seed: int) -> float:
    envs = rlswarm.make_vec("CartPole-v1", episodes, autoreset_mode="next_step")
    obs, _ = envs.reset(seed=seed)
    returns, done = np.zeros(episodes), np.zeros(episodes, bool)
    while not done.all():
        with torch.no_grad():
            actions = q(torch.from_numpy(np.array(obs))).argmax(1).numpy()
        obs, rewards, terminated, truncated, _ = envs.step(actions)
        returns += np.where(done, 0.0, rewards)
        done |= terminated | truncated
    return float(returns.mean())


def main() -> int:
    args = parse_args()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)

    # copy=True: the observations are stored in the replay buffer and kept
    # across steps, so each step must return new arrays, not the C++ buffers.
    envs = rlswarm.make_vec("CartPole-v1", args.num_envs, copy=True)
    obs_shape = envs.single_observation_space.shape
    q = QNetwork(int(np.prod(obs_shape)), int(envs.single_action_space.n))
    target = QNetwork(int(np.prod(obs_shape)), int(envs.single_action_space.n))
    target.load_state_dict(q.state_dict())
    optimizer = torch.optim.Adam(q.parameters(), lr=args.learning_rate)
    rb = ReplayBuffer(args.buffer_size, obs_shape)

    start = time.time()
    obs, _ = envs.reset(seed=args.seed)
    steps, updates, owed_updates, next_eval, best = 0, 0, 0.0, args.eval_every, -np.inf
    while steps < args.total_steps:
        epsilon = max(args.end_e, args.start_e - (args.start_e - args.end_e) * steps
                      / args.exploration_steps)
        with torch.no_grad():
            greedy = q(torch.from_numpy(obs)).argmax(1).numpy()
        explore = rng.random(args.num_envs) < epsilon
        actions = np.where(explore, rng.integers(0, 2, args.num_envs), greedy)
        next_obs, rewards, terminated, truncated, info = envs.step(actions)
        real_next_obs = next_obs.copy()
        if "_final_obs" in info:
            for i in np.flatnonzero(info["_final_obs"]):
                real_next_obs[i] = info["final_obs"][i]
        rb.add(obs, real_next_obs, actions, rewards, terminated)
        obs = next_obs
        steps += args.num_envs

        if steps < args.learning_starts:
            continue
        owed_updates += args.num_envs * args.updates_per_step
        while owed_updates >= 1:
            owed_updates -= 1
            b_obs, b_next, b_actions, b_rewards, b_terminated = rb.sample(args.batch_size, rng)
            with torch.no_grad():
                target_max = target(b_next).max(1).values
                td_target = b_rewards + args.gamma * target_max * (1 - b_terminated)
            old_val = q(b_obs).gather(1, b_actions.unsqueeze(1)).squeeze(1)
            loss = F.smooth_l1_loss(old_val, td_target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            updates += 1
            with torch.no_grad():  # Polyak averaging, CleanRL's tau
                for t, p in zip(target.parameters(), q.parameters()):
                    t.lerp_(p, args.tau)

        if steps >= next_eval:
            next_eval += args.eval_every
            score = evaluate(q, 20, seed=10_000 + steps)
            best = max(best, score)
            print(json.dumps({"env_steps": steps, "updates": updates, "eval_return": score,
                              "seconds": round(time.time() - start, 1)}), flush=True)
            if score >= 475:
                break
    solved = best >= 475
    print(json.dumps({"solved": solved, "best_eval_return": best, "env_steps": steps,
                      "seconds": round(time.time() - start, 1)}), flush=True)
    return 0 if solved else 1


if __name__ == "__main__":
    raise SystemExit(main())
