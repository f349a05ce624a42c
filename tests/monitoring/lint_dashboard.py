#!/usr/bin/env python3
"""Lints the Grafana dashboard (deploy/monitoring/netqos-dashboard.json) against docs/metrics.md
and the recording rules, and against Grafana's conventions.

  lint_dashboard.py [--repo DIR] [--self-test]

Names:
  - every metric a panel (or a template variable) names is a family documented in
    docs/metrics.md, a recording rule of deploy/monitoring/netqos-rules.yaml, or one of
    Prometheus's own series (up, ALERTS); every recording rule names documented families only;
  - the reverse: every documented family is on the dashboard (directly, or through a recording
    rule a panel uses) unless NOT_ON_DASHBOARD says why not, and every recording rule is used by
    a panel or an alert.
Conventions:
  - a `datasource` variable of type datasource (Prometheus), and every panel and target uses it;
  - `node` and `namespace` query variables; every query filters node=~"$node", and every query of
    a per-container series also namespace=~"$namespace";
  - no hard-coded instance: no instance matcher, address or host name in a query;
  - every panel has a unit; panel ids are unique; the dashboard has a uid and a title.

--self-test breaks the dashboard, docs and rules in memory, one way at a time, and fails unless
each breakage is reported.
"""

import argparse
import copy
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netqos_monitoring as nm  # noqa: E402

yaml = nm.require_yaml()

# Documented families an operator does not need on the dashboard, and why.
NOT_ON_DASHBOARD = {
    "netqos_nic_reserved_bytes_per_second":
        "capacity less allocatable, both on the dashboard; netqosctl capacity prints it",
}
# The process_* families every Prometheus client exposes: the fleet's generic process and
# container dashboards show them, under the names they expect.
for _f in ("process_cpu_seconds_total", "process_resident_memory_bytes",
           "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
           "process_start_time_seconds"):
    NOT_ON_DASHBOARD[_f] = "the standard process family, on the fleet's process dashboards"

# Per-container series: their queries must also be filtered by $namespace.
PER_CONTAINER = re.compile(r"^netqos(_container_|:container_)")
HARD_CODED = [
    (re.compile(r"\binstance\s*=~?\s*\""), "an instance matcher"),
    (re.compile(r"\b\d{1,3}(\.\d{1,3}){3}\b"), "an IP address"),
    (re.compile(r"localhost"), "a host name"),
]


def lint(dashboard, docs_markdown, groups):
    problems = []
    families = nm.documented_families(docs_markdown)
    rules = nm.recording_rules(groups)
    alerts = nm.alert_exprs(groups)

    def known(name):
        return name in rules or name in nm.PROMETHEUS_SERIES or nm.family_of(name, families)

    # --- conventions ---
    if not dashboard.get("uid") or not dashboard.get("title"):
        problems.append("the dashboard has no uid or no title")
    variables = {v.get("name"): v for v in dashboard.get("templating", {}).get("list", [])}
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        problems.append("no `datasource` variable of type datasource for Prometheus")
    for name in ("node", "namespace"):
        v = variables.get(name)
        if not v or v.get("type") != "query":
            problems.append(f"no `{name}` query variable")
        elif (v.get("datasource") or {}).get("uid") != "${datasource}":
            problems.append(f"variable {name} does not query the ${{datasource}} variable")
    ids = set()
    for p in nm.panels(dashboard):
        title = p.get("title", "?")
        if p.get("id") in ids:
            problems.append(f"panel {title}: id {p.get('id')} is used twice")
        ids.add(p.get("id"))
        if (p.get("datasource") or {}).get("uid") != "${datasource}":
            problems.append(f"panel {title}: its datasource is not the ${{datasource}} variable")
        if not ((p.get("fieldConfig") or {}).get("defaults") or {}).get("unit"):
            problems.append(f"panel {title}: no unit (fieldConfig.defaults.unit)")
        if not p.get("targets"):
            problems.append(f"panel {title}: no query")
        for t in p.get("targets", []):
            if (t.get("datasource") or {}).get("uid") != "${datasource}":
                problems.append(f"panel {title} {t.get('refId')}: its datasource is not "
                                f"the ${{datasource}} variable")

    # --- queries ---
    used = set()
    for title, ref, expr in nm.queries(dashboard):
        where = f"panel {title} {ref}" if not title.startswith("variable ") else title
        if not expr.strip():
            problems.append(f"{where}: empty query")
            continue
        if not title.startswith("variable "):
            if not re.search(r'node=~"\$node"', expr):
                problems.append(f"{where}: not filtered by node=~\"$node\"")
        names = nm.metric_names(nm.variable_query_expr(expr))
        if not names:
            problems.append(f"{where}: names no netqos series")
        if any(PER_CONTAINER.match(n) for n in names) and not title.startswith("variable ") and \
                not re.search(r'namespace=~"\$namespace"', expr):
            problems.append(f"{where}: a per-container query not filtered by "
                            f"namespace=~\"$namespace\"")
        for pattern, what in HARD_CODED:
            if pattern.search(expr):
                problems.append(f"{where}: {what} is hard-coded: {expr}")
        for n in sorted(names):
            if not known(n):
                problems.append(f"{where}: {n} is not documented in {nm.METRICS_DOC} "
                                f"(nor a recording rule)")
        used |= names

    # --- recording rules: documented inputs; each used ---
    through_rules = set()
    pending = [n for n in used if n in rules]
    seen = set()
    while pending:
        r = pending.pop()
        if r in seen:
            continue
        seen.add(r)
        for n in nm.metric_names(rules[r]):
            through_rules.add(n)
            if n in rules:
                pending.append(n)
    for r, expr in rules.items():
        for n in sorted(nm.metric_names(expr)):
            if not known(n):
                problems.append(f"recording rule {r}: {n} is not documented in {nm.METRICS_DOC}")
    used_by_alerts = set().union(*(nm.metric_names(e) for e in alerts.values())) if alerts else set()
    for r in sorted(rules):
        if r not in used and r not in through_rules and r not in used_by_alerts:
            problems.append(f"recording rule {r} is used by no panel and no alert")

    # --- the reverse: every documented family is shown ---
    shown = {nm.family_of(n, families) for n in used | through_rules} - {None}
    for f in sorted(families):
        if f not in shown and f not in NOT_ON_DASHBOARD:
            problems.append(f"{f} is documented in {nm.METRICS_DOC} but on no panel (add one, "
                            f"or say why in NOT_ON_DASHBOARD)")
    for f in sorted(NOT_ON_DASHBOARD):
        if not nm.family_of(f, families):
            problems.append(f"NOT_ON_DASHBOARD names {f}, which is not documented")
    return problems


