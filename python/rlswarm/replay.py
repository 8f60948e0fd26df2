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
