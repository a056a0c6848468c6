"""Directional derivatives in the working dtype: forward along x ± h·u, backward's vᵀJ on u,
and one direction's verdict from the measured error bound (`numerics/richardson.py`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gradverify.checks.shared.case import CaseContext
from gradverify.inputs import fresh_copies
from gradverify.numerics import seeded
from gradverify.numerics.richardson import (
    ROUNDING_ULPS,
    Estimate,
    Probe,
    Rung,
    estimate,
    rounding,
    spread,
)
from gradverify.numerics.salts import Salt
from gradverify.usercode import user_code

DIRECTIONS = 3  # random directions per argument
CLEAR = 10.0  # a discrepancy fails at this many measured error bounds
# One side of a nudged element: forward's outputs flattened, and the displacement made.
Side = tuple[torch.Tensor, float]


@dataclass(frozen=True)
class Line:
    """forward around the case's arguments, moving one of them: float64 outputs at x + shift."""

    evaluate: Callable[..., Sequence[torch.Tensor]]  # forward's differentiable outputs
    arguments: tuple[Any, ...]  # in the working dtype
    index: int

    def at(self, shift: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(the outputs flattened, in float64; the displacement the working dtype made of
        `shift`, in float64: x + shift rounds)."""
        base = self.arguments[self.index].detach()
        wide = base.to(torch.float64)
        moved = (wide + shift).to(base.dtype)
        copies = list(fresh_copies(self.arguments))  # a forward may write into its inputs
        copies[self.index] = moved.clone().requires_grad_(base.requires_grad)
        with torch.no_grad(), user_code("forward"):
            outputs = self.evaluate(*copies)
        flat = torch.cat([o.detach().reshape(-1).to(torch.float64) for o in outputs])
        return flat, moved.to(torch.float64) - wide

    def at_element(self, element: int, step: float) -> tuple[Side, Side]:
        """Forward with flat element `element` moved by +step and by -step alone: for each
        side, (the outputs flattened, the displacement the working dtype made there)."""
        argument = self.arguments[self.index]
        shift = torch.zeros(tuple(argument.shape), dtype=torch.float64, device=argument.device)
        shift.view(-1)[element] = step
        (plus, moved_plus), (minus, moved_minus) = self.at(shift), self.at(-shift)
        return (
            (plus, float(moved_plus.view(-1)[element])),
            (minus, float(moved_minus.view(-1)[element])),
        )


@dataclass(frozen=True)
class Direction:
    """One random direction u of one argument, output weights v, and backward's vᵀJ."""

    u: torch.Tensor  # float64, the argument's shape: ±1 per element (0 outside a subset)
    v: torch.Tensor  # float64, the outputs flattened, as backward saw them
    gradient: torch.Tensor  # vᵀJ from backward, float64, the argument's shape

    def restricted(self, mask: torch.Tensor) -> Direction:
        """The direction on the elements of `mask` only."""
        return Direction(torch.where(mask, self.u, torch.zeros_like(self.u)), self.v, self.gradient)


def draw_directions(
    context: CaseContext,
    arguments: tuple[Any, ...],
    wrt: Sequence[int],
    outputs: Sequence[torch.Tensor],
) -> dict[int, list[Direction]]:
    """DIRECTIONS random (u, v) per argument: one backward per v serves every argument."""
    generator = context.generator(Salt.OWN_PRECISION_DIRECTIONS)
    found: dict[int, list[Direction]] = {index: [] for index in wrt}
    sources = [arguments[index] for index in wrt]
    for _ in range(DIRECTIONS):
        weights = [seeded.normal(o.shape, generator, o.device).to(o.dtype) for o in outputs]
        with user_code("backward"):  # copies: a backward that writes into them changes v
            gradients = torch.autograd.grad(
                list(outputs), sources, [w.clone() for w in weights], retain_graph=True,
                allow_unused=True,
            )  # fmt: skip
        v = torch.cat([w.to(torch.float64).reshape(-1) for w in weights])
        for index, gradient in zip(wrt, gradients, strict=True):
            argument = arguments[index]
            u = seeded.signs(argument.shape, generator, argument.device)
            g = (
                torch.zeros_like(u)
                if gradient is None
                else gradient.detach().to(torch.float64).reshape(u.shape)
            )
            found[index].append(Direction(u, v, g))
    return found


def projection_probe(line: Line, direction: Direction, eps: float) -> Probe:
    """vᵀJu at step h: numerical from two forwards, analytical from backward's vᵀJ on the
    displacement the working dtype actually made (so rounding x ± h·u costs nothing)."""

    def probe(step: float) -> Rung:
        plus, moved_plus = line.at(step * direction.u)
        minus, moved_minus = line.at(-step * direction.u)
        displacement = moved_plus - moved_minus
        numerical = (direction.v * (plus - minus)).sum() / (2 * step)
        along = direction.gradient * displacement
        analytical = along.sum() / (2 * step)
        noise = rounding(eps, direction.v, plus, minus) + ROUNDING_ULPS * eps * spread(along)
        return Rung(step, numerical, analytical, numerical.new_tensor(noise / (2 * step)))

    return probe


@dataclass(frozen=True)
class Judged:
    """One direction's estimate, what it may differ by, and whether it fails."""

    direction: Direction
    estimate: Estimate | None
    allowed: float  # CLEAR × the measured bound, or the spec's rtol of the size if larger

    @property
    def error(self) -> float:
        return abs(float(self.estimate.discrepancy)) if self.estimate is not None else 0.0

    @property
    def fails(self) -> bool:
        return self.estimate is not None and self.error > self.allowed

    @property
    def margin(self) -> float:
        """error / allowed: above 1 fails."""
        return self.error / self.allowed if self.allowed > 0 else math.inf


def judge_direction(
    context: CaseContext, line: Line, direction: Direction, eps: float, steps: Sequence[float]
) -> Judged:
    """vᵀJu along one direction at the best of `steps`, judged against CLEAR × its bound."""
    found = estimate(projection_probe(line, direction, eps), steps)
    if found is None:
        return Judged(direction, None, math.inf)
    # the projection's size as entry errors within rtol could move it: INDEPENDENT·‖vᵀJ ⊙ u‖₂
    size = spread(direction.gradient * direction.u)
    allowed = max(CLEAR * float(found.bound), context.tolerance.rtol * size)
    return Judged(direction, found, allowed)
