#!/usr/bin/env python3
"""Tests of scripts/install.sh that need no build: an option Maven does not take is refused in one line
that names it and points to --help (not Maven's page of usage), and the closing summary shows both
artifacts a user depends on, cuhandle and cuhandle-junit. scripts/test.sh runs it. Standard library only."""

import pathlib
import re
import shutil
import subprocess
import unittest

ROOT = pathlib.Path(__file__).resolve().parent.parent
INSTALL = ROOT / "scripts" / "install.sh"


class InstallArgsTest(unittest.TestCase):
    @unittest.skipIf(shutil.which("mvn") is None, "Maven decides which options it takes; it is not installed")
    def test_an_unknown_option_is_one_line_naming_it(self):
        for args in (["--bogus"], ["--spark", "--bogus"], ["-Dmaven.repo.local=/tmp/x", "--bogus"]):
            run = subprocess.run([str(INSTALL), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
            self.assertEqual(2, run.returncode, run.stdout + run.stderr)
            self.assertEqual("", run.stdout, "nothing is built or printed before the refusal")
            lines = run.stderr.strip().splitlines()
            self.assertEqual(1, len(lines), run.stderr)
            self.assertIn("Unrecognized option: --bogus", lines[0])
            self.assertIn("scripts/install.sh --help", lines[0])

    def test_help_and_the_summary_name_both_artifacts(self):
        run = subprocess.run([str(INSTALL), "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
        self.assertEqual(0, run.returncode, run.stderr)
        self.assertIn("dev.cuhandle:cuhandle-junit", run.stdout)
        summary = INSTALL.read_text(encoding="utf-8").split("<<DONE", 1)[1]
        self.assertIn("<artifactId>cuhandle</artifactId>", summary)
        self.assertRegex(summary, re.compile(r"<artifactId>cuhandle-junit</artifactId>\s*<version>\$version</version>\s*<scope>test</scope>"))
        self.assertIn("testImplementation 'dev.cuhandle:cuhandle-junit:$version'", summary)


if __name__ == "__main__":
    unittest.main()
