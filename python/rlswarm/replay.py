"""A client of rlswarm's replay service (``rlswarm replay``), and a shard served
from Python for tests and notebooks.

>>> from rlswarm import replay
>>> sampler = replay.Sampler(["tcp://127.0.0.1:5555"], timeout=10.0)
>>> batch = sampler.sample(256)     # keys, probabilities, weights, fields as NumPy
>>> sampler.update_priorities(batch.keys, new_priorities)

Every call that waits takes a deadline (``timeout`` in seconds) and releases
the GIL. Errors are :mod:`rlswarm.errors` classes: no shard reachable is
:class:`~rlswarm.errors.Unavailable` (a ``ConnectionError``), a deadline that
passed :class:`~rlswarm.errors.DeadlineExceeded` (a ``TimeoutError``), items
that do not match the service's signature
:class:`~rlswarm.errors.InvalidArgument`. torch is never imported; a sampled
array converts with ``torch.from_numpy`` without a copy.

CURVE: pass ``keys_dir`` (as ``security.keys_dir`` in a config: the folder
``rlswarm keygen`` filled) and the client key's name; the client then uses
``<keys_dir>/<client_key>.key_secret`` and ``<keys_dir>/server.key``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from typing import Any, Mapping, Sequence

import numpy as np
from gymnasium import spaces

from rlswarm import _core
from rlswarm.errors import InvalidArgument

Field = tuple[str, str, tuple[int, ...]]


def transition_signature(observation_space: spaces.Box, action_space: spaces.Space) -> list[Field]:
    """The signature of the n-step transitions rlswarm's actors write
    (replay/service/transition.h): observation, action, reward, discount,
    next_observation. Discrete actions are int64 scalars, Box actions float32."""
    obs = (str(np.dtype(observation_space.dtype)), tuple(observation_space.shape))
    if isinstance(action_space, spaces.Discrete):
        action = ("int64", ())
    elif isinstance(action_space, spaces.Box):
        action = ("float32", tuple(action_space.shape))
    else:
        raise InvalidArgument(f"no replay signature for action space {action_space}")
    return [
        ("observation", *obs),
        ("action", *action),
        ("reward", "float32", ()),
        ("discount", "float32", ()),
        ("next_observation", *obs),
    ]


def _security(keys_dir: str | None, client_key: str) -> dict[str, str | None]:
    if keys_dir is None:
        return {"client_secret_key_file": None, "server_public_key_file": None}
    return {
        "client_secret_key_file": os.path.join(keys_dir, client_key + ".key_secret"),
        "server_public_key_file": os.path.join(keys_dir, "server.key"),
    }


def _endpoints(endpoints: str | Sequence[str]) -> list[str]:
    return [endpoints] if isinstance(endpoints, str) else list(endpoints)


@dataclasses.dataclass
class SampledBatch:
    """One sample: ``fields`` maps each signature field to a [B, ...] array;
    ``keys`` (uint64) go back to :meth:`Sampler.update_priorities`; ``weights``
    are the PER importance-sampling weights, normalised over the batch."""

    keys: np.ndarray
    probabilities: np.ndarray
    weights: np.ndarray
    priorities: np.ndarray
    times_sampled: np.ndarray
    policy_versions: np.ndarray
    fields: dict[str, np.ndarray]


class Sampler:
    """Draws batches from the shards of a replay service. Thread safe.

    Args:
        endpoints: each shard's endpoint (what ``rlswarm replay`` prints).
        timeout: seconds a sample or priority update may wait (e.g. for the
            rate limiter) before DeadlineExceeded.
        keys_dir, client_key: CURVE keys (see the module docstring).
    """

    def __init__(
        self,
        endpoints: str | Sequence[str],
        *,
        timeout: float = 10.0,
        keys_dir: str | None = None,
        client_key: str = "client",
    ) -> None:
        self._core = _core.ReplaySampler(
            _endpoints(endpoints), timeout=timeout, **_security(keys_dir, client_key)
        )

    @property
    def num_shards(self) -> int:
        return self._core.num_shards

    def sample(self, batch_size: int, *, draw_seed: int | None = None) -> SampledBatch:
        """Draws batch_size items over all shards (PER across shards). Raises
        Unavailable when no shard answers its probe (0.5 s), DeadlineExceeded
        when the timeout passes first (a rate limiter holding the sample, or a
        timeout under 0.5 s)."""
        b = self._core.sample(batch_size, draw_seed)
        return SampledBatch(**b)

    def update_priorities(self, keys: np.ndarray, priorities: Any) -> tuple[int, int]:
        """Sets each key's priority; returns (updated, ignored: no longer stored)."""
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        priorities = np.ascontiguousarray(priorities, dtype=np.float64)
        if keys.shape != priorities.shape:
            raise InvalidArgument(f"{keys.shape[0]} keys, {priorities.shape} priorities")
        return self._core.update_priorities(keys, priorities)

    def info(self, shard: int = 0) -> dict[str, Any]:
        """A shard's state: table size and capacity, rates, rate limiter, priorities."""
        return json.loads(self._core.info(shard))


