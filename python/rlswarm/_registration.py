"""Registers every built-in env with Gymnasium under the namespace ``rlswarm``."""

from __future__ import annotations

import gymnasium

from rlswarm import _core


def gymnasium_id(name: str) -> str:
    """The Gymnasium id of a built-in env: ``"CartPole-v1"`` -> ``"rlswarm/CartPole-v1"``,
    ``"MinAtar/Breakout"`` -> ``"rlswarm/MinAtar-Breakout"`` (a Gymnasium id has
    at most one ``/``, the one after its namespace)."""
    return "rlswarm/" + name.replace("/", "-")


def register_envs() -> None:
    """Registers each built-in env (idempotent): ``gymnasium.make`` makes a
    :class:`rlswarm.Env`, ``gymnasium.make_vec`` a :class:`rlswarm.VectorEnv`
    (its ``vector_entry_point``), or a SyncVectorEnv/AsyncVectorEnv of
    :class:`rlswarm.Env` when asked for with ``vectorization_mode``."""
    for name in _core.env_names():
        env_id = gymnasium_id(name)
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(
            id=env_id,
            entry_point="rlswarm._env:Env",
            vector_entry_point="rlswarm._vector_env:make_vec",
            kwargs={"name": name},
            # The C++ env keeps its own time limit: no TimeLimit wrapper.
            max_episode_steps=None,
        )
