#!/usr/bin/env python3
"""scripts/lib/apt_sources_for.py against made-up /etc trees: what the apt configurations of the
kernel lab and of the NRI tests' containerd fetch are derived from (the machine's own sources,
never a host of ours)."""

import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts/lib/apt_sources_for.py")


def run(root, suite="bullseye"):
    return subprocess.run([sys.executable, SCRIPT, suite, "--root", root], capture_output=True, text=True)


class AptSourcesFor(unittest.TestCase):
    def tree(self, files, codename="bookworm"):
        root = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", root])
        os.makedirs(os.path.join(root, "etc/apt/sources.list.d"))
        with open(os.path.join(root, "etc/os-release"), "w") as f:
            f.write(f'NAME="Debian GNU/Linux"\nVERSION_CODENAME={codename}\n')
        for name, text in files.items():
            with open(os.path.join(root, "etc/apt", name), "w") as f:
                f.write(text)
        return root

    def test_deb822_entries_of_this_release_name_the_lab_suite(self):
        root = self.tree({"sources.list.d/debian.sources": """Types: deb
# a comment
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb deb-src
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://off.example/debian
Suites: bookworm
Components: main
Enabled: no
""", "sources.list.d/other.sources": """Types: deb
URIs: https://vendor.example/apt
Suites: nodistro
Components: main
"""})
        r = run(root, "trixie")
        self.assertEqual(r.returncode, 0, r.stderr)
        key = "[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]"
        self.assertEqual(r.stdout.splitlines(), [
            f"deb {key} http://mirror.example/debian trixie main",
            f"deb {key} http://mirror.example/debian trixie-updates main",
            f"deb {key} http://mirror.example/debian-security trixie-security main",
        ])

    def test_one_line_entries_with_options_and_comments(self):
        root = self.tree({"sources.list": """# deb http://commented.example/debian bookworm main
deb [arch=amd64 signed-by=/k.gpg] http://proxy.example:3142/debian bookworm main # trailing
deb-src http://src.example/debian bookworm main
deb http://plain.example/debian bookworm-security main non-free
deb http://nomain.example/debian bookworm contrib
""", "sources.list.d/x.list": "deb http://list.example/debian bookworm main\n"})
        r = run(root)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(), [
            "deb [signed-by=/k.gpg] http://proxy.example:3142/debian bullseye main",
            "deb http://plain.example/debian bullseye-security main",
            "deb http://list.example/debian bullseye main",
        ])

    def test_unstable_and_experimental_get_no_security_or_updates_suite(self):
        # They have none: apt would fail on the missing Release files.
        root = self.tree({"sources.list.d/debian.sources": """Types: deb
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""})
        for suite in ("sid", "unstable", "experimental"):
            r = run(root, suite)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.splitlines(), [f"deb http://mirror.example/debian {suite} main"])
        r = run(root, "testing")  # testing has both
        self.assertEqual(r.stdout.splitlines(), [
            "deb http://mirror.example/debian testing main",
            "deb http://mirror.example/debian testing-updates main",
            "deb http://mirror.example/debian-security testing-security main",
        ])

    def test_no_entry_for_this_release_is_an_error_naming_what_was_read(self):
        root = self.tree({"sources.list": "deb http://old.example/debian buster main\n"})
        r = run(root)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertIn("'bookworm'", r.stderr)
        self.assertIn("sources.list", r.stderr)
        self.assertIn("NETQOS_DEBIAN_MIRROR", r.stderr)

    def test_a_bad_suite_name_is_refused(self):
        root = self.tree({"sources.list": "deb http://m.example/debian bookworm main\n"})
        r = run(root, "bullseye main\ndeb http://evil")
        self.assertEqual(r.returncode, 1)
        self.assertIn("bad suite name", r.stderr)


if __name__ == "__main__":
    unittest.main()
