"""What measuring backward's branch coverage costs (gradverify/engine/branch_coverage.py).

The bundled specs (`specs/`) run in this process twice per round, alternating, with the
measurement on (as shipped) and off (the measured check chosen as none); the best of
`--rounds` rounds of each is printed, with the ratio. In-process and without the cache, so
that the numbers are the checks' own time, not worker start-up.

    .venv/bin/python bench/branches.py [--rounds 5] [SPEC_PATH ...]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from unittest import mock

from gradverify.engine import case as engine_case
from gradverify.results import branch_coverage
from gradverify.run import session
from gradverify.spec.discover import spec_files
from gradverify.spec.load import SpecEntry, load_spec_file

ROOT = Path(__file__).resolve().parents[1]


def entries_of(paths: list[str]) -> list[SpecEntry]:
    return [entry for path in paths for file in spec_files(path) for entry in load_spec_file(file)]


def timed(entries: list[SpecEntry], measured: bool) -> tuple[float, int]:
    """Seconds for one run, and how many targets got a branch coverage."""
    options = session.RunOptions(isolation=False, cache=False)
    patch = mock.patch.object(engine_case, "measured_checks", lambda checks: frozenset())
    started = time.perf_counter()
    if measured:
        report = session.run(entries, options)
    else:
        with patch:
            report = session.run(entries, options)
    return time.perf_counter() - started, len(branch_coverage(report.results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(ROOT / "specs")])
    parser.add_argument("--rounds", type=int, default=5)
    arguments = parser.parse_args()
    entries = entries_of(arguments.paths)
    timed(entries, True)  # warm: imports, first calls of torch's kernels
    off, on, covered = [], [], 0
    for _ in range(arguments.rounds):
        seconds, _ = timed(entries, False)
        off.append(seconds)
        seconds, covered = timed(entries, True)
        on.append(seconds)
    cases = sum(len(entry.spec.cases) for entry in entries)
    print(f"{len(entries)} targets, {cases} cases; {covered} targets with a branch coverage")
    print(f"without measuring: {min(off):.3f} s (best of {arguments.rounds})")
    print(f"with measuring:    {min(on):.3f} s (best of {arguments.rounds})")
    print(f"ratio:             {min(on) / min(off):.3f}×")


if __name__ == "__main__":
    main()
