"""Kinks in a float32 column check: where a column is off, the one-sided slopes at its step
tell a non-differentiable point (backward's value between them is a valid subgradient, as
`numerics/kinks.py` rules in float64) from a wrong gradient."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from gradverify.checks.finite_difference.directions import CLEAR, Line


def at_kinks(
    line: Line,
    analytical: torch.Tensor,
    off: torch.Tensor,
    bound: torch.Tensor,
    steps: Mapping[int, float],
) -> tuple[torch.Tensor, dict[int, tuple[float, float]]]:
    """The off entries [rows, elements] that sit at a kink with backward's value between the
    one-sided slopes, and (left, right) slopes of each such column's first excused entry.
    Three forwards per column off."""
    argument = line.arguments[line.index]
    excused = torch.zeros_like(off)
    slopes: dict[int, tuple[float, float]] = {}
    columns = off.any(dim=0).nonzero().reshape(-1).tolist()
    if not columns:
        return excused, slopes
    base, _ = line.at(
        torch.zeros(tuple(argument.shape), dtype=torch.float64, device=argument.device)
    )
    for column in columns:
        (plus, moved_plus), (minus, moved_minus) = line.at_element(column, steps[column])
        right = (plus - base) / moved_plus
        left = (base - minus) / -moved_minus
        allowed = CLEAR * bound[:, column]
        low = torch.minimum(left, right) - allowed
        high = torch.maximum(left, right) + allowed
        kink = (left - right).abs() > allowed
        value = analytical[:, column]
        excused[:, column] = off[:, column] & kink & (value >= low) & (value <= high)
        rows = excused[:, column].nonzero().reshape(-1).tolist()
        if rows:
            slopes[column] = (float(left[rows[0]]), float(right[rows[0]]))
    return excused, slopes