def load(repo):
    return (nm.load_dashboard(repo), nm.read(repo, nm.METRICS_DOC),
            yaml.safe_load(nm.read(repo, nm.RULES))["groups"])


def self_test(repo):
    dashboard, docs, groups = load(repo)
    if lint(dashboard, docs, groups):
        print("self-test: the unmodified inputs already fail; fix them first")
        return 1

    def first_target(d):
        return next(t for p in nm.panels(d) for t in p.get("targets", []))

    def container_target(d):
        return next(t for p in nm.panels(d) for t in p.get("targets", [])
                    if "netqos:container_bytes_per_second" in t["expr"])

    def edit_dashboard(fn):
        def apply(d, docs_, groups_):
            fn(d)
            return d, docs_, groups_
        return apply

    def set_expr(getter, change):
        return edit_dashboard(lambda d: getter(d).update(expr=change(getter(d)["expr"])))

    def drop_panels_naming(name):
        def fn(d):
            for p in d["panels"]:
                p["targets"] = [t for t in p.get("targets", []) if name not in t.get("expr", "")]
        return edit_dashboard(fn)

    mutations = {
        "a panel naming an undocumented metric":
            set_expr(first_target, lambda e: e.replace("up{", "netqos_not_a_metric{", 1)),
        "a documented family on no panel": drop_panels_naming("netqos_rpc_last_error_info"),
        "a family taken out of the docs": lambda d, docs_, g: (
            d, docs_.replace("| `netqos_ready` |", "| `netqos_was_ready` |"), g),
        "a recording rule used by nothing": lambda d, docs_, g: (
            d, docs_, [{"name": "x", "rules": g[0]["rules"] + [
                {"record": "netqos:unused:rate1m", "expr": "rate(netqos_up[1m])"}]}] + g[1:]),
        "a recording rule on an undocumented metric": lambda d, docs_, g: (
            d, docs_, [{"name": "x", "rules": [dict(g[0]["rules"][0],
                                                    expr="rate(netqos_nope_total[1m])")]
                        + g[0]["rules"][1:]}] + g[1:]),
        "a query not filtered by node": set_expr(
            first_target, lambda e: e.replace(', node=~"$node"', "").replace('node=~"$node"', "")),
        "a per-container query not filtered by namespace": set_expr(
            container_target, lambda e: e.replace(', namespace=~"$namespace"', "")),
        "a hard-coded instance": set_expr(
            first_target, lambda e: e.replace("{", '{instance="10.0.0.1:9465", ', 1)),
        "a panel without a unit": edit_dashboard(
            lambda d: next(nm.panels(d))["fieldConfig"]["defaults"].pop("unit")),
        "a panel with a fixed datasource": edit_dashboard(
            lambda d: next(nm.panels(d)).update(datasource={"type": "prometheus", "uid": "P1"})),
        "a target with a fixed datasource": edit_dashboard(
            lambda d: first_target(d).update(datasource={"type": "prometheus", "uid": "P1"})),
        "no datasource variable": edit_dashboard(lambda d: d["templating"].update(
            list=[v for v in d["templating"]["list"] if v["name"] != "datasource"])),
        "no namespace variable": edit_dashboard(lambda d: d["templating"].update(
            list=[v for v in d["templating"]["list"] if v["name"] != "namespace"])),
        "two panels with one id": edit_dashboard(
            lambda d: list(nm.panels(d))[1].update(id=next(nm.panels(d))["id"])),
    }
    missed = 0
    for what, fn in mutations.items():
        found = lint(*fn(copy.deepcopy(dashboard), docs, copy.deepcopy(groups)))
        print(f"self-test: {what}: {'reported' if found else 'NOT REPORTED'}")
        missed += not found
    print("self-test: every breakage reported" if not missed
          else f"FAIL: {missed} breakage(s) not reported")
    return 1 if missed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    if args.self_test:
        return self_test(repo)
    try:
        problems = lint(*load(repo))
    except (OSError, ValueError, KeyError) as e:
        print(f"FAIL: {e}")
        return 1
    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    dashboard = nm.load_dashboard(repo)
    print(f"dashboard: {len(list(nm.panels(dashboard)))} panels, "
          f"{sum(1 for _ in nm.queries(dashboard))} queries; every metric they name is documented "
          f"and every documented one is shown")
    return 0


if __name__ == "__main__":
    sys.exit(main())
