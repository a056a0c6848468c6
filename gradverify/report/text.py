"""The default report for people: one line per passing case, a panel under each finding.

Default: a case that passed is one line (target, case, counts, time); a case with findings
is that line, then a panel per finding the target has not shown yet and one line per skip
that leaves a gap (a case without findings counts its skips on its one line). A finding
shown once names the other cases (`also in`) and the other Functions (`same in`) where it
recurs (gradverify.report.repeats, gradverify.report.groups). A Function whose backward
passed as a surrogate says once, under its first line, what that pass covered
(gradverify.report.surrogates). Checks that do not apply to the Function (`applies=False`)
are only counted. The report keeps within `max_lines`
(gradverify.report.budget). `quiet` keeps the failures and the summary; `verbose` shows every
check of every case as a table, and everything else, whatever its length.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from itertools import groupby

from rich.console import Console, RenderableType
from rich.text import Text

from gradverify.report.budget import Block, Key, fitted
from gradverify.report.coverage import coverage_lines
from gradverify.report.groups import Groups, groups
from gradverify.report.lines import joined, plural
from gradverify.report.options import RenderOptions
from gradverify.report.panel import failure_panel
from gradverify.report.repeats import finding_key, shown_findings
from gradverify.report.targets import Target, headlines, written
from gradverify.results import Coverage, Report, Status, branch_coverage

__all__ = ["failure_panel", "render"]

# What is put back first when the report is over its budget (gradverify.report.budget): a
# line per finding of the targets that failed, then their panels (rank + 1), then the same
# for those that warned, then the others, then notes and reasons.
FAILED, WARNED, PASSED, NOTES = 0, 2, 4, 6


def render(report: Report, options: RenderOptions) -> str:
    targets = _targets(report)
    shared = groups(report.results) if not options.verbose else Groups()

    def layout(cut: frozenset[Key]) -> list[Block]:
        return _layout(report, targets, options, shared.fresh(), cut)

    def alone(cut: frozenset[Key]) -> list[Block]:
        return _layout(report, targets, options, Groups(), cut)

    if options.verbose or options.max_lines is None:
        return "".join(block.text for block in layout(frozenset()))
    said = _SaidCut(targets, options)
    return "".join(block.text for block in fitted(layout, options.max_lines, said, alone))


def _targets(report: Report) -> list[Target]:
    inferred = dict(report.inferred)
    branches = {found.target: found for found in branch_coverage(report.results)}
    targets = []
    for name, results in groupby(report.results, key=lambda r: r.target):
        cases = [list(case) for _, case in groupby(results, key=lambda r: r.case)]
        targets.append(Target(name, cases, inferred.get(name), branches.get(name)))
    return targets


def _layout(
    report: Report,
    targets: Sequence[Target],
    options: RenderOptions,
    shared: Groups,
    cut: frozenset[Key],
) -> list[Block]:
    """The report's blocks, the keys in `cut` cut (a target to its line, a note left out)."""
    draw = _Draw(options)
    blocks = [
        Block(draw([Text(note, style="cyan")]), ("note", index), NOTES)
        for index, note in enumerate(report.notes)
        if ("note", index) not in cut
    ]
    expanded = False
    for target in targets:
        key, rank = ("target", target.name), _rank(target)
        shown = written(target, options, shared, key in cut)
        expanded = expanded or shown.expanded
        blocks.append(Block(draw(shown.renderables), key, rank + 1))
        lesser = ("headline", target.name)  # a target cut short: a line per finding
        if key in cut and lesser not in cut:
            said = headlines(target, options, shared)
            expanded = expanded or bool(said)
            blocks.append(Block(draw(said), lesser, rank, within=key))
    if expanded:
        blocks.append(Block("\n"))
    if report.coverage is not None:
        blocks.extend(_coverage(report.coverage, draw, cut))
    blocks.append(Block(draw([_summary(report, options.width, options.verbose)])))
    return blocks


