"""A C env built as a plugin (examples/plugin_env/cartpole.c), made from Python
by name ("plugin:PATH.so") as rlswarm.Env and rlswarm.make_vec: the same
episodes, step for step, as the built-in CartPole it reimplements."""

import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import rlswarm

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cartpole_plugin(tmp_path_factory):
    """Compiles the example against the plugin header alone, as a user would."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler")
    root = tmp_path_factory.mktemp("plugin")
    include = root / "include" / "rlswarm"
    include.mkdir(parents=True)
    shutil.copy(REPO / "envs" / "plugin_api.h", include / "plugin_api.h")
    library = root / "libcartpole_plugin.so"
    subprocess.run(
        [compiler, "-std=c99", "-O2", "-shared", "-fPIC", "-I", str(root / "include"),
         str(REPO / "examples" / "plugin_env" / "cartpole.c"), "-o", str(library), "-lm"],
        check=True,
    )
    return f"plugin:{library}"


def test_a_plugin_env_steps_the_built_in_cartpoles_episodes(cartpole_plugin):
    plugin = rlswarm.Env(cartpole_plugin)
    builtin = rlswarm.Env("CartPole-v1")
    assert plugin.observation_space == builtin.observation_space
    assert plugin.action_space == builtin.action_space
    rng = np.random.default_rng(3)
    for episode in range(3):
        obs_a, _ = plugin.reset(seed=episode)
        obs_b, _ = builtin.reset(seed=episode)
        np.testing.assert_array_equal(obs_a, obs_b)
        done = False
        while not done:
            action = int(rng.integers(2))
            obs_a, reward_a, term_a, trunc_a, _ = plugin.step(action)
            obs_b, reward_b, term_b, trunc_b, _ = builtin.step(action)
            np.testing.assert_array_equal(obs_a, obs_b)
            assert (reward_a, term_a, trunc_a) == (reward_b, term_b, trunc_b)
            done = term_a or trunc_a


def test_a_vector_env_of_plugin_envs_matches_the_built_in_one(cartpole_plugin):
    plugin = rlswarm.make_vec(cartpole_plugin, num_envs=8)
    builtin = rlswarm.make_vec("CartPole-v1", num_envs=8)
    obs_a, _ = plugin.reset(seed=11)
    obs_b, _ = builtin.reset(seed=11)
    np.testing.assert_array_equal(obs_a, obs_b)
    rng = np.random.default_rng(5)
    for _ in range(600):  # past several episode ends and autoresets
        actions = rng.integers(2, size=8)
        step_a = plugin.step(actions)
        step_b = builtin.step(actions)
        for a, b in zip(step_a[:4], step_b[:4]):
            np.testing.assert_array_equal(a, b)


def test_a_missing_plugin_is_an_error_naming_the_file(tmp_path):
    missing = tmp_path / "no_such_env.so"
    with pytest.raises(rlswarm.errors.NotFound, match="no_such_env.so"):
        rlswarm.Env(f"plugin:{missing}")
