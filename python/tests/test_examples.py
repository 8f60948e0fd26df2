"""The examples run: the DQN one to a solved CartPole, the Python learner
against real rlswarm replay and actor processes."""

import importlib.util
import json
import os
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
    # 120k: 46-51 s in four runs on 2 shared cores; the timeout allows several
    # times that.
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


RLSWARM_BIN = Path(os.environ.get("RLSWARM_BIN", EXAMPLES.parent / "build" / "rlswarm"))


@needs_torch
@pytest.mark.skipif(not RLSWARM_BIN.is_file(), reason="no rlswarm binary (scripts/build.sh, or RLSWARM_BIN)")
def test_python_learner_trains_from_rlswarm_actors():
    # Against real `rlswarm replay` and two `rlswarm actor` processes. Four
    # runs on 2 shared cores solved CartPole (>= 475) after 10.6-24.4 s of
    # training; the test gives it 90 s and asks for less than solving (300,
    # where a random policy scores ~22), so that a slower machine passes too.
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "python_learner.py"), "--seconds", "90",
         "--rlswarm", str(RLSWARM_BIN)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines, run.stdout + run.stderr
    summary = json.loads(lines[-1])
    assert summary["best_eval_return"] >= 300, run.stdout + run.stderr
    # The actors acted with the weights this learner published: the
    # transitions it sampled carry versions it published after training
    # (the initial weights are version 1).
    assert summary["actor_policy_version"] > 1, summary
