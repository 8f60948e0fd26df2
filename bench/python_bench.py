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

* The replay client (rlswarm.replay) against the C++ client (the same
  ReplayWriter/ReplaySampler called from C++ inside the extension) on one
  shard served by a child process pinned to another CPU: items appended per
  second and items sampled per second, CartPole transitions, batches of 64
  and 256.

Actions are drawn ahead of time and cycled; every env auto-resets. Nothing is
asserted: this is a measurement, recorded in bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
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


SERVE = """
import os, sys
from rlswarm import replay
os.sched_setaffinity(0, {int(sys.argv[2])})
with replay.Server(eval(sys.argv[1]), capacity=200_000, selector="prioritized") as server:
    print(server.endpoint, flush=True)
    sys.stdin.read()
"""


def replay_cases(seconds: float, rounds: int, server_cpu: int) -> list[dict]:
    from rlswarm import replay

    envs = rlswarm.make_vec("CartPole-v1", 1)
    signature = replay.transition_signature(envs.single_observation_space, envs.single_action_space)
    server = subprocess.Popen([sys.executable, "-c", SERVE, repr(signature), str(server_cpu)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    endpoint = server.stdout.readline().strip()
    results = []
    try:
        best: dict[tuple[str, str, int], float] = {}
        for _ in range(rounds):
            for batch in (64, 256):
                items = {
                    "observation": np.zeros((batch, 4), np.float32),
                    "action": np.zeros(batch, np.int64),
                    "reward": np.zeros(batch, np.float32),
                    "discount": np.zeros(batch, np.float32),
                    "next_observation": np.zeros((batch, 4), np.float32),
                }
                with replay.Writer(endpoint, signature, max_batch_items=batch) as writer:
                    start = time.perf_counter()
                    appended = 0
                    while time.perf_counter() - start < seconds:
                        writer.append(items)
                        appended += batch
                    writer.flush(30.0)
                    python_insert = appended / (time.perf_counter() - start)
                cpp_insert = rlswarm._core._measure_cpp_writer(
                    [endpoint], [(n, d, list(s)) for n, d, s in signature], batch, seconds
                )
                sampler = replay.Sampler(endpoint)
                sampler.sample(batch)
                start = time.perf_counter()
                calls = 0
                while time.perf_counter() - start < seconds:
                    sampler.sample(batch)
                    calls += 1
                python_sample = calls * batch / (time.perf_counter() - start)
                cpp_sample = rlswarm._core._measure_cpp_sampler([endpoint], batch, seconds) * batch
                for key, value in [
                    (("insert", "rlswarm.replay.Writer", batch), python_insert),
                    (("insert", "C++ ReplayWriter", batch), cpp_insert),
                    (("sample", "rlswarm.replay.Sampler", batch), python_sample),
                    (("sample", "C++ ReplaySampler", batch), cpp_sample),
                ]:
                    best[key] = max(best.get(key, 0.0), value)
        for (op, impl, batch), value in best.items():
            results.append({"op": op, "impl": impl, "batch": batch, "items_per_sec": round(value)})
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="per case and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=0, help="the CPU to pin to")
    parser.add_argument("--server-cpu", type=int, default=1, help="the replay shard's CPU")
    parser.add_argument("--no-replay", action="store_true", help="skip the replay client")
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
    replay_results = [] if args.no_replay else replay_cases(args.seconds, args.rounds, args.server_cpu)
    for batch in (64, 256):
        for op, ours, theirs in [("insert", "rlswarm.replay.Writer", "C++ ReplayWriter"),
                                 ("sample", "rlswarm.replay.Sampler", "C++ ReplaySampler")]:
            rates = {r["impl"]: r["items_per_sec"] for r in replay_results
                     if r["op"] == op and r["batch"] == batch}
            if ours in rates and rates.get(theirs):
                ratios[f"replay {op}/{batch}: Python / C++"] = round(rates[ours] / rates[theirs], 2)
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
        "replay": replay_results,
        "ratios": ratios,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
