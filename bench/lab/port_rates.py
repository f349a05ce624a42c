#!/usr/bin/env python3
"""Mbit/s each ingress filter of DEV matched over SECS seconds, after WARM seconds.

    port_rates.py NETNS DEV WARM SECS

Every filter on DEV's ingress hook (one per sender, e.g. `u32 match ip dport P action ok`) is read
from ONE long-lived `tc -s -batch -`, started before the warm-up, so that taking a sample costs no
process start: on a TCG guest whose vCPUs the senders saturate, starting python or tc takes
seconds, a sample from a running process milliseconds (run it with a high priority, e.g. nice -n
-20). Prints one line per filter, "PREF MBPS ERROR_PERCENT", in pref order; 14 bytes per packet are
added for the Ethernet header the ingress hook no longer counts (wire units, as an HTB class
counts). The error bound is the time a sample took over the window.
"""
import re
import subprocess
import sys
import time


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    netns, dev, warm, secs = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    tc = subprocess.Popen(["stdbuf", "-o0", "tc", "-n", netns, "-s", "-batch", "-"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    # tc -batch does not mark the end of an answer: a second command whose one line is known
    # (loopback's qdisc) does.
    request = "filter show dev %s ingress\nqdisc show dev lo\n" % dev

    def sample():
        t0 = time.monotonic()
        tc.stdin.write(request)
        tc.stdin.flush()
        counts, pref = {}, None
        while True:
            line = tc.stdout.readline()
            if not line:
                sys.exit("port_rates.py: tc -batch ended")
            if line.startswith("qdisc "):
                break
            m = re.search(r"\bpref (\d+)\b", line)
            if m:
                pref = int(m.group(1))
            m = re.search(r"Sent (\d+) bytes (\d+) pkt", line)
            if m and pref is not None:
                counts[pref] = int(m.group(1)) + 14 * int(m.group(2))
        t1 = time.monotonic()
        return (t0 + t1) / 2, t1 - t0, counts

    sample()  # the first answer pays for tc's own start-up
    time.sleep(warm)
    a = sample()
    time.sleep(secs)
    b = sample()
    dt = b[0] - a[0]
    err = 100 * (a[1] + b[1]) / 2 / dt
    for pref in sorted(b[2]):
        print("%d %.2f %.2f" % (pref, (b[2][pref] - a[2].get(pref, 0)) * 8 / dt / 1e6, err))
    tc.stdin.close()
    tc.wait()


if __name__ == "__main__":
    main()
