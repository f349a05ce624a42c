#!/usr/bin/env python3
"""Every flag the documentation names exists.

Reads README.md, deploy/README.md and docs/*.md, and takes the flags from `netqosd --help`,
`netqosctl --help` and each netqosctl command's `--help`. A code span (`...`) that starts with a
flag, or is a netqosd or netqosctl command line, must name only flags one of them has. A span
ending in `-` or `-*` is a prefix (`--kubelet-*`): some flag must start with it. Flags of other
programs that the pages name in their own spans (scripts, katalyst-agent, Prometheus) are listed
in OTHER_PROGRAMS with whose they are; a renamed or removed netqos flag left in a page fails.

Usage: tests/check_doc_flags.py --netqosd build/bin/netqosd --netqosctl build/bin/netqosctl
       [--repo .] [--self-test]
"""
import argparse
import glob
import os
import re
import subprocess
import sys

# Flags that are not netqosd's or netqosctl's, with whose they are. A page may name them in a
# bare span (`--quick`) without saying the program in the same span.
OTHER_PROGRAMS = {
    "--agents": "katalyst-agent (netqosd refuses it, as the pages say)",
    "--v": "katalyst-agent (netqosd refuses it, as the pages say)",
    "--enable-feature": "prometheus",
    "--flag": "a placeholder in operations.md's exit-code table",
    "--foo": "a placeholder in operations.md's note on repeated flags",
    "--jobs": "scripts/fuzz.sh",
    "--runs": "scripts/fuzz.sh",
    "--max-len": "scripts/fuzz.sh",
    "--journal--": "the fuzz corpus's separator line, not a flag",
    "--quick": "scripts/bench.sh and scripts/kernel-lab.sh",
    "--only": "scripts/bench.sh",
    "--no-traffic": "tests/kernels/smoke.sh",
    "--priority": "tests/support/attack_sender.cc",
    "--sndbuf": "tests/support/attack_sender.cc",
    "--self-test": "tests/layering_from_cmake.py, tests/check_doc_flags.py",
    "--suite": "scripts/lib/fetch-containerd.sh and tests/cri_integration/nri_real_runtime.sh",
    "--uncapped-only": "bench/lab/edt_vs_htb.sh",
    "--footprint-only": "bench/reaction_bench.cc (netqos_bench_reaction)",
    "--churn": "bench/reaction_bench.cc (netqos_bench_reaction)",
    "--idle-window": "bench/reaction_bench.cc (netqos_bench_reaction)",
}

FLAG = re.compile(r"--[a-z][a-z0-9-]*(\*)?")
SPAN = re.compile(r"`([^`\n]+)`")
COMMAND = re.compile(r"(^|/)netqos(d|ctl)$")


def help_text(argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return r.stdout + r.stderr


def known_flags(netqosd, netqosctl):
    text = help_text([netqosd, "--help"]) + help_text([netqosctl, "--help"])
    commands = re.findall(r"(?m)^  ([a-z][a-z-]*)\s", help_text([netqosctl, "--help"])
                          .split("Subcommands:", 1)[-1])
    for c in commands:
        text += help_text([netqosctl, c, "--help"])
    flags = set(re.findall(r"--[a-z][a-z0-9-]*", text))
    if "--enforce-nics" not in flags or "--socket" not in flags:
        sys.exit("check_doc_flags: could not read the flags from --help")
    return flags


def flags_in(text):
    """(flag, is_prefix) for each flag a code span names as netqosd's or netqosctl's."""
    out = []
    for span in SPAN.findall(text):
        words = span.split()
        if not words:
            continue
        if words[0].startswith("--"):
            candidates = words[:1]
        elif COMMAND.search(words[0]):
            candidates = [w for w in words[1:] if w.startswith("--")]
        else:
            continue
        for w in candidates:
            m = FLAG.match(w)
            if not m:
                continue
            name = m.group(0)
            prefix = name.endswith("*") or name.endswith("-")
            out.append((name.rstrip("*"), prefix))
    return out


def problems(pages, known):
    found = []
    for path, text in pages:
        for name, prefix in flags_in(text):
            if name in OTHER_PROGRAMS:
                continue
            ok = any(k.startswith(name) for k in known) if prefix else name in known
            if not ok:
                found.append(f"{path}: `{name}{'*' if prefix else ''}` is not a flag of netqosd "
                             "or netqosctl (renamed or removed? or another program's: then add it "
                             "to OTHER_PROGRAMS with whose it is)")
    return sorted(set(found))


def pages_of(repo):
    paths = [os.path.join(repo, "README.md"), os.path.join(repo, "deploy", "README.md")]
    paths += sorted(glob.glob(os.path.join(repo, "docs", "*.md")))
    return [(os.path.relpath(p, repo), open(p, encoding="utf-8").read()) for p in paths]


def self_test(known):
    cases = [
        ("a bare renamed flag", "Set `--enforce-nic=eth0`.", True),
        ("a flag in a netqosd command line", "Run `netqosd --print-config --no-such-thing`.", True),
        ("a netqosctl flag", "`build/bin/netqosctl --jsn status`", True),
        ("a prefix nothing starts with", "the `--kubelt-*` flags", True),
        ("a real flag", "Set `--enforce-nics=eth0` or `netqosd --print-config`.", False),
        ("a real prefix", "the `--kubelet-*` flags", False),
        ("another program's span", "`scripts/test.sh --stages=main`", False),
    ]
    failed = 0
    for what, text, bad in cases:
        got = problems([("page.md", text)], known)
        if bool(got) != bad:
            print(f"self-test: {what}: expected {'a report' if bad else 'none'}, got {got}")
            failed += 1
    if failed:
        sys.exit(1)
    print(f"self-test: {len(cases)} cases reported as expected")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--netqosd", required=True)
    ap.add_argument("--netqosctl", required=True)
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    known = known_flags(args.netqosd, args.netqosctl)
    if args.self_test:
        self_test(known)
        return
    pages = pages_of(args.repo)
    found = problems(pages, known)
    for p in found:
        print(p)
    if found:
        sys.exit(1)
    print(f"docs: every flag named in {len(pages)} pages is a flag of netqosd or netqosctl "
          f"({len(known)} flags)")


if __name__ == "__main__":
    main()
