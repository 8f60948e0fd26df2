"""Scripted Gymnasium envs for rlswarm's tests of the Gymnasium path.

Importing this module registers them; rlswarm reaches them as
"gymnasium:rlswarm_test_envs:<Name>-v0" with this folder on PYTHONPATH.

Counter-v0: every observation says where it is, so that a test can check each
stored transition: obs = [episode, t, 0, 0] (float32), where `episode` counts
this env's episodes from the seed it was last seeded with (seed % 1000 * 1000
plus the episodes since) and t the step within it. reward = 100 * t + action.
Episode k lasts 3 + k % 4 steps: it terminates when k is even and is truncated
(by the env itself, as a time limit would) when k is odd.

Faulty-v0 (kwargs fault, at_step): fails on its `at_step`-th step (counted
over all episodes): "raise" raises RuntimeError, "nan" returns a NaN
observation, "shape" an observation of the wrong shape, "reward" a NaN reward,
"abort" kills the Python process (as a segfault in an env's C code would),
"sleep" sleeps 3600 s (a hung env).

DictObs-v0: a Dict observation space, which rlswarm refuses.
MultiAction-v0: MultiDiscrete([2, 3]) actions; obs echoes the last action.
"""

import os
import time

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Counter(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self):
        self.observation_space = spaces.Box(-1e9, 1e9, shape=(4,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)
        self.episode = 0
        self.t = 0

    def obs(self):
        return np.array([self.episode, self.t, 0, 0], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.episode = seed % 1000 * 1000
        else:
            self.episode += 1
        self.t = 0
        return self.obs(), {}

    def step(self, action):
        reward = 100.0 * self.t + int(action)
        self.t += 1
        length = 3 + self.episode % 4
        done = self.t >= length
        terminated = done and self.episode % 2 == 0
        truncated = done and self.episode % 2 == 1
        return self.obs(), reward, terminated, truncated, {}


class Faulty(gym.Env):
    def __init__(self, fault="raise", at_step=5):
        self.observation_space = spaces.Box(-10, 10, shape=(3,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.fault, self.at_step, self.steps = fault, at_step, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3, dtype=np.float32), {}

    def step(self, action):
        self.steps += 1
        obs = np.zeros(3, dtype=np.float32)
        reward = 1.0
        if self.steps == self.at_step:
            if self.fault == "raise":
                raise RuntimeError("scripted failure in Faulty-v0")
            if self.fault == "nan":
                obs[1] = np.nan
            if self.fault == "shape":
                obs = np.zeros(5, dtype=np.float32)
            if self.fault == "reward":
                reward = float("nan")
            if self.fault == "abort":
                os.abort()
            if self.fault == "sleep":
                time.sleep(3600)
        return obs, reward, False, False, {}


class DictObs(gym.Env):
    def __init__(self):
        self.observation_space = spaces.Dict({"a": spaces.Discrete(2)})
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return {"a": 0}, {}

    def step(self, action):
        return {"a": 0}, 0.0, False, False, {}


class MultiAction(gym.Env):
    def __init__(self):
        self.observation_space = spaces.Box(0, 10, shape=(2,), dtype=np.int64)
        self.action_space = spaces.MultiDiscrete([2, 3])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, dtype=np.int64), {}

    def step(self, action):
        return np.asarray(action, dtype=np.int64), 0.0, False, False, {}


gym.register("Counter-v0", entry_point=Counter)
gym.register("Faulty-v0", entry_point=Faulty)
gym.register("DictObs-v0", entry_point=DictObs)
gym.register("MultiAction-v0", entry_point=MultiAction)
