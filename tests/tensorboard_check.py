#!/usr/bin/env python3
"""Reads a real run's TensorBoard event file with TensorBoard's own reader.

Runs a short `rlswarm launch` of a config (embedded mode, a small env-step
budget), then loads <run>/tensorboard/ with TensorBoard's EventAccumulator
and checks that it holds exactly the scalars of the run's scalars.jsonl:
the same tags, and per tag the same (step, wall_time, value) records in the
same order (values as float32, which is what a Summary's simple_value holds).

The reader is PyPI's tensorboard in the repository's ignored virtual
environment .venv-tools/ (scripts/setup.sh installs it, pinned); run with
any python3, this script re-runs itself with that venv's interpreter, and
fails (never skips) when the venv is missing.

  tensorboard_check.py --tools-python .venv-tools/bin/python --binary build/rlswarm \
      --config configs/cartpole.yaml
"""

import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time


def fail(message):
    print(f"tensorboard_check: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def use_tools_python(tools_python):
    """Re-executes this script under the tools venv's python unless it runs there."""
    if os.path.abspath(sys.executable) == os.path.abspath(tools_python):
        return
    if not os.access(tools_python, os.X_OK):
        fail(f"the test tools' virtual environment is missing ({tools_python} does not exist); "
             "scripts/setup.sh creates it (or run scripts/test.sh)")
    os.execv(tools_python, [tools_python, os.path.abspath(__file__)] + sys.argv[1:])


def float32(value):
    return struct.unpack("<f", struct.pack("<f", value))[0]


def run_launch(binary, config, run_dir, timeout_s):
    # No target: the run stops at its env-step budget, and its final
    # weights are evaluated, so eval/* scalars are written too.
    argv = [binary, "launch", config, "--run-dir", run_dir, "launch.mode=embedded",
            "launch.max_env_steps=4000", "launch.target_return=null",
            "launch.episode_return_bound=null", "launch.progress_interval_s=0.2",
            "launch.max_wall_time_s=60"]
    started = time.monotonic()
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout_s, check=False)
    if done.returncode != 0:
        fail(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-4000:]}")
    print(f"tensorboard_check: the run took {time.monotonic() - started:.1f} s")


def read_jsonl(path):
    by_tag = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            by_tag.setdefault(record["tag"], []).append(record)
    return by_tag


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools-python", required=True)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--config", required=True)
    parser.add_argument("--timeout-s", type=float, default=120)
    args = parser.parse_args()
    use_tools_python(args.tools_python)

    # Imported only here: under the tools venv's python.
    import tensorboard
    from tensorboard.backend.event_processing import event_accumulator

    with tempfile.TemporaryDirectory(prefix="tensorboard_check_") as temp:
        run_dir = os.path.join(temp, "run")
        run_launch(args.binary, args.config, run_dir, args.timeout_s)

        event_dir = os.path.join(run_dir, "tensorboard")
        files = [f for f in os.listdir(event_dir) if f.startswith("events.out.tfevents.")]
        if len(files) != 1:
            fail(f"{event_dir} holds {files}, want one event file")
        # 0: keep every scalar (the default samples 10,000 per tag).
        accumulator = event_accumulator.EventAccumulator(
            event_dir, size_guidance={event_accumulator.SCALARS: 0})
        accumulator.Reload()
        board_tags = set(accumulator.Tags()[event_accumulator.SCALARS])
        logged = read_jsonl(os.path.join(run_dir, "scalars.jsonl"))

        if board_tags != set(logged):
            fail(f"tags differ: only in TensorBoard {sorted(board_tags - set(logged))}, "
                 f"only in scalars.jsonl {sorted(set(logged) - board_tags)}")
        for tag in ("eval/mean_return", "learner/updates", "replay/size",
                    "actors/env_steps_per_sec"):
            if tag not in board_tags:
                fail(f"the run wrote no {tag}; tags: {sorted(board_tags)}")
        records = 0
        for tag in sorted(logged):
            want = logged[tag]
            got = accumulator.Scalars(tag)
            if len(got) != len(want):
                fail(f"{tag}: {len(got)} events in TensorBoard, {len(want)} in scalars.jsonl")
            for i, (event, record) in enumerate(zip(got, want)):
                where = f"{tag} record {i}"
                if event.step != record["step"]:
                    fail(f"{where}: step {event.step} != {record['step']}")
                if event.value != float32(record["value"]) and not (
                        math.isnan(event.value) and math.isnan(record["value"])):
                    fail(f"{where}: value {event.value} != float32({record['value']})")
                if abs(event.wall_time - record["wall_time"]) > 1e-6:
                    fail(f"{where}: wall_time {event.wall_time} != {record['wall_time']}")
            records += len(want)
        steps = [e.step for e in accumulator.Scalars("learner/updates")]
        if steps != sorted(steps) or steps[-1] < 4000:
            fail(f"learner/updates steps are not the run's env steps up to >= 4000: {steps}")
        print(f"tensorboard_check: tensorboard {tensorboard.__version__} read {records} scalars "
              f"of {len(board_tags)} tags, all equal to scalars.jsonl")


if __name__ == "__main__":
    main()
