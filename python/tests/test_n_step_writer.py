"""rlswarm.replay.NStepWriter: the n-step transitions it writes for a scripted
episode with a termination and a truncation, read back through a real replay
shard, against returns computed by hand."""

import numpy as np
import pytest

import rlswarm
from rlswarm import errors, replay

CARTPOLE = rlswarm.make_vec("CartPole-v1", 1)
OBS_SPACE = CARTPOLE.single_observation_space
ACTION_SPACE = CARTPOLE.single_action_space
SIGNATURE = replay.transition_signature(OBS_SPACE, ACTION_SPACE)

N, GAMMA, STEPS = 3, 0.5, 6
TERMINATE = {0: 3}  # env 0's episode terminates at its step 3
TRUNCATE = {1: 4}  # env 1's episode is truncated at its step 4
FINAL = {0: 90.0, 1: 91.0}  # the final observation's id where each episode ends
Q_TAKEN = 0.5


def obs_id(e, t):
    """Env e's observation at step t (its first entry; the new episode's
    first observation after an autoreset follows the same scheme)."""
    return 10.0 * e + t


def reward(e, t):
    return (t + 1) * (10.0 if e == 1 else 1.0)


def value(observation_id):
    """The scripted V(s) of an observation."""
    return observation_id / 100.0


# Computed by hand from the rewards above (n = 3, gamma = 0.5):
# (env, step) -> (reward, discount, next observation id).
EXPECTED = {
    # env 0: step 0 completes n steps at step 2; the termination at step 3
    # emits steps 1-3 with discount 0 and the final observation; steps 4-5 of
    # the new episode are still pending.
    (0, 0): (1 + 0.5 * 2 + 0.25 * 3, 0.125, obs_id(0, 3)),
    (0, 1): (2 + 0.5 * 3 + 0.25 * 4, 0.0, FINAL[0]),
    (0, 2): (3 + 0.5 * 4, 0.0, FINAL[0]),
    (0, 3): (4, 0.0, FINAL[0]),
    # env 1: steps 0 and 1 complete n steps at steps 2 and 3; the truncation
    # at step 4 emits steps 2-4 with gamma^m and the final observation, to
    # bootstrap from; step 5 is pending.
    (1, 0): (10 + 0.5 * 20 + 0.25 * 30, 0.125, obs_id(1, 3)),
    (1, 1): (20 + 0.5 * 30 + 0.25 * 40, 0.125, obs_id(1, 4)),
    (1, 2): (30 + 0.5 * 40 + 0.25 * 50, 0.125, FINAL[1]),
    (1, 3): (40 + 0.5 * 50, 0.25, FINAL[1]),
    (1, 4): (50, 0.5, FINAL[1]),
}


def observation(ids):
    rows = np.zeros((len(ids), 4), np.float32)
    rows[:, 0] = ids
    return rows


def play(writer, with_values):
    """Steps the scripted episode through writer; returns how many
    transitions it appended."""
    appended = 0
    for t in range(STEPS):
        terminated = np.array([TERMINATE.get(e) == t for e in range(2)])
        truncated = np.array([TRUNCATE.get(e) == t for e in range(2)])
        final = observation([FINAL[e] if terminated[e] or truncated[e] else 0 for e in range(2)])
        next_obs = observation([obs_id(e, t + 1) for e in range(2)])
        values = {}
        if with_values:
            values = {
                "q_taken": np.full(2, Q_TAKEN),
                "next_values": value(next_obs[:, 0]),
                "final_values": value(final[:, 0]),
            }
        appended += writer.append_step(
            observation([obs_id(e, t) for e in range(2)]),
            np.array([100 + 10 * e + t for e in range(2)]),  # identifies (e, t)
            np.array([reward(e, t) for e in range(2)]),
            terminated,
            truncated,
            next_obs,
            final,
            policy_version=t,
            **values,
        )
    return appended


def read_back(server):
    """Every stored transition, keyed by (env, step), with its priority."""
    sampler = replay.Sampler(server.endpoint, timeout=10.0)
    # 9 items, 600 draws: each is drawn with probability > 1 - 1e-9.
    batch = sampler.sample(600, draw_seed=7)
    rows = {}
    for i, action in enumerate(batch.fields["action"]):
        e, t = divmod(int(action) - 100, 10)
        rows[(e, t)] = (
            float(batch.fields["reward"][i]),
            float(batch.fields["discount"][i]),
            float(batch.fields["next_observation"][i, 0]),
            float(batch.fields["observation"][i, 0]),
            float(batch.priorities[i]),
            int(batch.policy_versions[i]),
        )
    return rows


@pytest.mark.parametrize("with_values", [True, False])
def test_writes_the_hand_computed_n_step_transitions(with_values):
    with replay.Server(SIGNATURE, selector="uniform") as server:
        with replay.NStepWriter(server.endpoint, OBS_SPACE, ACTION_SPACE, 2, n=N, gamma=GAMMA) as w:
            assert play(w, with_values) == len(EXPECTED)
            assert w.flush(timeout=10.0)
        assert server.info()["table"]["size"] == len(EXPECTED)
        rows = read_back(server)
    assert set(rows) == set(EXPECTED)
    for (e, t), (r, discount, next_id) in EXPECTED.items():
        got_r, got_discount, got_next, got_obs, priority, version = rows[(e, t)]
        assert got_obs == obs_id(e, t)
        assert got_r == pytest.approx(r) and got_discount == pytest.approx(discount)
        assert got_next == next_id
        assert version == t  # the policy that chose a_t
        # Ape-X's |R + discount * V(next) - Q(s_t, a_t)|, or the shard's
        # default (the largest priority so far: 1.0) without values.
        want = abs(r + discount * value(next_id) - Q_TAKEN) if with_values else 1.0
        assert priority == pytest.approx(want, rel=1e-5)


def test_refuses_partial_values_and_misshapen_steps():
    with replay.Server(SIGNATURE) as server:
        with replay.NStepWriter(server.endpoint, OBS_SPACE, ACTION_SPACE, 2, n=N, gamma=GAMMA) as w:
            step = (observation([0, 10]), np.zeros(2), np.ones(2), np.zeros(2, bool),
                    np.zeros(2, bool), observation([1, 11]))
            with pytest.raises(errors.InvalidArgument, match="go together"):
                w.append_step(*step, q_taken=np.zeros(2))
            with pytest.raises(errors.InvalidArgument, match="observations"):
                w.append_step(observation([0, 10, 20]), *step[1:])
            with pytest.raises(errors.InvalidArgument, match="final_observations"):
                w.append_step(*step[:3], np.ones(2, bool), *step[4:])
            # Gymnasium's info["final_obs"] (an object array) is accepted.
            final = np.array([observation([90])[0], None], dtype=object)
            assert w.append_step(*step[:3], np.array([True, False]), step[4], step[5], final) == 1
    with pytest.raises(errors.InvalidArgument, match="n must be >= 1"):
        replay.NStepWriter("tcp://127.0.0.1:1", OBS_SPACE, ACTION_SPACE, 2, n=0)
