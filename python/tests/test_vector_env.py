"""rlswarm.make_vec against Gymnasium's SyncVectorEnv of the same env."""

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import rlswarm


def sync_env(gym_id, num_envs, mode=AutoresetMode.SAME_STEP, **kwargs):
    return SyncVectorEnv(
        [lambda: gymnasium.make(gym_id, **kwargs) for _ in range(num_envs)], autoreset_mode=mode
    )


def random_episode_returns(envs, episodes, seed):
    """Returns of `episodes` episodes of uniformly random actions (same-step autoreset)."""
    envs.action_space.seed(seed)
    envs.reset(seed=seed)
    running = np.zeros(envs.num_envs)
    returns = []
    while len(returns) < episodes:
        _, rewards, terminated, truncated, _ = envs.step(envs.action_space.sample())
        running += rewards
        done = terminated | truncated
        returns.extend(running[done])
        running[done] = 0.0
    return np.asarray(returns[:episodes])


def assert_same_mean(ours, theirs, max_sigmas=4.5):
    # Welch's t statistic; both samples come from fixed seeds, so the test is
    # deterministic and 4.5 sigmas only guard against a real difference.
    se = np.sqrt(ours.var(ddof=1) / len(ours) + theirs.var(ddof=1) / len(theirs))
    t = (ours.mean() - theirs.mean()) / max(se, 1e-12)
    assert abs(t) < max_sigmas, f"means {ours.mean():.3f} vs {theirs.mean():.3f} (t = {t:.2f})"


@pytest.mark.parametrize(
    "name, episodes", [("CartPole-v1", 1000), ("Pendulum-v1", 300), ("MountainCar-v0", 200)]
)
def test_random_episode_returns_match_gymnasiums_env(name, episodes):
    ours = random_episode_returns(rlswarm.make_vec(name, 16), episodes, seed=1)
    theirs = random_episode_returns(sync_env(name, 16), episodes, seed=2)
    assert_same_mean(ours, theirs)


def test_random_minatar_breakout_returns_match_the_minatar_package():
    minatar_gym = pytest.importorskip("minatar.gym")
    minatar_gym.register_envs()
    ours = random_episode_returns(
        rlswarm.make_vec("MinAtar/Breakout", 16, minimal_action_set=True), 1000, seed=1
    )
    theirs = random_episode_returns(sync_env("MinAtar/Breakout-v1", 16), 1000, seed=2)
    assert_same_mean(ours, theirs)


@pytest.mark.parametrize("name", rlswarm.env_names())
def test_spaces_equal_those_of_a_sync_vector_env_of_the_single_env(name):
    ours = rlswarm.make_vec(name, 5)
    theirs = sync_env(rlswarm.gymnasium_id(name), 5)
    assert ours.single_observation_space == theirs.single_observation_space
    assert ours.single_action_space == theirs.single_action_space
    assert ours.observation_space == theirs.observation_space
    assert ours.action_space == theirs.action_space
    obs, info = ours.reset(seed=0)
    assert obs.shape == ours.observation_space.shape and obs.dtype == ours.observation_space.dtype
    assert info == {}


def cartpole_is_fresh(obs):
    return bool(np.all(np.abs(obs) <= 0.05))


def cartpole_is_terminal(obs):
    return abs(obs[0]) > 2.4 or abs(obs[2]) > 12 * 2 * np.pi / 360


@pytest.mark.parametrize("make", ["rlswarm", "sync"])
def test_same_step_autoreset_semantics(make):
    n = 8
    if make == "rlswarm":
        envs = rlswarm.make_vec("CartPole-v1", n)
    else:
        envs = sync_env("CartPole-v1", n)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    envs.action_space.seed(0)
    envs.reset(seed=0)
    ended = 0
    for _ in range(300):
        obs, _, terminated, truncated, info = envs.step(envs.action_space.sample())
        done = terminated | truncated
        if not done.any():
            assert info == {}
            continue
        assert set(info) == {"final_obs", "_final_obs", "final_info", "_final_info"}
        assert info["final_obs"].dtype == object and info["final_obs"].shape == (n,)
        np.testing.assert_array_equal(info["_final_obs"], done)
        for i in range(n):
            if done[i]:
                ended += 1
                assert cartpole_is_fresh(obs[i])
                assert truncated[i] or cartpole_is_terminal(info["final_obs"][i])
                assert info["final_obs"][i].shape == (4,)
            else:
                assert info["final_obs"][i] is None
    assert ended > 20


