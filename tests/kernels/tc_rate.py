#!/usr/bin/env python3
"""Mbit/s a tc object sent over SECS seconds, on the wire, and the bound of its timing error in %.

    tc_rate.py [-n NETNS] DEV WHAT SECS [[-n NETNS] DEV WHAT]...
      WHAT 'class ID[,ID...]': an HTB class (e.g. 'class 10:100'), or the sum of several (an mq
           root's classes 1:1,1:2,...: its queues)
      WHAT 'ingress PREF[,PREF...]': what the filters at those prefs on DEV's ingress hook matched
           (each with one action, e.g. `u32 match ip dst A/32 action drop`; the action's
           counter): what a receiver got from one sender. Ingress counts a frame after its
           Ethernet header was pulled, a class with it, so 14 bytes per packet are added to be in
           the same (wire) units; exact for packets that are not GSO (a GSO packet's segments
           each had headers on the wire that the receiver sees once).
      WHAT 'egress PREF[,PREF...]': the same on DEV's egress hook (the frame is whole there).
      -n NETNS: DEV is in that network namespace (tc -n).

Several objects are sampled back to back at the start and at the end of the same window: one line
per object, in order. One long-lived `tc -s -batch -` per object answers every sample (no exec per
sample: on a TCG guest an exec of tc takes 50-150 ms); each sample's timestamp is the middle of
the request/answer bracket, the best of 5, and the bracket bounds the error. Prints
"MBPS ERROR_PERCENT" for each.
"""
import re
import subprocess
import sys
import time


class Counter:
    def __init__(self, netns, dev, what):
        kind, ident = what.split(" ", 1)
        self.ids = ident.split(",")
        if kind == "class":
            # Classes by id: `qdisc show ... root` (or `handle`) cannot be repeated in one tc
            # batch, tc keeps what it parsed the first time.
            self.request = "".join("class show dev %s classid %s\n" % (dev, i) for i in self.ids)
            self.l2 = 0
        elif kind in ("ingress", "egress"):
            self.request = "".join("filter show dev %s %s pref %s\n" % (dev, kind, i)
                                   for i in self.ids)
            self.l2 = 14 if kind == "ingress" else 0
        else:
            sys.exit("tc_rate.py: want 'class ID[,ID...]' or 'ingress|egress PREF[,PREF...]', got %r"
                     % what)
        ns = ["-n", netns] if netns else []
        self.tc = subprocess.Popen(["stdbuf", "-o0", "tc"] + ns + ["-s", "-batch", "-"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                   bufsize=1)

    def sample(self):
        best = None
        for _ in range(5):
            t0 = time.monotonic()
            self.tc.stdin.write(self.request)
            self.tc.stdin.flush()
            sent = 0
            for _ in self.ids:
                while True:
                    line = self.tc.stdout.readline()
                    if not line:
                        sys.exit("tc -batch ended")
                    m = re.search(r"Sent (\d+) bytes (\d+) pkt", line)
                    if m:
                        sent += int(m.group(1)) + self.l2 * int(m.group(2))
                        break
            t1 = time.monotonic()
            if best is None or t1 - t0 < best[2]:
                best = ((t0 + t1) / 2, sent, t1 - t0)
            if t1 - t0 < 0.005:
                break
        return best

    def close(self):
        self.tc.stdin.close()
        self.tc.wait()


def main():
    args = sys.argv[1:]
    groups, secs = [], None
    while args:
        netns = None
        if args[0] == "-n":
            netns, args = args[1], args[2:]
        if len(args) < 2:
            sys.exit(__doc__)
        groups.append((netns, args[0], args[1]))
        args = args[2:]
        if secs is None:
            if not args:
                sys.exit(__doc__)
            secs, args = float(args[0]), args[1:]
    counters = [Counter(*g) for g in groups]
    first = [c.sample() for c in counters]
    time.sleep(secs)
    last = [c.sample() for c in counters]
    for a, b in zip(first, last):
        dt = b[0] - a[0]
        print("%.2f %.2f" % ((b[1] - a[1]) * 8 / dt / 1e6, 100 * (a[2] + b[2]) / 2 / dt))
    for c in counters:
        c.close()


if __name__ == "__main__":
    main()
