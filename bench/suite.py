"""`make test`, timed on a quiet machine and on a busy one, side by side in one run.

Usage: python bench/suite.py [--against DIR] [--load N] [--repeat R]

Runs `make test` (set up already, so its steps only: lint-imports, ruff, mypy with an empty
cache and no bytecode of gradverify or its tests, as on a fresh clone, pytest) in this
checkout and, with `--against`, in another checkout set up the same way (an older commit: `git
worktree add DIR COMMIT && make -C DIR install-dev`), the two alternating. "Busy" is the
same run while N processes (default 2, one per core of this project's machines) spin
on the CPU: another job sharing the machine. Prints a Markdown table: best wall and CPU time
(user + system of the steps and every process they started) of R runs, and ratios. Not a
test: the ratios are what matter.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(checkout: Path) -> tuple[float, float]:
    """Wall and CPU seconds of `make test` in `checkout` (set up already, so the Makefile
    runs its steps only), with mypy's cache empty and no bytecode, as on a fresh clone."""
    for cached in [
        *checkout.glob("gradverify/**/__pycache__"),
        *checkout.glob("tests/**/__pycache__"),
    ]:
        shutil.rmtree(cached, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as cache:
        environment = {**os.environ, "MYPY_CACHE_DIR": cache}
        done = subprocess.run(
            ["make", "-C", str(checkout), "test"], env=environment, capture_output=True, check=False
        )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if done.returncode != 0:
        tail = done.stdout.decode(errors="replace").splitlines()[-5:]
        print(f"warning: make test failed in {checkout}:", *tail, sep="\n  ", file=sys.stderr)
    return wall, cpu


def _spin() -> None:
    while True:
        pass


@contextmanager
def busy(processes: int) -> Iterator[None]:
    """`processes` processes spinning on the CPU for the block's duration."""
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(processes)]
    for spinner in spinners:
        spinner.start()
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--against", type=Path, help="another checkout, with its own .venv")
    parser.add_argument("--load", type=int, default=2, help="spinning processes when busy")
    parser.add_argument("--repeat", type=int, default=1)
    arguments = parser.parse_args()
    checkouts = {"this checkout": ROOT}
    if arguments.against is not None:
        checkouts["--against"] = arguments.against.resolve()
    best: dict[tuple[str, str], tuple[float, float]] = {}
    for condition in ("quiet", "busy"):
        for _ in range(arguments.repeat):
            for name, checkout in checkouts.items():  # alternating, so load drifts alike
                with busy(arguments.load if condition == "busy" else 0):
                    wall, cpu = timed(checkout)
                old = best.get((name, condition), (float("inf"), float("inf")))
                best[(name, condition)] = (min(old[0], wall), min(old[1], cpu))
    print(f"`make test`; busy: {arguments.load} spinning processes\n")
    print("| checkout | quiet wall (s) | quiet CPU (s) | busy wall (s) | busy / quiet wall |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, checkout in checkouts.items():
        quiet_wall, quiet_cpu = best[(name, "quiet")]
        busy_wall, _ = best[(name, "busy")]
        print(
            f"| {name} ({checkout.name}) | {quiet_wall:.1f} | {quiet_cpu:.1f} "
            f"| {busy_wall:.1f} | {busy_wall / quiet_wall:.2f}× |"
        )
    if arguments.against is not None:
        print()
        for condition in ("quiet", "busy"):
            ours, theirs = best[("this checkout", condition)], best[("--against", condition)]
            print(
                f"- {condition}: this checkout / --against: wall {ours[0] / theirs[0]:.2f}×, "
                f"CPU {ours[1] / theirs[1]:.2f}×"
            )


if __name__ == "__main__":
    main()
