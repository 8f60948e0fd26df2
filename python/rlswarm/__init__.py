"""rlswarm's C++ environments from Python, as Gymnasium envs.

>>> import rlswarm
>>> envs = rlswarm.make_vec("CartPole-v1", num_envs=64)
>>> obs, info = envs.reset(seed=0)
>>> obs, rewards, terminated, truncated, info = envs.step(envs.action_space.sample())

Importing rlswarm registers every built-in env with Gymnasium as
``rlswarm/<name>`` (``"MinAtar/Breakout"`` as ``"rlswarm/MinAtar-Breakout"``):
``gymnasium.make("rlswarm/CartPole-v1")``,
``gymnasium.make_vec("rlswarm/CartPole-v1", num_envs=16)``.

``rlswarm.replay`` is a client of the replay service (``rlswarm replay``);
``rlswarm.weights`` publishes weights that ``rlswarm actor`` processes follow;
``rlswarm.launch`` and ``rlswarm.evaluate`` run the ``rlswarm`` command line
and return its results as dicts. The package links only the rlswarm libraries
that do not link LibTorch; it never imports torch.
"""

from __future__ import annotations

from rlswarm import errors, replay, weights
from rlswarm._core import env_names, set_log_level
from rlswarm._env import Env
from rlswarm._registration import gymnasium_id, register_envs
from rlswarm._vector_env import VectorEnv, make_vec
from rlswarm.cli import evaluate, launch

__version__ = "0.1.0"

register_envs()

__all__ = [
    "Env",
    "VectorEnv",
    "env_names",
    "errors",
    "evaluate",
    "gymnasium_id",
    "launch",
    "make_vec",
    "register_envs",
    "replay",
    "set_log_level",
    "weights",
]
