#!/usr/bin/env python3
"""Regenerates the flags tables in docs/operations.md from `netqosd --help`, and checks the pages
that describe a group of flags by hand (docs/enforcement-flags.md) against it.

The tables, one per --help group, sit between two marker comments; everything else in the file is
left alone. With --check the file is not written: the script exits 1 and prints a diff when the
tables are stale, so a test can keep the doc in step with the binary. With --check-page PAGE it
checks that every flag PAGE names exists and that PAGE names every flag of the groups it
covers (PAGES below).

Usage: scripts/gen-flags-doc.py --netqosd build/bin/netqosd [--doc docs/operations.md] [--check]
       scripts/gen-flags-doc.py --netqosd build/bin/netqosd --check-page docs/enforcement-flags.md
       scripts/gen-flags-doc.py --netqosd build/bin/netqosd --self-test
"""
import argparse
import difflib
import pathlib
import re
import subprocess
import sys

BEGIN = "<!-- BEGIN flags: generated from `netqosd --help` by scripts/gen-flags-doc.py -->"
END = "<!-- END flags -->"

# The pages that describe the flags of some --help groups by hand: each must name every flag of
# those groups, and only flags that exist.
PAGES = {
    "enforcement-flags.md": ("Pods and cgroups", "Enforcement", "Tenant policy"),
}

# CLI11 prints each group as a line "NAME:" followed by its options, one per entry: "  --name[=bool-default] [TYPE[=default]] [...]  description",
# the description on the same line or on indented continuation lines. Types are upper-case words
# (TEXT, UINT, INT, FLOAT) followed by '=', a space or the end, so a description starting with a
# capital letter is never taken for one.
OPTION = re.compile(
    r"^  (?P<names>-[^\s=]+)(?:=(?P<flagdef>\S*))?"
    r"(?: (?P<type>[A-Z]+)(?=[=\s]|$)(?:=(?P<default>\S*))?)?"
    r"(?P<many> \.\.\.)?(?P<rest>.*)$")
GROUP = re.compile(r"^(?P<group>[A-Z]\S.*):$")
# A flag named in prose: "--name", not "--kubelet-*" (a family) or part of a longer word.
FLAG_IN_TEXT = re.compile(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)(?![\w*-])")


class HelpFormatError(Exception):
    pass


def parse_help(text):
    options = []
    group = ""
    for line in text.splitlines():
        m = GROUP.match(line)
        if m:
            group = m["group"]
        elif line.startswith("  -"):
            m = OPTION.match(line)
            if not m:
                raise HelpFormatError(f"cannot parse option line: {line!r}")
            if not group:
                raise HelpFormatError(f"option outside a group: {line!r}")
            options.append({
                "names": m["names"],
                "type": m["type"] or ("BOOL" if m["flagdef"] is not None else ""),
                "default": m["flagdef"] if m["flagdef"] is not None else (m["default"] or ""),
                "many": bool(m["many"]),
                "desc": m["rest"].strip(),
                "group": group,
            })
        elif line.startswith("    ") and options:
            desc = options[-1]["desc"]
            options[-1]["desc"] = (desc + " " + line.strip()).strip()
    if not options:
        raise HelpFormatError("no options found in --help output")
    return options


def pretty_default(opt):
    d = opt["default"]
    if opt["many"] and d.startswith("[") and d.endswith("]"):
        d = d[1:-1]
    return f"`{d}`" if d else ""


def cell(text):
    return text.replace("|", "\\|")


