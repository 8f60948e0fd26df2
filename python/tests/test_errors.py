"""Bad input raises the documented exceptions, and changes nothing."""

import gymnasium
import numpy as np
import pytest

import rlswarm
from rlswarm import errors


def test_errors_are_also_builtin_exceptions():
    assert issubclass(errors.InvalidArgument, ValueError)
    assert issubclass(errors.NotFound, LookupError)
    assert issubclass(errors.FailedPrecondition, RuntimeError)
    for cls in (errors.InvalidArgument, errors.NotFound, errors.FailedPrecondition):
        assert issubclass(cls, errors.Error)


def test_unknown_env_raises_not_found_listing_the_known_names():
    with pytest.raises(errors.NotFound, match="CartPole-v1"):
        rlswarm.make_vec("CartPol-v1", 2)


def test_float_actions_for_a_discrete_env_raise_type_error():
    envs = rlswarm.make_vec("CartPole-v1", 4)
    envs.reset(seed=0)
    with pytest.raises(TypeError, match="discrete actions"):
        envs.step(np.zeros(4, dtype=np.float32))
    with pytest.raises(TypeError, match="discrete actions"):
        envs.step(np.zeros(4, dtype=bool))


def test_integer_actions_for_a_continuous_env_raise_type_error():
    envs = rlswarm.make_vec("Pendulum-v1", 2)
    envs.reset(seed=0)
    with pytest.raises(TypeError, match="continuous actions"):
        envs.step(np.zeros((2, 1), dtype=np.int64))


def test_actions_of_the_wrong_shape_raise_invalid_argument():
    envs = rlswarm.make_vec("CartPole-v1", 4)
    envs.reset(seed=0)
    with pytest.raises(errors.InvalidArgument, match=r"shape \(3,\), expected \(4,\)"):
        envs.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(errors.InvalidArgument, match="shape"):
        envs.step(np.zeros((4, 1), dtype=np.int64))


def test_out_of_range_action_raises_and_no_env_moves():
    envs = rlswarm.make_vec("CartPole-v1", 4, copy=True)
    before, _ = envs.reset(seed=0)
    with pytest.raises(errors.InvalidArgument, match="action 2 of env 3 out of range"):
        envs.step(np.array([0, 1, 0, 2]))
    np.testing.assert_array_equal(envs.unwrapped._obs, before)
    pendulum = rlswarm.make_vec("Pendulum-v1", 2)
    pendulum.reset(seed=0)
    with pytest.raises(errors.InvalidArgument, match="outside"):
        pendulum.step(np.array([[0.0], [np.nan]], dtype=np.float32))


def test_other_integer_dtypes_and_lists_are_accepted():
    envs = rlswarm.make_vec("CartPole-v1", 3)
    envs.reset(seed=0)
    envs.step(np.array([0, 1, 0], dtype=np.int32))
    envs.step([1, 0, 1])


def test_step_before_reset_and_after_close_raise_failed_precondition():
    envs = rlswarm.make_vec("CartPole-v1", 2)
    with pytest.raises(errors.FailedPrecondition, match="before reset"):
        envs.step(np.zeros(2, dtype=np.int64))
    envs.reset(seed=0)
    envs.close()
    with pytest.raises(errors.FailedPrecondition, match="closed"):
        envs.step(np.zeros(2, dtype=np.int64))


def test_bad_options_raise_invalid_argument():
    with pytest.raises(errors.InvalidArgument, match="autoreset_mode"):
        rlswarm.make_vec("CartPole-v1", 2, autoreset_mode="disabled")
    with pytest.raises(errors.InvalidArgument, match="only to MinAtar"):
        rlswarm.make_vec("CartPole-v1", 2, sticky_action_prob=0.5)
    with pytest.raises(errors.InvalidArgument, match="num_envs"):
        rlswarm.make_vec("CartPole-v1", 0)
    with pytest.raises(TypeError):
        rlswarm.make_vec("CartPole-v1", 2, no_such_option=1)
    envs = rlswarm.make_vec("CartPole-v1", 2)
    with pytest.raises(errors.InvalidArgument, match="seed"):
        envs.reset(seed=-1)
    with pytest.raises(errors.InvalidArgument, match="per-env seeds"):
        envs.reset(seed=[1, 2])
    with pytest.raises(errors.InvalidArgument, match="reset options"):
        envs.reset(options={"reset_mask": np.ones(2, dtype=bool)})


def test_single_env_errors():
    env = gymnasium.make("rlswarm/CartPole-v1").unwrapped
    env.reset(seed=0)
    with pytest.raises(TypeError):
        env.step(0.5)
    with pytest.raises(errors.InvalidArgument, match="out of range"):
        env.step(7)
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(0)
        done = terminated or truncated
    with pytest.raises(errors.FailedPrecondition):
        env.step(0)
