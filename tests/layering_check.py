#!/usr/bin/env python3
"""Checks that the folders' includes point one way (README.md, "Development").

Each library folder may include only the folders listed for it below, and the
folders that must not see LibTorch or ZeroMQ do not include their headers
(ZeroMQ is allowed in rpc's .cc files only). The learner's rooms count as
folders of their own (learner/runtime, learner/dist, ...), so their arrows
point one way too; a room's tests (*_test.cc) link the whole learner and its
test helpers (learner/testing) and may include any room. Exits 1 and names
every offending file and line; a new folder must be added here to be allowed
at all.

usage: layering_check.py SOURCE_DIR
"""
import pathlib
import re
import sys

LEARNER_ROOMS = ["learner/runtime", "learner/dist", "learner/fsdp", "learner/checkpoint",
                 "learner/apex", "learner/algorithms"]
ALLOWED = {
    "common": set(),
    "envs": {"common"},
    "rpc": {"common"},
    "replay": {"common", "rpc"},
    "models": {"common"},
    "observe": {"common", "envs"},  # envs/render.h only: the header-only Image
    "actors": {"common", "envs", "rpc", "replay", "models"},
    # The learner's rooms, each seeing only those before it.
    "learner/runtime": {"common", "rpc"},
    "learner/dist": {"common", "rpc", "learner/runtime"},
    "learner/fsdp": {"common", "models", "learner/runtime", "learner/dist"},
    "learner/checkpoint": {"common", "models", "learner/runtime", "learner/dist", "learner/fsdp"},
    "learner/apex": {"common", "rpc", "replay", "models", "learner/runtime", "learner/dist",
                     "learner/fsdp", "learner/checkpoint"},
    "learner/algorithms": {"common", "rpc", "replay", "models", "learner/runtime",
                           "learner/dist", "learner/fsdp", "learner/checkpoint", "learner/apex"},
    "learner/testing": {"common", "envs", "rpc", "replay", "models", *LEARNER_ROOMS},
    # Checkpoints only: evaluating a policy needs no training loop.
    "evaluate": {"common", "envs", "rpc", "replay", "models", "actors", "learner/runtime",
                 "learner/dist", "learner/fsdp", "learner/checkpoint"},
    "config": {"common", "envs", "rpc", "replay", "models", "actors", *LEARNER_ROOMS, "evaluate"},
    "launch": {"common", "envs", "rpc", "replay", "models", "actors", *LEARNER_ROOMS, "evaluate",
               "config", "observe"},
    "apps": {"common", "envs", "rpc", "replay", "models", "actors", *LEARNER_ROOMS, "evaluate",
             "config", "observe", "launch"},
    # The Python extension: the libraries without LibTorch only, so the
    # package pins no torch ABI.
    "python": {"common", "envs", "rpc", "replay"},
}
NO_TORCH = {"common", "envs", "rpc", "replay", "observe", "python", "learner/runtime"}
TORCH = re.compile(r'#include [<"](torch|ATen|c10)/')
ZMQ = re.compile(r'#include [<"](zmq|zmq\.hpp|zmq_addon\.hpp)[>"]')
LOCAL = re.compile(r'#include "([a-z_]+)/(?:([a-z_]+)/)?')


def unit(top, sub):
    """The folder an include names: a learner room, or a top-level folder."""
    return f"{top}/{sub}" if top == "learner" and sub else top


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    problems = []
    stray = sorted(p for p in (root / "learner").glob("*.*") if p.suffix in (".h", ".cc"))
    problems += [f"{p.relative_to(root)}: learner sources belong in a room" for p in stray]
    for folder, allowed in ALLOWED.items():
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".h", ".cc"):
                continue
            room_test = folder.startswith("learner/") and path.name.endswith("_test.cc")
            if room_test:
                allowed = ALLOWED["learner/testing"] | {"learner/testing"}
            else:
                allowed = ALLOWED[folder]
            rel = path.relative_to(root)
            for number, line in enumerate(path.read_text().splitlines(), 1):
                m = LOCAL.match(line)
                if not m:
                    pass
                elif (target := unit(m.group(1), m.group(2))) != folder and (
                        target in ALLOWED or target == "learner") and target not in allowed:
                    problems.append(f"{rel}:{number}: {folder}/ must not include {target}/")
                if folder in NO_TORCH and TORCH.match(line):
                    problems.append(f"{rel}:{number}: {folder}/ must not include LibTorch")
                if ZMQ.match(line) and not (folder == "rpc" and path.suffix == ".cc"
                                             or folder == "rpc" and "internal" in rel.parts):
                    problems.append(f"{rel}:{number}: only rpc's .cc files include ZeroMQ")
    for p in problems:
        print(p)
    print(f"layering: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
