"""rlswarm.replay against real replay shards: in this process, in a child
process, and `rlswarm replay` itself where the binary is built."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import rlswarm
from rlswarm import errors, replay

REPO = Path(__file__).resolve().parents[2]
CARTPOLE = rlswarm.make_vec("CartPole-v1", 1)
SIGNATURE = replay.transition_signature(
    CARTPOLE.single_observation_space, CARTPOLE.single_action_space
)


def transitions(n, seed=0):
    """n distinct CartPole-shaped transitions; action i identifies row i."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(n, 4)).astype(np.float32)
    return {
        "observation": obs,
        "action": np.arange(n, dtype=np.int64),
        "reward": np.ones(n, dtype=np.float32),
        "discount": np.full(n, 0.99, dtype=np.float32),
        "next_observation": obs + 1,
    }


def assert_round_trip(endpoint, keys_dir):
    items = transitions(200)
    with replay.Writer(endpoint, SIGNATURE, keys_dir=keys_dir) as writer:
        writer.append(items, policy_version=3)
        assert writer.flush(timeout=10.0)
        assert writer.stats()["items_acknowledged"] == 200
    sampler = replay.Sampler(endpoint, keys_dir=keys_dir, timeout=10.0)
    batch = sampler.sample(64)
    rows = batch.fields["action"]
    assert batch.keys.dtype == np.uint64 and batch.keys.shape == (64,)
    assert batch.fields["observation"].shape == (64, 4)
    # Every sampled row is the row that was written.
    np.testing.assert_array_equal(batch.fields["observation"], items["observation"][rows])
    np.testing.assert_array_equal(batch.fields["next_observation"], items["next_observation"][rows])
    np.testing.assert_array_equal(batch.policy_versions, 3)
    assert np.all(batch.probabilities > 0) and np.all(batch.weights <= 1)
    updated, ignored = sampler.update_priorities(batch.keys, np.full(64, 5.0))
    assert updated == 64 and ignored == 0
    assert sampler.info(0)["table"]["size"] == 200


@pytest.fixture()
def keys_dir(tmp_path):
    replay.generate_keys(str(tmp_path / "keys"))
    return str(tmp_path / "keys")


def test_round_trip_with_curve_in_this_process(keys_dir):
    with replay.Server(SIGNATURE, keys_dir=keys_dir) as server:
        assert_round_trip(server.endpoint, keys_dir)


SERVE = textwrap.dedent(
    """
    import sys
    from rlswarm import replay
    signature = eval(sys.argv[1])
    with replay.Server(signature, keys_dir=sys.argv[2]) as server:
        print("endpoint", server.endpoint, flush=True)
        sys.stdin.read()  # until the test closes our stdin
    """
)


def read_endpoint(process, deadline_s=60):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        if line.startswith("endpoint "):
            return line.split()[1]
    raise AssertionError(f"no endpoint line; exit status {process.poll()}")


def test_round_trip_with_curve_against_a_shard_in_another_process(keys_dir):
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, repr(SIGNATURE), keys_dir],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert_round_trip(read_endpoint(server), keys_dir)
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def rlswarm_binary():
    path = Path(os.environ.get("RLSWARM_BIN", REPO / "build" / "rlswarm"))
    return path if path.is_file() else None


@pytest.mark.skipif(rlswarm_binary() is None, reason="no rlswarm binary (scripts/build.sh, or RLSWARM_BIN)")
def test_round_trip_with_curve_against_rlswarm_replay(keys_dir):
    server = subprocess.Popen(
        [str(rlswarm_binary()), "replay", "--config", str(REPO / "configs" / "cartpole.yaml"),
         "--shard", "0", "--bind", "tcp://127.0.0.1:*", "replay.num_shards=1",
         "replay.min_size_to_sample=1", "security.curve=true", f"security.keys_dir={keys_dir}"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert_round_trip(read_endpoint(server), keys_dir)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_client_without_the_keys_is_refused(keys_dir):
    with replay.Server(SIGNATURE, keys_dir=keys_dir) as server:
        with pytest.raises(errors.Unavailable):
            replay.Sampler(server.endpoint, timeout=1.0).sample(4)


def test_a_dead_endpoint_raises_unavailable_within_the_deadline():
    # The shard is probed for 0.5 s (a deadline shorter than that ends as
    # DeadlineExceeded instead).
    sampler = replay.Sampler("tcp://127.0.0.1:1", timeout=2.0)
    start = time.monotonic()
    with pytest.raises(errors.Unavailable):
        sampler.sample(4)
    assert time.monotonic() - start < 5
    assert issubclass(errors.Unavailable, ConnectionError)


def test_priorities_steer_prioritized_sampling():
    with replay.Server(SIGNATURE, selector="prioritized", alpha=1.0) as server:
        with replay.Writer(server.endpoint, SIGNATURE) as writer:
            writer.append(transitions(100))
            assert writer.flush(timeout=10.0)
        sampler = replay.Sampler(server.endpoint)
        batch = sampler.sample(100, draw_seed=1)
        first = batch.keys[batch.fields["action"] == batch.fields["action"][0]][0]
        others = np.unique(batch.keys[batch.keys != first])
        sampler.update_priorities(np.array([first]), [1000.0])
        sampler.update_priorities(others, np.full(len(others), 1e-3))
        drawn = sampler.sample(200, draw_seed=2).keys
        assert np.mean(drawn == first) > 0.9


def test_items_that_do_not_match_the_signature_raise_invalid_argument():
    with replay.Server(SIGNATURE) as server:
        with replay.Writer(server.endpoint, SIGNATURE) as writer:
            with pytest.raises(errors.InvalidArgument, match="unknown field"):
                writer.append(transitions(4), extra=np.zeros(4))
            bad = transitions(4)
            bad["observation"] = np.zeros((4, 3), dtype=np.float32)
            with pytest.raises(errors.InvalidArgument, match="observation"):
                writer.append(bad)
            missing = transitions(4)
            del missing["reward"]
            with pytest.raises(errors.InvalidArgument, match="reward"):
                writer.append(missing)
