"""Other values of a case's numbers (`p: 2.0`, `dim: -1`, `training: false`) for its draws.

A spec gives each number one value; a bug that shows only for another value (a power's
derivative right for p = 2 only, a `dim` backward ignores) is missed by every draw that keeps
it. The values tried stay near the spec's and keep what the value likely means:

- a bool is flipped;
- an int keeps its sign (a negative one counts dims from the end): one more, one less, or
  twice it, never crossing 0 (0 itself becomes 1);
- a float keeps its sign and its side of 1 (a probability stays in (0, 1), an exponent
  above 1 stays above 1): the distance from 0 or 1 is scaled by 1/2 to 2; 0.0 (often
  "off") is kept, 1.0 becomes 1.5 or 2.

A value the Function does not accept is a failed draw (forward raises; not a finding).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from gradverify.spec.models import Case, LiteralInput, TensorInput


def number_indices(case: Case) -> Sequence[int]:
    """Positions of `case`'s numbers that a draw varies (plain or `{value: ...}`)."""
    return [index for index, item in enumerate(case.inputs) if _number(item) is not None]


def other_numbers(case: Case, generator: torch.Generator) -> Case:
    """`case` with each of its numbers at another value near it."""
    inputs: list[Any] = list(case.inputs)
    for index in number_indices(case):
        item = inputs[index]
        value = _number(item)
        assert value is not None
        other = _other(value, generator)
        inputs[index] = LiteralInput(value=other) if isinstance(item, LiteralInput) else other
    return case.model_copy(update={"inputs": inputs})


def numbers_of(case: Case) -> dict[int, bool | int | float]:
    """Each of `case`'s numbers that a draw varies, by its position."""
    found = {index: _number(case.inputs[index]) for index in number_indices(case)}
    return {index: value for index, value in found.items() if value is not None}


def changed_numbers(case: Case, drawn: Case) -> list[tuple[int, Any]]:
    """(position, value) of each number `drawn` gives another value than `case`."""
    return [
        (index, _number(drawn.inputs[index]))
        for index in number_indices(case)
        if _number(drawn.inputs[index]) != _number(case.inputs[index])
    ]


def with_numbers_of(case: Case, drawn: Case) -> Case:
    """`drawn` with `case`'s own numbers back."""
    inputs = list(drawn.inputs)
    for index in number_indices(case):
        inputs[index] = case.inputs[index]
    return drawn.model_copy(update={"inputs": inputs})


def _number(item: Any) -> bool | int | float | None:
    value = item.value if isinstance(item, LiteralInput) else item
    if isinstance(item, TensorInput) or not isinstance(value, (bool, int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _other(value: bool | int | float, generator: torch.Generator) -> bool | int | float:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return _pick(_other_ints(value), generator)
    if value == 0.0:
        return value
    if value == 1.0 or value == -1.0:
        return value * _pick([1.5, 2.0], generator)
    drawn = float(torch.rand((), generator=generator, dtype=torch.float64, device="cpu"))
    scale = 2.0 ** (2 * drawn - 1)
    magnitude = abs(value)
    # Above 1 its distance from 1 is scaled; below, a power keeps it in (0, 1).
    other = 1.0 + (magnitude - 1.0) * scale if magnitude > 1.0 else magnitude**scale
    return math.copysign(float(f"{other:.4g}"), value)


def _other_ints(value: int) -> list[int]:
    if value == 0:
        return [1]
    sign = 1 if value > 0 else -1
    nearby = {value + 1, value - 1, 2 * value}
    return sorted(other for other in nearby if other != value and other * sign > 0)


def _pick(options: Sequence[Any], generator: torch.Generator) -> Any:
    index = int(torch.randint(0, len(options), (1,), generator=generator, device="cpu"))
    return options[index]
