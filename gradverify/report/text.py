"""The default report for people: a table of checks per case, a panel under each failure."""

from __future__ import annotations

import io
from collections.abc import Iterable
from itertools import groupby

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gradverify.report.evidence import evidence
from gradverify.report.maps import MismatchMap
from gradverify.report.options import RenderOptions
from gradverify.results import Report, Result, Status

STYLES = {
    Status.PASS: "green",
    Status.FAIL: "bold red",
    Status.SKIP: "yellow",
    Status.WARN: "magenta",
}
QUIET = (Status.PASS, Status.SKIP)  # what --quiet leaves out
MARKS = {Status.PASS: "✓", Status.FAIL: "✗", Status.SKIP: "-", Status.WARN: "!"}


def render(report: Report, options: RenderOptions) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=options.width,
        force_terminal=options.color,
        no_color=not options.color,
        color_system="standard" if options.color else None,
        highlight=False,
        emoji=False,
    )
    for note in report.notes:
        console.print(Text(note, style="cyan"))
    for (target, case), group in groupby(report.results, key=lambda r: (r.target, r.case)):
        results = list(group)
        if options.quiet and all(r.status in QUIET for r in results):
            continue
        console.print(_case_table(target, case, results, options.quiet))
        shown: set[tuple[object, ...]] = set()
        for result in results:
            if result.status not in (Status.FAIL, Status.WARN):
                continue
            finding = _finding(result)
            if finding is None or finding not in shown:
                console.print(_panel(result))
            else:  # gradcheck often confirms what finite_difference found: say it once
                console.print(Text(f"  {result.check}: the same finding as above", style="dim"))
            if finding is not None:
                shown.add(finding)
    console.print(_summary(report))
    return buffer.getvalue()


def _case_table(target: str, case: str, results: list[Result], quiet: bool) -> Table:
    location = _location(results[0])
    title = Text.assemble(
        (target, "bold"), "  case ", (case, "bold"), (f"  {location}" if location else "", "dim")
    )
    table = Table(
        title=title, title_justify="left", show_header=False, box=None, padding=(0, 1), expand=False
    )
    table.add_column("mark", width=1)
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    table.add_column("message", overflow="fold")
    for result in results:
        if quiet and result.status in QUIET:
            continue
        style = STYLES[result.status]
        table.add_row(
            Text(MARKS[result.status], style=style),
            result.check,
            Text(result.status.value + (" (cached)" if result.cached else ""), style=style),
            f"{result.seconds:.2f}s",
            Text(_headline(result)),  # Text: user code in messages is not Rich markup
        )
    return table


def _headline(result: Result) -> str:
    if result.status is Status.PASS or result.status is Status.SKIP:
        return result.message
    if result.input_name is not None and ": " in result.message:
        return result.message.split(": ", 1)[0]
    return result.message if len(result.message) <= 100 else result.message[:99] + "…"


def _panel(result: Result) -> Panel:
    rows = Table.grid(padding=(0, 2))
    rows.add_column(style="bold", no_wrap=True)
    rows.add_column(overflow="fold")
    for label, value in _evidence(result):
        rows.add_row(label, Text(value))
    parts: list[RenderableType] = [Text(result.message), Text(""), rows]
    parts.append(MismatchMap(result))  # draws nothing where the map does not fit
    if result.details:
        parts += [Text(""), Text("\n".join(result.details), style="dim")]
    style = STYLES[result.status]
    title = f"{result.check} · {_subject(result)}" if _subject(result) else result.check
    return Panel(
        Group(*parts), title=Text(title, style=style), title_align="left", border_style=style
    )


def _finding(result: Result) -> tuple[object, ...] | None:
    """What a failure says, without which check said it (None: not comparable)."""
    if result.analytical is None:
        return None
    return (
        result.input_index,
        result.output_index,
        result.element,
        result.analytical,
        result.numerical,
    )


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


def _location(result: Result) -> str:
    if result.spec_file is None:
        return ""
    return f"{result.spec_file}:{result.spec_line}" if result.spec_line else result.spec_file


def _summary(report: Report) -> Text:
    summary = report.summary
    verdict = ("PASSED", "bold green") if report.passed else ("FAILED", "bold red")
    return Text.assemble(
        "\n",
        verdict,
        f"  {summary.targets} target(s), {summary.cases} case(s), {summary.results} result(s): ",
        (f"{summary.passed} passed", "green"),
        ", ",
        (f"{summary.failed} failed", "red" if summary.failed else ""),
        f", {summary.skipped} skipped, {summary.warnings} warning(s)",
    )
