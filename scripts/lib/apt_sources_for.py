#!/usr/bin/env python3
"""The apt sources of another Debian suite, derived from this machine's own.

The kernel lab downloads Debian kernels of other releases (bullseye, trixie, ...). It must use
the archive this machine is configured for (its mirror, its proxy, its signing keys), never a
host name of ours. So: read the machine's apt sources (sources.list, sources.list.d/*.list and
*.sources), keep the entries that serve this machine's own release (its codename, and the
codename's -security and -updates suites), and print them as one-line entries for SUITE, with
the component main (where the kernels are). Unstable (sid) and experimental have no -security
or -updates suite: for them only the release's own entries are kept.

    apt_sources_for.py SUITE [--root DIR]

--root reads DIR/etc/os-release and DIR/etc/apt/... in place of /etc (the tests use it).
Exits 1, naming what it read, when no entry serves this machine's release.
"""

import argparse
import glob
import os
import re
import sys


# Debian's development suites, by name and by codename (sid is always unstable's; rc-buggy is
# experimental's).
SUITES_WITHOUT_UPDATES = {"sid", "unstable", "experimental", "rc-buggy"}


def parse_one_line(path):
    """Entries of a one-line sources file: (types, uri, suites, components, options)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            words = line.split()
            kind = words.pop(0)
            options = {}
            if words and words[0].startswith("["):
                opts = []
                while words:
                    w = words.pop(0)
                    opts.append(w)
                    if w.endswith("]"):
                        break
                for item in " ".join(opts).strip("[]").split():
                    if "=" in item:
                        k, v = item.split("=", 1)
                        options[k.lower()] = v
            if len(words) < 2:
                continue
            out.append(([kind], words[0], [words[1]], words[2:], options))
    return out


def parse_deb822(path):
    """Entries of a deb822 .sources file, without the disabled ones."""
    out = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for stanza in text.split("\n\n"):
        fields = {}
        key = None
        for raw in stanza.splitlines():
            if raw.startswith("#") or not raw.strip():
                continue
            if raw[0] in " \t" and key:
                fields[key] += " " + raw.strip()
                continue
            if ":" not in raw:
                continue
            key, value = raw.split(":", 1)
            key = key.strip().lower()
            fields[key] = value.strip()
        if not fields or fields.get("enabled", "yes").lower() == "no":
            continue
        options = {}
        if "signed-by" in fields and "\n" not in fields["signed-by"]:
            options["signed-by"] = fields["signed-by"]
        for uri in fields.get("uris", "").split():
            out.append((fields.get("types", "").split(), uri, fields.get("suites", "").split(),
                        fields.get("components", "").split(), options))
    return out


def codename(root):
    with open(os.path.join(root, "etc/os-release"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("VERSION_CODENAME="):
                return line.split("=", 1)[1].strip().strip('"')
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suite")
    ap.add_argument("--root", default="/")
    args = ap.parse_args()
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", args.suite):
        sys.exit(f"apt_sources_for: bad suite name {args.suite!r}")
    host = codename(args.root)
    if not host:
        sys.exit(f"apt_sources_for: no VERSION_CODENAME in {os.path.join(args.root, 'etc/os-release')}")
    apt = os.path.join(args.root, "etc/apt")
    files = [os.path.join(apt, "sources.list")] + sorted(glob.glob(os.path.join(apt, "sources.list.d/*.list")))
    sources = sorted(glob.glob(os.path.join(apt, "sources.list.d/*.sources")))
    entries = []
    for path in files:
        if os.path.isfile(path):
            entries += parse_one_line(path)
    for path in sources:
        entries += parse_deb822(path)

    suffixes = {host: "", host + "-security": "-security", host + "-updates": "-updates"}
    # Unstable and experimental are never released, so they get no point releases (-updates) and
    # no security archive (-security): apt refuses an entry for either, having no Release file.
    if args.suite in SUITES_WITHOUT_UPDATES:
        suffixes = {s: x for s, x in suffixes.items() if not x}
    lines = []
    for types, uri, suites, components, options in entries:
        if "deb" not in types or "main" not in components:
            continue
        for suite in suites:
            if suite not in suffixes:
                continue
            signed = f"[signed-by={options['signed-by']}] " if "signed-by" in options else ""
            line = f"deb {signed}{uri} {args.suite}{suffixes[suite]} main"
            if line not in lines:
                lines.append(line)
    if not lines:
        read = ", ".join(p for p in files + sources if os.path.isfile(p)) or "no sources file"
        sys.exit(f"apt_sources_for: no deb entry with component main serves this machine's release "
                 f"'{host}' (read: {read}); set NETQOS_DEBIAN_MIRROR to an archive's base URL")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
