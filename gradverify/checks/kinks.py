"""Non-differentiable points (kinks): where central differences mean nothing.

ReLU at 0 or a clamp at its bounds is correct code whose central difference is 0.5 against
an analytical 0 or 1. At an entry where analytical and numerical disagree, we sample the
output along the perturbed coordinate at x-eps, x-eps/2, x, x+eps/2, x+eps. A smooth
function is fitted by a quadratic to rounding error; a kink inside [x-eps, x+eps] leaves a
residual in proportion to the change of slope (Chainer's `detect_nondifferentiable` does the
same). A jump between finite and non-finite values is a kink too. At a kink the analytical
value must lie between the one-sided slopes (any subgradient is fine); outside them it is
still wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

Evaluate = Callable[..., Sequence[torch.Tensor]]

# Offsets along the coordinate, in units of eps.
OFFSETS = (-1.0, -0.5, 0.0, 0.5, 1.0)
# A kink of slope change s leaves a quadratic-fit residual of about 0.07 * s * eps; a
# mismatch needs s > ~2 * tolerance. Flag from a third of that, well above rounding.
RESIDUAL_FRACTION = 0.05
ROUNDING = 1e-13


def _fit_projection() -> torch.Tensor:
    design = torch.tensor([[1.0, d, d * d] for d in OFFSETS], dtype=torch.float64)
    return design @ torch.linalg.pinv(design)  # maps samples to their quadratic fit


_FIT = _fit_projection()


@dataclass(frozen=True)
class Kink:
    """A mismatching Jacobian entry that sits at a non-differentiable point."""

    row: int
    column: int
    left: float  # one-sided slopes over [x-eps, x-eps/2] and [x+eps/2, x+eps]
    right: float
    analytical: float
    admitted: bool  # analytical lies between the one-sided slopes

    def describe(self) -> str:
        relation = "lies between them" if self.admitted else "lies outside them"
        return (
            f"left slope {self.left:.4g}, right slope {self.right:.4g}; "
            f"analytical {self.analytical:.4g} {relation}"
        )


def samples(
    evaluate: Evaluate, arguments: Sequence[Any], index: int, column: int, eps: float
) -> torch.Tensor:
    """Outputs (concatenated, flat) at the OFFSETS along one coordinate: [len(OFFSETS), rows]."""
    along = torch.zeros(arguments[index].numel(), dtype=arguments[index].dtype)
    along[column] = 1.0
    return samples_along(evaluate, arguments, index, along, eps)


def samples_along(
    evaluate: Evaluate, arguments: Sequence[Any], index: int, direction: torch.Tensor, eps: float
) -> torch.Tensor:
    """Outputs (concatenated, flat) at x + offset·eps·direction for each of the OFFSETS."""
    base = arguments[index].detach()
    step = direction.reshape(base.shape).to(base.dtype)
    rows = []
    for offset in OFFSETS:
        perturbed = list(arguments)
        perturbed[index] = base + (offset * eps) * step
        with torch.no_grad():
            outputs = evaluate(*perturbed)
        rows.append(torch.cat([o.detach().reshape(-1).to(torch.float64) for o in outputs]))
    return torch.stack(rows)


def nondifferentiable_rows(
    values: torch.Tensor, eps: float, tolerance: torch.Tensor
) -> torch.Tensor:
    """Per row (output element): does the coordinate cross a kink within eps? (bool [rows])"""
    finite = torch.isfinite(values)
    centre_finite = finite[OFFSETS.index(0.0)]
    finiteness_jump = centre_finite & ~finite.all(dim=0)
    safe = torch.where(finite, values, torch.zeros_like(values))
    residual = (safe - _FIT @ safe).abs().amax(dim=0)
    scale = safe.abs().amax(dim=0).clamp_min(1.0)
    threshold = torch.maximum(RESIDUAL_FRACTION * tolerance * eps, ROUNDING * scale)
    return finiteness_jump | (residual > threshold)


def find_kinks(
    evaluate: Evaluate,
    arguments: Sequence[Any],
    index: int,
    off: torch.Tensor,
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    eps: float,
    atol: float,
    rtol: float,
) -> list[Kink]:
    """The mismatching entries of argument `index`'s Jacobian block that sit at kinks."""
    kinks: list[Kink] = []
    for column in off.any(dim=0).nonzero().flatten().tolist():
        rows = off[:, column].nonzero().flatten()
        values = samples(evaluate, arguments, index, column, eps)
        tolerance = atol + rtol * numerical[:, column].abs().to(torch.float64)
        flagged = nondifferentiable_rows(values, eps, tolerance)
        for row in rows.tolist():
            if flagged[row]:
                value = float(analytical[row, column])
                kinks.append(kink_at(values, row, column, value, eps, atol, rtol))
    return kinks


def kink_at(
    values: torch.Tensor,
    row: int,
    column: int,
    analytical: float,
    eps: float,
    atol: float,
    rtol: float,
) -> Kink:
    """The Kink that `samples` show at (row, column), judged against `analytical`."""
    # The outer half-steps: their slopes stay those of each side even when x sits
    # exactly on a jump (sign(x) at 0), where (f(x) - f(x-eps))/eps would be the jump.
    half = eps * (OFFSETS[1] - OFFSETS[0])
    left = float((values[1, row] - values[0, row]) / half)
    right = float((values[-1, row] - values[-2, row]) / half)
    return Kink(row, column, left, right, analytical, _between(analytical, left, right, atol, rtol))


def _between(value: float, left: float, right: float, atol: float, rtol: float) -> bool:
    finite = [slope for slope in (left, right) if math.isfinite(slope)]
    if len(finite) < 2:  # a jump to or from non-finite values: no slope to hold it to
        return True
    low, high = min(finite), max(finite)
    slack = atol + rtol * max(abs(low), abs(high))
    return low - slack <= value <= high + slack


def excused_mask(kinks: Sequence[Kink], shape: torch.Size) -> torch.Tensor:
    """The entries a kink explains (analytical between the one-sided slopes)."""
    mask = torch.zeros(shape, dtype=torch.bool)
    for kink in kinks:
        if kink.admitted:
            mask[kink.row, kink.column] = True
    return mask


def hold_fixed(
    call: Callable[..., Any], arguments: Sequence[Any], held: dict[int, torch.Tensor]
) -> Callable[..., Any]:
    """`call` with the `held` elements (bool masks per argument) pinned to their values.

    Perturbing a pinned element changes nothing and its gradient is zero on both sides, so
    torch's checkers skip exactly the kinks while checking every other element as usual.
    """
    pinned = {index: arguments[index].detach().clone() for index in held}

    def wrapped(*values: Any) -> Any:
        values_list = list(values)
        for index, mask in held.items():
            values_list[index] = torch.where(mask, pinned[index], values_list[index])
        return call(*values_list)

    return wrapped


def kink_masks(
    kinks_by_argument: Mapping[int, Sequence[Kink]], arguments: Sequence[Any]
) -> dict[int, torch.Tensor]:
    """Bool masks, shaped like each argument, of the elements that sit at admitted kinks."""
    masks: dict[int, torch.Tensor] = {}
    for index, kinks in kinks_by_argument.items():
        columns = sorted({kink.column for kink in kinks if kink.admitted})
        if columns:
            mask = torch.zeros(arguments[index].numel(), dtype=torch.bool)
            mask[columns] = True
            masks[index] = mask.reshape(arguments[index].shape)
    return masks
