"""What exploring a case did, in words: `explored 20 draws, no failure`."""

from __future__ import annotations

from collections.abc import Sequence

from gradverify.report.lines import plural
from gradverify.results import Explored, Result


def explored_line(explored: Explored) -> str:
    """`explored 20 draws, no failure`; `explored 7 draws in its budget of 0.4 s, no failure`
    (its time ended the search: not a failure); `explored 2 draws, draw 2 fails`; with what
    the draws aimed at an unrun branch of backward did: `; 5 draws aimed at line 41, never
    reached`."""
    return _what(explored) + _aimed(explored)


def _what(explored: Explored) -> str:
    draws = plural(explored.draws, "draw")
    if explored.found:
        return f"explored {draws}, draw {explored.draws} fails"
    if explored.ran_out:
        return f"explored {draws} in its budget of {explored.budget_seconds:.2g} s, no failure"
    return f"explored {draws}, no failure"


def _aimed(explored: Explored) -> str:
    if not explored.aimed or explored.aimed_line is None:
        return ""
    draws = plural(explored.aimed, "draw")
    reached = "reached" if explored.reached else "never reached"
    return f"; {draws} aimed at line {explored.aimed_line}, {reached}"


def case_explored(results: Sequence[Result]) -> Explored | None:
    """What the case's exploration did, if it explored."""
    return next((r.explored for r in results if r.explored is not None), None)
