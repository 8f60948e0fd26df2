"""Gymnasium spaces from the C++ env spec (envs/spec.h)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces


def _box(shape: tuple[int, ...], dtype: np.dtype, low: list[float], high: list[float]) -> spaces.Box:
    lo = np.asarray(low, dtype=np.float64).reshape(shape)
    hi = np.asarray(high, dtype=np.float64).reshape(shape)
    if np.issubdtype(dtype, np.integer):
        # Integer boxes cannot hold infinities: an unbounded side is the dtype's range.
        info = np.iinfo(dtype)
        lo = np.where(np.isinf(lo), info.min, lo)
        hi = np.where(np.isinf(hi), info.max, hi)
    return spaces.Box(low=lo.astype(dtype), high=hi.astype(dtype), shape=shape, dtype=dtype)


def spaces_from_spec(spec: dict[str, Any]) -> tuple[spaces.Space, spaces.Space]:
    """(observation space, action space) of one env, as Gymnasium's own envs declare them."""
    obs_dtype = np.dtype(spec["observation_dtype"])
    observation = _box(
        tuple(spec["observation_shape"]), obs_dtype, spec["observation_low"], spec["observation_high"]
    )
    if spec["action_kind"] == "discrete":
        action: spaces.Space = spaces.Discrete(spec["num_actions"])
    else:
        action = _box(
            tuple(spec["action_shape"]), np.dtype(np.float32), spec["action_low"], spec["action_high"]
        )
    return observation, action
