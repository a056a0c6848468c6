"""A finding the same across cases of one target, or across targets, shown once.

Two findings of one target are the same when one check says the same thing about the same
argument or output with the same hint, the numbers in its words aside (the worst element,
its values, how many entries are off differ from case to case). The first case that shows a
finding prints its panel, listing the other cases where it recurs; a later case prints only
its new findings, and a case whose every finding recurs is only counted, on one line for all
such cases.

Across targets, a finding is the same when one check says the same thing with the same
likely cause, argument names and numbers aside: where many Functions fail the same way, the
first shows the panel and the others point at it (gradverify.report.groups). JSON keeps
every result.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from gradverify.results import Result, Status

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?(?:[-+]\d*\.?\d*(?:e[-+]?\d+)?j)?")
# An element or a shape (`[3]`, `[2, 4]`, `[0, 0, 2]`): cases of other ranks differ in it.
_INDEX = re.compile(r"\[[-+0-9., ]*\]")
# `argument 0 (x)`, `argument 1 (weight)`: other Functions name their arguments otherwise.
_ARGUMENT = re.compile(r"\b(argument|output) \d+(?: \([^)]*\))?")
Key = tuple[object, ...]


def _plain(words: str) -> str:
    """`words` with elements, shapes and numbers made alike."""
    return _NUMBER.sub("#", _INDEX.sub("[#]", words))


def finding_key(result: Result) -> Key:
    """What a finding of one target says, its numbers aside."""
    return (
        result.check,
        result.status,
        result.input_index,
        result.output_index,
        _plain(result.message),
        _plain(result.hint or ""),
    )


def shared_key(result: Result) -> Key | None:
    """What a finding says whatever Function it is about (its arguments' names and numbers
    aside), or None where it has no likely cause: two Functions that fail `finite_difference`
    without one may be wrong in two ways, and each keeps its panel."""
    if not result.hint or result.internal or result.usage:
        return None
    return (
        result.check,
        result.status,
        _plain(_ARGUMENT.sub(r"\1 #", result.message)),
        _plain(_ARGUMENT.sub(r"\1 #", result.hint)),
    )


def shown_findings(results: Sequence[Result]) -> list[Result]:
    """The results of one case that get a panel (failures and warnings not folded into an
    earlier check's finding)."""
    return [r for r in results if r.status in (Status.FAIL, Status.WARN) and r.same_as is None]


@dataclass
class Repeats:
    """Which findings of a target recur in later cases, and which cases only repeat."""

    repeating: list[int] = field(default_factory=list)  # positions of the cases folded
    recurs: dict[Key, list[str]] = field(default_factory=dict)  # finding -> later cases
    first: dict[Key, str] = field(default_factory=dict)  # finding -> the case showing it

    def more(self, result: Result) -> list[str]:
        """The later cases that repeat `result` (a finding of the case that shows it)."""
        key = finding_key(result)
        return self.recurs.get(key, []) if self.first.get(key) == result.case else []

    def repeated(self, result: Result) -> bool:
        """Whether `result` repeats a finding an earlier case shows."""
        first = self.first.get(finding_key(result))
        return first is not None and first != result.case


def repeats(cases: Sequence[Sequence[Result]]) -> Repeats:
    """The findings of one target's cases (each its results) that recur from earlier ones."""
    found = Repeats()
    for position, results in enumerate(cases):
        keys = list(dict.fromkeys(finding_key(r) for r in shown_findings(results)))
        case = results[0].case
        for key in keys:
            if key in found.first:
                found.recurs.setdefault(key, []).append(case)
            else:
                found.first[key] = case
        if keys and all(found.first[key] != case for key in keys):
            found.repeating.append(position)
    return found
