"""Central differences in a kernel's own precision, with an error bound measured, not assumed.

In float64 one step (eps = 1e-6) serves every smooth function. In float32 no step does: the
truncation error of (f(x+h) - f(x-h)) / 2h falls as h², the rounding error of the two
forwards grows as eps32·|f| / h, and both depend on the function. So the difference is taken
at a ladder of steps h_k = h_0 / 2^k, and at each step the error is measured:

- truncation, by step halving (Richardson): a smooth function's error c·h² changes by 3c·h²
  from h to h/2, so the change between neighbouring steps bounds it;
- rounding, from the values themselves: eps·Σ|v|·|f| / h for the two forwards, and the
  same for backward's side; noise beyond that (float32 intermediates, accumulations) shows as
  a spread between the steps, which the bound takes in.

What is compared at each step is the discrepancy E_k = numerical - analytical. For a correct
Function it is truncation plus rounding, so it changes from step to step and shrinks to the
floor of the bound at the best step; for a wrong one it stays at the size of the bug, steady
across the steps, far above the bound. The step kept is the one whose bound is smallest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from gradverify.usercode import UserCodeError

# Units of the working dtype's eps that one value's rounding may reach: the output's own
# rounding is half of one, a few float32 intermediates add the rest.
ROUNDING_ULPS = 4.0
# Standard deviations of a sum of independent roundings the bound allows.
INDEPENDENT = 4.0
# The ladder: the first step is 2^-FIRST times the input's scale, each next one half of it.
FIRST, LADDER = 2, 22


@dataclass(frozen=True)
class Rung:
    """One step of the ladder: the numerical and analytical values, and their rounding."""

    step: float
    numerical: torch.Tensor
    analytical: torch.Tensor
    rounding: torch.Tensor  # how far rounding in the working dtype could move the discrepancy

    @property
    def discrepancy(self) -> torch.Tensor:
        return self.numerical - self.analytical


@dataclass(frozen=True)
class Estimate:
    """The rung kept and the measured error bound of its discrepancy (per entry)."""

    rung: Rung
    bound: torch.Tensor  # truncation (spread to the neighbouring steps) + rounding
    truncation: torch.Tensor

    @property
    def step(self) -> float:
        return self.rung.step

    @property
    def discrepancy(self) -> torch.Tensor:
        return self.rung.discrepancy


Probe = Callable[[float], Rung]


def ladder(scale: float, first: int = FIRST, count: int = LADDER) -> list[float]:
    """Steps scale·2^-first, scale·2^-(first+1), ... (count of them)."""
    return [scale * 2.0 ** -(first + k) for k in range(count)]


def around(step: float, count: int = 2) -> list[float]:
    """The ladder `count` rungs either side of `step`: step·2^count down to step·2^-count."""
    return [step * 2.0 ** (count - k) for k in range(2 * count + 1)]


def estimate(probe: Probe, steps: Sequence[float]) -> Estimate | None:
    """The rung with the smallest measured bound among `steps` (largest first), or None when
    fewer than three neighbouring steps gave finite values. A step at which forward raises
    (an input pushed out of its domain) counts as not finite; if every step raises, so does
    this. The ladder stops once a rung's rounding alone is twice the best bound: rounding
    only grows (as 1/h) down the ladder, so no later rung can do better."""
    rungs: list[Rung | None] = []
    error: UserCodeError | None = None
    best: Estimate | None = None
    for step in steps:
        try:
            rung = probe(step)
        except UserCodeError as raised:
            error, rung = raised, None
        finite = rung is not None and bool(torch.isfinite(rung.discrepancy).all())
        rungs.append(rung if finite else None)
        found = _bound_at(rungs, len(rungs) - 2)
        if found is not None and (best is None or _total(found.bound) < _total(best.bound)):
            best = found
        if _past_best(rungs[-1], best):
            break
    if error is not None and all(rung is None for rung in rungs):
        raise error
    return best


def _bound_at(rungs: Sequence[Rung | None], k: int) -> Estimate | None:
    """The estimate at rung k from its neighbours, or None where one is missing."""
    if k < 1:
        return None
    before, rung, after = rungs[k - 1], rungs[k], rungs[k + 1]
    if before is None or rung is None or after is None:
        return None
    here = rung.discrepancy
    larger, smaller = (before.discrepancy - here).abs(), (here - after.discrepancy).abs()
    # Step halving bounds the truncation only where it shrinks as the step does (as h²: by
    # 4 per halving), or is lost in rounding. Steps too large for that (a logsumexp at
    # 1000, linear far out) change the discrepancy little from step to step while it is
    # still far from 0: steady, like a bug's, and no measure of the error at all.
    noise = 2 * _total(rung.rounding)
    if _total(larger) < 2 * _total(smaller) and max(_total(larger), _total(smaller)) > noise:
        return None
    truncation = torch.maximum(larger, smaller)
    return Estimate(rung, truncation + rung.rounding, truncation)


def _past_best(rung: Rung | None, best: Estimate | None) -> bool:
    """Whether `rung`'s rounding alone is twice `best`'s whole bound."""
    if rung is None or best is None:
        return False
    return _total(rung.rounding) > 2 * _total(best.bound)


def _total(values: torch.Tensor) -> float:
    return float(values.sum())


def rounding(eps: float, weights: torch.Tensor, plus: torch.Tensor, minus: torch.Tensor) -> float:
    """How far rounding of the two forwards' values (each to ROUNDING_ULPS·eps of itself)
    could move vᵀ(f₊ - f₋), before dividing by the step. An output the step left bitwise
    the same adds nothing: a sum over a million untouched outputs would bury a bug."""
    moved = plus != minus
    size = torch.where(moved, plus.abs() + minus.abs(), torch.zeros_like(plus)).to(weights.dtype)
    return ROUNDING_ULPS * eps * spread(weights * size)


def spread(terms: torch.Tensor) -> float:
    """How far independent roundings of `terms` (each its own size at most) may add up:
    their root sum of squares, times INDEPENDENT. Roundings of different values do not line
    up, so they grow as √n, not n; a sum of n bounds would hide a wrong element among many."""
    return INDEPENDENT * float(terms.to(torch.float64).pow(2).sum().sqrt())


def step_words(step: float) -> str:
    """`2^-7` for a power of two, else `1.5e-3`."""
    exponent = math.log2(step)
    return f"2^{round(exponent)}" if exponent == round(exponent) else f"{step:.2g}"
