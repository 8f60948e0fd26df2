"""rlswarm.Env: one built-in env behind Gymnasium's single-env API."""

from __future__ import annotations

import operator
from typing import Any

import gymnasium
import numpy as np

from rlswarm import _core
from rlswarm._seeding import check_seed
from rlswarm._spaces import spaces_from_spec
from rlswarm.errors import InvalidArgument


class Env(gymnasium.Env):
    """One built-in env (``gymnasium.make("rlswarm/CartPole-v1")`` makes one).

    Each ``reset`` and ``step`` returns a new observation array. The time limit
    (``max_episode_steps``) is the C++ env's own, so Gymnasium adds no
    TimeLimit wrapper. Stepping after an episode ended, without a reset,
    raises :class:`rlswarm.errors.FailedPrecondition`; an action outside the
    action space raises :class:`rlswarm.errors.InvalidArgument`, and a float
    action for a discrete env ``TypeError``. For many envs at once use
    :func:`rlswarm.make_vec`, which is much faster per env step.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, name: str, **env_options: Any) -> None:
        self._core = _core.Env(name, **env_options)
        spec = self._core.spec()
        self.env_name: str = spec["name"]
        self.observation_space, self.action_space = spaces_from_spec(spec)
        self._discrete = spec["action_kind"] == "discrete"

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Starts an episode; with a seed the env is reseeded first, without one
        it continues its random stream."""
        if options:
            raise InvalidArgument(f"{self.env_name} takes no reset options, got {options!r}")
        value = None if seed is None else check_seed(seed)
        super().reset(seed=value)
        obs = np.empty(self.observation_space.shape, self.observation_space.dtype)
        self._core.reset(value, obs)
        return obs, {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs = np.empty(self.observation_space.shape, self.observation_space.dtype)
        if self._discrete:
            if isinstance(action, (bool, np.bool_)) or (
                isinstance(action, np.ndarray) and not np.issubdtype(action.dtype, np.integer)
            ):
                raise TypeError(f"{self.env_name} has discrete actions: got {action!r}")
            try:
                index = operator.index(action)
            except TypeError:
                raise TypeError(
                    f"{self.env_name} has discrete actions: expected an int, got {action!r}"
                ) from None
            reward, terminated, truncated = self._core.step_discrete(index, obs)
        else:
            array = np.asarray(action)
            if not np.issubdtype(array.dtype, np.floating):
                raise TypeError(
                    f"{self.env_name} has continuous actions: expected floats, got {action!r}"
                )
            if array.shape != self.action_space.shape:
                raise InvalidArgument(
                    f"{self.env_name}: action of shape {array.shape}, "
                    f"expected {self.action_space.shape}"
                )
            array = np.ascontiguousarray(array, dtype=np.float32)
            reward, terminated, truncated = self._core.step_continuous(array, obs)
        return obs, reward, terminated, truncated, {}
