"""One target in the text report: its cases' lines and the findings under them.

In full: a line per case (one for the inferred cases of a zero-config target that passed),
a panel per finding the target shows first, one line for the cases that only repeat
findings shown above, and backward's branches. Cut (a report over its line budget): one
status line for the whole target, and where it fits a line per finding (`headlines`). A
target whose every finding another Function shows is its status line and one line per
finding pointing at that panel. Under its first line, a target that passed a check as a
surrogate says once what that covered (`surrogate: v — forward is piecewise constant ...`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from gradverify.report.branches import branch_line, unrun_note
from gradverify.report.evidence import evidence
from gradverify.report.explored import case_explored, explored_line
from gradverify.report.findings import findings
from gradverify.report.groups import Groups
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
from gradverify.report.panel import SHOWN_CASES, failure_panel, more_cases, title_of
from gradverify.report.reasons import one_line
from gradverify.report.repeats import Repeats, finding_key, repeats, shared_key
from gradverify.report.surrogates import covered, undeclared
from gradverify.report.table import case_table
from gradverify.results import BranchCoverage, Result, Status

Cases = list[list[Result]]
_ARGUMENT_WORDS = re.compile(r" of (?:argument|output) \d+(?: \([^)]*\))?")


@dataclass
class Target:
    """What the text report knows of one target while writing it."""

    name: str
    cases: Cases
    inferred: Sequence[dict[str, Any]] | None  # zero-config's cases, if it chose them
    branches: BranchCoverage | None


@dataclass
class Written:
    """A target's lines: what to print, and whether more than status lines was printed."""

    renderables: list[RenderableType]
    expanded: bool


def written(target: Target, options: RenderOptions, shared: Groups, cut: bool) -> Written:
    """The target in full, or (`cut`) its status line only."""
    results = [result for case in target.cases for result in case]
    if _one_line(target, options):
        assert target.inferred is not None
        line = _inferred_line(target, target.inferred, options.width)
        return Written([line, *([] if cut else _surrogates(results, options))], False)
    if cut:
        shown = options.quiet is False or any(r.failed for r in results)
        return Written([_target_line(target, options.width)] if shown else [], False)
    visible = [r for r in results if _visible(r, options)]
    elsewhere = [shared.shown_by(r) for r in visible]
    if visible and not options.verbose and all(elsewhere):
        return _pointing(target, visible, shared, options)
    return _in_full(target, options, shared)


def headlines(target: Target, options: RenderOptions, shared: Groups) -> list[RenderableType]:
    """What a target cut short still says (a report over its budget): a line per distinct
    finding, `✗ finite_difference · argument 0 (x): off by a constant factor 1/2 ...`, or
    the line pointing at the panel another Function shows for it."""
    if _one_line(target, options):
        return []
    lines: list[RenderableType] = []
    said: set[object] = set()
    for result in (r for case in target.cases for r in case if _visible(r, options)):
        key = finding_key(result)
        if key in said:
            continue
        said.add(key)
        owner = shared.shown_by(result)
        if owner is not None:
            lines.append(_pointer(result, owner, options.width))
            continue
        title = title_of(result)
        room = options.width - INDENT - len(title) - 2
        # the title names the argument: `gradient is wrong at element [3]: ...`
        cause = result.hint or _ARGUMENT_WORDS.sub("", result.message, count=1)
        words = one_line(cause, max(room - 4, 20))  # " ..." where cut
        line = Text.assemble((title, STYLES[result.status]), f": {words}")
        lines.append(Padding(line, (0, 0, 0, INDENT)))
        convention = shared.convention(result)
        if convention is not None:
            lines.append(Padding(Text(convention, style="dim"), (0, 0, 0, 2 * INDENT)))
    return lines


def _visible(result: Result, options: RenderOptions) -> bool:
    """A finding the report shows (-q: failures only)."""
    if result.same_as is not None:
        return False
    return result.failed or (result.status is Status.WARN and not options.quiet)


def _in_full(target: Target, options: RenderOptions, shared: Groups) -> Written:
    folded = repeats(target.cases) if not options.verbose else Repeats()
    shown: list[RenderableType] = []
    expanded = False
    for position, results in enumerate(target.cases):
        if position not in folded.repeating:
            printed = _case(results, options, _shower(folded, shared, options))
            shown.extend(printed)
            expanded = expanded or len(printed) > 1 or options.verbose
    if shown and not options.verbose:
        shown[1:1] = _surrogates([r for case in target.cases for r in case], options)
    repeating = [target.cases[position] for position in folded.repeating]
    failing = any(result.failed for case in repeating for result in case)
    if repeating and (failing or not options.quiet):  # -q: warnings are not shown
        shown.append(_repeated_line(target.name, repeating, options.width))
    found = target.branches
    if found is not None and not options.quiet and (options.verbose or not found.complete):
        shown.append(_branches(found))
    return Written(shown, expanded)


