"""rlswarm.launch and rlswarm.evaluate run the rlswarm binary (where built)."""

import os
from pathlib import Path

import pytest

import rlswarm
from rlswarm import cli, errors

REPO = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("RLSWARM_BIN", REPO / "build" / "rlswarm"))
needs_binary = pytest.mark.skipif(
    not BINARY.is_file(), reason="no rlswarm binary (scripts/build.sh, or RLSWARM_BIN)"
)


def test_a_missing_binary_raises_not_found():
    with pytest.raises(errors.NotFound, match="RLSWARM_BIN"):
        rlswarm.evaluate(env="CartPole-v1", binary="/nonexistent/rlswarm")


def test_overrides_are_given_as_the_cli_spells_them():
    assert cli._override_args({"a.b": 1, "c.d": True}) == ["a.b=1", "c.d=true"]
    assert cli._override_args(["a.b=2"]) == ["a.b=2"]


@needs_binary
def test_evaluate_returns_the_cli_result_as_a_dict():
    result = rlswarm.evaluate(
        env="CartPole-v1", policy="random", episodes=50, seed=1, binary=BINARY, timeout=120
    )
    assert result["env"] == "CartPole-v1" and result["episodes"] == 50
    # A random policy's CartPole return is about 22.
    assert 10 < result["mean_return"] < 40


@needs_binary
def test_a_refused_config_raises_config_error():
    with pytest.raises(cli.ConfigError) as caught:
        rlswarm.launch(REPO / "configs" / "cartpole.yaml", {"replay.no_such_key": 1},
                       binary=BINARY, timeout=120)
    assert isinstance(caught.value, errors.InvalidArgument)
    assert "no_such_key" in str(caught.value)


@needs_binary
def test_launch_returns_the_run_summary(tmp_path):
    summary = rlswarm.launch(
        REPO / "configs" / "cartpole.yaml",
        {"launch.max_wall_time_s": 10, "launch.stop_at_target": True},
        run_dir=tmp_path / "run",
        binary=BINARY,
        timeout=300,
    )
    assert {"solved", "env_steps", "wall_time_s", "stop_reason"} <= set(summary)
    assert summary["env_steps"] > 0
    assert (tmp_path / "run" / "summary.json").is_file()
