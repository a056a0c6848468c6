"""The recorded calls of one target summarised, not multiplied: calls whose signatures differ
only in a float literal's value or in which tensors required grad are one case (the values
seen are noted, and their ends become cases of their own); past MOST_CASES, the first case of
each call site is kept and the others are noted as covered by one of its site. Which
arguments are constants (filters, masks, tables) is decided here from every call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gradverify.record.records import Argument, RecordedCall

MOST_CASES = 10  # recorded cases per target, the first of each call site kept beyond it

Call = tuple[RecordedCall, list[Argument]]  # a call, with its arguments by position


@dataclass
class Group:
    """Calls one case stands for: the first gives its inputs."""

    calls: list[Call]
    covers: list[str] = field(default_factory=list)  # patterns of groups folded in past the cap

    @property
    def call(self) -> RecordedCall:
        return self.calls[0][0]

    def seen(self) -> dict[int, list[float]]:
        """The values each float literal of the first call took across the group's calls."""
        first = self.calls[0][1]
        return {
            index: [
                arguments[index].literal
                for _, arguments in self.calls
                if index < len(arguments) and isinstance(arguments[index].literal, float)
            ]
            for index, argument in enumerate(first)
            if argument.other is None and isinstance(argument.literal, float)
        }

    def ends(self) -> dict[int, list[float]]:
        """For each float literal that varied: its smallest and largest value where they are
        not the first call's own (the cases added at the ends of the range seen)."""
        first = self.calls[0][1]
        ends: dict[int, list[float]] = {}
        for index, values in self.seen().items():
            own = first[index].literal
            extremes = dict.fromkeys([min(values), max(values)])
            others = [value for value in extremes if value != own]
            if others:
                ends[index] = others
        return ends


def grouped(calls: Sequence[Call], most: int = MOST_CASES) -> list[Group]:
    """The groups of `calls` by pattern, in the order first seen; past `most`, the first group
    of each call site and then the earliest others, the rest folded into a kept group of
    their site (or the first kept group)."""
    groups: dict[str, Group] = {}
    for call, arguments in calls:
        groups.setdefault(call.pattern, Group([])).calls.append((call, arguments))
    ordered = list(groups.values())
    if len(ordered) <= most:
        return ordered
    first_of_site: dict[str | None, Group] = {}
    for group in ordered:
        first_of_site.setdefault(group.call.site, group)
    kept_ids = {id(group) for group in first_of_site.values()}
    for group in ordered:
        if len(kept_ids) >= most:
            break
        kept_ids.add(id(group))
    kept = [group for group in ordered if id(group) in kept_ids]
    for group in ordered:
        if id(group) not in kept_ids:
            home = first_of_site.get(group.call.site, kept[0])
            home.covers.append(group.call.pattern)
    return kept


def has_gradients(calls: Sequence[Call]) -> bool:
    """Whether some call had a tensor argument that required grad: then the floating ones
    that never did are the run's constants."""
    return any(
        argument.tensor is not None and argument.tensor.requires_grad
        for _, arguments in calls
        for argument in arguments
    )


def constant_candidates(calls: Sequence[Call]) -> frozenset[int]:
    """Positions whose tensor, in every call, is floating, required no grad and had its
    values recorded (small and finite)."""
    positions: dict[int, bool] = {}
    for _, arguments in calls:
        for index, argument in enumerate(arguments):
            tensor = argument.tensor
            fits = (
                tensor is not None
                and tensor.is_floating
                and not tensor.requires_grad
                and tensor.values is not None
            )
            positions[index] = positions.get(index, True) and fits
    return frozenset(index for index, fits in positions.items() if fits)