class Writer:
    """Appends items to the shards of a replay service, round-robin, in batches
    sent in the background (at-least-once delivery; see replay_writer.h). Thread safe.

    Args:
        endpoints: each shard's endpoint.
        signature: ``[(name, dtype, shape), ...]`` as the service's table has it;
            :func:`transition_signature` gives the actors' one.
        max_batch_items: items per batch sent.
        flush_interval: seconds after which a partial batch is sent anyway.
        insert_timeout: seconds a shard may hold an insert (rate limiter).
        max_block: seconds ``append`` may wait for room before dropping the
            oldest waiting batch (counted in ``stats()["items_dropped"]``).
        keys_dir, client_key: CURVE keys (see the module docstring).
    """

    def __init__(
        self,
        endpoints: str | Sequence[str],
        signature: Sequence[Field],
        *,
        max_batch_items: int = 256,
        flush_interval: float = 0.05,
        insert_timeout: float = 5.0,
        max_block: float = 1.0,
        keys_dir: str | None = None,
        client_key: str = "client",
    ) -> None:
        self.signature = [(n, str(np.dtype(d)), tuple(s)) for n, d, s in signature]
        self._dtypes = {n: np.dtype(d) for n, d, _ in self.signature}
        self._core = _core.ReplayWriter(
            _endpoints(endpoints),
            [(n, d, list(s)) for n, d, s in self.signature],
            max_batch_items=max_batch_items,
            flush_interval=flush_interval,
            insert_timeout=insert_timeout,
            max_block=max_block,
            **_security(keys_dir, client_key),
        )

    def append(
        self,
        fields: Mapping[str, Any] | None = None,
        *,
        priorities: Any = None,
        policy_version: int = 0,
        **named_fields: Any,
    ) -> None:
        """Appends N items: one [N, *shape] array per signature field, as a
        mapping or keywords. Values are converted to the field's dtype. Raises
        InvalidArgument (nothing appended) for a missing, unknown or misshapen field."""
        items = dict(fields or {}, **named_fields)
        arrays = {}
        for name, value in items.items():
            dtype = self._dtypes.get(name)
            if dtype is None:
                raise InvalidArgument(f"unknown field '{name}'; the signature has {list(self._dtypes)}")
            arrays[name] = np.ascontiguousarray(value, dtype=dtype)
        if priorities is not None:
            priorities = np.ascontiguousarray(priorities, dtype=np.float64)
        self._core.append(arrays, priorities, policy_version)

    def flush(self, timeout: float = 10.0) -> bool:
        """Sends what is staged and waits until every batch is acknowledged or
        dropped; False if ``timeout`` seconds passed first."""
        return self._core.flush(timeout)

    def stats(self) -> dict[str, int]:
        return self._core.stats()

    def close(self) -> None:
        """Stops sending; batches not yet acknowledged are dropped (idempotent)."""
        self._core.close()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NStepWriter:
    """Turns the steps of a vector env into n-step transitions on the C++ side,
    as ``rlswarm actor`` does (replay/service/n_step.h), and appends them with
    their initial priorities through a :class:`Writer`. Not thread safe.

    For the step from s_t with action a_t in env e the transition has
    reward ``sum_{k<m} gamma^k r_{t+k}``, discount ``gamma^m`` (0 if the
    episode terminated within the m steps) and next observation s_{t+m}, with
    m = n or fewer when the episode ended first: a termination emits every
    pending step of the episode with discount 0; a truncation (time limit)
    emits them with gamma^m and next = the final observation, to bootstrap from
    (Pardo et al. 2018).

    Priorities: pass ``q_taken`` (Q(s_t, a_t)), ``next_values``
    (max_a Q(s_{t+1}, a) of ``next_observations``) and ``final_values``
    (of ``final_observations``, read where truncated) to every
    :meth:`append_step`, and each transition gets Ape-X's initial priority
    ``|R + discount * V(next) - Q(s_t, a_t)|``. Without them (all three
    omitted) transitions are appended without priorities and the shard gives
    each the largest priority it has seen so far (1.0 on an empty shard), as
    PER inserts new items.

    Args:
        endpoints: each shard's endpoint.
        observation_space, action_space: one env's spaces; the signature is
            :func:`transition_signature` of them (the actors' one).
        num_envs: M, the rows of every step.
        n, gamma: the n-step return's n and discount.
        writer_options: the :class:`Writer`'s keywords (``max_batch_items``,
            ``keys_dir``, ...).
    """

    def __init__(
        self,
        endpoints: str | Sequence[str],
        observation_space: spaces.Box,
        action_space: spaces.Space,
        num_envs: int,
        *,
        n: int = 3,
        gamma: float = 0.99,
        **writer_options: Any,
    ) -> None:
        signature = transition_signature(observation_space, action_space)
        self._obs_dtype, self._obs_shape = np.dtype(signature[0][1]), signature[0][2]
        self._action_dtype, self._action_shape = np.dtype(signature[1][1]), signature[1][2]
        self.num_envs = num_envs
        self._accumulator = _core.NStepAccumulator(
            num_envs,
            self._obs_dtype.itemsize * int(np.prod(self._obs_shape)),
            self._action_dtype.itemsize * int(np.prod(self._action_shape)),
            n,
            gamma,
        )
        self.writer = Writer(endpoints, signature, **writer_options)

    def _rows(self, name: str, value: Any, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        array = np.ascontiguousarray(value, dtype=dtype)
        if array.shape != (self.num_envs, *shape):
            raise InvalidArgument(f"{name}: shape {array.shape}, expected {(self.num_envs, *shape)}")
        return array

    def _final_rows(self, final_observations: Any, done: np.ndarray) -> np.ndarray:
        if final_observations is None:
            if done.any():
                raise InvalidArgument("final_observations: needed when an episode ends")
            return np.zeros((self.num_envs, *self._obs_shape), dtype=self._obs_dtype)
        final = np.asarray(final_observations)
        if final.dtype == object:  # Gymnasium's info["final_obs"]: None where not done
            rows = np.zeros((self.num_envs, *self._obs_shape), dtype=self._obs_dtype)
            for i in np.flatnonzero(done):
                if final[i] is None:
                    raise InvalidArgument(f"final_observations[{i}]: None for an episode that ended")
                rows[i] = final[i]
            return rows
        return self._rows("final_observations", final, self._obs_dtype, self._obs_shape)

    def append_step(
        self,
        observations: Any,
        actions: Any,
        rewards: Any,
        terminated: Any,
        truncated: Any,
        next_observations: Any,
        final_observations: Any = None,
        *,
        q_taken: Any = None,
        next_values: Any = None,
        final_values: Any = None,
        policy_version: int = 0,
    ) -> int:
        """Records one step of the M envs (rows as ``VectorEnv.step`` returns
        them: s_t, a_t, r_t, terminated, truncated, s_{t+1} after autoreset,
        and the final observations of the envs whose episode ended, an
        [M, ...] array or Gymnasium's ``info["final_obs"]``) and appends the
        transitions it completes. Returns how many. Raises InvalidArgument
        (nothing recorded) for a misshapen column, or for only some of the
        three value columns."""
        m = self.num_envs
        given = [v is not None for v in (q_taken, next_values, final_values)]
        if any(given) and not all(given):
            raise InvalidArgument("q_taken, next_values and final_values go together (or none)")
        terminated = self._rows("terminated", terminated, np.bool_, ()).view(np.uint8)
        truncated = self._rows("truncated", truncated, np.bool_, ()).view(np.uint8)
        columns = (
            self._rows("observations", observations, self._obs_dtype, self._obs_shape),
            self._rows("actions", actions, self._action_dtype, self._action_shape),
            np.zeros(m, np.float32) if q_taken is None else self._rows("q_taken", q_taken, np.float32, ()),
            self._rows("rewards", rewards, np.float32, ()),
            terminated,
            truncated,
            self._rows("next_observations", next_observations, self._obs_dtype, self._obs_shape),
            self._final_rows(final_observations, (terminated | truncated).astype(bool)),
        )
        values = None if next_values is None else self._rows("next_values", next_values, np.float32, ())
        finals = None if final_values is None else self._rows("final_values", final_values, np.float32, ())
        self._accumulator.observe(*columns, policy_version)
        truncated_envs = self._accumulator.truncated_envs
        self._accumulator.set_final_values(
            np.zeros(len(truncated_envs), np.float32) if finals is None
            else np.ascontiguousarray(finals[truncated_envs])
        )
        self._accumulator.set_current_values(np.zeros(m, np.float32) if values is None else values)
        ready = self._accumulator.take_ready()
        count = len(ready["reward"])
        if count == 0:
            return 0
        fields = {
            "observation": ready["observation"].view(self._obs_dtype).reshape(count, *self._obs_shape),
            "action": ready["action"].view(self._action_dtype).reshape(count, *self._action_shape),
            "reward": ready["reward"],
            "discount": ready["discount"],
            "next_observation": ready["next_observation"].view(self._obs_dtype).reshape(
                count, *self._obs_shape
            ),
        }
        # One append per run of one policy version: a batch carries one.
        versions = ready["policy_version"]
        starts = [0, *(np.flatnonzero(np.diff(versions)) + 1), count]
        for begin, end in zip(starts[:-1], starts[1:]):
            self.writer.append(
                {name: column[begin:end] for name, column in fields.items()},
                priorities=None if values is None else ready["priority"][begin:end],
                policy_version=int(versions[begin]),
            )
        return count

    def flush(self, timeout: float = 10.0) -> bool:
        """:meth:`Writer.flush`: waits until what was appended is acknowledged.
        Transitions still pending (fewer than n steps into an unfinished
        episode) are not appended until their episode advances."""
        return self.writer.flush(timeout)

    def stats(self) -> dict[str, int]:
        return self.writer.stats()

    def close(self) -> None:
        self.writer.close()

    def __enter__(self) -> NStepWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Server:
    """One replay shard served by this process (for tests and notebooks; a
    training run uses ``rlswarm replay``). Stops when closed or collected.

    Args:
        signature: the table's fields.
        capacity: items kept (FIFO eviction).
        selector: ``"prioritized"`` (PER, alpha, beta) or ``"uniform"``.
        samples_per_insert, min_size_to_sample, error_buffer: the rate
            limiter (Reverb's); ``error_buffer=0`` only waits for min size.
        bind: where to listen; ``tcp://127.0.0.1:*`` picks a free port
            (read :attr:`endpoint`).
        keys_dir: CURVE: serves with ``server.key_secret`` and admits the keys
            in ``authorized_clients/``.
    """

    def __init__(
        self,
        signature: Sequence[Field],
        *,
        capacity: int = 100_000,
        selector: str = "prioritized",
        alpha: float = 0.6,
        beta: float = 0.4,
        samples_per_insert: float = 1.0,
        min_size_to_sample: int = 1,
        error_buffer: float = 0.0,
        bind: str = "tcp://127.0.0.1:*",
        keys_dir: str | None = None,
    ) -> None:
        self._core = _core.ReplayServer(
            [(n, str(np.dtype(d)), list(s)) for n, d, s in signature],
            capacity=capacity,
            selector=selector,
            alpha=alpha,
            beta=beta,
            samples_per_insert=samples_per_insert,
            min_size_to_sample=min_size_to_sample,
            error_buffer=error_buffer,
            bind=bind,
            server_secret_key_file=None if keys_dir is None else os.path.join(keys_dir, "server.key_secret"),
            authorized_clients_dir=None if keys_dir is None else os.path.join(keys_dir, "authorized_clients"),
        )

    @property
    def endpoint(self) -> str:
        return self._core.endpoint

    def info(self) -> dict[str, Any]:
        return json.loads(self._core.info())

    def close(self) -> None:
        self._core.stop()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def generate_keys(keys_dir: str, client_keys: Sequence[str] = ("client",)) -> None:
    """Fills ``keys_dir`` as ``security.keys_dir`` expects it: ``server.key``
    and ``server.key_secret``, ``<name>.key``/``.key_secret`` per client, and
    each client's public key in ``authorized_clients/``."""
    os.makedirs(os.path.join(keys_dir, "authorized_clients"), exist_ok=True)
    _core.generate_key_pair(os.path.join(keys_dir, "server"))
    for name in client_keys:
        _core.generate_key_pair(os.path.join(keys_dir, name))
        shutil.copyfile(
            os.path.join(keys_dir, name + ".key"),
            os.path.join(keys_dir, "authorized_clients", name + ".key"),
        )