@pytest.mark.parametrize("make", ["rlswarm", "sync"])
def test_next_step_autoreset_semantics(make):
    n = 8
    if make == "rlswarm":
        envs = rlswarm.make_vec("CartPole-v1", n, autoreset_mode="next_step")
    else:
        envs = sync_env("CartPole-v1", n, AutoresetMode.NEXT_STEP)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    envs.action_space.seed(0)
    envs.reset(seed=0)
    previous_done = np.zeros(n, dtype=bool)
    resets = 0
    for _ in range(300):
        obs, rewards, terminated, truncated, info = envs.step(envs.action_space.sample())
        assert info == {}
        for i in range(n):
            if previous_done[i]:
                resets += 1
                assert rewards[i] == 0 and not terminated[i] and not truncated[i]
                assert cartpole_is_fresh(obs[i])
            elif terminated[i]:
                assert cartpole_is_terminal(obs[i])
        previous_done = terminated | truncated
    assert resets > 20


def test_observations_view_the_cpp_buffer_without_copying():
    envs = rlswarm.make_vec("MinAtar/Breakout", 4)
    address = envs.unwrapped._core.buffer_address()
    obs, _ = envs.reset(seed=0)
    assert obs.__array_interface__["data"][0] == address
    assert not obs.flags.writeable
    first = obs.copy()
    for _ in range(5):
        obs2, rewards, terminated, _, _ = envs.step(envs.action_space.sample())
        assert obs2.__array_interface__["data"][0] == address
    # The array from reset was overwritten in place: it is the same memory.
    assert np.shares_memory(obs, obs2)
    assert not np.array_equal(first, obs2)
    assert rewards.dtype == np.float32 and terminated.dtype == np.bool_


def test_copy_mode_returns_fresh_writable_arrays():
    envs = rlswarm.make_vec("CartPole-v1", 4, copy=True)
    address = envs.unwrapped._core.buffer_address()
    obs, _ = envs.reset(seed=0)
    obs2, rewards, terminated, truncated, _ = envs.step(np.zeros(4, dtype=np.int64))
    for array in (obs, obs2, rewards, terminated, truncated):
        assert array.flags.writeable and array.flags.owndata
    assert obs.__array_interface__["data"][0] != address
    assert not np.array_equal(obs, obs2)


def trajectory(envs, seed, steps=100, reseed=True):
    if reseed:
        envs.reset(seed=seed)
    else:
        envs.reset()
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        actions = rng.integers(0, 2, size=envs.num_envs)
        obs, rewards, terminated, truncated, _ = envs.step(actions)
        out.append((obs.copy(), rewards.copy(), terminated.copy(), truncated.copy()))
    return out


def assert_same_trajectory(a, b):
    for step_a, step_b in zip(a, b, strict=True):
        for x, y in zip(step_a, step_b, strict=True):
            np.testing.assert_array_equal(x, y)


def test_seeded_resets_are_deterministic_and_independent_of_threads():
    one = trajectory(rlswarm.make_vec("CartPole-v1", 16), seed=3)
    again = trajectory(rlswarm.make_vec("CartPole-v1", 16), seed=3)
    threaded = trajectory(rlswarm.make_vec("CartPole-v1", 16, num_threads=2), seed=3)
    assert_same_trajectory(one, again)
    assert_same_trajectory(one, threaded)
    other = trajectory(rlswarm.make_vec("CartPole-v1", 16), seed=4)
    assert not np.array_equal(one[0][0], other[0][0])


def test_reset_without_a_seed_follows_the_last_seed():
    a = rlswarm.make_vec("CartPole-v1", 4, seed=11)
    b = rlswarm.make_vec("CartPole-v1", 4, seed=11)
    assert_same_trajectory(trajectory(a, 0, reseed=False), trajectory(b, 0, reseed=False))
    assert_same_trajectory(trajectory(a, 0, reseed=False), trajectory(b, 0, reseed=False))
    c = rlswarm.make_vec("CartPole-v1", 4, seed=12)
    assert not np.array_equal(
        trajectory(a, 0, 1, reseed=False)[0][0], trajectory(c, 0, 1, reseed=False)[0][0]
    )


def test_continuous_and_minatar_envs_step():
    pendulum = rlswarm.make_vec("Pendulum-v1", 3)
    pendulum.reset(seed=0)
    obs, rewards, *_ = pendulum.step(np.full((3, 1), 1.5, dtype=np.float32))
    assert obs.shape == (3, 3) and np.all(rewards <= 0)
    pendulum.step(np.zeros((3, 1)))  # float64 is converted
    for name in [n for n in rlswarm.env_names() if n.startswith("MinAtar/")]:
        envs = rlswarm.make_vec(name, 2, seed=0)
        obs, _ = envs.reset()
        assert obs.dtype == np.bool_ and obs.shape[:3] == (2, 10, 10)
        envs.step(envs.action_space.sample())
