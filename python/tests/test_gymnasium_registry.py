"""The built-in envs through Gymnasium's own entry points and checker."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rlswarm

ALL_ENVS = rlswarm.env_names()
# Gymnasium's own implementations of the classic envs, for their spaces.
CLASSIC = ["CartPole-v1", "Acrobot-v1", "MountainCar-v0", "Pendulum-v1"]


def test_every_built_in_env_is_registered():
    assert len(ALL_ENVS) == 9
    for name in ALL_ENVS:
        assert rlswarm.gymnasium_id(name) in gymnasium.registry
    assert rlswarm.gymnasium_id("MinAtar/Breakout") == "rlswarm/MinAtar-Breakout"


# check_env warns that the made env is wrapped (OrderEnforcing,
# PassiveEnvChecker): it is checked both wrapped and unwrapped on purpose. Its
# advice on unbounded or unnormalised boxes concerns spaces that are
# Gymnasium's own (CartPole's, Pendulum's; see the test below).
@pytest.mark.filterwarnings("ignore:.*different from the unwrapped version")
@pytest.mark.filterwarnings("ignore:.*infinity. This is probably")
@pytest.mark.filterwarnings("ignore:.*symmetric and normalized space")
@pytest.mark.parametrize("name", ALL_ENVS)
def test_gymnasium_env_checker_passes(name):
    env = gymnasium.make(rlswarm.gymnasium_id(name))
    check_env(env.unwrapped, skip_render_check=True)
    check_env(env, skip_render_check=True)


@pytest.mark.parametrize("name", CLASSIC)
def test_spaces_equal_gymnasiums_own_env(name):
    ours = gymnasium.make(rlswarm.gymnasium_id(name))
    theirs = gymnasium.make(name)
    assert ours.observation_space == theirs.observation_space
    assert ours.action_space == theirs.action_space


def test_make_vec_uses_the_cpp_vector_env():
    envs = gymnasium.make_vec("rlswarm/CartPole-v1", num_envs=8)
    assert isinstance(envs.unwrapped, rlswarm.VectorEnv)
    assert envs.num_envs == 8
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (8, 4)


def test_make_vec_sync_mode_vectorizes_the_single_env():
    envs = gymnasium.make_vec("rlswarm/MinAtar-Breakout", num_envs=3, vectorization_mode="sync")
    assert isinstance(envs, gymnasium.vector.SyncVectorEnv)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (3, 10, 10, 4) and obs.dtype == np.bool_


def test_make_passes_env_options():
    env = gymnasium.make("rlswarm/CartPole-v1", max_episode_steps=5)
    env.reset(seed=0)
    for _ in range(4):
        *_, terminated, truncated, _ = env.step(0 if _ % 2 else 1)
        assert not truncated
    *_, truncated, _ = env.step(0)
    assert truncated


def test_single_env_returns_python_scalars_and_fresh_arrays():
    env = gymnasium.make("rlswarm/Pendulum-v1")
    obs0, _ = env.reset(seed=1)
    obs1, reward, terminated, truncated, info = env.step(np.array([0.5], dtype=np.float32))
    assert obs0 is not obs1 and not np.shares_memory(obs0, obs1)
    assert type(reward) is float and type(terminated) is bool and type(truncated) is bool
    assert info == {}


def test_module_prefixed_ids_import_rlswarm_first():
    # What a fresh interpreter can use without `import rlswarm`.
    import subprocess
    import sys

    code = (
        "import gymnasium; "
        "e = gymnasium.make_vec('rlswarm:rlswarm/CartPole-v1', num_envs=2); "
        "print(type(e.unwrapped).__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "VectorEnv"
