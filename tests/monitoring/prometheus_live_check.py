#!/usr/bin/env python3
"""The Prometheus side of tests/monitoring/prometheus_live_test.sh: the shipped rules at a faster
clock, and what a real Prometheus scraping a real netqosd answers.

  prometheus_live_check.py rules   --repo DIR --speedup N --out FILE
  prometheus_live_check.py series  --url URL --repo DIR --node NODE --namespace NS [--timeout S]
  prometheus_live_check.py firing  --url URL --must A[,B] [--may C[,D]] [--timeout S]
  prometheus_live_check.py fires   --url URL --alert NAME [--label k=v ...] [--timeout S]
  prometheus_live_check.py value   --url URL --expr EXPR --min A --max B --what TEXT [--timeout S]
  prometheus_live_check.py ready   --url URL [--scraped EXPR] [--timeout S]

rules:  writes deploy/monitoring/netqos-rules.yaml with every duration (`for:` and range
        selectors) divided by N, so that a test scraping every second sees in seconds what a
        node sees in minutes: the expressions, labels and the relations between the windows
        are the shipped ones. promtool's unit tests (rules_test.yaml) check the real durations.
series: waits until every recording rule and every dashboard query (its variables set to this
        node, this namespace and a 4 s rate interval) returns at least one series; fails naming
        the ones that never do.
firing: waits until the alerts in --must fire and no other than those and --may does; fails
        naming the missing and the unexpected ones at the timeout.
value:  waits until the query's every value is within [min, max].
ready:  waits until Prometheus answers /-/ready (and --scraped's query returns series).
fires:  waits until the alert fires with the given labels.
"""

import argparse
import json
import os
import re
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netqos_monitoring as nm  # noqa: E402

yaml = nm.require_yaml()

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def scale_duration(text, speedup):
    """'5m' / speedup, as whole seconds (at least 1 s)."""
    m = re.fullmatch(r"(\d+)([smhd])", text)
    seconds = int(m.group(1)) * UNITS[m.group(2)]
    return f"{max(1, round(seconds / speedup))}s"


def scaled_rules(text, speedup):
    rules = yaml.safe_load(text)
    for group in rules["groups"]:
        for rule in group["rules"]:
            rule["expr"] = re.sub(r"\[(\d+[smhd])\]",
                                  lambda m: "[" + scale_duration(m.group(1), speedup) + "]",
                                  rule["expr"])
            if "for" in rule:
                rule["for"] = scale_duration(rule["for"], speedup)
    return yaml.safe_dump(rules, sort_keys=False)


