"""step and reset release the GIL while the C++ envs run."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import rlswarm


def step_for(envs, actions, seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        envs.step(actions)


def test_another_python_thread_runs_while_a_step_runs():
    # Each step of 100000 Acrobots takes ~30 ms in C++. A thread that kept
    # the GIL through it would stop the ticker below for the whole step; with
    # the GIL released the ticker is only ever paused by the OS scheduler.
    envs = rlswarm.make_vec("Acrobot-v1", 100_000, seed=0)
    envs.reset()
    actions = np.ones(100_000, dtype=np.int64)
    stop = threading.Event()
    largest_gap = [0.0]

    def tick():
        last = time.perf_counter()
        while not stop.is_set():
            now = time.perf_counter()
            largest_gap[0] = max(largest_gap[0], now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    step_times = []
    try:
        for _ in range(8):
            start = time.perf_counter()
            envs.step(actions)
            step_times.append(time.perf_counter() - start)
    finally:
        stop.set()
        ticker.join()
    step = float(np.median(step_times))
    assert largest_gap[0] < step / 2, (
        f"the other thread stood still for {largest_gap[0] * 1e3:.1f} ms; "
        f"a step takes {step * 1e3:.1f} ms"
    )


STEPPER = """
import sys, time
import numpy as np
import rlswarm
envs = rlswarm.make_vec("MinAtar/Breakout", 4096, seed=0, autoreset_mode="next_step")
envs.reset()
actions = np.zeros(4096, dtype=np.int64)
print("ready", flush=True)
sys.stdin.readline()
wall0, cpu0 = time.perf_counter(), time.process_time()
while time.perf_counter() - wall0 < float(sys.argv[1]):
    envs.step(actions)
print(time.process_time() - cpu0, time.perf_counter() - wall0, flush=True)
"""


def cores_used_by_two_processes(seconds):
    """CPU time over wall time of two processes stepping at the same time: what
    two threads would get with the GIL out of the way."""
    procs = [
        subprocess.Popen([sys.executable, "-c", STEPPER, str(seconds)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    cpu, wall = 0.0, 0.0
    for p in procs:
        c, w = map(float, p.stdout.readline().split())
        cpu, wall = cpu + c, max(wall, w)
        p.wait(timeout=30)
    return cpu / wall


def cores_used_by_threads(envs, actions, seconds):
    """CPU time over wall time while one thread per vector env steps it."""
    threads = [threading.Thread(target=step_for, args=(e, actions, seconds)) for e in envs]
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (time.process_time() - cpu0) / (time.perf_counter() - wall0)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores")
def test_two_threads_stepping_two_vector_envs_use_two_cores():
    # Large batches, and next-step autoreset (no final_obs info to build in
    # Python): each step spends nearly all its time in C++.
    envs = [
        rlswarm.make_vec("MinAtar/Breakout", 4096, seed=i, autoreset_mode="next_step")
        for i in range(2)
    ]
    for e in envs:
        e.reset()
    actions = np.zeros(4096, dtype=np.int64)
    # Two processes show how much CPU two busy threads of this session can
    # get now (Linux shares CPU time between sessions, so other people's
    # builds can leave less than two cores): with the GIL held through a step,
    # two threads would get no more than one core whatever the processes get.
    processes = cores_used_by_two_processes(1.5)
    if processes < 1.5:
        pytest.skip(f"the machine gives this session {processes:.2f} cores now, not 2")
    threads = cores_used_by_threads(envs, actions, 1.5)
    assert threads > 0.8 * processes, (
        f"two threads used {threads:.2f} cores, two processes {processes:.2f}"
    )
