#!/usr/bin/env python3
"""A PyTorch DQN learner fed from an rlswarm replay shard that `rlswarm actor`
processes fill, publishing the weights the actors act with.

    python examples/python_learner.py [--rlswarm build/rlswarm] [--num-actors 2]
        [--seconds 300] [--replay tcp://HOST:PORT] [--seed 0]

The C++ processes do the acting: `rlswarm replay` serves one prioritized shard
(unless --replay names a running one) and each `rlswarm actor` steps 16
CartPoles, writes n-step transitions with their initial priorities and
follows the weights this script publishes (rlswarm.weights.Publisher, the
learner's wire format). This script is the learner of configs/cartpole.yaml
in Python: it samples with rlswarm.replay.Sampler, takes double-DQN steps on
the n-step targets (r + discount * Q_target(s', argmax Q(s')), the discount
already gamma^m or 0), weighs the Huber loss by PER's importance weights,
sends |TD error| back as priorities, and publishes every --publish-every
updates. The shard's rate limiter (samples_per_insert) paces the actors to
the learner.

Prints one JSON line per evaluation (20 greedy episodes on rlswarm.make_vec)
and, last, {"solved": bool, "best_eval_return": ..., ...}. Exit status 0
when solved (mean >= 475), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import rlswarm
from rlswarm import replay, weights

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "configs" / "cartpole.yaml"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rlswarm", default=os.environ.get("RLSWARM_BIN", str(REPO / "build" / "rlswarm")))
    p.add_argument("--replay", help="a running shard's endpoint (else one is started)")
    p.add_argument("--num-actors", type=int, default=2)
    p.add_argument("--seconds", type=float, default=300, help="wall-time budget")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=5e-3)
    p.add_argument("--tau", type=float, default=0.01, help="Polyak rate per update")
    p.add_argument("--publish-every", type=int, default=10, help="updates")
    p.add_argument("--eval-every", type=int, default=1000, help="updates")
    return p.parse_args()


class QNetwork(nn.Module):
    """configs/cartpole.yaml's model (hidden_sizes [64, 64]) with the C++
    model's parameter names, so its state_dict is what the actors load."""

    def __init__(self, obs_size: int, num_actions: int) -> None:
        super().__init__()
        self.fc0, self.fc1 = nn.Linear(obs_size, 64), nn.Linear(64, 64)
        self.head = nn.Linear(64, num_actions)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.relu(self.fc1(F.relu(self.fc0(x)))))


def wait_for_file(path: Path, process: subprocess.Popen, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().split()[0]
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[:2]} exited with status {process.returncode}")
        time.sleep(0.05)  # a file another process writes: nothing to wait on but the disk
    raise TimeoutError(f"no {path} after {timeout} s")


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
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    run_dir = Path(tempfile.mkdtemp(prefix="python-learner-"))
    shard: subprocess.Popen | None = None
    actors: list[subprocess.Popen] = []
    try:
        endpoint = args.replay
        if endpoint is None:  # one prioritized shard, the config's rate limiter
            shard = subprocess.Popen(
                [args.rlswarm, "replay", "--config", str(CONFIG), "--shard", "0",
                 "--bind", "tcp://127.0.0.1:*", "--endpoint-file", str(run_dir / "replay"),
                 "replay.selector=prioritized"])
            endpoint = wait_for_file(run_dir / "replay", shard)
        q, target = QNetwork(4, 2), QNetwork(4, 2)
        target.load_state_dict(q.state_dict())
        optimizer = torch.optim.Adam(q.parameters(), lr=args.lr)
        publisher = weights.Publisher()
        publisher.publish(1, {k: v.numpy() for k, v in q.state_dict().items()})
        publisher.write_endpoint_file(run_dir / "weights")
        for i in range(args.num_actors):
            actors.append(subprocess.Popen(
                [args.rlswarm, "actor", "--config", str(CONFIG), "--actor-id", str(i),
                 "--num-actors", str(args.num_actors), "--weights-endpoint-file",
                 str(run_dir / "weights"), f'replay.endpoints=["{endpoint}"]', "log.level=warn",
                 "actor.writer_max_block_s=5"]))
        sampler = replay.Sampler(endpoint, timeout=30.0)

        start = time.monotonic()
        updates, best, version, actor_versions = 0, -np.inf, 1, 0
        while time.monotonic() - start < args.seconds:
            batch = sampler.sample(args.batch_size)
            f = {k: torch.from_numpy(v) for k, v in batch.fields.items()}
            actor_versions = max(actor_versions, int(batch.policy_versions.max()))
            with torch.no_grad():  # double DQN on the n-step return
                best_next = q(f["next_observation"]).argmax(1, keepdim=True)
                next_value = target(f["next_observation"]).gather(1, best_next).squeeze(1)
                td_target = f["reward"] + f["discount"] * next_value
            taken = q(f["observation"]).gather(1, f["action"].unsqueeze(1)).squeeze(1)
            is_weights = torch.from_numpy(batch.weights.astype(np.float32))
            loss = (is_weights * F.huber_loss(taken, td_target, reduction="none")).mean()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(q.parameters(), 10.0)
            optimizer.step()
            sampler.update_priorities(batch.keys, (taken - td_target).abs().detach().numpy() + 1e-6)
            with torch.no_grad():
                for t, p in zip(target.parameters(), q.parameters()):
                    t.lerp_(p, args.tau)
            updates += 1
            if updates % args.publish_every == 0:
                version = updates + 1  # > the initial weights' version 1
                publisher.publish(version, {k: v.detach().numpy() for k, v in q.state_dict().items()})
            if updates % args.eval_every == 0:
                score = evaluate(q, 20, seed=10_000 + updates)
                best = max(best, score)
                print(json.dumps({"updates": updates, "eval_return": score,
                                  "actor_policy_version": actor_versions,
                                  "seconds": round(time.monotonic() - start, 1)}), flush=True)
                if score >= 475:
                    break
        info = sampler.info(0)
        solved = best >= 475
        print(json.dumps({"solved": solved, "best_eval_return": best, "updates": updates,
                          "published_version": version, "actor_policy_version": actor_versions,
                          "replay_size": info["table"]["size"],
                          "seconds": round(time.monotonic() - start, 1)}), flush=True)
        return 0 if solved else 1
    finally:
        # Actors first, all at once: once the learner stops sampling, the
        # shard's rate limiter holds their inserts, and each stops within its
        # writer's max_block (actor.writer_max_block_s=5 above); the shard last,
        # so that they never retry against a stopped one.
        for group in (actors, [shard] if shard else []):
            for child in group:
                child.terminate()
            for child in group:
                try:
                    child.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
