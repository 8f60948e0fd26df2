"""rlswarm's Gymnasium env worker: runs one Gymnasium vector env for a C++ actor.

The C++ side (envs/gymnasium/env_worker.cc) starts this program with the
Python the user chose and talks to it over a SOCK_SEQPACKET socket on fd 3:

  worker -> parent  hello: JSON {"ok": true, "spec": ..., "layout": ...} plus
                    the memfd of the shared arrays (SCM_RIGHTS), or
                    {"ok": false, "kind": ..., "message": ..., "traceback": ...}
  parent -> worker  b"S"                          step with the actions in shm
                    JSON {"cmd": "reset", "seeded": bool}       reset all envs
                    JSON {"cmd": "reset_mask", "seeded": bool}  reset masked envs
                    JSON {"cmd": "render", "index": i}   env i's frame (made with
                                                         render_mode "rgb_array"): a memfd
                                                         of height x width x 3 bytes,
                                                         JSON {"ok", "width", "height"}
                    JSON {"cmd": "close"}
  worker -> parent  b"K" when done, or an error JSON as above.

Arrays live in one shared memory block (offsets in "layout"): actions,
observations, final observations, rewards, terminated, truncated, the reset
mask and per-env seeds. Only the standard library, NumPy and Gymnasium are
needed; the rlswarm Python package is not.

With --describe the worker makes one env, prints nothing to the socket but
the hello (without shared memory) and exits.
"""

import argparse
import ctypes
import importlib
import json
import mmap
import os
import signal
import socket
import sys
import traceback

# Space conversion and validation errors are config errors on the C++ side.
CONFIG_ERROR = "config"
ENV_ERROR = "env"

MAX_FLAT_ACTIONS = 1 << 16


