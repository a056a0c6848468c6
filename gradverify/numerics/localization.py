"""What the localizer (localizer.py) works on and what it finds: the problem, one Jacobian
entry group testing led to, and the examination of one argument's block."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from gradverify.numerics.complex_parts import NO_PARTS, Parts
from gradverify.numerics.jacobian import OutputLayout
from gradverify.numerics.kinks import Evaluate, Kink


@dataclass(frozen=True)
class Problem:
    """A function of `values` whose Jacobian blocks w.r.t. values[p], p in `positions`, are
    checked; `outputs` are its outputs at `values`, with their graph."""

    evaluate: Evaluate
    values: tuple[Any, ...]
    positions: tuple[int, ...]
    outputs: tuple[torch.Tensor, ...]
    layout: OutputLayout
    eps: float
    atol: float
    rtol: float
    phase: str = "backward"
    samples: int = 1  # backward runs averaged per projection (a stochastic estimator)
    # Complex values seen as (real, imaginary) pairs: the problem itself is real throughout.
    parts: Parts = NO_PARTS


@dataclass(frozen=True)
class Entry:
    """One Jacobian entry group testing led to, judged by the full-mode rule."""

    position: int
    row: int  # among the concatenated outputs
    column: int  # flat index into values[position]
    analytical: float
    numerical: float
    off: bool  # outside atol + rtol·|numerical|
    kink: Kink | None = None  # set when an off entry sits at a non-differentiable point
    noise: bool = False  # off by rounding noise (a forward computing in float32), see noise.py
    faint: bool = False  # off by no more than rounding noise could make it

    @property
    def excused(self) -> bool:
        return self.off and self.kink is not None and self.kink.admitted

    @property
    def wrong(self) -> bool:
        return self.off and not self.excused

    @property
    def error(self) -> float:
        difference = abs(self.analytical - self.numerical)
        return math.inf if math.isnan(difference) else difference


@dataclass
class Examination:
    """What the projections and group tests found in one argument's Jacobian block."""

    position: int
    wrong: list[Entry] = field(default_factory=list)
    excused: list[Entry] = field(default_factory=list)  # at kinks, with a valid subgradient
    spread: list[tuple[float, float]] = field(default_factory=list)  # (discrepancy, threshold)
    projected: list[tuple[float, float]] = field(default_factory=list)  # (analytical, numerical)
    exhausted: bool = False  # MAX_SEARCHES ran out with projections still off
    forward_calls: int = 0
    backward_calls: int = 0
    # flat indices of every element found within eps of a kink where backward gives a valid
    # subgradient, off or not (an elementwise Function): held fixed when torch runs again
    near: torch.Tensor = field(
        default_factory=lambda: torch.zeros(0, dtype=torch.long, device="cpu")
    )
    unlisted_excused: int = 0  # excused entries beyond LISTED, counted only
    unlisted_wrong: int = 0

    @property
    def excused_count(self) -> int:
        return len(self.excused) + self.unlisted_excused

    @property
    def wrong_count(self) -> int:
        return len(self.wrong) + self.unlisted_wrong

    @property
    def worst(self) -> Entry:
        return max(self.wrong, key=lambda entry: entry.error)
