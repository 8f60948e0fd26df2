"""Seeds for the C++ envs, which take one uint64 per reset."""

from __future__ import annotations

import operator

import numpy as np

from rlswarm.errors import InvalidArgument


def check_seed(seed: object) -> int:
    """The seed as a Python int in [0, 2**64); InvalidArgument otherwise."""
    if isinstance(seed, (bool, np.bool_)):
        raise InvalidArgument(f"seed must be an int in [0, 2**64), got {seed!r}")
    try:
        value = operator.index(seed)
    except TypeError:
        raise InvalidArgument(f"seed must be an int in [0, 2**64), got {seed!r}") from None
    if not 0 <= value < 2**64:
        raise InvalidArgument(f"seed must be an int in [0, 2**64), got {value}")
    return value


class SeedStream:
    """Seeds for resets without one: drawn from a generator that the last explicit
    seed (or make_vec's) started, so reset(seed=s) followed by reset() is
    deterministic, as Gymnasium's seeding contract asks."""

    def __init__(self, seed: int | None) -> None:
        self._rng = np.random.default_rng(seed)

    def restart(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def next(self) -> int:
        return int(self._rng.integers(0, 2**63))