def _shower(
    folded: Repeats, shared: Groups, options: RenderOptions
) -> Callable[[Result], RenderableType | None]:
    """What a case shows for a finding: its panel, a line pointing at another Function's
    panel, or nothing where an earlier case of the target shows it."""

    def shown(result: Result) -> RenderableType | None:
        if folded.repeated(result):
            return None
        owner = shared.shown_by(result)
        if owner is not None and not options.verbose:
            return _pointer(result, owner, options.width)
        shared.show(result)
        others = shared.others(result) if not options.verbose else []
        if others and shared.conventional(result):  # one line for all, said once
            convention = shared.convention(result)
            return failure_panel(undeclared(result), folded.more(result), others, convention)
        return failure_panel(result, folded.more(result), others)

    return shown


def _pointing(
    target: Target, visible: list[Result], shared: Groups, options: RenderOptions
) -> Written:
    """A target whose findings other Functions show: its line, and a pointer per finding."""
    lines: list[RenderableType] = [_target_line(target, options.width)]
    lines += _surrogates([r for case in target.cases for r in case], options)
    said: set[object] = set()
    for result in visible:
        key = shared_key(result)
        owner = shared.shown_by(result)
        if key in said or owner is None:
            continue
        said.add(key)
        lines.append(_pointer(result, owner, options.width))
    found = target.branches
    if found is not None and not options.quiet and not found.complete:
        lines.append(_branches(found))
    return Written(lines, True)


def _pointer(result: Result, owner: Result, width: int) -> RenderableType:
    """`✗ finite_difference · argument 0 (x): as in pkg:F  pkg/f.py:28` (its panel is above)."""
    style = STYLES[result.status]
    said = Text.assemble((title_of(result), style), f": as in {owner.target}")
    where = dict(evidence(result)).get("source", "")
    parts = [said, Text(where, style="dim")] if where else [said]
    return Padding(joined(parts, "  ", width - INDENT), (0, 0, 0, INDENT))


def _case(
    results: list[Result], options: RenderOptions, shown: Callable[[Result], Any]
) -> list[RenderableType]:
    """One case: its line (-v: its table), then what it found."""
    target, case = results[0].target, results[0].case
    if options.quiet and not any(r.failed for r in results):
        return []
    printed: list[RenderableType] = []
    if options.verbose:  # the table has a row for every skip
        printed.append(case_table(target, case, results, options.quiet))
        explored = case_explored(results)  # what exploring tried beyond the case's draw
        if explored is not None:
            printed.append(Padding(Text(explored_line(explored), style="dim"), (0, 0, 0, INDENT)))
        return printed + findings(results, warnings=True, skips=False, shown=shown)
    # A case without findings stays one line: its skips are counted there, and `-v` says
    # why (as pytest's `s` and `-rs`).
    found = any(r.status in (Status.FAIL, Status.WARN) for r in results)
    warnings = not options.quiet
    body = findings(results, warnings=warnings, skips=warnings and found, shown=shown)
    return [_case_line(target, case, results, options.width, bool(body)), *body]


# A zero-config target whose inferred cases all passed.


def _one_line(target: Target, options: RenderOptions) -> bool:
    """Whether a target's cases fold into one line: gradverify chose its inputs, and every
    case passed without a finding (a finding is shown under its own case's line)."""
    if target.inferred is None or options.verbose or options.quiet:
        return False
    return not any(
        r.status in (Status.FAIL, Status.WARN) for results in target.cases for r in results
    )


def _inferred_line(target: Target, inferred: Sequence[dict[str, Any]], width: int) -> Text:
    """`✓ target  inferred 4 cases ([4]; x [3, 5], dim=0; ...)  28 passed  0.11s`: what a pass
    on inputs gradverify chose covered, so that it never reads like a full verification."""
    labels = [_inferred_label(case) for case in inferred]
    count = plural(len(labels), "case")
    results = [result for case in target.cases for result in case]
    status = case_status(results)
    head = Text.assemble((MARKS[status], STYLES[status]), " ", (target.name, "bold"), "  inferred ")
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


def _surrogates(results: Sequence[Result], options: RenderOptions) -> list[RenderableType]:
    """`surrogate: v — forward is piecewise constant in v (`v > 0`)`, once per argument and
    evidence: what a pass as a surrogate covered (-q: nothing; -v: each check's message)."""
    if options.quiet or options.verbose:
        return []
    return [
        Padding(Text.assemble(("surrogate", STYLES[Status.PASS]), f": {said}"), (0, 0, 0, INDENT))
        for said in covered(results)
    ]


# Status lines.


def _target_line(target: Target, width: int) -> Text:
    """`✗ target  3 cases  15 passed, 9 failed  0.52s`: a whole target on one line."""
    results = [result for case in target.cases for result in case]
    status = case_status(results)
    head = Text.assemble(
        (MARKS[status], STYLES[status]), " ", (target.name, "bold"), "  ",
        plural(len(target.cases), "case"),
    )  # fmt: skip
    return joined([head, counts(results), Text(elapsed(results), style="dim")], "  ", width)


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
