"""Non-differentiable points (kinks): where central differences mean nothing.

ReLU at 0 or a clamp at its bounds is correct code whose central difference is 0.5 against
an analytical 0 or 1. At an entry where analytical and numerical disagree, we sample the
output along the perturbed coordinate at x-eps, x-eps/2, x, x+eps/2, x+eps (`sampling.py`):
a kink inside [x-eps, x+eps] leaves a quadratic-fit residual in proportion to the change of
slope. A jump between finite and non-finite values is a kink too, and so is a jump of the
value (a step): its one-sided slopes hold on either side, while the central difference is
the jump over 2·eps. At a kink the analytical value must lie between the one-sided slopes
(any subgradient is fine); outside them it is still wrong.

Rounding noise (a forward computing in float32) leaves a residual as well; `noise.py` tells
it apart, and such entries are lost precision, never excused.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gradverify.numerics.noise import faint_rows, noise_rows, reach
from gradverify.numerics.sampling import (
    OFFSETS,
    Evaluate,
    line_through,
    rough_rows,
    sample,
)


@dataclass(frozen=True)
class Kink:
    """A mismatching Jacobian entry that sits at a non-differentiable point."""

    row: int
    column: int
    left: float  # one-sided slopes over [x-eps, x-eps/2] and [x+eps/2, x+eps]
    right: float
    analytical: float
    admitted: bool  # analytical lies between the one-sided slopes
    jump: float = 0.0  # the change of value the slopes leave unexplained (0: a kink, no jump)
    central: float = 0.0  # the central difference (f(x+eps) - f(x-eps)) / 2eps there
    faint: bool = False  # no rougher than float32 rounding: noise, in a function that has noise
    # admitted as a transition sharper than eps: a jump that analytical climbs more steeply
    # than the central difference across it (the gradient of |z| next to z = 0)
    steep: bool = False

    @property
    def kind(self) -> str:
        """What sits here, with the everyday example."""
        return "a jump (as a step at 0)" if self.jump else "a kink (as ReLU at 0)"

    def describe(self) -> str:
        """The one-sided slopes, and for a jump why the central difference is so large."""
        slopes = f"left slope {self.left:.4g}, right slope {self.right:.4g}"
        relation = "lies between them" if self.admitted else "lies outside them"
        if self.jump == 0.0:
            return f"{slopes}; analytical {self.analytical:.4g} {relation}"
        if self.steep:
            return (
                f"a jump of {self.jump:.4g} here ({slopes}), a transition sharper than eps: "
                f"analytical {self.analytical:.4g} is steeper than the central difference across "
                f"it, jump / (2·eps) = {self.central:.4g}, which cannot resolve it"
            )
        return (
            f"a jump of {self.jump:.4g} here ({slopes}): the central difference across it, "
            f"jump / (2·eps) = {self.central:.4g}, means nothing; analytical "
            f"{self.analytical:.4g} {relation.replace('them', 'the slopes')}"
        )


@dataclass(frozen=True)
class Roughness:
    """What sampling found at the mismatching entries of one Jacobian block."""

    kinks: tuple[Kink, ...]
    noise: tuple[tuple[int, int], ...] = ()  # (row, column): off by rounding noise (noise.py)


def samples(
    evaluate: Evaluate, arguments: Sequence[Any], index: int, column: int, eps: float
) -> torch.Tensor:
    """Outputs (concatenated, flat) at the OFFSETS along one coordinate: [len(OFFSETS), rows]."""
    return samples_along(evaluate, arguments, index, _one_hot(arguments[index], column), eps)


def samples_along(
    evaluate: Evaluate, arguments: Sequence[Any], index: int, direction: torch.Tensor, eps: float
) -> torch.Tensor:
    """Outputs (concatenated, flat) at x + offset·eps·direction for each of the OFFSETS."""
    return sample(line_through(evaluate, arguments, index, direction), eps)


def _one_hot(argument: torch.Tensor, column: int) -> torch.Tensor:
    along = argument.new_zeros(argument.numel())
    along[column] = 1.0
    return along


def nondifferentiable_rows(
    values: torch.Tensor, eps: float, tolerance: torch.Tensor
) -> torch.Tensor:
    """Per row (output element): does the coordinate cross a kink within eps? (bool [rows])

    Rounding noise crosses this test too; `noise.noise_rows` tells it apart.
    """
    finite = torch.isfinite(values)
    centre_finite = finite[OFFSETS.index(0.0)]
    finiteness_jump = centre_finite & ~finite.all(dim=0)
    return finiteness_jump | rough_rows(values, eps, tolerance)


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
) -> Roughness:
    """The mismatching entries of argument `index`'s Jacobian block that sit at kinks, and
    those that are off by rounding noise instead."""
    kinks: list[Kink] = []
    noise: list[tuple[int, int]] = []
    quiet: list[tuple[int, int]] = []  # smooth-looking, but off by no more than noise could be
    flat = arguments[index].detach().reshape(-1)
    for column in off.any(dim=0).nonzero().flatten().tolist():
        rows = off[:, column].nonzero().flatten()
        line = line_through(evaluate, arguments, index, _one_hot(arguments[index], column))
        values = sample(line, eps)
        tolerance = atol + rtol * numerical[:, column].abs().to(torch.float64)
        flagged = nondifferentiable_rows(values, eps, tolerance)
        wanted = torch.zeros_like(flagged)
        wanted[rows] = True
        x_scale = abs(float(flat[column]))
        faint = flagged & wanted & faint_rows(values, eps, x_scale)
        # Once noise is seen, faint roughness is more of it (see noise.py).
        noisy = faint if noise else noise_rows(line, values, eps, faint, atol, rtol)
        error = (analytical[:, column] - numerical[:, column]).abs().to(torch.float64)
        small = error <= reach(values, eps, x_scale) / eps
        for row in rows.tolist():
            if noisy[row]:
                noise.append((row, column))
            elif flagged[row]:
                value = float(analytical[row, column])
                kink = kink_at(values, row, column, value, eps, atol, rtol, bool(faint[row]))
                kinks.append(kink)
            elif small[row]:
                quiet.append((row, column))
    return with_noise(kinks, noise, quiet)


def with_noise(
    kinks: Sequence[Kink], noise: Sequence[tuple[int, int]], quiet: Sequence[tuple[int, int]] = ()
) -> Roughness:
    """Kinks and noise of one block. Where there is noise, faint kinks count as noise too, and
    so do entries that looked smooth but are off by no more than noise could make them."""
    if not noise:
        return Roughness(tuple(kinks))
    faint = [(kink.row, kink.column) for kink in kinks if kink.faint]
    return Roughness(tuple(k for k in kinks if not k.faint), (*noise, *faint, *quiet))


def kink_at(
    values: torch.Tensor,
    row: int,
    column: int,
    analytical: float,
    eps: float,
    atol: float,
    rtol: float,
    faint: bool = False,
) -> Kink:
    """The Kink that `samples` show at (row, column), judged against `analytical`."""
    # The outer half-steps: their slopes stay those of each side even when x sits
    # exactly on a jump (sign(x) at 0), where (f(x) - f(x-eps))/eps would be the jump.
    half = eps * (OFFSETS[1] - OFFSETS[0])
    left = float((values[1, row] - values[0, row]) / half)
    right = float((values[-1, row] - values[-2, row]) / half)
    central = float((values[-1, row] - values[0, row]) / (2 * eps * OFFSETS[-1]))
    # A kink between the slopes leaves the central difference between them; beyond them, the
    # rest is a jump of the value, which central differences turn into jump / (2·eps).
    jump = 0.0
    finite = all(map(math.isfinite, (left, right, central)))
    if finite and not _between(central, left, right, atol, rtol):
        jump = 2 * eps * OFFSETS[-1] * (central - (left + right) / 2)
    admitted = _between(analytical, left, right, atol, rtol)
    # A value that changes within eps by a jump may do so smoothly (|z| near 0, a steep
    # sigmoid): its derivative there has the jump's sign and at least its central slope.
    steep = not admitted and jump != 0.0 and _steeper(analytical, central, jump, atol, rtol)
    return Kink(
        row, column, left, right, analytical, admitted or steep, jump, central, faint, steep
    )


def _steeper(analytical: float, central: float, jump: float, atol: float, rtol: float) -> bool:
    """Whether `analytical` climbs the jump at least as steeply as the central difference."""
    if not (math.isfinite(analytical) and math.isfinite(central)) or analytical * jump <= 0:
        return False
    return abs(analytical) >= abs(central) - (atol + rtol * abs(central))


def _between(value: float, left: float, right: float, atol: float, rtol: float) -> bool:
    finite = [slope for slope in (left, right) if math.isfinite(slope)]
    if len(finite) < 2:  # a jump to or from non-finite values: no slope to hold it to
        return True
    low, high = min(finite), max(finite)
    slack = atol + rtol * max(abs(low), abs(high))
    return low - slack <= value <= high + slack


def excused_mask(kinks: Sequence[Kink], like: torch.Tensor) -> torch.Tensor:
    """The entries a kink explains (analytical between the one-sided slopes), as a bool mask
    shaped and placed like the Jacobian `like`."""
    mask = torch.zeros(like.shape, dtype=torch.bool, device=like.device)
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
            argument = arguments[index]
            mask = torch.zeros(argument.numel(), dtype=torch.bool, device=argument.device)
            mask[columns] = True
            masks[index] = mask.reshape(arguments[index].shape)
    return masks
