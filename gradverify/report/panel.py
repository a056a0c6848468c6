"""A finding's panel in the text report: its message, the evidence, the mismatch map, the
user's traceback; titled with the check and what it is about."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gradverify.report.evidence import evidence
from gradverify.report.groups import named
from gradverify.report.lines import MARKS, STYLES, plural
from gradverify.report.maps import MismatchMap
from gradverify.results import Result, Status

SHOWN_CASES = 5  # case names listed for the cases that repeat a finding


def failure_panel(
    result: Result,
    more: Sequence[str] = (),
    functions: Sequence[str] = (),
    convention: str | None = None,
) -> Panel:
    """A finding's panel; `more`: the later cases of its target that repeat it;
    `functions`: the other Functions with the same finding (each points here);
    `convention`: the config line that declares a surrogate for them all."""
    rows = Table.grid(padding=(0, 2))
    rows.add_column(style="bold", no_wrap=True)
    rows.add_column(overflow="fold")
    for label, value in _evidence(result):
        rows.add_row(label, Text(value))
    if more:
        rows.add_row("also in", Text(f"{more_cases(len(more))}: {named(more, SHOWN_CASES)}"))
    if functions:
        rows.add_row("same in", Text(_functions(result.target, functions)))
    if convention is not None:
        rows.add_row("note", Text(convention))
    parts: list[RenderableType] = [Text(result.message), Text(""), rows]
    parts.append(MismatchMap(result))  # draws nothing where the map does not fit
    if result.details:
        parts += [Text(""), Text("\n".join(result.details), style="dim")]
    style = STYLES[result.status]
    title = title_of(result)
    return Panel(
        Group(*parts),
        title=Text(title, style=style),
        title_align="left",
        border_style=style,
    )


def _functions(target: str, functions: Sequence[str]) -> str:
    """`3 more Functions in pkg.ops: B, C, D`, or their full names from several modules."""
    counted = plural(len(functions), "more Function")
    module = target.partition(":")[0]
    if all(other.partition(":")[0] == module for other in functions):
        return f"{counted} in {module}: {named([f.partition(':')[2] for f in functions])}"
    return f"{counted}: {named(functions)}"


def more_cases(count: int) -> str:
    return plural(count, "more case")


def title_of(result: Result) -> str:
    """`✗ finite_difference · argument 1 (beta)`: plain text tells a failure from a warning."""
    subject = _subject(result)
    title = f"{MARKS[result.status]} {result.check}" + (f" · {subject}" if subject else "")
    if result.internal:
        return title + " (internal error of gradverify)"
    if result.usage:
        return title + " (spec or target error)"
    return title + (" (warning)" if result.status is Status.WARN else "")


def _subject(result: Result) -> str:
    if result.input_index is not None:
        name = f" ({result.input_name})" if result.input_name else ""
        return f"argument {result.input_index}{name}"
    if result.output_index is not None:
        return f"output {result.output_index}"
    return ""


def _evidence(result: Result) -> Iterable[tuple[str, str]]:
    """The shared evidence, less the spec location the case's title already shows."""
    return ((label, value) for label, value in evidence(result) if label != "spec")
