#!/usr/bin/env python3
"""Regenerates the flags table in docs/operations.md from `netqosd --help`.

The table sits between two marker comments; everything else in the file is left alone. With
--check the file is not written: the script exits 1 and prints a diff when the table is stale,
so a test can keep the doc in step with the binary.

Usage: scripts/gen-flags-doc.py --netqosd build/bin/netqosd [--doc docs/operations.md] [--check]
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

# CLI11 prints one option per entry: "  --name[=bool-default] [TYPE[=default]] [...]  description",
# the description on the same line or on indented continuation lines. Types are upper-case words
# (TEXT, UINT, INT, FLOAT) followed by '=', a space or the end, so a description starting with a
# capital letter is never taken for one.
OPTION = re.compile(
    r"^  (?P<names>-[^\s=]+)(?:=(?P<flagdef>\S*))?"
    r"(?: (?P<type>[A-Z]+)(?=[=\s]|$)(?:=(?P<default>\S*))?)?"
    r"(?P<many> \.\.\.)?(?P<rest>.*)$")


class HelpFormatError(Exception):
    pass


def parse_help(text):
    options = []
    for line in text.splitlines():
        if line.startswith("  -"):
            m = OPTION.match(line)
            if not m:
                raise HelpFormatError(f"cannot parse option line: {line!r}")
            options.append({
                "names": m["names"],
                "type": m["type"] or ("BOOL" if m["flagdef"] is not None else ""),
                "default": m["flagdef"] if m["flagdef"] is not None else (m["default"] or ""),
                "many": bool(m["many"]),
                "desc": m["rest"].strip(),
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
    katalyst = [o for o in options if not o["desc"].startswith("netqos:")
                and o["names"] not in ("-h,--help", "--version")]
    own = [o for o in options if o["desc"].startswith("netqos:")]

    def table(rows, strip_prefix):
        out = ["| flag | value | default | what |", "|---|---|---|---|"]
        for o in rows:
            desc = o["desc"][len("netqos:"):].strip() if strip_prefix else o["desc"]
            value = o["type"] + (" (list, comma-separated or repeated)" if o["many"] else "")
            out.append(f"| `{o['names']}` | {value} | {pretty_default(o)} | {cell(desc)} |")
        return out

    lines = [BEGIN, "",
             f"Katalyst's flags ({len(katalyst)}; same names and meaning as the katalyst-agent "
             "network plugin):", ""]
    lines += table(katalyst, False)
    lines += ["", f"netqos's own flags ({len(own)}):", ""]
    lines += table(own, True)
    lines += ["", END]
    return "\n".join(lines)


def splice(doc_text, table):
    start = doc_text.find(BEGIN)
    end = doc_text.find(END)
    if start < 0 or end < start:
        raise HelpFormatError(f"markers not found; the doc needs a line '{BEGIN}' and a line '{END}'")
    return doc_text[:start] + table + doc_text[end + len(END):]


def self_test(help_text):
    """The parser must read the flags it is most likely to get wrong, and a table that lost a row,
    gained one or changed a default must not pass as current."""
    opts = {o["names"]: o for o in parse_help(help_text)}
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
    table = render(parse_help(help_text))
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
    if failures:
        sys.exit("gen-flags-doc self-test FAILED:\n  " + "\n  ".join(failures))
    print(f"gen-flags-doc self-test: {len(opts)} options parsed, staleness detected")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--netqosd", required=True)
    ap.add_argument("--doc", default=str(pathlib.Path(__file__).resolve().parent.parent
                                         / "docs" / "operations.md"))
    ap.add_argument("--check", action="store_true", help="exit 1 if the table is stale")
    ap.add_argument("--self-test", action="store_true",
                    help="prove the parser reads this binary's --help and --check sees staleness")
    args = ap.parse_args()

    r = subprocess.run([args.netqosd, "--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        sys.exit(f"{args.netqosd} --help exited {r.returncode}: {r.stderr.strip()}")
    if args.self_test:
        self_test(r.stdout)
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
            print(f"\n{doc}: flags table is stale; run scripts/gen-flags-doc.py "
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
