"""Publishing a model's weights from Python the way rlswarm's learner does,
so that ``rlswarm actor --weights-endpoint-file FILE`` processes act with them.

>>> from rlswarm import weights
>>> publisher = weights.Publisher()
>>> publisher.write_endpoint_file("weights")        # for `rlswarm actor`
>>> publisher.publish(1, {"fc0.weight": w0, ...})  # version 1, 2, ...

The wire format is the learner's (models/weights_wire.h): one JSON frame
``{"names": [...], "shard": 0, "num_shards": 1}`` and then one float32 (or
float64) frame per parameter, shape kept. The actor loads parameters by name
and refuses a blob that lacks one or has a wrong shape (it logs that and
keeps the weights it had), so the names and shapes must be its model's: for
``model.hidden_sizes: [64, 64]`` on CartPole, ``fc0.weight`` [64, 4],
``fc0.bias`` [64], ``fc1.weight`` [64, 64], ``fc1.bias`` [64],
``head.weight`` [2, 64], ``head.bias`` [2] (a torch ``nn.Linear``'s layout).
torch is never imported: pass NumPy arrays (``tensor.detach().numpy()``).
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

import numpy as np

from rlswarm import _core
from rlswarm.errors import InvalidArgument


class Publisher:
    """Binds a PUB endpoint and a snapshot endpoint (late joiners get the
    current version at once) and publishes versions on them; publishing
    copies the arrays and never blocks on subscribers. Thread safe. Raises
    Unavailable if an endpoint cannot be bound.

    Args:
        bind, snapshot_bind: where to listen; ``tcp://127.0.0.1:*`` picks a
            free port (read :attr:`endpoint`, :attr:`snapshot_endpoint`).
    """

    def __init__(self, bind: str = "tcp://127.0.0.1:*", snapshot_bind: str = "tcp://127.0.0.1:*") -> None:
        self._core = _core.BroadcastPublisher(bind, snapshot_bind)

    @property
    def endpoint(self) -> str:
        return self._core.endpoint

    @property
    def snapshot_endpoint(self) -> str:
        return self._core.snapshot_endpoint

    @property
    def version(self) -> int:
        """The last version published (0 before any)."""
        return self._core.version

    def write_endpoint_file(self, path: str | os.PathLike[str]) -> None:
        """Writes what ``rlswarm actor --weights-endpoint-file`` reads: the PUB
        and snapshot endpoints, one a line (renamed into place, so a reader
        never sees half of it)."""
        tmp = f"{os.fspath(path)}.tmp"
        with open(tmp, "w") as f:
            f.write(f"{self.endpoint}\n{self.snapshot_endpoint}\n")
        os.replace(tmp, path)

    def publish(self, version: int, named: Mapping[str, Any]) -> None:
        """Publishes the parameters (name -> array) as ``version``, which must
        be greater than the last (InvalidArgument otherwise). Arrays that are
        not float64 travel as float32, as the learner sends them."""
        names, frames = [], []
        for name, value in named.items():
            array = np.asarray(value)
            if array.dtype != np.float64:
                array = array.astype(np.float32, copy=False)
            names.append(str(name))
            frames.append(np.ascontiguousarray(array))
        if not names:
            raise InvalidArgument("weights: nothing to publish")
        header = json.dumps({"names": names, "shard": 0, "num_shards": 1}).encode()
        self._core.publish(version, [np.frombuffer(header, np.uint8), *frames])
