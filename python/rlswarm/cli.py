"""The ``rlswarm`` command line from Python: ``launch`` and ``evaluate`` run it
as a child process and return its JSON result as a dict.

The binary is ``binary=``, else ``$RLSWARM_BIN``, else ``rlswarm`` on PATH
(``scripts/build.sh`` builds it as ``build/rlswarm``). Errors: a config the CLI
refuses (its exit status 2) raises :class:`ConfigError`; any other failure
the :mod:`rlswarm.errors` class the CLI names (``error (UNAVAILABLE): ...``),
else :class:`rlswarm.errors.Error`, with the end of its stderr; a run still
going at ``timeout`` seconds is stopped (SIGTERM, as Ctrl-C) and raises
:class:`rlswarm.errors.DeadlineExceeded`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any, Mapping, Sequence

from rlswarm import errors

Overrides = Mapping[str, Any] | Sequence[str]


class ConfigError(errors.InvalidArgument):
    """The CLI refused the config or an override (exit status 2)."""


_ERROR_LINE = re.compile(r"^error \(([A-Z_]+)\): ", re.MULTILINE)
_BY_NAME = {
    "INVALID_ARGUMENT": errors.InvalidArgument,
    "NOT_FOUND": errors.NotFound,
    "FAILED_PRECONDITION": errors.FailedPrecondition,
    "DEADLINE_EXCEEDED": errors.DeadlineExceeded,
    "UNAVAILABLE": errors.Unavailable,
    "RESOURCE_EXHAUSTED": errors.ResourceExhausted,
    "CANCELLED": errors.Cancelled,
    "DATA_LOSS": errors.DataLoss,
    "INTERNAL": errors.Internal,
}


def find_binary(binary: str | os.PathLike | None = None) -> str:
    """The rlswarm executable to run; NotFound if there is none."""
    candidate = binary or os.environ.get("RLSWARM_BIN") or shutil.which("rlswarm")
    if not candidate or not Path(candidate).is_file():
        raise errors.NotFound(
            "no rlswarm binary: pass binary=, set RLSWARM_BIN, or put rlswarm on PATH "
            "(scripts/build.sh builds build/rlswarm)"
        )
    return str(candidate)


def _override_args(overrides: Overrides) -> list[str]:
    if isinstance(overrides, Mapping):
        return [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in overrides.items()]
    return [str(o) for o in overrides]


def _run(args: list[str], timeout: float | None) -> dict[str, Any]:
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)  # the CLI stops a run cleanly on SIGTERM
        try:
            process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
        raise errors.DeadlineExceeded(f"{' '.join(args[:2])}: still running after {timeout} s")
    tail = stderr[-4000:]
    if process.returncode == 2:
        raise ConfigError(tail.strip())
    if process.returncode != 0:
        match = _ERROR_LINE.search(stderr)
        cls = _BY_NAME.get(match.group(1), errors.Error) if match else errors.Error
        raise cls(f"{' '.join(args[:2])} exited with status {process.returncode}: {tail.strip()}")
    start = stdout.find("{")
    if start < 0:
        raise errors.Internal(f"{' '.join(args[:2])} printed no JSON: {stdout[-2000:]}")
    return json.loads(stdout[start:])


def launch(
    config: str | os.PathLike,
    overrides: Overrides = (),
    *,
    run_dir: str | os.PathLike | None = None,
    timeout: float | None = None,
    binary: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Runs ``rlswarm launch CONFIG OVERRIDES...`` to its end and returns the
    run's summary (what it writes to summary.json): solved, returns, times,
    the run directory. ``overrides``: ``{"launch.max_wall_time_s": 60}`` or
    ``["launch.max_wall_time_s=60"]``."""
    args = [find_binary(binary), "launch", str(config), *_override_args(overrides)]
    if run_dir is not None:
        args += ["--run-dir", str(run_dir)]
    return _run(args, timeout)


def evaluate(
    config: str | os.PathLike | None = None,
    overrides: Overrides = (),
    *,
    checkpoint: str | os.PathLike | None = None,
    env: str | None = None,
    policy: str | None = None,
    episodes: int | None = None,
    seed: int | None = None,
    num_envs: int | None = None,
    epsilon: float | None = None,
    timeout: float | None = None,
    binary: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Runs ``rlswarm evaluate --json`` and returns its result: env, policy,
    episodes, mean/std/min/max return, mean length, env steps, wall time.
    ``checkpoint`` evaluates a trained policy (a run's ``policies/best``);
    ``policy="random"`` a random one."""
    args = [find_binary(binary), "evaluate", "--json"]
    options = {"--config": config, "--checkpoint": checkpoint, "--env": env, "--policy": policy,
               "--episodes": episodes, "--seed": seed, "--num-envs": num_envs,
               "--epsilon": epsilon}
    for flag, value in options.items():
        if value is not None:
            args += [flag, str(value)]
    return _run(args + _override_args(overrides), timeout)
