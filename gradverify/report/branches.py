"""Backward's branches that a target's cases ran, in words: `backward: 2 of 3 branches run
(line 41 never)`. The text report prints it under the target where a branch never ran (and
always with -v); JSON carries the data (`branch_coverage`)."""

from __future__ import annotations

from gradverify.report.evidence import relative_path
from gradverify.results import BranchCoverage

# What a branch that no case ran means, and what reaches it.
UNRUN = "not checked by any case: add a case that takes it, or try --explore N"


def branch_line(found: BranchCoverage) -> str:
    """`backward: 2 of 3 branches run (line 41 never)` and where backward is."""
    total = len(found.possible)
    run = total - len(found.never)
    said = f"{found.function}: {run} of {total} branch{'es' if total != 1 else ''} run"
    if found.never:
        said += f" ({_never(found.never)})"
    return f"{said}, {relative_path(found.file)}:{found.line}"


def _never(arcs: tuple[tuple[int, int], ...]) -> str:
    """`line 41 never`, `lines 14, 15 never`, `the exit from line 18 never`."""
    lines = sorted({to for _, to in arcs if to > 0})
    exits = sorted({start for start, to in arcs if to < 0})
    parts = []
    if lines:
        numbers = ", ".join(str(line) for line in lines)
        parts.append(f"line{'s' if len(lines) > 1 else ''} {numbers}")
    parts.extend(f"the exit from line {start}" for start in exits)
    return " and ".join(parts) + " never"
