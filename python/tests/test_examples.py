"""The examples run: the DQN one to a solved CartPole."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="needs torch, which python/requirements-dev.txt leaves out (PyPI's default wheel "
    "is the CUDA build, ~3 GB)",
)
def test_cleanrl_dqn_solves_cartpole():
    # Seed 1 solves in ~85k env steps (1-3 minutes on 2 cores), within the
    # example's default budget of 120k.
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "cleanrl_dqn.py"), "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = run.stdout.strip().splitlines()
    assert lines, run.stderr
    summary = json.loads(lines[-1])
    assert run.returncode == 0 and summary["solved"], run.stdout + run.stderr
