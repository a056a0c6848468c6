"""The default report for people: one line per passing case, a panel under each finding.

Default: a case that passed is one line (target, case, counts, time); a case with findings
is that line, then a panel per failure or warning and one line per skip that leaves a gap
(a case without findings counts its skips on its one line).
Checks that do not apply to the Function (`applies=False`) are only counted. `quiet` keeps
the failures and the summary; `verbose` shows every check of every case as a table.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from gradverify.report.branches import branch_line, unrun_note
from gradverify.report.coverage import coverage_lines
from gradverify.report.explored import case_explored, explored_line
from gradverify.report.lines import (
    INDENT,
    MARKS,
    STYLES,
    case_status,
    counts,
    elapsed,
    joined,
    location,
    plural,
)
from gradverify.report.options import RenderOptions
from gradverify.report.panel import failure_panel, more_cases
from gradverify.report.repeats import Repeats, repeats
from gradverify.report.table import case_table
from gradverify.results import BranchCoverage, Report, Result, Status, branch_coverage

SHOWN_CASES = 5  # case names listed for the cases that repeat a finding


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
    expanded = False
    inferred = dict(report.inferred)
    branches = {found.target: found for found in branch_coverage(report.results)}
    for target, of_target in groupby(report.results, key=lambda r: r.target):
        cases = [list(group) for _, group in groupby(of_target, key=lambda r: r.case)]
        if _one_line(target, cases, inferred, options):
            console.print(_inferred_line(target, cases, inferred[target], options.width))
        else:
            folded = repeats(cases) if not options.verbose else Repeats()
            for position, results in enumerate(cases):
                if position not in folded.repeating:
                    expanded = _print_case(console, results, options, folded) or expanded
            repeating = [cases[position] for position in folded.repeating]
            failing = any(result.failed for case in repeating for result in case)
            if repeating and (failing or not options.quiet):  # -q: warnings are not shown
                console.print(_repeated_line(target, repeating, options.width))
        found = branches.get(target)
        if found is not None and not options.quiet and (options.verbose or not found.complete):
            console.print(_branches(found))
    if expanded:
        console.print()
    if report.coverage is not None:
        for line in coverage_lines(report.coverage):
            console.print(line)
    console.print(_summary(report, options.width, options.verbose))
    # Rich pads wrapped and indented lines to the width; a plain report has no trailing blanks.
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def _print_case(
    console: Console, results: list[Result], options: RenderOptions, folded: Repeats
) -> bool:
    """Print one case; True when more than its line was printed."""
    target, case = results[0].target, results[0].case
    if options.quiet and not any(r.failed for r in results):
        return False
    if options.verbose:  # the table has a row for every skip
        console.print(case_table(target, case, results, options.quiet))
        explored = case_explored(results)  # what exploring tried beyond the case's draw
        if explored is not None:
            console.print(Padding(Text(explored_line(explored), style="dim"), (0, 0, 0, INDENT)))
        body = _findings(results, warnings=True, skips=False, folded=folded)
    else:
        quiet = options.quiet
        # A case without findings stays one line: its skips are counted there, and
        # `-v` says why (as pytest's `s` and `-rs`).
        findings = any(r.status in (Status.FAIL, Status.WARN) for r in results)
        body = _findings(results, warnings=not quiet, skips=not quiet and findings, folded=folded)
        console.print(_case_line(target, case, results, options.width, bool(body)))
    for item in body:
        console.print(item)
    return bool(body) or options.verbose


# A zero-config target whose inferred cases all passed.


def _one_line(
    target: str, cases: list[list[Result]], inferred: dict[str, Any], options: RenderOptions
) -> bool:
    """Whether a target's cases fold into one line: gradverify chose its inputs, and every
    case passed without a finding (a finding is shown under its own case's line)."""
    if target not in inferred or options.verbose or options.quiet:
        return False
    return not any(r.status in (Status.FAIL, Status.WARN) for results in cases for r in results)


def _inferred_line(
    target: str, cases: list[list[Result]], inferred: Sequence[dict[str, Any]], width: int
) -> Text:
    """`✓ target  inferred 4 cases ([4]; x [3, 5], dim=0; ...)  28 passed  0.11s`: what a pass
    on inputs gradverify chose covered, so that it never reads like a full verification."""
    labels = [_inferred_label(case) for case in inferred]
    count = plural(len(labels), "case")
    results = [result for case in cases for result in case]
    status = case_status(results)
    head = Text.assemble((MARKS[status], STYLES[status]), " ", (target, "bold"), "  inferred ")
    head.append(f"{count} ({'; '.join(labels)})")
    return joined([head, counts(results), Text(elapsed(results), style="dim")], "  ", width)


def _inferred_label(case: dict[str, Any]) -> str:
    """What one inferred case varies (its name says so), or the base case's tensor shapes."""
    name = str(case["case"])
    _, separator, label = name.partition(": ")
    if separator:
        return label
    shapes = [
        str(list(item["shape"]))
        for item in case["inputs"]
        if isinstance(item, dict) and item.get("shape") is not None
    ]
    return ", ".join(shapes) or "no tensors"


# One case.


def _case_line(
    target: str, case: str, results: Sequence[Result], width: int, expanded: bool
) -> Text:
    """`✓ target  case name  7 passed  0.42s`, and the spec location when findings follow.

    Where one line cannot hold it all, it breaks between its parts, never inside one."""
    status = case_status(results)
    head = Text.assemble(
        (MARKS[status], STYLES[status]), " ", (target, "bold"), "  case ", (case, "bold")
    )
    parts = [head, counts(results), Text(elapsed(results), style="dim")]
    where = location(results[0])
    if expanded and where:
        parts.append(Text(where, style="dim"))
    return joined(parts, "  ", width)


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


def _findings(
    results: Sequence[Result], warnings: bool, skips: bool, folded: Repeats | None = None
) -> list[RenderableType]:
    """A panel per failure (and warning); one line for checks that repeat a finding, that
    it stopped, or that were skipped for one reason."""
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
    ordered = _after_their_findings(items)
    folded = folded or Repeats()
    return [
        item.renderable() if isinstance(item, _Line) else failure_panel(item, folded.more(item))
        for item in ordered
    ]


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
    return _Line(("skip", result.message), f" skipped: {result.message}", STYLES[Status.SKIP])


def _repeated_line(target: str, cases: Sequence[Sequence[Result]], width: int) -> Text:
    """`✗ target  7 more cases (two, three, ...): the same  7 passed, 7 failed  0.25s`: the
    cases whose every finding a panel above shows; their names where the line has room."""
    results = [result for case in cases for result in case]
    status = case_status(results)
    names = [case[0].case for case in cases]
    listed = ", ".join(names[:SHOWN_CASES]) + (", ..." if len(names) > SHOWN_CASES else "")
    tail = [counts(results), Text(elapsed(results), style="dim")]
    for said in (
        f"  {more_cases(len(cases))} ({listed}): the same",
        f"  {more_cases(len(cases))}: the same",
    ):
        head = Text.assemble((MARKS[status], STYLES[status]), " ", (target, "bold"), said)
        line = joined([head, *tail], "  ", width)
        if "\n" not in line.plain:
            break
    return line


def _branches(found: BranchCoverage) -> RenderableType:
    """Backward's branches the target's cases ran; what a branch none ran means."""
    style = "dim" if found.complete else STYLES[Status.WARN]
    lines = [Text(branch_line(found), style=style)]
    if not found.complete:
        lines.append(Text(unrun_note(found), style="dim"))
    return Padding(Group(*lines), (0, 0, 0, INDENT))


# The run.


def _verdict(report: Report) -> tuple[str, str]:
    """PASSED or FAILED; never a green word for a run cut short or one that checked nothing."""
    if report.interrupted:
        return "INTERRUPTED (the cases that finished)", "bold yellow"
    if not report.passed:
        return "FAILED", "bold red"
    return ("NOTHING CHECKED", "bold yellow") if not report.checked else ("PASSED", "bold green")


def _summary(report: Report, width: int, verbose: bool) -> Text:
    summary = report.summary
    verdict = _verdict(report)
    parts = [
        Text(verdict[0], style=verdict[1]),
        Text(f" {summary.targets} target(s),"),
        Text(f"{summary.cases} case(s),"),
        Text(f"{summary.results} result(s):"),
        Text(f"{summary.passed} passed,", style="green"),
        Text(f"{summary.failed} failed,", style="red" if summary.failed else ""),
    ]
    if summary.skipped:
        why = "" if verbose else " (-v says why)"
        parts.append(Text(f"{summary.skipped} skipped{why},"))
    if summary.not_applicable:
        parts.append(Text(f"{summary.not_applicable} not applicable,"))
    parts.append(Text(f"{summary.warnings} warning(s)"))
    if report.internal_errors:
        errors = len(report.internal_errors)
        parts[-1].append(",")
        parts.append(Text(f"{errors} internal error(s) of gradverify", style="bold red"))
    if report.usage_errors:
        parts[-1].append(",")
        unusable = len(report.usage_errors)
        parts.append(Text(f"{unusable} spec or target error(s)", style="bold red"))
    return joined(parts, " ", width)
