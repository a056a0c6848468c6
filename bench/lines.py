"""How many lines the text report takes on the bundled specs, before and after a change.

Usage: python bench/lines.py [--before COMMIT]

Runs `gradverify check specs/ --no-cache` (default and `-q`) with this tree's code and with
COMMIT's code (default 549417a, the last commit before the one-line-per-case report), each
from a temporary `git worktree`, on this tree's specs/. Prints a Markdown table of line counts.
Not a test: what matters is that a passing case stays one line.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "549417a"
OUTPUTS = {"default": [], "-q": ["-q"], "-v": ["-v"]}


def line_counts(code: Path) -> dict[str, int | None]:
    """Lines printed by each output mode, running the package found in `code` (None: that
    code has no such flag)."""
    # -P: the package comes from PYTHONPATH, not from the current directory (ROOT).
    env = {**os.environ, "PYTHONPATH": str(code), "NO_COLOR": "1"}
    counts: dict[str, int | None] = {}
    for name, flags in OUTPUTS.items():
        completed = subprocess.run(
            [sys.executable, "-P", "-m", "gradverify", "check", "specs/", "--no-cache", *flags],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if completed.returncode == 2 and "No such option" in completed.stderr:
            counts[name] = None
            continue
        if completed.returncode not in (0, 1):  # 1: specs/buggy.yaml fails, as it must
            raise SystemExit(f"{code} {name}: exit {completed.returncode}\n{completed.stderr}")
        counts[name] = len(completed.stdout.splitlines())
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", default=BEFORE, help="the commit to compare with")
    before = parser.parse_args().before
    after = line_counts(ROOT)
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "before"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(tree), before], cwd=ROOT, check=True
        )
        try:
            earlier = line_counts(tree)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=True
            )
    print(f"| `gradverify check specs/ --no-cache` | before ({before}) | after |")
    print("| --- | ---: | ---: |")
    for name in OUTPUTS:
        print(f"| {name} | {_shown(earlier[name])} | {_shown(after[name])} |")


def _shown(count: int | None) -> str:
    return "—" if count is None else str(count)


if __name__ == "__main__":
    main()
