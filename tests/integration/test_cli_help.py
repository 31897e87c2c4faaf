# SPDX-License-Identifier: MIT
"""`shale ... --help` as an `ais` user types it (no cluster needed): a subcommand that does not exist is an error
with a did-you-mean, not the group's help and exit 0; dsort's help lists dsort's flags, not those of every job
`job start` starts."""
import subprocess
import unittest

from harness import SHALE, main


def shale(*args):
    return subprocess.run([SHALE] + list(args), capture_output=True, text=True, timeout=30)


class TestHelp(unittest.TestCase):
    def test_unknown_subcommand_help(self):
        p = shale("bucket", "crate", "--help")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn('unknown command "bucket crate": did you mean "bucket create"?', p.stderr)
        self.assertEqual(p.stdout, "")
        p = shale("bucket", "frob", "--help")
        self.assertEqual(p.returncode, 1)
        self.assertIn('unknown command "bucket frob" (`shale bucket --help` lists them)', p.stderr)
        # `shale help GROUP NOSUCH` the same (it printed the group's help and exit 0)
        p = shale("help", "bucket", "crate")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn('unknown command "bucket crate": did you mean "bucket create"?', p.stderr)
        p = shale("help", "ml", "plan", "frob")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn('unknown command "ml plan frob"', p.stderr)
        # what is not a group takes positional arguments as before; a real subcommand shows its help
        for args in (("ls", "ais://b", "--help"), ("bucket", "create", "--help"), ("bucket", "--help"),
                     ("help", "bucket", "create"), ("help", "ml", "plan", "create")):
            p = shale(*args)
            self.assertEqual(p.returncode, 0, (args, p.stderr))
            self.assertTrue(p.stdout.startswith("Usage: shale "), (args, p.stdout[:80]))

    def test_every_path_has_help(self):
        """every command path of the help table (as the completion script lists them) shows its help: a table
        entry naming a missing path crashed `--help` (SIGSEGV)"""
        import re
        script = shale("completion", "bash").stdout
        body = script[script.index("_shale_subs()"):]
        body = body[:body.index("esac")]
        paths = []
        for grp, subs in re.findall(r"'([^']*)'\) echo '([^']*)'", body):
            paths += [(grp + " " + w).split() for w in subs.split() if w != "help"]
        self.assertGreater(len(paths), 100)
        for words in paths:
            p = shale("help", *words)
            self.assertEqual(p.returncode, 0, (words, p.returncode, p.stderr))
            self.assertTrue(p.stdout.startswith("Usage: shale "), (words, p.stdout[:80]))
            p = shale(*(words + ["--help"]))
            self.assertEqual(p.returncode, 0, (words, p.returncode, p.stderr))

    def test_dsort_help(self):
        p = shale("dsort", "--help")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("-f, --file SPEC", p.stdout)
        self.assertIn("--wait", p.stdout)
        for other in ("--force", "--copies", "lru", "mirror"):
            self.assertNotIn(other, p.stdout)


if __name__ == "__main__":
    main()
