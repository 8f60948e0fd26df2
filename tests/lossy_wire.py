#!/usr/bin/env python3
"""A network link with delay and loss, in user space, for kernels without
sch_netem (tc netem): one TUN device per network namespace, and this process
forwarding IPv4 packets between them by destination address, each one after
--delay-ms and each dropped with probability --loss.

    lossy_wire.py --delay-ms 5 --loss 0.01 --ready FILE NAME=NETNS=ADDR ...

For each NAME=NETNS=ADDR it creates TUN device NAME, moves it into NETNS and
gives it ADDR/24 there; then it writes FILE and forwards until SIGTERM, when it
prints its counts (forwarded, lost to --loss, undeliverable: the destination
device down or unknown) as one line of JSON. Setting a device down inside its
namespace (ip link set NAME down) cuts that host off: what is sent to it is
counted undeliverable, as a pulled cable would lose it.
"""

import argparse
import fcntl
import heapq
import json
import os
import random
import select
import signal
import struct
import subprocess
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000


def open_tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay-ms", type=float, default=5.0)
    parser.add_argument("--loss", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ready", required=True)
    parser.add_argument("hosts", nargs="+", help="NAME=NETNS=ADDR")
    args = parser.parse_args()

    by_address = {}  # 4-byte IPv4 address -> TUN fd
    fds = []
    for host in args.hosts:
        name, netns, address = host.split("=")
        fd = open_tun(name)
        subprocess.run(["ip", "link", "set", name, "netns", netns], check=True)
        subprocess.run(["ip", "-n", netns, "addr", "add", f"{address}/24", "dev", name], check=True)
        subprocess.run(["ip", "-n", netns, "link", "set", name, "up"], check=True)
        by_address[bytes(map(int, address.split(".")))] = fd
        fds.append(fd)

    counts = {"forwarded": 0, "lost": 0, "undeliverable": 0}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    rng = random.Random(args.seed)
    delay = args.delay_ms / 1000.0
    pending = []  # (due time, sequence, fd, packet)
    sequence = 0
    with open(args.ready, "w") as f:
        f.write("ready\n")

    while not stop:
        now = time.monotonic()
        while pending and pending[0][0] <= now:
            _, _, fd, packet = heapq.heappop(pending)
            try:
                os.write(fd, packet)
                counts["forwarded"] += 1
            except OSError:  # the device is down: the host is cut off
                counts["undeliverable"] += 1
        timeout = max(0.0, pending[0][0] - now) if pending else 0.5
        try:
            readable, _, _ = select.select(fds, [], [], timeout)
        except InterruptedError:
            continue
        for fd in readable:
            while True:
                try:
                    packet = os.read(fd, 65536)
                except (BlockingIOError, OSError):
                    break
                if len(packet) < 20 or packet[0] >> 4 != 4:
                    continue  # not IPv4 (router solicitations and the like)
                target = by_address.get(packet[16:20])
                if target is None:
                    counts["undeliverable"] += 1
                elif rng.random() < args.loss:
                    counts["lost"] += 1
                else:
                    sequence += 1
                    heapq.heappush(pending, (time.monotonic() + delay, sequence, target, packet))
    print(json.dumps(counts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
