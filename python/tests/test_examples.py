"""The examples run: the DQN one to a solved CartPole."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# scripts/setup.sh --python installs the pinned torch into .venv/; a venv
# without it (a user's own) skips these.
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs torch (scripts/setup.sh --python)"
)


@needs_torch
def test_cleanrl_dqn_solves_cartpole():
    # Seed 1 solves in ~85k env steps, within the example's default budget of
    # 120k: 46-47 s on 2 shared cores; the timeout allows several times that.
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "cleanrl_dqn.py"), "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = run.stdout.strip().splitlines()
    assert lines, run.stderr
    summary = json.loads(lines[-1])
    assert run.returncode == 0 and summary["solved"], run.stdout + run.stderr
