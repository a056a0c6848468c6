"""The parts of the text report's lines: marks and styles by status, counts, time, where a
case's spec is, and one line of parts that breaks between parts, never inside one."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from gradverify.results import Result, Status

STYLES = {
    Status.PASS: "green",
    Status.FAIL: "bold red",
    Status.SKIP: "yellow",
    Status.WARN: "magenta",
}
MARKS = {Status.PASS: "✓", Status.FAIL: "✗", Status.SKIP: "-", Status.WARN: "!"}
INDENT = 2


def joined(parts: Sequence[Text], separator: str, width: int) -> Text:
    """The parts on one line, or on several (indented) that break between parts only."""
    line = Text()
    column = 0
    for part in parts:
        if column and column + len(separator) + len(part) > width:
            line.append("\n" + " " * INDENT)
            column = INDENT
        elif column:
            line.append(separator)
            column += len(separator)
        line.append_text(part)
        column += len(part)
    return line


def case_status(results: Sequence[Result]) -> Status:
    for status in (Status.FAIL, Status.WARN, Status.PASS):
        if any(r.status is status for r in results):
            return status
    return Status.SKIP


def counts(results: Sequence[Result]) -> Text:
    """How many results passed, failed, warned and were skipped (not-applicable ones aside)."""
    counts = Text()
    for status, word in (
        (Status.PASS, "passed"),
        (Status.FAIL, "failed"),
        (Status.WARN, "warning"),
        (Status.SKIP, "skipped"),
    ):
        number = sum(1 for r in results if r.status is status and r.applies)
        if number or status is Status.PASS:
            if counts:
                counts.append(", ")
            plural = "s" if status is Status.WARN and number != 1 else ""
            counts.append(f"{number} {word}{plural}", style=STYLES[status] if number else "")
    return counts


def plural(count: int, noun: str) -> str:
    """`1 case`, `2 cases`."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def elapsed(results: Sequence[Result]) -> str:
    if results and all(r.cached for r in results):
        return "(cached)"
    return f"{sum(r.seconds for r in results):.2f}s"


def location(result: Result) -> str:
    if result.spec_file is None:
        return ""
    return f"{result.spec_file}:{result.spec_line}" if result.spec_line else result.spec_file
