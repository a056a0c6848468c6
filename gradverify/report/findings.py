"""Under a case's line in the text report: a panel per finding, one line for what repeats it.

A failure or warning gets a panel, unless the target shows it already (in an earlier case:
the panel there lists this case) or another Function does (one line points at that panel).
Checks that repeat a finding, that it stopped, or that were skipped for one reason are one
line each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rich.console import RenderableType
from rich.padding import Padding
from rich.text import Text

from gradverify.report.lines import INDENT, STYLES
from gradverify.report.reasons import one_line
from gradverify.results import Result, Status

# A finding's panel, a line pointing at where it is shown, or None: not shown again.
Shown = Callable[[Result], RenderableType | None]


@dataclass
class _Line:
    """Several checks that say one thing, as one line: `a, b, c: not run (...)`."""

    key: tuple[str, str]
    text: str  # after the checks' names
    style: str
    checks: list[str] = field(default_factory=list)

    def renderable(self) -> RenderableType:
        line = Text(", ".join(self.checks) + self.text, style=self.style)
        return Padding(line, (0, 0, 0, INDENT))


def findings(
    results: Sequence[Result], warnings: bool, skips: bool, shown: Shown
) -> list[RenderableType]:
    """What follows a case's line: `shown(result)` for each failure (and warning), and one
    line for checks that repeat a finding, that it stopped, or that were skipped for one
    reason; nothing for a line that points at a finding not shown again."""
    items: list[Result | _Line] = []
    for result in results:
        line = _line_for(result, warnings, skips)
        if line is None:
            if result.failed or (warnings and result.status is Status.WARN):
                items.append(result)
            continue
        last = items[-1] if items else None
        if isinstance(last, _Line) and last.key == line.key:
            line = last
        else:
            items.append(line)
        if result.check not in line.checks:
            line.checks.append(result.check)
    rendered: dict[int, RenderableType | None] = {
        id(item): shown(item) for item in items if isinstance(item, Result)
    }
    hidden = {item.check for item in items if isinstance(item, Result) and not rendered[id(item)]}
    hidden -= {item.check for item in items if isinstance(item, Result) and rendered[id(item)]}
    kept: list[RenderableType] = []
    for item in _after_their_findings(items):
        if isinstance(item, Result):
            renderable = rendered[id(item)]
            if renderable is not None:
                kept.append(renderable)
        elif not (item.key[0] in ("same", "stopped") and item.key[1] in hidden):
            kept.append(item.renderable())
    return kept


def _after_their_findings(items: Sequence[Result | _Line]) -> list[Result | _Line]:
    """A line that points at a finding (`lint: not run (forward failed above)`) put after
    that finding's panel when it came first (a case refused before any check ran fails at
    forward, and lint comes before it); lines that say the same then merge into one."""
    shown: set[str] = set()
    waiting: dict[str, list[_Line]] = {}
    ordered: list[Result | _Line] = []

    def place(item: Result | _Line) -> None:
        last = ordered[-1] if ordered else None
        if isinstance(item, _Line) and isinstance(last, _Line) and last.key == item.key:
            last.checks.extend(c for c in item.checks if c not in last.checks)
        else:
            ordered.append(item)

    for item in items:
        pointing = isinstance(item, _Line) and item.key[0] in ("same", "stopped")
        if pointing and isinstance(item, _Line) and item.key[1] not in shown:
            waiting.setdefault(item.key[1], []).append(item)
            continue
        place(item)
        if isinstance(item, Result):
            shown.add(item.check)
            for line in waiting.pop(item.check, []):
                place(line)
    for lines in waiting.values():  # the finding is not shown (a hidden warning): as they came
        for line in lines:
            place(line)
    return ordered


def _line_for(result: Result, warnings: bool, skips: bool) -> _Line | None:
    """The one-line form of a result, or None (a panel, or nothing)."""
    if result.status in (Status.FAIL, Status.WARN) and result.same_as is not None:
        if result.status is Status.WARN and not warnings:
            return None
        said = f": the same finding as {result.same_as}"
        return _Line(("same", result.same_as), said, "dim")
    if result.status is not Status.SKIP or not result.applies or not skips:
        return None
    if result.same_as is not None:
        stopped = f": not run ({result.same_as} failed above)"
        return _Line(("stopped", result.same_as), stopped, "dim")
    reason = one_line(result.message)
    return _Line(("skip", reason), f" skipped: {reason}", STYLES[Status.SKIP])
