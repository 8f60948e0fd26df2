"""Type stubs of the extension module rlswarm._core (python/src/*.cc)."""

from typing import Any

import numpy as np
import numpy.typing as npt

def env_names() -> list[str]:
    """Every built-in env name, sorted."""

class Env:
    """One built-in environment (see rlswarm.Env for the Gymnasium API)."""

    def __init__(
        self,
        name: str,
        *,
        max_episode_steps: int | None = None,
        sticky_action_prob: float | None = None,
        difficulty_ramping: bool | None = None,
        minimal_action_set: bool | None = None,
    ) -> None: ...
    def spec(self) -> dict[str, Any]:
        """The env spec as a dict of plain values."""
    def reset(self, seed: int | None, out: npt.NDArray[Any]) -> None:
        """Starts an episode (reseeding first if seed is not None) and writes its first
        observation into out."""
    def step_discrete(self, action: int, out: npt.NDArray[Any]) -> tuple[float, bool, bool]:
        """Steps with a discrete action, writes the observation into out and returns
        (reward, terminated, truncated)."""
    def step_continuous(
        self, action: npt.NDArray[np.float32], out: npt.NDArray[Any]
    ) -> tuple[float, bool, bool]:
        """Steps with a float32 action array; as step_discrete otherwise."""

class VectorEnv:
    """N built-in environments stepped as a batch (see rlswarm.make_vec)."""

    def __init__(
        self,
        name: str,
        num_envs: int,
        *,
        num_threads: int = 1,
        autoreset_mode: str = "same_step",
        max_episode_steps: int | None = None,
        sticky_action_prob: float | None = None,
        difficulty_ramping: bool | None = None,
        minimal_action_set: bool | None = None,
    ) -> None: ...
    @property
    def num_envs(self) -> int: ...
    def spec(self) -> dict[str, Any]:
        """The env spec as a dict of plain values."""
    def reset(self, seed: int) -> None:
        """Resets every env (env i seeded from (seed, i)); releases the GIL."""
    def step(self, actions: npt.NDArray[np.int64] | npt.NDArray[np.float32]) -> int:
        """Steps every env with a C-contiguous int64 (num_envs,) or float32 (num_envs,
        *action_shape) array; releases the GIL; returns how many episodes ended."""
    def observations(self) -> npt.NDArray[Any]:
        """Read-only view of the observations, (num_envs, *obs_shape)."""
    def final_observations(self) -> npt.NDArray[Any]:
        """Read-only view of the last observation of each env's latest ended episode."""
    def rewards(self) -> npt.NDArray[np.float32]:
        """Read-only float32 view of the rewards of the last step."""
    def terminated(self) -> npt.NDArray[np.bool_]:
        """Read-only bool view of the terminated flags of the last step."""
    def truncated(self) -> npt.NDArray[np.bool_]:
        """Read-only bool view of the truncated flags of the last step."""
    def buffer_address(self) -> int:
        """Address of the C++ observation buffer (tests check the views share it)."""
