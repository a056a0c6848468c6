"""Kinks of an elementwise Function, every element at once, in a handful of forward calls.

When output element i depends on input element i alone (ReLU, clamp, LeakyReLU: a diagonal
Jacobian), moving every element by the same t moves each output along its own coordinate.
Sampling the outputs at x + t·1 for t in OFFSETS·eps (`sampling.py`) then shows, per
element, what sampling one coordinate at a time shows: whether a kink or a jump lies within
eps, its one-sided slopes, and the central difference full mode takes. Five forward calls,
O(n) work, whatever the number of kinks; group testing (`settle.py`, `randomized.py`) is
left for Functions that mix elements.

Elementwise-ness is measured, not assumed: forward moves a random half of the elements, and
every other output element must stay bit for bit where it was (twice, with other halves).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gradverify.numerics import seeded
from gradverify.numerics.kinks import Kink, kink_at, nondifferentiable_rows
from gradverify.numerics.noise import faint_rows, noise_rows
from gradverify.numerics.salts import Salt
from gradverify.numerics.sampling import (
    FIT,
    OFFSETS,
    RESIDUAL_FRACTION,
    ROUNDING,
    Evaluate,
    Line,
)

TRIALS = 2  # random halves moved to tell an elementwise forward
STEP = 1e-3  # how far they move, relative to 1 + |x|


@dataclass(frozen=True)
class DiagonalKinks:
    """The elements of one argument within eps of a kink or a jump (rounding noise left out)."""

    columns: torch.Tensor  # flat indices, ascending (int64)
    samples: torch.Tensor  # their outputs at OFFSETS·eps: [len(OFFSETS), len(columns)], float64
    faint: torch.Tensor  # no rougher than float32 rounding could leave (bool)
    noisy: bool  # the forward showed rounding noise elsewhere: faint roughness is left out
    eps: float

    @property
    def count(self) -> int:
        return int(self.columns.numel())

    @property
    def central(self) -> torch.Tensor:
        """Full mode's central difference at each column (its diagonal entry)."""
        return (self.samples[-1] - self.samples[0]) / (2 * self.eps * OFFSETS[-1])

    def admitted(self, analytical: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
        """Per column: does `analytical` lie between the one-sided slopes (as `Kink.admitted`)?"""
        half = self.eps * (OFFSETS[1] - OFFSETS[0])
        left = (self.samples[1] - self.samples[0]) / half
        right = (self.samples[-1] - self.samples[-2]) / half
        finite = torch.isfinite(left) & torch.isfinite(right)
        low, high = torch.minimum(left, right), torch.maximum(left, right)
        slack = atol + rtol * torch.maximum(low.abs(), high.abs())
        between = (low - slack <= analytical) & (analytical <= high + slack)
        return ~finite | between

    def kink(self, position: int, analytical: float, atol: float, rtol: float) -> Kink:
        """The Kink at the `position`-th column, judged against `analytical`."""
        column = int(self.columns[position])
        return kink_at(
            self.samples, position, column, analytical, self.eps, atol, rtol,
            bool(self.faint[position]),
        )  # fmt: skip


def _flat_outputs(evaluate: Evaluate, values: Sequence[Any]) -> list[torch.Tensor]:
    with torch.no_grad():
        return [output.detach() for output in evaluate(*values)]


def elementwise_output(
    evaluate: Evaluate, arguments: Sequence[Any], index: int
) -> torch.Tensor | None:
    """The one output at `arguments`, when it is shaped like arguments[index] and that has two
    elements or more; None where forward cannot be elementwise in that argument."""
    argument = arguments[index]
    if not isinstance(argument, torch.Tensor) or argument.numel() < 2:
        return None
    outputs = _flat_outputs(evaluate, arguments)
    if len(outputs) != 1 or outputs[0].shape != argument.shape:
        return None
    return outputs[0]


def is_elementwise(
    evaluate: Evaluate,
    arguments: Sequence[Any],
    index: int,
    base: torch.Tensor | None = None,
) -> bool:
    """Does each output element depend on the same element of arguments[index] alone?

    One output shaped like the argument, and moving a random half of the argument leaves
    every other output element exactly where it was. `base`: the outputs at `arguments`.
    """
    argument = arguments[index]
    if not isinstance(argument, torch.Tensor) or argument.numel() < 2:
        return False
    if base is None:
        base = elementwise_output(evaluate, arguments, index)
        if base is None:
            return False
    elif base.numel() != argument.numel():
        return False
    base = base.reshape(-1)
    flat = argument.detach().reshape(-1)
    generator = seeded.generator(Salt.DIAGONAL_PROBE)
    for _ in range(TRIALS):
        moved = seeded.uniform((flat.numel(),), generator, flat.device, torch.float32) < 0.5
        step = torch.where(moved, STEP * (1 + flat.abs()), torch.zeros_like(flat))
        perturbed = list(arguments)
        perturbed[index] = (flat + step).reshape(argument.shape)
        outputs = _flat_outputs(evaluate, perturbed)
        if len(outputs) != 1 or outputs[0].numel() != flat.numel():
            return False
        output = outputs[0].reshape(-1)
        same = (output == base) | (torch.isnan(output) & torch.isnan(base))
        if not bool((same | moved).all()):
            return False
    return True


def diagonal_kinks(
    evaluate: Evaluate,
    arguments: Sequence[Any],
    index: int,
    eps: float,
    atol: float,
    rtol: float,
    base: torch.Tensor | None = None,
) -> DiagonalKinks:
    """Every element of arguments[index] within eps of a kink or a jump, for an elementwise
    `evaluate` (see `is_elementwise`): ten forward calls, two more where roughness is as
    faint as rounding noise; five where no element is a candidate (a smooth Function), one
    fewer with `base`.

    The first five screen every element by the third differences of its samples, kept as
    two running sums (not five samples of n values each: 80 MB apiece at 10⁷); the next
    five take the samples again at the few candidates alone, for the full kink test.
    `base`: the outputs at `arguments` (the sample at offset 0), when the caller has them."""
    shifted = _shifted(evaluate, arguments, index)
    at_base = None if base is None else base.detach().reshape(-1).to(torch.float64)

    def line(t: float) -> torch.Tensor:
        return at_base if at_base is not None and not t else shifted(t)

    device = arguments[index].device
    third = [torch.zeros(0, dtype=torch.float64, device=device)] * 2
    finite: torch.Tensor | None = None
    for row, offset in enumerate(OFFSETS):
        values = line(offset * eps)
        for which, coefficients in enumerate(THIRD_DIFFERENCES):
            if coefficients[row]:
                term = values * coefficients[row]
                third[which] = term if not third[which].numel() else third[which].add_(term)
        finite = (
            torch.isfinite(values)
            if finite is None
            else finite.logical_and_(torch.isfinite(values))
        )
    assert finite is not None
    floor = 0.5 * max(RESIDUAL_FRACTION * atol * eps, ROUNDING) / _BOUND
    screened = (third[0].abs() > floor) | (third[1].abs() > floor) | ~finite
    candidates = screened.nonzero().flatten()
    del third, finite, screened
    if not candidates.numel():  # nothing to sample again: the same answer, five calls fewer
        nothing = torch.zeros(0, dtype=torch.bool, device=device)
        samples = torch.zeros(len(OFFSETS), 0, dtype=torch.float64, device=device)
        return DiagonalKinks(candidates, samples, nothing, False, eps)

    def at_candidates(t: float) -> torch.Tensor:
        return line(t)[candidates]

    chunk = torch.stack([at_candidates(offset * eps) for offset in OFFSETS])
    slope = (chunk[-1] - chunk[0]) / (2 * eps * OFFSETS[-1])
    tolerance = atol + rtol * torch.nan_to_num(slope.abs(), posinf=0.0)
    rough = nondifferentiable_rows(chunk, eps, tolerance)
    magnitude = arguments[index].detach().reshape(-1)[candidates].abs().to(torch.float64)
    faint = rough & faint_rows(chunk, eps, magnitude)
    noisy = _noisy(at_candidates, chunk, eps, faint, atol, rtol)
    near = rough & ~faint if noisy else rough
    return DiagonalKinks(candidates[near], chunk[:, near].clone(), faint[near], noisy, eps)


def _shifted(evaluate: Evaluate, arguments: Sequence[Any], index: int) -> Line:
    """t -> the flat float64 output at arguments[index] + t (every element moved by t)."""
    base = arguments[index].detach()

    def line(t: float) -> torch.Tensor:
        perturbed = list(arguments)
        perturbed[index] = base + t
        with torch.no_grad():
            (output,) = evaluate(*perturbed)
        return output.detach().reshape(-1).to(torch.float64)

    return line


# v0 - 3v1 + 3v2 - v3 and v1 - 3v2 + 3v3 - v4: zero on quadratics, so the fit residual is
# a linear function of them (`_third_difference_bound`).
THIRD_DIFFERENCES = ((1.0, -3.0, 3.0, -1.0, 0.0), (0.0, 1.0, -3.0, 3.0, -1.0))


def _third_difference_bound() -> float:
    """C such that the quadratic-fit residual of 5 samples is at most C·max|third difference|:
    the residual vanishes on quadratics, so it is a linear function of the two third
    differences (v0 - 3v1 + 3v2 - v3, v1 - 3v2 + 3v3 - v4)."""
    third = torch.tensor(THIRD_DIFFERENCES, dtype=torch.float64, device="cpu")
    # as `fit_residual` fits
    residual = torch.eye(len(OFFSETS), dtype=torch.float64, device="cpu") - FIT
    through = residual @ torch.linalg.pinv(third)
    return float(through.abs().sum(dim=1).max())


_BOUND = _third_difference_bound()


def _noisy(
    line: Line, values: torch.Tensor, eps: float, faint: torch.Tensor, atol: float, rtol: float
) -> bool:
    """Is the faint roughness rounding noise (a forward computing in float32)? Two forward
    calls, judged at the faint elements alone."""
    candidates = faint.nonzero().flatten()
    if not candidates.numel():
        return False

    def restricted(t: float) -> torch.Tensor:
        return line(t)[candidates]

    only = torch.ones(candidates.numel(), dtype=torch.bool, device=candidates.device)
    return bool(noise_rows(restricted, values[:, candidates], eps, only, atol, rtol).any())
