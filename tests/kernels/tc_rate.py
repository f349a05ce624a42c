#!/usr/bin/env python3
"""Mbit/s a tc object sent over SECS seconds, on the wire, and the bound of its timing error in %.

    tc_rate.py DEV 'class ID[,ID...]' SECS   an HTB class (e.g. 'class 10:100'), or the sum of
                                           several (an mq root's classes 1:1,1:2,...: its queues)

One long-lived `tc -s -batch -` answers every sample (no exec per sample: on a TCG guest an exec of
tc takes 50-150 ms); each sample's timestamp is the middle of the request/answer bracket, the best
of 5, and the bracket bounds the error. Prints "MBPS ERROR_PERCENT".
"""
import re
import subprocess
import sys
import time


def main():
    dev, what, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
    kind, ident = what.split(" ", 1)
    if kind != "class":
        sys.exit("tc_rate.py: want 'class ID[,ID...]', got %r" % what)
    # Classes by id: `qdisc show ... root` (or `handle`) cannot be repeated in one tc batch, tc
    # keeps what it parsed the first time.
    ids = ident.split(",")
    request = "".join("class show dev %s classid %s\n" % (dev, i) for i in ids)
    tc = subprocess.Popen(["stdbuf", "-o0", "tc", "-s", "-batch", "-"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True, bufsize=1)

    def sample():
        best = None
        for _ in range(5):
            t0 = time.monotonic()
            tc.stdin.write(request)
            tc.stdin.flush()
            sent = 0
            for _ in ids:
                while True:
                    line = tc.stdout.readline()
                    if not line:
                        sys.exit("tc -batch ended")
                    m = re.search(r"Sent (\d+) bytes", line)
                    if m:
                        sent += int(m.group(1))
                        break
            t1 = time.monotonic()
            if best is None or t1 - t0 < best[2]:
                best = ((t0 + t1) / 2, sent, t1 - t0)
            if t1 - t0 < 0.005:
                break
        return best

    a = sample()
    time.sleep(secs)
    b = sample()
    dt = b[0] - a[0]
    print("%.2f %.2f" % ((b[1] - a[1]) * 8 / dt / 1e6, 100 * (a[2] + b[2]) / 2 / dt))
    tc.stdin.close()
    tc.wait()


if __name__ == "__main__":
    main()
