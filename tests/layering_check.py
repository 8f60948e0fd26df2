#!/usr/bin/env python3
"""Checks that the folders' includes point one way (README.md, "Development").

Each library folder may include only the folders listed for it below, and the
folders that must not see LibTorch or ZeroMQ do not include their headers
(ZeroMQ is allowed in rpc's .cc files only). Exits 1 and names every
offending file and line; a new folder must be added here to be allowed at all.

usage: layering_check.py SOURCE_DIR
"""
import pathlib
import re
import sys

ALLOWED = {
    "common": set(),
    "envs": {"common"},
    "rpc": {"common"},
    "replay": {"common", "rpc"},
    "models": {"common"},
    "observe": {"common", "envs"},  # envs/render.h only: the header-only Image
    "actors": {"common", "envs", "rpc", "replay", "models"},
    "learner": {"common", "envs", "rpc", "replay", "models"},
    "evaluate": {"common", "envs", "rpc", "replay", "models", "actors", "learner"},
    "config": {"common", "envs", "rpc", "replay", "models", "actors", "learner", "evaluate"},
    "launch": {"common", "envs", "rpc", "replay", "models", "actors", "learner", "evaluate",
               "config", "observe"},
    "apps": {"common", "envs", "rpc", "replay", "models", "actors", "learner", "evaluate",
             "config", "observe", "launch"},
    # The Python extension: the libraries without LibTorch only, so the
    # package pins no torch ABI.
    "python": {"common", "envs", "rpc", "replay"},
}
NO_TORCH = {"common", "envs", "rpc", "replay", "observe", "python"}
TORCH = re.compile(r'#include [<"](torch|ATen|c10)/')
ZMQ = re.compile(r'#include [<"](zmq|zmq\.hpp|zmq_addon\.hpp)[>"]')
LOCAL = re.compile(r'#include "([a-z_]+)/')


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    problems = []
    for folder, allowed in ALLOWED.items():
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".h", ".cc"):
                continue
            rel = path.relative_to(root)
            for number, line in enumerate(path.read_text().splitlines(), 1):
                m = LOCAL.match(line)
                if m and m.group(1) != folder and m.group(1) in ALLOWED and m.group(1) not in allowed:
                    problems.append(f"{rel}:{number}: {folder}/ must not include {m.group(1)}/")
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
