"""Backward's branches that a target's cases ran, in words: `backward: 2 of 3 branches run
(line 41 never)`. The text report prints it under the target where a branch never ran (and
always with -v); JSON carries the data (`branch_coverage`)."""

from __future__ import annotations

import linecache

from gradverify.report.evidence import relative_path
from gradverify.report.lines import plural
from gradverify.results import BranchCoverage

# What a branch that no case ran means, and what reaches it.
UNRUN = "not checked by any case: add a case that takes it, or try --explore N"


# What a branch on `ctx.needs_input_grad` needs: an input that does not require grad, which
# the `layouts` check gives each input in turn (new values, which explore draws, never do).
UNRUN_GRAD = (
    "not checked by any case: it runs where an input does not require grad; add `layouts` "
    "to the checks, which runs each input so in turn"
)


def unrun_note(found: BranchCoverage) -> str:
    """What a branch none ran means; where explore aimed draws at it, that they never got
    there: `explore tried 10 draws aimed at line 41; never reached: add a case that takes it`."""
    if all(_on_needed_grad(found.file, start) for start, _ in found.never):
        return UNRUN_GRAD
    if not found.aimed:
        return UNRUN
    tried = "; ".join(
        f"{plural(draws, 'draw')} aimed at line {line}" for line, draws in found.aimed
    )
    return f"explore tried {tried}; never reached: add a case that takes it"


def branch_line(found: BranchCoverage) -> str:
    """`backward: 2 of 3 branches run (line 41 never)` and where backward is."""
    total = len(found.possible)
    run = total - len(found.never)
    said = f"{found.function}: {run} of {total} branch{'es' if total != 1 else ''} run"
    if found.never:
        said += f" ({_never(found.never, set(found.lines))})"
    return f"{said}, {relative_path(found.file)}:{found.line}"


def _never(arcs: tuple[tuple[int, int], ...], ran: set[int]) -> str:
    """`line 41 never` for a line no case ran; `33->35 never taken` for a jump not taken to a
    line that ran by another way (an `if` always true), `18->exit` for a way out."""
    lines = sorted({to for _, to in arcs if to > 0 and to not in ran})
    jumps = [f"{start}->{to if to > 0 else 'exit'}" for start, to in arcs if to < 0 or to in ran]
    parts = []
    if lines:
        numbers = ", ".join(str(line) for line in lines)
        parts.append(f"line{'s' if len(lines) > 1 else ''} {numbers} never")
    if jumps:
        parts.append(f"{', '.join(jumps)} never taken")
    return "; ".join(parts)


def _on_needed_grad(file: str, line: int) -> bool:
    """Whether the statement at `line` of `file` branches on `ctx.needs_input_grad`."""
    return "needs_input_grad" in linecache.getline(file, line)
