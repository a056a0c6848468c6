"""One finding across many Functions, shown once in the text report.

Where three Functions or more fail the same way (one check, the same words and likely cause, their
arguments' names and numbers aside: gradverify.report.repeats.shared_key), the first that
is shown in full prints the finding's panel, naming the others; each of the others keeps its
status line and points at that panel in one line. Where the finding carries the line that
declares one Function's backward a surrogate, the panel gives instead one config line for
them all (gradverify.report.surrogates.convention).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gradverify.report.repeats import Key, shared_key, shown_findings
from gradverify.report.surrogates import convention, declares
from gradverify.results import Result

SHOWN_FUNCTIONS = 5  # Functions named in a panel's `same in` row
# Functions that share a finding before it is shown once: two keep their own panels, with
# the arguments each names (`argument 1 (beta)`, `argument 1 (weight)`).
GROUPED_FROM = 3


@dataclass
class Groups:
    """Shared findings and the Functions that have them, in report order."""

    functions: dict[Key, list[str]] = field(default_factory=dict)
    # the Functions whose shared finding carries the line that declares a surrogate
    declared: dict[Key, list[str]] = field(default_factory=dict)
    # the finding shown as a panel, per shared finding (filled while the report is written)
    shown: dict[Key, Result] = field(default_factory=dict)
    # the shared findings whose config line was given (filled while the report is written)
    conventions: set[Key] = field(default_factory=set)

    def fresh(self) -> Groups:
        """The same groups, none shown yet (a new layout of the report)."""
        return Groups(self.functions, self.declared)

    def others(self, result: Result) -> list[str]:
        """The other Functions with `result`'s finding."""
        key = shared_key(result)
        if key is None:
            return []
        return [target for target in self.functions.get(key, []) if target != result.target]

    def shown_by(self, result: Result) -> Result | None:
        """The panel another Function showed for `result`'s finding, if one did."""
        key = shared_key(result)
        shown = self.shown.get(key) if key is not None else None
        return shown if shown is not None and shown.target != result.target else None

    def show(self, result: Result) -> None:
        """`result` gets its panel: later Functions with the same finding point at it."""
        key = shared_key(result)
        if key is not None and key in self.functions:
            self.shown.setdefault(key, result)

    def conventional(self, result: Result) -> list[str]:
        """The Functions one config line declares for `result`'s shared finding, where
        `result` carries its own declaration and GROUPED_FROM Functions or more do."""
        key = shared_key(result)
        targets = self.declared.get(key, []) if key is not None and declares(result) else []
        return targets if len(targets) >= GROUPED_FROM else []

    def convention(self, result: Result) -> str | None:
        """That config line, the first time it is asked for (once per shared finding)."""
        key = shared_key(result)
        targets = self.conventional(result)
        if key is None or not targets or key in self.conventions:
            return None
        self.conventions.add(key)
        return convention(targets)


def groups(results: Sequence[Result]) -> Groups:
    """The findings of `results` (a report's) that GROUPED_FROM Functions or more share."""
    found: dict[Key, list[str]] = {}
    declared: dict[Key, list[str]] = {}
    for result in shown_findings(results):
        key = shared_key(result)
        if key is not None and result.target not in found.setdefault(key, []):
            found[key].append(result.target)
        if key is not None and declares(result) and result.target not in declared.get(key, []):
            declared.setdefault(key, []).append(result.target)
    grouped = {key: targets for key, targets in found.items() if len(targets) >= GROUPED_FROM}
    return Groups(grouped, {key: declared[key] for key in grouped if key in declared})


def named(targets: Sequence[str], shown: int = SHOWN_FUNCTIONS) -> str:
    """`a, b, c and 4 more`."""
    listed = ", ".join(targets[:shown])
    left = len(targets) - shown
    return listed + (f" and {left} more" if left > 0 else "")
