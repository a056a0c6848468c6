"""How far two backward runs' gradients lie apart, against what reordered sums explain.

Atomic adds on a GPU sum in whatever order the threads arrive, so two runs of a correct
backward differ in the last bits; a spread beyond that is random numbers in backward or a
race that loses a write. The `backward` check (checks/backward/nondeterminism.py) reports
it; inference (inference/random_backward.py) tells a backward that draws random numbers of
its own from one that is only reordered.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

# Units in the last place of the gradient's dtype, at the gradient's largest magnitude, that
# a reordered sum may move an entry by, times the square root of the terms summed into one
# entry on average (rounding errors in random order grow as a random walk); a lost write
# moves an entry by a whole term.
ROUNDING_ULPS = 64.0


@dataclass(frozen=True)
class Spread:
    """How far two runs' gradients of one argument lie apart, and where most."""

    index: int  # the argument
    worst: float  # the largest |first - again|
    flat: int  # the flat element where it is largest
    allowance: float  # what reordered sums can explain (ROUNDING_ULPS ulps of max |gradient|)

    @property
    def rounding(self) -> bool:
        """Apart by no more than reordered sums explain (atomics)."""
        return self.worst <= self.allowance


def spreads(
    first: Sequence[Any], again: Sequence[Any], output_elements: int | None = None
) -> list[Spread]:
    """The arguments whose gradients differ between two runs, each with its spread.
    `output_elements`: the differentiable outputs' elements, the terms an argument's gradient
    can sum (default: one per gradient entry)."""
    found = []
    for index, (one, two) in enumerate(zip(first, again, strict=False)):
        if not isinstance(one, torch.Tensor) or not isinstance(two, torch.Tensor):
            continue
        if one.shape != two.shape or not one.numel():
            continue
        wide = torch.complex128 if one.is_complex() or two.is_complex() else torch.float64
        one_wide, two_wide = one.detach().to(wide), two.detach().to(wide)
        difference = (one_wide - two_wide).abs().reshape(-1)
        worst = float(difference.max())
        if worst == 0.0:
            continue
        flat = int(torch.nan_to_num(difference, nan=float("inf")).argmax())
        terms = max(1.0, (output_elements or 0) / one.numel())
        allowance = _allowance(one, one_wide, two_wide) * math.sqrt(terms)
        found.append(Spread(index, worst, flat, allowance))
    return found


def _allowance(gradient: torch.Tensor, one: torch.Tensor, two: torch.Tensor) -> float:
    """ROUNDING_ULPS units in the last place of the gradient's dtype at its largest value."""
    dtype = gradient.dtype if gradient.is_floating_point() or gradient.is_complex() else None
    unit = torch.finfo(dtype).eps if dtype is not None else 0.0
    magnitudes = torch.cat([one.abs().reshape(-1), two.abs().reshape(-1)])
    finite = magnitudes[torch.isfinite(magnitudes)]
    scale = float(finite.max()) if finite.numel() else 0.0
    return ROUNDING_ULPS * unit * scale
