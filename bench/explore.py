"""What exploring costs: `gradverify check specs --no-cache` with `--explore 0` (off, the
behaviour before it was on by default), with the default budget, and with `--explore N`.

Usage: python bench/explore.py [--explore 20] [--repeat 3] [--no-explicit] [PATH ...]

PATH: the specs to check (default `specs`, the bundled ones).

Runs the whole command (isolated workers) on the bundled specs, the variants alternating,
best of `--repeat`, in wall time, CPU time (the children's user + system time: a busy machine
stretches wall time, CPU time is steadier) and the cases' own time (their results' seconds
added up, as the workers measured them; what exploring adds to). Prints a markdown table with each variant's
ratio to `--explore 0`, and how many further draws the cases made (from the JSON report's
`explored`). Not a test: numbers vary with the machine; the ratio is what matters. The
default budget is chosen so that the default's ratio stays at most 1.3.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    case_seconds: float  # the results' seconds added up: the cases' own time, in the workers
    cases: int
    explored: int  # cases that explored
    draws: int  # further draws, all cases together
    ran_out: int  # cases whose budget ended their search


def timed(paths: list[str], arguments: list[str]) -> Run:
    """One run of the command, and what its cases explored."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "gradverify", "check", *paths, "--no-cache", "--format", "json",
         *arguments],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    report = json.loads(done.stdout)
    explored = [r["explored"] for r in report["results"] if r.get("explored")]
    case_seconds = sum(r["seconds"] for r in report["results"])
    return Run(
        wall, cpu, case_seconds, report["summary"]["cases"], len(explored),
        sum(e["draws"] for e in explored), sum(e["ran_out"] for e in explored),
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--explore", type=int, default=20, help="N of the explicit variant")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-explicit", action="store_true", help="leave out --explore N")
    parser.add_argument("paths", nargs="*", default=["specs"])
    options = parser.parse_args()
    variants = {"`--explore 0` (off)": ["--explore", "0"], "default": []}
    if not options.no_explicit:
        variants[f"`--explore {options.explore}`"] = ["--explore", str(options.explore)]
    runs: dict[str, list[Run]] = {label: [] for label in variants}
    for _ in range(options.repeat):
        for label, arguments in variants.items():
            runs[label].append(timed(options.paths, arguments))
    base = runs["`--explore 0` (off)"]
    base_wall, base_cpu = min(r.wall for r in base), min(r.cpu for r in base)
    base_cases = min(r.case_seconds for r in base)
    shown = " ".join(options.paths)
    print(f"`gradverify check {shown} --no-cache`, {base[0].cases} cases, best of {options.repeat}")
    print()
    print("| variant | wall (s) | ratio | CPU (s) | ratio | cases' own (s) | ratio | "
          "cases explored | draws | ran out of budget |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, of_variant in runs.items():
        wall, cpu = min(r.wall for r in of_variant), min(r.cpu for r in of_variant)
        cases = min(r.case_seconds for r in of_variant)
        last = of_variant[-1]
        print(
            f"| {label} | {wall:.2f} | {wall / base_wall:.2f}× | {cpu:.2f} | "
            f"{cpu / base_cpu:.2f}× | {cases:.2f} | {cases / base_cases:.2f}× | "
            f"{last.explored} | {last.draws} | {last.ran_out} |"
        )


if __name__ == "__main__":
    main()