def _rank(target: Target) -> int:
    results = [result for case in target.cases for result in case]
    if any(result.failed for result in results):
        return FAILED
    return WARNED if any(result.status is Status.WARN for result in results) else PASSED


def _coverage(coverage: Coverage, draw: _Draw, cut: frozenset[Key]) -> list[Block]:
    """The coverage's lines; why each Function was left unchecked may be cut."""
    blocks = []
    for line, reason_of in coverage_lines(coverage):
        key = ("reason", reason_of) if reason_of is not None else None
        if key not in cut:
            blocks.append(Block(draw([line]), key, NOTES))
    return blocks


class _Draw:
    """Renderables as plain lines (or coloured ones) of the report's width."""

    def __init__(self, options: RenderOptions) -> None:
        self.options = options

    def __call__(self, renderables: Sequence[RenderableType]) -> str:
        if not renderables:
            return ""
        buffer = io.StringIO()
        color = self.options.color
        console = Console(
            file=buffer, width=self.options.width, force_terminal=color, no_color=not color,
            color_system="standard" if color else None, highlight=False, emoji=False,
        )  # fmt: skip
        for renderable in renderables:
            console.print(renderable)
        # Rich pads wrapped and indented lines to the width; a plain report has no trailing
        # blanks.
        return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


class _SaidCut:
    """The line that says what a report over its budget left out."""

    def __init__(self, targets: Sequence[Target], options: RenderOptions) -> None:
        self.options = options
        self.findings = {
            target.name: len(
                {finding_key(r) for case in target.cases for r in shown_findings(case)}
            )
            for target in targets
        }
        self.budget = options.max_lines

    def __call__(self, cut: frozenset[Key]) -> str:
        left = []
        for kind, how, where in (
            ("target", "the panels of ", " (one line each above)"),
            ("headline", "", " (status line only)"),
        ):
            names = [key[1] for key in cut if isinstance(key, tuple) and key[0] == kind]
            names = [name for name in names if self.findings.get(str(name))]
            if kind == "target":
                bare = {key[1] for key in cut if isinstance(key, tuple) and key[0] == "headline"}
                names = [name for name in names if name not in bare]
            findings = sum(self.findings[str(name)] for name in names)
            if names:
                counted = f"{plural(findings, 'finding')} of {plural(len(names), 'Function')}"
                left.append(f"{how}{counted}{where}")
        notes = sum(1 for key in cut if isinstance(key, tuple) and key[0] in ("note", "reason"))
        if notes:
            left.append(plural(notes, "note"))
        said = Text(
            f"... {', '.join(left) or 'some lines'} left out to keep this report within "
            f"{self.budget} lines; run with -v to see them all",
            style="bold yellow",
        )
        return _Draw(self.options)([said])


# The run.


def _verdict(report: Report) -> tuple[str, str]:
    """PASSED or FAILED; never a green word for a run cut short or one that checked nothing."""
    if report.interrupted:
        return "INTERRUPTED (the cases that finished)", "bold yellow"
    if not report.passed:
        return "FAILED", "bold red"
    return ("NOTHING CHECKED", "bold yellow") if not report.checked else ("PASSED", "bold green")


def _summary(report: Report, width: int, verbose: bool) -> Text:
    """The counts; a failure that repeats another check's finding on its case (func or
    gradcheck confirming finite_difference) is counted apart, not as one more failure."""
    summary = report.summary
    verdict = _verdict(report)
    repeated = sum(1 for result in report.results if result.failed and result.same_as)
    failed = summary.failed - repeated
    parts = [
        Text(verdict[0], style=verdict[1]),
        Text(f" {summary.targets} target(s),"),
        Text(f"{summary.cases} case(s),"),
        Text(f"{summary.results} result(s):"),
        Text(f"{summary.passed} passed,", style="green"),
        Text(f"{failed} failed,", style="red" if failed else ""),
    ]
    if repeated:
        parts[-1] = Text(f"{failed} failed", style="red")
        parts.append(Text(f"(+{repeated} repeats),", style="dim"))
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