class WorkerError(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def die_with_parent():
    # PR_SET_PDEATHSIG = 1: the kernel kills us when the actor dies, even by
    # SIGKILL; the socket's EOF covers the rest.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def import_gymnasium():
    try:
        import gymnasium
        import numpy
    except ImportError as e:
        raise WorkerError(
            CONFIG_ERROR,
            f"{sys.executable} cannot import {e.name}: install gymnasium and numpy in the "
            "Python the env workers use (env.python, $VIRTUAL_ENV, or python3 on PATH); "
            "scripts/setup.sh --python makes the repository's .venv",
        ) from e
    return gymnasium, numpy


# Namespaces whose package registers its envs only when asked: imported (and
# asked) for a plain "Namespace/Name-vN" id.
KNOWN_NAMESPACES = {
    "ALE": ("ale_py", None),
    "MinAtar": ("minatar.gym", "register_envs"),
}


def import_module_of(env_id, module, register=None):
    try:
        imported = importlib.import_module(module)
    except ImportError as e:
        raise WorkerError(
            CONFIG_ERROR, f"env {env_id}: cannot import module '{module}': {e}"
        ) from e
    if register:
        getattr(imported, register)()


def import_env_module(env_id, gym):
    """Imports the module of "module:Env-v0" (registering its envs) and returns
    the id Gymnasium knows, "Env-v0". Importing here, not in gymnasium.make,
    turns a missing module into an error that names it, and make_vec and
    gymnasium.spec, which do not take the module prefix, see a plain id."""
    if ":" in env_id:
        module, name = env_id.split(":", 1)
        import_module_of(env_id, module)
        return name
    namespace = env_id.split("/", 1)[0] if "/" in env_id else None
    if namespace in KNOWN_NAMESPACES and env_id not in gym.registry:
        import_module_of(env_id, *KNOWN_NAMESPACES[namespace])
    return env_id


def bound_list(values, np):
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    if flat.size > 0 and np.all(flat == flat[0]):
        flat = flat[:1]
    return [v if np.isfinite(v) else ("inf" if v > 0 else "-inf") for v in flat.tolist()]


# NumPy dtype of the env -> (rlswarm dtype name, NumPy dtype stored in shm).
def storage_dtype(dtype, np):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "bool", np.dtype(np.bool_)
    if dtype == np.uint8:
        return "uint8", np.dtype(np.uint8)
    if dtype in (np.int8, np.int16, np.int32):
        return "int32", np.dtype(np.int32)
    if dtype in (np.uint16, np.uint32, np.int64, np.uint64):
        return "int64", np.dtype(np.int64)
    if dtype in (np.float16, np.float32):
        return "float32", np.dtype(np.float32)
    if dtype == np.float64:
        return "float64", np.dtype(np.float64)
    return None, None


class ObservationCodec:
    """Writes a batch of the env's observations into rlswarm's layout."""

    def __init__(self, space, env_id, gym, np):
        spaces = gym.spaces
        self.np = np
        self.env_id = env_id
        self.expected_dtype = space.dtype if isinstance(space, spaces.Box) else None
        if isinstance(space, spaces.Box):
            name, stored = storage_dtype(space.dtype, np)
            if name is None:
                raise WorkerError(
                    CONFIG_ERROR, f"env {env_id}: observation space {space}: dtype "
                    f"{space.dtype} is not supported")
            self.kind = "box"
            self.shape = tuple(int(d) for d in space.shape)
            self.dtype_name, self.stored = name, stored
            self.low, self.high = bound_list(space.low, np), bound_list(space.high, np)
            self.check_nan = np.issubdtype(space.dtype, np.floating)
        elif isinstance(space, spaces.Discrete):
            # A state index becomes a one-hot vector: what a Q-network can read.
            self.kind = "one_hot"
            self.n = int(space.n)
            self.start = int(space.start)
            self.shape = (self.n,)
            self.dtype_name, self.stored = "float32", np.dtype(np.float32)
            self.low, self.high = [0.0], [1.0]
            self.check_nan = False
        elif isinstance(space, spaces.MultiBinary):
            self.kind = "box"
            self.shape = tuple(int(d) for d in np.atleast_1d(space.n))
            self.dtype_name, self.stored = "uint8", np.dtype(np.uint8)
            self.low, self.high = [0.0], [1.0]
            self.check_nan = False
        elif isinstance(space, spaces.MultiDiscrete):
            self.kind = "box"
            self.shape = tuple(int(d) for d in space.nvec.shape)
            self.dtype_name, self.stored = "int64", np.dtype(np.int64)
            self.low = bound_list(space.start, np)
            self.high = bound_list(space.start + space.nvec - 1, np)
            self.check_nan = False
        else:
            raise WorkerError(
                CONFIG_ERROR,
                f"env {env_id}: observation space {type(space).__name__} ({space}) is not "
                "supported: rlswarm takes Box, Discrete, MultiBinary and MultiDiscrete "
                "observations (wrap the env, e.g. gymnasium.wrappers.FlattenObservation)")
        self.row_bytes = int(np.prod(self.shape, dtype=np.int64)) * self.stored.itemsize

    def spec(self):
        return {"shape": list(self.shape), "dtype": self.dtype_name, "low": self.low,
                "high": self.high}

    def write(self, batch, out, step, field, rows=None):
        """Checks `batch` (one row per env in `rows`, default all) and writes it
        into those rows of `out`; an error names the env, the field and the step."""
        np = self.np
        batch = np.asarray(batch)
        count = out.shape[0] if rows is None else len(rows)
        if self.kind == "one_hot":
            if batch.shape != (count,):
                self.fail(field, step, f"shape {batch.shape}, expected {(count,)}")
            index = batch.astype(np.int64) - self.start
            bad = np.flatnonzero((index < 0) | (index >= self.n))
            if bad.size:
                self.fail(field, step, f"state {batch[bad[0]]} outside the Discrete space",
                          env=self.env_index(rows, bad[0]))
            batch = np.zeros((count, self.n), dtype=np.float32)
            batch[np.arange(count), index] = 1
        else:
            if batch.shape != (count,) + self.shape:
                self.fail(field, step, f"shape {batch.shape[1:]}, expected {self.shape}")
            if self.expected_dtype is not None and batch.dtype != self.expected_dtype:
                self.fail(field, step, f"dtype {batch.dtype}, the space says "
                          f"{self.expected_dtype}")
            if self.check_nan:
                bad = np.flatnonzero(~np.isfinite(batch.reshape(count, -1)).all(axis=1))
                if bad.size:
                    self.fail(field, step, "NaN or infinity", env=self.env_index(rows, bad[0]))
        if rows is None:
            out[...] = batch
        else:
            out[rows] = batch

    @staticmethod
    def env_index(rows, i):
        return int(i if rows is None else rows[i])

    def fail(self, field, step, what, env=None):
        where = f"env {self.env_id}" + ("" if env is None else f" (vector index {env})")
        raise WorkerError(ENV_ERROR, f"{where}: {field} at step {step}: {what}")


class ActionCodec:
    """Turns rlswarm's actions (int64 index or float32 vector) into the env's."""

    def __init__(self, space, env_id, gym, np):
        spaces = gym.spaces
        self.np = np
        if isinstance(space, spaces.Discrete):
            self.kind, self.n, self.start = "discrete", int(space.n), int(space.start)
        elif isinstance(space, spaces.MultiDiscrete) and space.nvec.ndim == 1:
            # One index over every combination (mixed radix, first digit slowest).
            self.kind = "multi_discrete"
            self.nvec = space.nvec.astype(np.int64)
            self.starts = space.start.astype(np.int64)
            self.n = int(np.prod(self.nvec))
            self.dtype = space.dtype
        elif isinstance(space, spaces.MultiBinary) and np.ndim(space.n) == 0:
            self.kind, self.bits = "multi_binary", int(space.n)
            self.n = 1 << self.bits if self.bits < 62 else None
        elif isinstance(space, spaces.Box) and np.issubdtype(space.dtype, np.floating):
            self.kind = "continuous"
            self.shape = tuple(int(d) for d in space.shape)
            self.dtype = space.dtype
            self.low, self.high = bound_list(space.low, np), bound_list(space.high, np)
            if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
                raise WorkerError(
                    CONFIG_ERROR, f"env {env_id}: action space {space} is unbounded: "
                    "rlswarm's continuous policies need finite bounds (rescale the actions)")
        else:
            raise WorkerError(
                CONFIG_ERROR,
                f"env {env_id}: action space {type(space).__name__} ({space}) is not "
                "supported: rlswarm takes Discrete, float Box, MultiDiscrete (1-D) and "
                "MultiBinary (1-D) actions")
        if self.kind in ("multi_discrete", "multi_binary") and (
                self.n is None or self.n > MAX_FLAT_ACTIONS):
            raise WorkerError(
                CONFIG_ERROR, f"env {env_id}: action space {space} has more than "
                f"{MAX_FLAT_ACTIONS} combinations: too many for one discrete Q-head")

    def spec(self):
        if self.kind == "continuous":
            return {"kind": "continuous", "shape": list(self.shape), "low": self.low,
                    "high": self.high}
        return {"kind": "discrete", "n": self.n}

    def row_bytes(self):
        if self.kind == "continuous":
            return int(self.np.prod(self.shape, dtype=self.np.int64)) * 4
        return 8

    def decode(self, raw):
        np = self.np
        if self.kind == "discrete":
            return raw + self.start if self.start else raw.copy()
        if self.kind == "continuous":
            return raw.astype(self.dtype)
        if self.kind == "multi_binary":
            shifts = np.arange(self.bits - 1, -1, -1, dtype=np.int64)
            return ((raw[:, None] >> shifts) & 1).astype(np.int8)
        digits = np.empty((raw.shape[0], self.nvec.size), dtype=np.int64)
        rest = raw.copy()
        for j in range(self.nvec.size - 1, -1, -1):
            digits[:, j] = rest % self.nvec[j]
            rest //= self.nvec[j]
        return (digits + self.starts).astype(self.dtype)


def describe(gym, np, args, kwargs):
    """The spec of one env, made the way the actors make theirs (make_vec), so
    that a vector env's own kwargs (ale-py's stack_num, ...) apply to it too."""
    args.num_envs = 1
    env = make_vector_env(gym, args, kwargs)
    try:
        obs = ObservationCodec(env.single_observation_space, args.env_id, gym, np)
        act = ActionCodec(env.single_action_space, args.env_id, gym, np)
        return {"name": "gymnasium:" + args.env_id, "observation": obs.spec(),
                "action": act.spec(), "max_episode_steps": max_episode_steps_of_vector(env),
                "render_fps": (env.metadata or {}).get("render_fps")}
    finally:
        env.close()


def make_vector_env(gym, args, kwargs):
    """The vector env; sets args.render_from_observations when a vector env of
    its own refused render_mode (ale-py's): render() then draws the newest
    frame of the observation, what the agent sees."""
    mode = args.vectorization_mode
    if mode is None:
        # make_vec's default, except that a requested autoreset mode needs a
        # vector env that takes one: Gymnasium's sync env takes all three.
        has_own = gym.spec(args.gym_id).vector_entry_point is not None
        mode = "vector_entry_point" if has_own and not args.autoreset_mode else "sync"
    args.render_from_observations = False
    try:
        return make_vector_env_in_mode(gym, args, mode, kwargs)
    except TypeError as e:
        if (mode != "vector_entry_point" or "render_mode" not in kwargs
                or "render_mode" not in str(e)):
            raise
    args.render_from_observations = True
    kwargs = {k: v for k, v in kwargs.items() if k != "render_mode"}
    return make_vector_env_in_mode(gym, args, mode, kwargs)


def make_vector_env_in_mode(gym, args, mode, kwargs):
    vector_kwargs = {}
    if args.autoreset_mode:
        autoreset = gym.vector.AutoresetMode[args.autoreset_mode.upper()]
        if mode == "vector_entry_point":
            try:
                return gym.make_vec(args.gym_id, num_envs=args.num_envs, vectorization_mode=mode,
                                    **dict(kwargs, autoreset_mode=autoreset))
            except ValueError as e:
                if (autoreset != gym.vector.AutoresetMode.DISABLED
                        or "autoreset" not in str(e).lower()):
                    raise
            # A vector env of its own without the disabled mode (ale-py's):
            # same_step instead. The C++ side still resets every finished env
            # right after the step, with the seed it chose, so the episodes
            # are the ones disabled mode would give; the env's own reset in
            # between is wasted work, not a different episode.
            kwargs = dict(kwargs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
        else:
            vector_kwargs["autoreset_mode"] = autoreset
    return gym.make_vec(args.gym_id, num_envs=args.num_envs, vectorization_mode=mode,
                        vector_kwargs=vector_kwargs, **kwargs)


class Layout:
    """Offsets of the shared arrays, each aligned to 64 bytes."""

    def __init__(self, num_envs, obs_bytes, action_bytes):
        self.offsets = {}
        size = 0
        for name, nbytes in (("actions", num_envs * action_bytes),
                             ("observations", num_envs * obs_bytes),
                             ("final_observations", num_envs * obs_bytes),
                             ("rewards", num_envs * 4), ("terminated", num_envs),
                             ("truncated", num_envs), ("reset_mask", num_envs),
                             ("seeds", num_envs * 8)):
            self.offsets[name] = size
            size += (nbytes + 63) // 64 * 64
        self.size = max(size, 64)


class Worker:
    def __init__(self, sock, gym, np, args, kwargs):
        self.sock, self.gym, self.np, self.args = sock, gym, np, args
        self.env = make_vector_env(gym, args, kwargs)
        self.n = args.num_envs
        self.obs = ObservationCodec(self.env.single_observation_space, args.env_id, gym, np)
        self.act = ActionCodec(self.env.single_action_space, args.env_id, gym, np)
        mode = self.env.metadata.get("autoreset_mode", gym.vector.AutoresetMode.NEXT_STEP)
        # What the env does, and what the C++ side is told: "disabled" when it
        # asked for it and got same_step instead (see make_vector_env).
        self.env_autoreset = gym.vector.AutoresetMode(mode).name.lower()
        self.autoreset = ("disabled" if args.autoreset_mode == "disabled"
                          else self.env_autoreset)
        self.layout = Layout(self.n, self.obs.row_bytes, self.act.row_bytes())
        self.fd = os.memfd_create("rlswarm-env", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, self.layout.size)
        self.shm = mmap.mmap(self.fd, self.layout.size)
        self.steps = 0
        self.per_env_seeds = isinstance(self.env, (gym.vector.SyncVectorEnv,
                                                   gym.vector.AsyncVectorEnv))

        def view(name, dtype, shape):
            count = int(np.prod(shape, dtype=np.int64))
            return np.frombuffer(self.shm, dtype=dtype, count=count,
                                 offset=self.layout.offsets[name]).reshape(shape)

        if self.act.kind == "continuous":
            self.actions = view("actions", np.float32, (self.n,) + self.act.shape)
        else:
            self.actions = view("actions", np.int64, (self.n,))
        self.observations = view("observations", self.obs.stored, (self.n,) + self.obs.shape)
        self.finals = view("final_observations", self.obs.stored, (self.n,) + self.obs.shape)
        self.rewards = view("rewards", np.float32, (self.n,))
        self.terminated = view("terminated", np.uint8, (self.n,))
        self.truncated = view("truncated", np.uint8, (self.n,))
        self.reset_mask = view("reset_mask", np.uint8, (self.n,))
        self.seeds = view("seeds", np.uint64, (self.n,))

    def hello(self):
        spec = {"name": "gymnasium:" + self.args.env_id, "observation": self.obs.spec(),
                "action": self.act.spec(),
                "max_episode_steps": max_episode_steps_of_vector(self.env),
                "render_fps": (self.env.metadata or {}).get("render_fps")}
        message = {"ok": True, "spec": spec, "autoreset_mode": self.autoreset,
                   "num_envs": self.n, "layout": self.layout.offsets,
                   "size": self.layout.size}
        socket.send_fds(self.sock, [json.dumps(message).encode()], [self.fd])

    def seed_argument(self, mask=None):
        """The seeds in shm as this vector env takes them: Gymnasium's sync and
        async envs one per env (None where not reset); a vector env of its own
        one int (it derives its envs' seeds), or an array per reset env when
        only some reset (ale-py's). Seeds are taken modulo 2**31: envs that seed
        numpy's legacy RandomState (MinAtar's) refuse 2**32 and above."""
        seeds = [int(s) % (1 << 31) for s in self.seeds]
        if self.per_env_seeds:
            return seeds if mask is None else [s if m else None for s, m in zip(seeds, mask)]
        if mask is None:
            return seeds[0]
        return self.np.array([s for s, m in zip(seeds, mask) if m],
                             dtype=self.np.int64)

    def reset(self, seeded):
        if seeded and self.autoreset == "disabled" and not self.per_env_seeds:
            # Per-episode seeding: each env's own seed, as the masked resets
            # of later episodes give them. A vector env of its own derives
            # its envs' seeds from one int on a plain full reset; a reset with
            # every env masked takes one seed per env.
            mask = self.np.ones(self.n, dtype=bool)
            obs, _ = self.env.reset(seed=self.seed_argument(mask), options={"reset_mask": mask})
        else:
            obs, _ = self.env.reset(seed=self.seed_argument() if seeded else None)
        self.obs.write(obs, self.observations, self.steps, "reset observation")
        self.rewards[...] = 0
        self.terminated[...] = 0
        self.truncated[...] = 0

    def reset_mask_envs(self, seeded):
        mask = self.reset_mask.astype(bool)
        if not mask.any():
            return
        rows = self.np.flatnonzero(mask)
        seed = self.seed_argument(mask) if seeded else None
        obs, _ = self.env.reset(seed=seed, options={"reset_mask": mask})
        self.obs.write(self.np.asarray(obs)[rows], self.observations, self.steps,
                       "reset observation", rows=rows)

    def step(self):
        np = self.np
        actions = self.act.decode(self.actions)
        self.steps += 1  # counted first, so that an exception names this step
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        rewards = np.asarray(rewards)
        if rewards.shape != (self.n,):
            raise WorkerError(ENV_ERROR, f"env {self.args.env_id}: reward at step "
                              f"{self.steps}: shape {rewards.shape}, expected ({self.n},)")
        bad = np.flatnonzero(~np.isfinite(rewards.astype(np.float64)))
        if bad.size:
            raise WorkerError(ENV_ERROR, f"env {self.args.env_id} (vector index {bad[0]}): "
                              f"reward at step {self.steps}: {rewards[bad[0]]}")
        self.obs.write(obs, self.observations, self.steps, "observation")
        self.rewards[...] = rewards
        self.terminated[...] = np.asarray(terminated, dtype=bool)
        self.truncated[...] = np.asarray(truncated, dtype=bool)
        done = np.flatnonzero(self.terminated | self.truncated)
        if done.size == 0:
            return
        if self.env_autoreset == "same_step":
            # obs already holds the new episodes' first observations.
            final = infos.get("final_obs")
            if final is None:
                raise WorkerError(ENV_ERROR, f"env {self.args.env_id}: same_step autoreset "
                                  f"without infos['final_obs'] at step {self.steps}")
            batch = np.stack([np.asarray(final[i]) for i in done])
            self.obs.write(batch, self.finals, self.steps, "final observation", rows=done)
        else:
            # next_step and disabled: obs is the ending episode's last observation.
            self.finals[done] = self.observations[done]

    def render(self, index):
        """Sends env `index`'s current frame as RGB bytes in a memfd. Sync vector
        envs render each env; other vector envs must render as a whole."""
        np = self.np
        if not 0 <= index < self.n:
            raise WorkerError(ENV_ERROR, f"render: no env {index} of {self.n}")
        if self.args.render_from_observations:
            # The newest frame of a stack: [stack, H, W] (grayscale) or
            # [stack, H, W, 3] (RGB); a trailing channel of 1 is grayscale.
            frame = self.observations[index]
            if frame.ndim >= 3 and frame.shape[-1] == 1:
                frame = frame[..., 0]
            while frame.ndim > 3 or (frame.ndim == 3 and frame.shape[-1] not in (3, 4)):
                frame = frame[-1]
        elif hasattr(self.env, "envs"):
            frame = self.env.envs[index].render()
        else:
            try:
                frames = self.env.call("render")
            except Exception as e:
                raise WorkerError(CONFIG_ERROR, f"env {self.args.env_id}: its vector env cannot "
                                  f"render env by env ({type(e).__name__}: {e}); use "
                                  "env.vectorization_mode sync to record") from e
            frame = frames[index]
        if frame is None:
            raise WorkerError(CONFIG_ERROR, f"env {self.args.env_id}: render() returned None "
                              "(was it made with render_mode='rgb_array'?)")
        frame = np.asarray(frame)
        if frame.ndim == 2:
            frame = np.stack([frame] * 3, axis=-1)
        if frame.ndim != 3 or frame.shape[2] not in (3, 4) or frame.dtype != np.uint8:
            raise WorkerError(ENV_ERROR, f"env {self.args.env_id}: render() returned "
                              f"{frame.dtype} {frame.shape}, not uint8 (H, W, 3)")
        frame = np.ascontiguousarray(frame[:, :, :3])
        fd = os.memfd_create("rlswarm-frame", os.MFD_CLOEXEC)
        try:
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(frame.tobytes())
            answer = {"ok": True, "width": int(frame.shape[1]), "height": int(frame.shape[0])}
            socket.send_fds(self.sock, [json.dumps(answer).encode()], [fd])
        finally:
            os.close(fd)

    def serve(self):
        while True:
            message = self.sock.recv(65536)
            if not message:
                return  # the actor closed the socket or died
            try:
                if message == b"S":
                    self.step()
                else:
                    command = json.loads(message)
                    name = command.get("cmd")
                    if name == "reset":
                        self.reset(command.get("seeded", False))
                    elif name == "reset_mask":
                        self.reset_mask_envs(command.get("seeded", False))
                    elif name == "render":
                        self.render(int(command.get("index", 0)))
                        continue  # render answers with its frame, not "K"
                    elif name == "close":
                        self.env.close()
                        self.sock.send(b"K")
                        return
                    else:
                        raise WorkerError(ENV_ERROR, f"unknown command {message[:40]!r}")
            except WorkerError as e:
                send_error(self.sock, e.kind, str(e), "")
                continue
            except Exception as e:  # the env's own exception: report and keep serving
                send_error(self.sock, ENV_ERROR,
                           f"env {self.args.env_id} raised {type(e).__name__} at step "
                           f"{self.steps}: {e}", traceback.format_exc())
                continue
            self.sock.send(b"K")


def max_episode_steps_of_vector(env):
    spec = getattr(env, "spec", None)
    steps = getattr(spec, "max_episode_steps", None)
    if steps:
        return int(steps)
    # make_vec's spec is the vector env's; the single env's limit is in its kwargs.
    kwargs = getattr(spec, "kwargs", None) or {}
    return int(kwargs.get("max_episode_steps") or 0)


def send_error(sock, kind, message, trace):
    payload = json.dumps({"ok": False, "kind": kind, "message": message,
                          "traceback": trace[-16000:]})
    sock.send(payload.encode())


def parse_args(argv):
    p = argparse.ArgumentParser(prog="rlswarm-env-worker")
    p.add_argument("--env-id", required=True)
    p.add_argument("--kwargs", default="{}")
    p.add_argument("--num-envs", type=int, default=1)
    p.add_argument("--vectorization-mode", default=None)
    p.add_argument("--autoreset-mode", default=None)
    p.add_argument("--describe", action="store_true")
    return p.parse_args(argv)


def main(argv):
    die_with_parent()
    # Ctrl-C reaches the whole process group: the actor decides when we stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    args = parse_args(argv)
    sock = socket.socket(fileno=3)
    try:
        gym, np = import_gymnasium()
        args.gym_id = import_env_module(args.env_id, gym)
        kwargs = json.loads(args.kwargs) if args.kwargs else {}
        if args.describe:
            try:
                spec = describe(gym, np, args, kwargs)
            except WorkerError:
                raise
            except Exception as e:
                raise WorkerError(CONFIG_ERROR, f"gymnasium.make_vec('{args.env_id}') failed: "
                                  f"{type(e).__name__}: {e}") from e
            sock.send(json.dumps({"ok": True, "spec": spec}).encode())
            return 0
        try:
            worker = Worker(sock, gym, np, args, kwargs)
        except WorkerError:
            raise
        except Exception as e:
            raise WorkerError(CONFIG_ERROR, f"gymnasium.make_vec('{args.env_id}') failed: "
                              f"{type(e).__name__}: {e}") from e
        worker.hello()
    except WorkerError as e:
        send_error(sock, e.kind, str(e), traceback.format_exc())
        return 0
    worker.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
