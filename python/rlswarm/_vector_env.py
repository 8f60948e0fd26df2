"""rlswarm.VectorEnv: Gymnasium's vector API over the C++ envs::VectorEnv."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector import VectorEnv as GymVectorEnv
from gymnasium.vector.utils import batch_space

from rlswarm import _core
from rlswarm._seeding import SeedStream, check_seed
from rlswarm._spaces import spaces_from_spec
from rlswarm.errors import FailedPrecondition, InvalidArgument

_MODES = {
    "same_step": AutoresetMode.SAME_STEP,
    "next_step": AutoresetMode.NEXT_STEP,
    AutoresetMode.SAME_STEP: AutoresetMode.SAME_STEP,
    AutoresetMode.NEXT_STEP: AutoresetMode.NEXT_STEP,
}


class VectorEnv(GymVectorEnv):
    """``num_envs`` copies of a built-in env, stepped in C++ as one batch.

    A :class:`gymnasium.vector.VectorEnv` (Gymnasium 1.x): ``reset`` and ``step``
    return what :class:`gymnasium.vector.SyncVectorEnv` returns for the same env,
    with these differences:

    * **No copies.** With ``copy=False`` (the default) the observation, reward,
      terminated and truncated arrays are read-only NumPy views of the C++
      buffers. Every ``step`` and ``reset`` overwrites them in place: the arrays
      of one step change when the next is taken. Copy what you keep
      (``obs.copy()``), or make the env with ``copy=True`` to get fresh arrays
      from every call.
    * Rewards are float32 (the C++ envs compute them in float32), not float64.
    * ``reset(seed=s)`` seeds env i from ``(s, i)``; a list of per-env seeds is
      not supported.

    Autoreset (``metadata["autoreset_mode"]``): in ``"same_step"`` mode (the
    default) an env whose episode ends is reset in the same ``step``; its row of
    the returned observations is the new episode's first observation, and
    ``info["final_obs"][i]`` (an object array, ``info["_final_obs"]`` its mask)
    is a copy of the ended episode's last observation, as SyncVectorEnv gives.
    In ``"next_step"`` mode (Gymnasium's default) the step that ends the episode
    returns its last observation, and the next step resets that env, ignoring
    its action, with reward 0.

    ``step`` and ``reset`` release the GIL while the C++ envs run, so several
    vector envs can be stepped from several Python threads in parallel. One
    vector env must not be used by two threads at once
    (:class:`rlswarm.errors.FailedPrecondition`).

    Errors: an action array of the wrong dtype (a float for a discrete env)
    raises ``TypeError``; of the wrong shape, or out of the action space,
    :class:`rlswarm.errors.InvalidArgument` (a ``ValueError``); nothing moves
    then. An unknown env name raises :class:`rlswarm.errors.NotFound`.
    """

    def __init__(
        self,
        name: str,
        num_envs: int,
        *,
        num_threads: int = 1,
        seed: int | None = None,
        autoreset_mode: str | AutoresetMode = "same_step",
        copy: bool = False,
        **env_options: Any,
    ) -> None:
        try:
            mode = _MODES[autoreset_mode]
        except (KeyError, TypeError):
            raise InvalidArgument(
                f"autoreset_mode must be 'same_step' or 'next_step', got {autoreset_mode!r}"
            ) from None
        self._core = _core.VectorEnv(
            name,
            num_envs,
            num_threads=num_threads,
            autoreset_mode="same_step" if mode is AutoresetMode.SAME_STEP else "next_step",
            **env_options,
        )
        self._spec_dict = self._core.spec()
        self.num_envs = num_envs
        self.single_observation_space, self.single_action_space = spaces_from_spec(self._spec_dict)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.metadata = {"autoreset_mode": mode, "render_modes": []}
        self.render_mode = None
        self._same_step = mode is AutoresetMode.SAME_STEP
        self._copy = bool(copy)
        self._discrete = self._spec_dict["action_kind"] == "discrete"
        self._action_dtype = np.dtype(np.int64 if self._discrete else np.float32)
        self._seeds = SeedStream(None if seed is None else check_seed(seed))
        self._obs = self._core.observations()
        self._final_obs = self._core.final_observations()
        self._rewards = self._core.rewards()
        self._terminated = self._core.terminated()
        self._truncated = self._core.truncated()
        self._was_reset = False

    @property
    def env_name(self) -> str:
        """The C++ env's name, e.g. ``"CartPole-v1"``."""
        return self._spec_dict["name"]

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every env; returns (observations, {}).

        ``seed`` seeds env i from ``(seed, i)``. Without one, a seed is drawn
        from a stream that the last seed given (here or to make_vec) started.
        The built-in envs take no reset ``options``.
        """
        if options:
            raise InvalidArgument(f"{self.env_name} takes no reset options, got {options!r}")
        if isinstance(seed, (list, tuple)):
            raise InvalidArgument("per-env seeds are not supported: pass one int")
        if seed is None:
            value = self._seeds.next()
        else:
            value = check_seed(seed)
            self._seeds.restart(value)
        self._check_open()
        super().reset(seed=None if seed is None else value)
        self._core.reset(value)
        self._was_reset = True
        return (self._obs.copy() if self._copy else self._obs), {}

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every env with its action; returns
        (observations, rewards, terminated, truncated, info)."""
        if (
            type(actions) is not np.ndarray
            or actions.dtype != self._action_dtype
            or not actions.flags.c_contiguous
        ):
            actions = self._coerce_actions(actions)
        if not self._was_reset:
            self._check_open()
            raise FailedPrecondition(f"{self.env_name}: step before reset")
        ended = self._core.step(actions)
        info: dict[str, Any] = {}
        if ended and self._same_step:
            info = self._final_info()
        if self._copy:
            return (
                self._obs.copy(),
                self._rewards.copy(),
                self._terminated.copy(),
                self._truncated.copy(),
                info,
            )
        return self._obs, self._rewards, self._terminated, self._truncated, info

    def close_extras(self, **kwargs: Any) -> None:
        # The views (self._obs, ...) keep the C++ object alive while the
        # caller still holds arrays from it; dropping ours frees it after.
        self._was_reset = False
        self._core = None

    def _check_open(self) -> None:
        if self._core is None:
            raise FailedPrecondition(f"{self.env_name}: the vector env is closed")

    def _final_info(self) -> dict[str, Any]:
        done = np.logical_or(self._terminated, self._truncated)
        final_obs = np.full(self.num_envs, None, dtype=object)
        for i in np.flatnonzero(done):
            final_obs[i] = self._final_obs[i].copy()
        # The keys and layout of SyncVectorEnv's same-step info for an env
        # whose own infos are empty.
        return {"final_obs": final_obs, "_final_obs": done, "final_info": {}, "_final_info": done}

    def _coerce_actions(self, actions: Any) -> np.ndarray:
        array = np.asarray(actions)
        if self._discrete:
            if not (np.issubdtype(array.dtype, np.integer) and array.dtype != np.bool_):
                raise TypeError(
                    f"{self.env_name} has discrete actions: expected an integer array, "
                    f"got dtype {array.dtype}"
                )
        elif not np.issubdtype(array.dtype, np.floating):
            raise TypeError(
                f"{self.env_name} has continuous actions: expected a float array, "
                f"got dtype {array.dtype}"
            )
        want = self.action_space.shape
        if array.shape != want:
            raise InvalidArgument(
                f"{self.env_name}: actions of shape {array.shape}, expected {want}"
            )
        return np.ascontiguousarray(array, dtype=self._action_dtype)


def make_vec(
    name: str,
    num_envs: int = 1,
    *,
    num_threads: int = 1,
    seed: int | None = None,
    autoreset_mode: str | AutoresetMode = "same_step",
    copy: bool = False,
    **env_options: Any,
) -> VectorEnv:
    """A :class:`VectorEnv` of ``num_envs`` copies of the built-in env ``name``.

    Args:
        name: a built-in env (:func:`rlswarm.env_names`), e.g. ``"CartPole-v1"``
            or ``"MinAtar/Breakout"``.
        num_envs: how many envs step as one batch.
        num_threads: C++ worker threads that step the batch (1: the calling thread).
        seed: the seed of the first ``reset()`` that is given none.
        autoreset_mode: ``"same_step"`` (default) or ``"next_step"``, or the
            :class:`gymnasium.vector.AutoresetMode` member.
        copy: return fresh arrays from every call instead of views of the C++
            buffers that the next call overwrites.
        **env_options: ``max_episode_steps`` (0: no limit), and for MinAtar
            ``sticky_action_prob``, ``difficulty_ramping``, ``minimal_action_set``.
    """
    return VectorEnv(
        name,
        num_envs,
        num_threads=num_threads,
        seed=seed,
        autoreset_mode=autoreset_mode,
        copy=copy,
        **env_options,
    )