def api(url, path, **params):
    query = urllib.parse.urlencode(params)
    with urllib.request.urlopen(f"{url}/api/v1/{path}?{query}", timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{path} {params}: {body}")
    return body["data"]


def series_count(url, expr):
    data = api(url, "query", query=expr)
    if data["resultType"] in ("vector", "matrix"):
        return len(data["result"])
    return 1  # a scalar or string is an answer


def firing_alerts(url):
    return [a for a in api(url, "alerts")["alerts"] if a["state"] == "firing"]


def cmd_rules(args):
    with open(os.path.join(args.repo, nm.RULES)) as f:
        text = scaled_rules(f.read(), args.speedup)
    with open(args.out, "w") as f:
        f.write(text)
    return 0


def poll(timeout, attempt, interval=1.0):
    """Calls attempt() until it returns True (then True) or `timeout` seconds have passed (then
    False)."""
    deadline = time.monotonic() + timeout
    while not attempt():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


# Families a panel shows that the demo's node cannot have, and why: their queries must run, but
# may return nothing.
EMPTY_IN_THE_DEMO = {
    "netqos_enforcement_inactive_feature":
        "only on a NIC in edt mode with a flag only htb does; this host has no sch_fq, so no edt",
}
# The NRI plugin's families exist only with --nri-socket, which the demo does not use (it has no
# container runtime with NRI).
for _f in ("netqos_nri_connected", "netqos_nri_reconnects_total",
           "netqos_nri_dropped_connections_total", "netqos_nri_events_total",
           "netqos_nri_ignored_events_total", "netqos_nri_late_replies_total",
           "netqos_nri_refused_starts_total", "netqos_nri_reply_seconds",
           "netqos_nri_event_budget_seconds", "netqos_nri_runtime_request_timeout_seconds"):
    EMPTY_IN_THE_DEMO[_f] = "only with --nri-socket, which the demo does not use"


def cmd_series(args):
    dashboard = nm.load_dashboard(args.repo)
    groups = yaml.safe_load(nm.read(args.repo, nm.RULES))["groups"]
    # Grafana puts a single value in a regex matcher as it is (node and namespace names have no
    # regex characters but '.', which matches itself too).
    values = {"node": args.node, "namespace": args.namespace,
              "__rate_interval": "4s", "__interval": "1s", "datasource": ""}
    checks = [(f"recording rule {name}", name) for name in nm.recording_rules(groups)]
    for title, ref, expr in nm.queries(dashboard):
        if title.startswith("variable "):
            expr = nm.variable_query_expr(expr)
        checks.append((f"{title} [{ref}]", nm.substitute(expr, values)))
    missing = checks

    def attempt():
        nonlocal missing
        still = []
        for what, expr in missing:
            try:
                n = series_count(args.url, expr)
            except (OSError, RuntimeError) as e:
                print(f"  {what}: query failed: {e}")
                still.append((what, expr))
                continue
            if n == 0 and not any(f in expr for f in EMPTY_IN_THE_DEMO):
                still.append((what, expr))
        missing = still
        return not missing

    if poll(args.timeout, attempt):
        print(f"series: all {len(checks)} queries (every recording rule, every dashboard panel "
              f"and variable) return series")
        return 0
    for what, expr in missing:
        print(f"FAIL: no series for {what}: {expr}")
    return 1


def cmd_firing(args):
    must = set(filter(None, args.must.split(",")))
    may = set(filter(None, (args.may or "").split(",")))
    alerts, names = [], set()

    def attempt():
        nonlocal alerts, names
        alerts = firing_alerts(args.url)
        names = {a["labels"]["alertname"] for a in alerts}
        return must <= names and names <= must | may

    if poll(args.timeout, attempt):
        print(f"firing: {', '.join(sorted(names)) or 'none'} (as expected)")
        return 0
    if must - names:
        print(f"FAIL: {', '.join(sorted(must - names))} not firing after {args.timeout} s")
    for a in alerts:
        if a["labels"]["alertname"] not in must | may:
            print(f"FAIL: unexpected alert firing: {a['labels']} {a['annotations']}")
    return 1


def cmd_value(args):
    values = []

    def attempt():
        nonlocal values
        data = api(args.url, "query", query=args.expr)
        values = [float(r["value"][1]) for r in data["result"]] \
            if data["resultType"] == "vector" else []
        return bool(values) and all(args.min <= v <= args.max for v in values)

    if poll(args.timeout, attempt):
        print(f"value: {', '.join(f'{v:.3f}' for v in values)} within [{args.min}, {args.max}]: "
              f"{args.what}")
        return 0
    print(f"FAIL: {args.what}: {values or 'no series'} not within [{args.min}, {args.max}] "
          f"after {args.timeout} s: {args.expr}")
    return 1


def cmd_ready(args):
    def attempt():
        try:
            with urllib.request.urlopen(f"{args.url}/-/ready", timeout=2) as r:
                return r.status == 200 and (not args.scraped or
                                            series_count(args.url, args.scraped) > 0)
        except (OSError, RuntimeError):
            return False

    if poll(args.timeout, attempt, interval=0.2):
        return 0
    print(f"FAIL: Prometheus not ready on {args.url} after {args.timeout} s")
    return 1


def cmd_fires(args):
    want = dict(kv.split("=", 1) for kv in args.label)
    started = time.monotonic()
    found = {}

    def attempt():
        for a in firing_alerts(args.url):
            labels = a["labels"]
            if labels.get("alertname") == args.alert and \
                    all(labels.get(k) == v for k, v in want.items()):
                found.update(a)
                return True
        return False

    if poll(args.timeout, attempt):
        print(f"fires: {args.alert} {found['labels']} after {time.monotonic() - started:.0f} s: "
              f"{found['annotations'].get('summary', '')}")
        return 0
    print(f"FAIL: {args.alert} {want} did not fire within {args.timeout} s; firing: "
          f"{[a['labels'] for a in firing_alerts(args.url)]}")
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("rules")
    p.add_argument("--repo", required=True)
    p.add_argument("--speedup", type=float, required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("series")
    p.add_argument("--url", required=True)
    p.add_argument("--repo", required=True)
    p.add_argument("--node", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--timeout", type=float, default=90)
    p = sub.add_parser("firing")
    p.add_argument("--url", required=True)
    p.add_argument("--must", required=True)
    p.add_argument("--may")
    p.add_argument("--timeout", type=float, default=60)
    p = sub.add_parser("fires")
    p.add_argument("--url", required=True)
    p.add_argument("--alert", required=True)
    p.add_argument("--label", action="append", default=[])
    p.add_argument("--timeout", type=float, default=60)
    p = sub.add_parser("value")
    p.add_argument("--url", required=True)
    p.add_argument("--expr", required=True)
    p.add_argument("--min", type=float, required=True)
    p.add_argument("--max", type=float, required=True)
    p.add_argument("--what", required=True)
    p.add_argument("--timeout", type=float, default=30)
    p = sub.add_parser("ready")
    p.add_argument("--url", required=True)
    p.add_argument("--scraped")
    p.add_argument("--timeout", type=float, default=30)
    args = ap.parse_args()
    return {"rules": cmd_rules, "series": cmd_series, "firing": cmd_firing,
            "fires": cmd_fires, "value": cmd_value, "ready": cmd_ready}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
