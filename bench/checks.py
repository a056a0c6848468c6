"""What an optional check costs: per case (the first in a process and the later ones), and
added to the whole bundled suite.

Usage: python bench/checks.py [--check compile] [--check opcheck] [--repeat 2] [--no-suite]

For each check id: every case of the bundled specs (specs/) runs that check alone, in a fresh
process, in-process (no worker); the table gives the check's own time on the first case it
applies to (which pays for what the check imports and warms up, e.g. torch._dynamo) and the
median of the later ones. Then, for an opt-in check, `gradverify check specs --no-cache` (isolated workers, the whole
command) runs on a copy of specs/ without the check where a spec asks for it and with it on
every case (`extra_checks` in [tool.gradverify]), side by side, in wall and CPU time (a busy
machine stretches wall time; CPU time is steadier): once without the custom-op specs, whose
targets run `compile` by default (so that "without" has no `compile` at all), once with
every spec. Not a test: numbers vary with the machine;
the ratios are what matter.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run in a fresh process: every bundled case with only `check`, in this process; prints the
# check's seconds per case (cases where it does not apply are left out).
_CHILD = """
import json, sys
from dataclasses import replace
from gradverify.run import session
from gradverify.spec.load import load_spec_file
from pathlib import Path
check = sys.argv[1]
entries = []
for path in sorted(Path("specs").glob("*.yaml")):
    for entry in load_spec_file(path):
        spec = entry.spec.model_copy(update={"checks": [check], "extra_checks": []})
        entries.append(replace(entry, spec=spec))
report = session.run(entries, session.RunOptions(cache=False, isolation=False))
ran = [r for r in report.results if r.check == check and r.applies and r.status.value != "skip"]
print(json.dumps([[f"{r.target} [{r.case}]", r.status.value, r.seconds] for r in ran]))
"""


def per_case(check: str) -> list[tuple[str, str, float]]:
    """(case, status, seconds) of `check` on every bundled case it applies to, in one process."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, check],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [tuple(row) for row in json.loads(done.stdout.strip().splitlines()[-1])]


def custom_op_specs() -> set[str]:
    """The bundled spec files with a custom-op target (which runs `compile` by default)."""
    sys.path.insert(0, str(ROOT))
    from gradverify.spec.load import load_spec_file
    from gradverify.target.loading import load_target

    return {
        path.name
        for path in (ROOT / "specs").glob("*.yaml")
        for entry in load_spec_file(path)
        if entry.spec.target and load_target(entry.spec.target).op_name is not None
    }


def suite(check: str, repeat: int, leave_out: set[str]) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of `gradverify check specs --no-cache`, each the best of `repeat`,
    on the bundled specs but `leave_out`: without `check` where a spec asks for it, then
    with it on every case. The two alternate run by run, so that a busy machine slows both
    alike."""
    gradverify = shutil.which("gradverify") or str(Path(sys.executable).parent / "gradverify")
    best = [(float("inf"), float("inf"))] * 2
    with tempfile.TemporaryDirectory() as scratch:
        projects = []
        for with_check in (False, True):
            project = Path(scratch) / ("with" if with_check else "without")
            shutil.copytree(ROOT / "specs", project / "specs")
            for spec in (project / "specs").glob("*.yaml"):
                if spec.name in leave_out:
                    spec.unlink()
                else:
                    spec.write_text(_without(spec.read_text(), check))
            extra = f'extra_checks = ["{check}"]\n' if with_check else ""
            (project / "pyproject.toml").write_text(f"[tool.gradverify]\n{extra}")
            projects.append(project)
        for _ in range(repeat):
            for index, project in enumerate(projects):
                wall, cpu = _timed([gradverify, "check", "specs", "--no-cache", "-q"], project)
                best[index] = (min(best[index][0], wall), min(best[index][1], cpu))
    return best


def _timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU time (user + system of the command and every process it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _without(text: str, check: str) -> str:
    """The spec with `check` taken out of its `extra_checks:` lists (a line left empty goes)."""

    def drop(match: re.Match[str]) -> str:
        kept = [c.strip() for c in match.group(2).split(",") if c.strip() and c.strip() != check]
        return f"{match.group(1)}[{', '.join(kept)}]" if kept else ""

    return re.sub(r"^(\s*extra_checks:\s*)\[([^\]]*)\]\s*$", drop, text, flags=re.MULTILINE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="append", help="check id (default: compile, opcheck)")
    parser.add_argument("--repeat", type=int, default=2, help="whole-suite runs, best of")
    parser.add_argument("--no-suite", action="store_true", help="only the per-case rows")
    arguments = parser.parse_args()
    checks = arguments.check or ["compile", "opcheck"]
    print(f"{os.cpu_count()} cores\n")
    print("| check | cases | first case (s) | later cases, median (s) | first / later |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for check in checks:
        rows = per_case(check)
        if not rows:
            print(f"| `{check}` | 0 | — | — | — |")
            continue
        first = rows[0][2]
        later = statistics.median(row[2] for row in rows[1:]) if len(rows) > 1 else None
        ratio = f"{first / later:.0f}×" if later else "—"
        later_text = f"{later:.3f}" if later is not None else "—"
        print(f"| `{check}` | {len(rows)} | {first:.3f} | {later_text} | {ratio} |")
    if arguments.no_suite:
        return
    print("\n| `gradverify check specs --no-cache` | without (s) | with, every case (s) | ratio |")
    print("| --- | ---: | ---: | ---: |")
    from gradverify.spec.models import OPT_IN_CHECKS

    ops = custom_op_specs()
    for check in (c for c in checks if c in OPT_IN_CHECKS):  # the others run by default
        # Custom-op targets run `compile` by default: without their specs, "without" has none.
        for leave_out, which in ((ops, f"without {', '.join(sorted(ops))}"), (set(), "all")):
            (wall, cpu), (wall_with, cpu_with) = suite(check, arguments.repeat, leave_out)
            for kind, before, after in (("wall", wall, wall_with), ("CPU", cpu, cpu_with)):
                row = f"`{check}`, specs/ ({which}), {kind}"
                print(f"| {row} | {before:.3f} | {after:.3f} | {after / before:.2f}× |")


if __name__ == "__main__":
    main()
