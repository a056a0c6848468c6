"""What --explore costs: `gradverify check specs --no-cache` without it and with --explore N.

Usage: python bench/explore.py [--explore 20] [--repeat 3]

Runs the whole command (isolated workers) on the bundled specs, the two variants
alternating, best of `--repeat`, in wall and CPU time (the children's user + system time: a
busy machine stretches wall time, CPU time is steadier). Prints a markdown table with the
ratio and the cost per case. Not a test: numbers vary with the machine; the ratio is what
matters.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(arguments: list[str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the command and its workers, cases) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "gradverify", "check", "specs", "--no-cache", "--format", "json",
         *arguments],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(done.stdout)["summary"]["cases"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--explore", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    without: list[tuple[float, float, int]] = []
    with_explore: list[tuple[float, float, int]] = []
    for _ in range(options.repeat):
        without.append(timed([]))
        with_explore.append(timed(["--explore", str(options.explore)]))
    cases = without[0][2]
    print(f"| `gradverify check specs --no-cache` ({cases} cases) | without (s) | "
          f"with `--explore {options.explore}` (s) | ratio | added per case (s) |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, column in (("wall", 0), ("CPU", 1)):
        base = min(run[column] for run in without)
        explored = min(run[column] for run in with_explore)
        print(
            f"| {label} | {base:.3f} | {explored:.3f} | {explored / base:.2f}× | "
            f"{(explored - base) / cases:.3f} |"
        )


if __name__ == "__main__":
    main()
