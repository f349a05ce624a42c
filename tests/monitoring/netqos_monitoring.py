"""What the monitoring checks share: the dashboard's queries, the metric names a PromQL expression
names, the families docs/metrics.md documents and the rules of deploy/monitoring/.

Used by lint_dashboard.py (the dashboard against the docs and the rules) and by
prometheus_live_check.py (every query against a real Prometheus).
"""

import json
import os
import re
import sys

def require_yaml():
    """PyYAML, re-running the script under Debian's python3 when another python3 came first in
    PATH (pyenv, a virtualenv) without it; scripts/install-deps.sh installs python3-yaml."""
    try:
        import yaml
        return yaml
    except ImportError:
        if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and \
                os.access("/usr/bin/python3", os.X_OK):
            os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
        print("FAIL: PyYAML is missing (Debian: apt-get install python3-yaml)")
        sys.exit(1)


DASHBOARD = "deploy/monitoring/netqos-dashboard.json"
RULES = "deploy/monitoring/netqos-rules.yaml"
METRICS_DOC = "docs/metrics.md"

# Series Prometheus makes itself, which a dashboard may name: the scrape's up, the alerts.
PROMETHEUS_SERIES = {"up", "ALERTS"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def read(repo, path):
    with open(os.path.join(repo, path)) as f:
        return f.read()


def load_dashboard(repo):
    return json.loads(read(repo, DASHBOARD))


def panels(dashboard):
    """Every panel, rows' nested panels included; rows themselves are left out."""
    for p in dashboard.get("panels", []):
        if p.get("type") == "row":
            yield from p.get("panels", [])
        else:
            yield p


def queries(dashboard):
    """(panel title, refId or variable name, expression) of every panel target and query
    variable."""
    for p in panels(dashboard):
        for t in p.get("targets", []):
            yield p.get("title", "?"), t.get("refId", "?"), t.get("expr", "")
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            yield "variable " + v["name"], v["name"], q.get("query", "") if isinstance(q, dict) else q


def variable_query_expr(query):
    """The series selector of label_values(selector, label) (Grafana's variable query)."""
    m = re.fullmatch(r"\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*", query, re.S)
    return m.group(1) if m else query


def substitute(expr, values):
    """The expression with Grafana's variables ($name, ${name}) replaced from `values`."""
    def one(m):
        name = m.group(1) or m.group(2)
        if name not in values:
            raise KeyError(f"no value for ${name} in {expr!r}")
        return values[name]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, expr)


def metric_names(expr):
    """The netqos series (families and recording rules) and Prometheus's own series an
    expression names. Quoted strings (label values) are dropped first, so that a label value
    never counts as a name; label and function names never start with "netqos"."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    names = set(re.findall(r"(?<![\w:])netqos[a-zA-Z0-9_:]*", bare))
    names |= {n for n in PROMETHEUS_SERIES if re.search(rf"(?<![\w:$]){n}(?![\w:(])", bare)}
    return names


def family_of(name, families):
    """The documented family a series name belongs to (a histogram's _bucket, _sum, _count)."""
    if name in families:
        return name
    for suffix in HISTOGRAM_SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in families:
            return name[: -len(suffix)]
    for pattern in families:
        if "…" in pattern and re.fullmatch(re.escape(pattern).replace("…", "[a-z_]+"), name):
            return pattern
    return None


def documented_families(markdown):
    """The metric names in the first column of docs/metrics.md's tables. A name with "…" stands
    for several (`netqos_qos_level_class_…_total`)."""
    out = set()
    for m in re.finditer(r"^\|\s*`([a-zA-Z_:][a-zA-Z0-9_:…]*)`\s*\|\s*(counter|gauge|histogram)\s*\|",
                         markdown, re.M):
        out.add(m.group(1))
    return out


def recording_rules(groups):
    """name -> expression of every recording rule."""
    return {r["record"]: r["expr"] for g in groups for r in g.get("rules", []) if "record" in r}


def alert_exprs(groups):
    return {r["alert"]: r["expr"] for g in groups for r in g.get("rules", []) if "alert" in r}
