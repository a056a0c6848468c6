"""A finding the same across cases of one target, shown once in the text report.

Two findings are the same when one check says the same thing about the same argument or
output with the same hint, the numbers in its words aside (the worst element, its values,
how many entries are off differ from case to case). The first case that shows a finding
prints its panel, saying in how many more cases it recurs; a later case whose every finding
recurs is only counted, on one line for all such cases. JSON keeps every result.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from gradverify.results import Result, Status

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?(?:[-+]\d*\.?\d*(?:e[-+]?\d+)?j)?")
Key = tuple[object, ...]


def finding_key(result: Result) -> Key:
    """What a finding says, its numbers aside."""
    return (
        result.check,
        result.status,
        result.input_index,
        result.output_index,
        _NUMBER.sub("#", result.message),
        _NUMBER.sub("#", result.hint or ""),
    )


def shown_findings(results: Sequence[Result]) -> list[Result]:
    """The results of one case that get a panel (failures and warnings not folded into an
    earlier check's finding)."""
    return [r for r in results if r.status in (Status.FAIL, Status.WARN) and r.same_as is None]


@dataclass
class Repeats:
    """Which cases of a target only repeat findings an earlier case shows, and how often each
    shown finding recurs."""

    repeating: list[int] = field(default_factory=list)  # positions of the cases folded
    recurs: dict[Key, list[str]] = field(default_factory=dict)  # finding -> later cases

    def more(self, result: Result) -> list[str]:
        """The later cases that repeat `result` (a finding of a case that is shown)."""
        return self.recurs.get(finding_key(result), [])


def repeats(cases: Sequence[Sequence[Result]]) -> Repeats:
    """The cases of one target (each its results) whose findings all recur from earlier ones."""
    found = Repeats()
    seen: set[Key] = set()
    for position, results in enumerate(cases):
        keys = [finding_key(r) for r in shown_findings(results)]
        if keys and all(key in seen for key in keys):
            found.repeating.append(position)
            for key in dict.fromkeys(keys):
                found.recurs.setdefault(key, []).append(results[0].case)
            continue
        seen.update(keys)
    return found
