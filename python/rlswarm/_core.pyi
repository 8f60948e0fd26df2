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

def set_log_level(level: str) -> None:
    """Level of the C++ libraries' stderr log: trace, debug, info, warn (default), error,
    critical or off."""

def generate_key_pair(path_prefix: str) -> str:
    """Writes a CURVE key pair to PREFIX.key and PREFIX.key_secret (as rlswarm keygen);
    returns the public key."""

_Field = tuple[str, str, list[int]]

class ReplayServer:
    """One replay shard served from this process."""

    def __init__(
        self,
        signature: list[_Field],
        *,
        capacity: int,
        selector: str,
        alpha: float,
        beta: float,
        samples_per_insert: float,
        min_size_to_sample: int,
        error_buffer: float,
        bind: str,
        server_secret_key_file: str | None,
        authorized_clients_dir: str | None,
    ) -> None: ...
    @property
    def endpoint(self) -> str: ...
    def info(self) -> str:
        """The shard's info JSON."""
    def stop(self) -> None:
        """Stops serving (idempotent)."""

class ReplayWriter:
    """Appends items to a replay service."""

    def __init__(
        self,
        endpoints: list[str],
        signature: list[_Field],
        *,
        max_batch_items: int,
        flush_interval: float,
        insert_timeout: float,
        max_block: float,
        client_secret_key_file: str | None,
        server_public_key_file: str | None,
    ) -> None: ...
    def append(
        self,
        fields: dict[str, npt.NDArray[Any]],
        priorities: npt.NDArray[np.float64] | None,
        policy_version: int,
    ) -> None:
        """Copies N items ({field: [N, *shape] array}) into the staging batch; may block up to
        max_block when the service falls behind."""
    def flush(self, timeout: float) -> bool:
        """Sends what is staged and waits until every batch is acknowledged or dropped; False
        if the timeout (seconds) passed first."""
    def close(self) -> None:
        """Stops sending; unacknowledged batches are dropped."""
    def stats(self) -> dict[str, int]:
        """Counters of items and batches."""

class ReplaySampler:
    """Samples from a replay service."""

    def __init__(
        self,
        endpoints: list[str],
        *,
        timeout: float,
        client_secret_key_file: str | None,
        server_public_key_file: str | None,
    ) -> None: ...
    @property
    def num_shards(self) -> int: ...
    def sample(self, batch_size: int, draw_seed: int | None) -> dict[str, Any]:
        """Draws batch_size items over all shards; blocks up to the timeout."""
    def update_priorities(
        self, keys: npt.NDArray[np.uint64], priorities: npt.NDArray[np.float64]
    ) -> tuple[int, int]:
        """Returns (updated, ignored)."""
    def info(self, shard: int) -> str:
        """A shard's info JSON."""

class NStepAccumulator:
    """n-step transitions with Ape-X initial priorities for M envs (replay/service/n_step.h)."""

    def __init__(
        self, num_envs: int, obs_bytes: int, action_bytes: int, n: int, gamma: float
    ) -> None: ...
    def observe(
        self,
        observations: npt.NDArray[Any],
        actions: npt.NDArray[Any],
        q_taken: npt.NDArray[np.float32],
        rewards: npt.NDArray[np.float32],
        terminated: npt.NDArray[np.uint8],
        truncated: npt.NDArray[np.uint8],
        next_observations: npt.NDArray[Any],
        final_observations: npt.NDArray[Any],
        policy_version: int,
    ) -> None:
        """Records one step of every env; raises FailedPrecondition while transitions of the
        previous step wait for their values."""
    def set_current_values(self, values: npt.NDArray[np.float32]) -> None:
        """V of every env's current observation, [M]."""
    def set_final_values(self, values: npt.NDArray[np.float32]) -> None:
        """V of the final observation of each env in truncated_envs."""
    @property
    def truncated_envs(self) -> list[int]:
        """The envs truncated in the last observe, in order."""
    @property
    def waiting(self) -> int:
        """Transitions emitted but waiting for a value."""
    def take_ready(self) -> dict[str, npt.NDArray[Any]]:
        """Moves the ready transitions out as columns (byte columns flat uint8)."""

class BroadcastPublisher:
    """Publishes versioned frames (rpc/broadcast.h)."""

    def __init__(self, endpoint: str, snapshot_endpoint: str) -> None: ...
    def publish(self, version: int, frames: list[npt.NDArray[Any]]) -> None:
        """Publishes the frames as one version (> the last); never blocks on subscribers."""
    @property
    def endpoint(self) -> str: ...
    @property
    def snapshot_endpoint(self) -> str: ...
    @property
    def version(self) -> int: ...

def _measure_cpp_sampler(endpoints: list[str], batch_size: int, seconds: float) -> float:
    """bench/python_bench.py's baseline: C++ Sample calls per second."""

def _measure_cpp_writer(
    endpoints: list[str], signature: list[_Field], batch_size: int, seconds: float
) -> float:
    """bench/python_bench.py's baseline: C++ items appended per second."""
