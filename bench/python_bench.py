#!/usr/bin/env python3
"""Env steps per second from Python: rlswarm.make_vec against the alternatives.

    .venv/bin/python bench/python_bench.py [--seconds S] [--rounds R] [--cpu N]

Prints JSON. One process pinned to one CPU steps every implementation in
turn (round-robin over R rounds, best round kept), so the machine's load
drifts over all alike and the ratios are what to compare:

* CartPole-v1 at 1, 16 and 64 envs: rlswarm.make_vec (views, and copy=True),
  rlswarm's extension alone (no Gymnasium layer), Gymnasium's SyncVectorEnv of
  its own CartPole, and EnvPool's Gymnasium API (num_threads=1) if installed.
* MinAtar Breakout at 1, 16 and 64 envs: rlswarm.make_vec against the minatar
  package (its Gymnasium env in a SyncVectorEnv, and its raw Environment.act
  loop for 1 env), minimal action sets on both sides.

Actions are drawn ahead of time and cycled; every env auto-resets. Nothing is
asserted: this is a measurement, recorded in bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from typing import Callable

import gymnasium
import numpy as np

import rlswarm

ACTION_BATCHES = 64  # distinct action arrays, cycled


def timed_steps(step: Callable[[np.ndarray], object], actions: list, seconds: float) -> float:
    """Calls step(actions[k % len]) for about `seconds`; returns calls per second."""
    for a in actions[:8]:  # warm-up
        step(a)
    calls = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for a in actions:
            step(a)
        calls += len(actions)
        now = time.perf_counter()
        if now >= deadline:
            return calls / (now - start)


def random_actions(rng: np.random.Generator, n: int, num_envs: int, dtype) -> list:
    return [rng.integers(0, n, size=num_envs).astype(dtype) for _ in range(ACTION_BATCHES)]


def cartpole_cases(num_envs: int, rng: np.random.Generator) -> dict[str, Callable[[float], float]]:
    cases: dict[str, Callable[[float], float]] = {}
    actions = random_actions(rng, 2, num_envs, np.int64)

    def make_rlswarm(copy: bool):
        def run(seconds: float) -> float:
            envs = rlswarm.make_vec("CartPole-v1", num_envs, copy=copy)
            envs.reset(seed=0)
            return timed_steps(envs.step, actions, seconds) * num_envs

        return run

    cases["rlswarm.make_vec"] = make_rlswarm(False)
    cases["rlswarm.make_vec(copy=True)"] = make_rlswarm(True)

    def core(seconds: float) -> float:
        envs = rlswarm._core.VectorEnv("CartPole-v1", num_envs)
        envs.reset(0)
        return timed_steps(envs.step, actions, seconds) * num_envs

    cases["rlswarm._core (no Gymnasium layer)"] = core

    def sync(seconds: float) -> float:
        envs = gymnasium.vector.SyncVectorEnv(
            [lambda: gymnasium.make("CartPole-v1") for _ in range(num_envs)]
        )
        envs.reset(seed=0)
        return timed_steps(envs.step, actions, seconds) * num_envs

    cases["gymnasium.SyncVectorEnv"] = sync
    try:
        import envpool
    except ImportError:
        return cases
    envpool_actions = [a.astype(np.int32) for a in actions]

    def pool(seconds: float) -> float:
        envs = envpool.make(
            "CartPole-v1",
            env_type="gymnasium",
            num_envs=num_envs,
            batch_size=num_envs,
            num_threads=1,
            seed=0,
        )
        envs.reset()
        return timed_steps(envs.step, envpool_actions, seconds) * num_envs

    cases["envpool"] = pool
    return cases


def breakout_cases(num_envs: int, rng: np.random.Generator) -> dict[str, Callable[[float], float]]:
    cases: dict[str, Callable[[float], float]] = {}
    actions = random_actions(rng, 3, num_envs, np.int64)

    def ours(seconds: float) -> float:
        envs = rlswarm.make_vec("MinAtar/Breakout", num_envs, minimal_action_set=True)
        envs.reset(seed=0)
        return timed_steps(envs.step, actions, seconds) * num_envs

    cases["rlswarm.make_vec"] = ours
    try:
        import minatar
        import minatar.gym
    except ImportError:
        return cases
    minatar.gym.register_envs()

    def sync(seconds: float) -> float:
        envs = gymnasium.vector.SyncVectorEnv(
            [lambda: gymnasium.make("MinAtar/Breakout-v1") for _ in range(num_envs)]
        )
        envs.reset(seed=0)
        return timed_steps(envs.step, actions, seconds) * num_envs

    cases["minatar (gymnasium.SyncVectorEnv)"] = sync
    if num_envs == 1:
        game = minatar.Environment("breakout")
        game.seed(0)
        action_set = game.minimal_action_set()

        def raw_step(a: np.ndarray) -> None:
            _, terminal = game.act(action_set[a[0]])
            if terminal:
                game.reset()

        def raw(seconds: float) -> float:
            game.reset()
            return timed_steps(raw_step, actions, seconds)

        cases["minatar (Environment.act, no Gymnasium)"] = raw
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="per case and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=0, help="the CPU to pin to")
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.cpu})
    rng = np.random.default_rng(0)

    cases = []
    for num_envs in (1, 16, 64):
        for impl, run in cartpole_cases(num_envs, rng).items():
            cases.append(("CartPole-v1", impl, num_envs, run))
    for num_envs in (1, 16, 64):
        for impl, run in breakout_cases(num_envs, rng).items():
            cases.append(("MinAtar/Breakout", impl, num_envs, run))

    best: dict[tuple[str, str, int], float] = {}
    for _ in range(args.rounds):
        for env, impl, num_envs, run in cases:
            key = (env, impl, num_envs)
            best[key] = max(best.get(key, 0.0), run(args.seconds))

    results = [
        {"env": env, "impl": impl, "num_envs": n, "steps_per_sec": round(v)}
        for (env, impl, n), v in best.items()
    ]
    ratios = {}
    for n in (1, 16, 64):
        ours = best[("CartPole-v1", "rlswarm.make_vec", n)]
        for other in ("envpool", "gymnasium.SyncVectorEnv"):
            if ("CartPole-v1", other, n) in best:
                ratios[f"CartPole-v1/{n}: rlswarm / {other}"] = round(
                    ours / best[("CartPole-v1", other, n)], 2
                )
        other = ("MinAtar/Breakout", "minatar (gymnasium.SyncVectorEnv)", n)
        if other in best:
            ratios[f"MinAtar/Breakout/{n}: rlswarm / minatar"] = round(
                best[("MinAtar/Breakout", "rlswarm.make_vec", n)] / best[other], 2
            )
    versions = {"python": platform.python_version(), "numpy": np.__version__,
                "gymnasium": gymnasium.__version__, "rlswarm": rlswarm.__version__}
    for name in ("envpool", "minatar"):
        try:
            from importlib.metadata import version

            versions[name] = version(name)
        except Exception:
            versions[name] = None
    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"processor": platform.processor() or platform.machine(),
                    "cpus": os.cpu_count(), "pinned_to_cpu": args.cpu,
                    "load_average": os.getloadavg()},
        "versions": versions,
        "seconds": args.seconds,
        "rounds": args.rounds,
        "results": results,
        "ratios": ratios,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