def render(options):
    groups = []
    for o in options:
        if o["group"] not in groups:
            groups.append(o["group"])
    katalyst = [o for o in options if o["group"].startswith("Katalyst")]
    lines = [BEGIN, "",
             f"The groups of `netqosd --help`, in its order. The groups named Katalyst hold "
             f"Katalyst's flags ({len(katalyst)}; same names and meaning as the katalyst-agent "
             f"network plugin); the others are netqos's own ({len(options) - len(katalyst)}).",
             ""]
    for group in groups:
        lines += [f"### {group}", "", "| flag | value | default | what |", "|---|---|---|---|"]
        for o in options:
            if o["group"] != group:
                continue
            value = o["type"] + (" (list, comma-separated or repeated)" if o["many"] else "")
            lines.append(f"| `{o['names']}` | {value} | {pretty_default(o)} | {cell(o['desc'])} |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def long_names(option):
    return [n for n in option["names"].split(",") if n.startswith("--")]


def check_page(page_name, page_text, options):
    """Problems of a page that describes the flags of some groups: flags it names that --help
    lacks, and flags of its groups it does not name."""
    groups = PAGES[page_name]
    known = {n for o in options for n in long_names(o)}
    named = set(FLAG_IN_TEXT.findall(page_text))
    problems = [f"names {flag}, which `netqosd --help` does not list"
                for flag in sorted(named - known)]
    missing_groups = [g for g in groups if not any(o["group"] == g for o in options)]
    problems += [f"covers the --help group {g!r}, which --help does not have"
                 for g in missing_groups]
    for o in options:
        if o["group"] in groups:
            problems += [f"does not describe {n} (--help group {o['group']!r})"
                         for n in long_names(o) if n not in named]
    return problems


def splice(doc_text, table):
    start = doc_text.find(BEGIN)
    end = doc_text.find(END)
    if start < 0 or end < start:
        raise HelpFormatError(f"markers not found; the doc needs a line '{BEGIN}' and a line '{END}'")
    return doc_text[:start] + table + doc_text[end + len(END):]


def self_test(help_text):
    """The parser must read the flags it is most likely to get wrong, and their groups; a table
    that lost a row, gained one or changed a default must not pass as current; a page check must
    notice a flag of its groups left out and a flag that does not exist."""
    options = parse_help(help_text)
    opts = {o["names"]: o for o in options}
    expect = {
        "--qrm-socket-dirs": ("TEXT", "[/var/lib/kubelet/plugins_registry]", True),
        "--skip-network-state-corruption": ("BOOL", "false", False),
        "--enforcement": ("TEXT", "bpf", False),
        "--enforce-nics": ("TEXT", "[]", True),
        "--topology-file": ("TEXT", "", False),
    }
    failures = []
    for name, (typ, default, many) in expect.items():
        o = opts.get(name)
        got = o and (o["type"], o["default"], o["many"])
        if got != (typ, default, many):
            failures.append(f"{name}: parsed {got}, expected {(typ, default, many)}")
        elif not o["desc"]:
            failures.append(f"{name}: no description parsed")
    for name, group in (("--qrm-socket-dirs", "Katalyst"), ("--enforcement", "Enforcement"),
                        ("--print-config", "Modes")):
        if not (opts.get(name) or {}).get("group", "").startswith(group):
            failures.append(f"{name}: parsed in group {(opts.get(name) or {}).get('group')!r}, "
                            f"expected one starting with {group!r}")
    if any(o["desc"].startswith("netqos:") for o in options):
        failures.append("a description starts with 'netqos:' (the groups say whose flag it is)")
    table = render(options)
    doc = f"# title\n\n{BEGIN}\n{END}\n\ntail\n"
    current = splice(doc, table)
    if splice(current, table) != current:
        failures.append("regenerating a current doc changed it")
    rows = table.splitlines()
    row = next(i for i, line in enumerate(rows) if line.startswith("| `--enforcement`"))
    stale = {
        "a row missing": rows[:row] + rows[row + 1:],
        "a row added": rows[:row] + ["| `--gone` | TEXT |  | removed flag |"] + rows[row:],
        "a default changed": rows[:row] + [rows[row].replace("`bpf`", "`none`")] + rows[row + 1:],
    }
    for what, lines in stale.items():
        if splice(splice(doc, "\n".join(lines)), table) == splice(doc, "\n".join(lines)):
            failures.append(f"a table with {what} passes as current")
    if "tail" not in current or not current.startswith("# title"):
        failures.append("text outside the markers was not kept")
    page_flags = [n for o in options if o["group"] in PAGES["enforcement-flags.md"]
                  for n in long_names(o)]
    page = "\n".join(f"| `{n}=X` | described |" for n in page_flags) + \
        "\nThe `--kubelet-*` flags; see `tc -s`.\n"
    if check_page("enforcement-flags.md", page, options):
        failures.append("a page naming every flag of its groups fails: "
                        f"{check_page('enforcement-flags.md', page, options)}")
    for what, broken, expected in (
            ("a flag left out", page.replace("`--shaping-mode=X`", "the mode"),
             "does not describe --shaping-mode"),
            ("a flag that does not exist", page + "`--shaping-modes`\n",
             "names --shaping-modes")):
        if not any(expected in p for p in check_page("enforcement-flags.md", broken, options)):
            failures.append(f"a page with {what} passes")
    if failures:
        sys.exit("gen-flags-doc self-test FAILED:\n  " + "\n  ".join(failures))
    print(f"gen-flags-doc self-test: {len(opts)} options parsed in "
          f"{len({o['group'] for o in options})} groups, staleness and page gaps detected")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--netqosd", required=True)
    ap.add_argument("--doc", default=str(pathlib.Path(__file__).resolve().parent.parent
                                         / "docs" / "operations.md"))
    ap.add_argument("--check", action="store_true", help="exit 1 if the tables are stale")
    ap.add_argument("--check-page", metavar="PAGE",
                    help=f"check a page that describes some groups' flags ({', '.join(PAGES)})")
    ap.add_argument("--self-test", action="store_true",
                    help="prove the parser reads this binary's --help and the checks see problems")
    args = ap.parse_args()

    r = subprocess.run([args.netqosd, "--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        sys.exit(f"{args.netqosd} --help exited {r.returncode}: {r.stderr.strip()}")
    if args.self_test:
        self_test(r.stdout)
        return
    if args.check_page:
        page = pathlib.Path(args.check_page)
        if page.name not in PAGES:
            sys.exit(f"gen-flags-doc: {page}: not a page this script knows ({', '.join(PAGES)})")
        try:
            problems = check_page(page.name, page.read_text(), parse_help(r.stdout))
        except (OSError, HelpFormatError) as e:
            sys.exit(f"gen-flags-doc: {page}: {e}")
        for p in problems:
            print(f"{page}: {p}", file=sys.stderr)
        if problems:
            sys.exit(1)
        print(f"{page}: names every flag of {', '.join(PAGES[page.name])} in --help, and only "
              "real flags")
        return
    doc = pathlib.Path(args.doc)
    try:
        old = doc.read_text()
        new = splice(old, render(parse_help(r.stdout)))
    except (OSError, HelpFormatError) as e:
        sys.exit(f"gen-flags-doc: {doc}: {e}")
    if args.check:
        if old != new:
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), new.splitlines(True), str(doc), "generated"))
            print(f"\n{doc}: flags tables are stale; run scripts/gen-flags-doc.py "
                  f"--netqosd {args.netqosd}", file=sys.stderr)
            sys.exit(1)
        print(f"{doc}: flags table matches {args.netqosd} --help")
        return
    if old != new:
        doc.write_text(new)
        print(f"{doc}: flags table updated")
    else:
        print(f"{doc}: flags table already current")


if __name__ == "__main__":
    main()
