"""Compare an analytical Jacobian block against a numerical one, element by element."""

from __future__ import annotations

from dataclasses import dataclass

import torch


def wide_dtype(*tensors: torch.Tensor) -> torch.dtype:
    """Where values are compared: float64, or complex128 when any of `tensors` is complex
    (never its real part alone)."""
    return torch.complex128 if any(t.is_complex() for t in tensors) else torch.float64


@dataclass(frozen=True)
class Comparison:
    """How far analytical is from numerical, and where it is worst."""

    mismatched: int  # entries outside atol + rtol * |numerical|
    total: int
    row: int  # of the worst entry (the largest absolute error among mismatches, or overall)
    column: int
    analytical: float
    numerical: float
    max_abs_error: float
    max_rel_error: float | None
    off: torch.Tensor  # bool mask of mismatching entries, the block's shape

    @property
    def ok(self) -> bool:
        return self.mismatched == 0


def compare(
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    atol: float,
    rtol: float,
    excused: torch.Tensor | None = None,
    magnitude: torch.Tensor | None = None,
) -> Comparison:
    """Entry-wise |a - n| <= atol + rtol * |n|, as torch.autograd.gradcheck judges.

    `excused` entries (e.g. explained by a kink) never count as off. `magnitude`, when given,
    is the |n| that rtol scales (for the parts of a complex entry, its modulus).
    """
    analytical = analytical.to(torch.float64) if not analytical.is_complex() else analytical
    numerical = numerical.to(analytical.dtype)
    error = (analytical - numerical).abs()
    error = torch.where(torch.isnan(error), torch.full_like(error, float("inf")), error)
    scale = numerical.abs() if magnitude is None else magnitude.to(error.dtype)
    # Written as "not within" so that a NaN on either side counts as off.
    off = ~(error <= atol + rtol * scale)
    if excused is not None:
        off = off & ~excused
    if error.numel() == 0:
        return Comparison(0, 0, 0, 0, 0.0, 0.0, 0.0, None, off)
    ranked = torch.where(off, error, torch.full_like(error, -1.0)) if off.any() else error
    flat = int(torch.argmax(ranked).item())
    row, column = divmod(flat, error.shape[1])
    # Relative error only where the numerical value is not ~0, where it would be meaningless.
    meaningful = numerical.abs() > atol
    relative = torch.where(
        meaningful, error / numerical.abs().clamp_min(1e-300), torch.zeros_like(error)
    )
    return Comparison(
        mismatched=int(off.sum().item()),
        total=error.numel(),
        row=row,
        column=column,
        analytical=_scalar(analytical[row, column]),
        numerical=_scalar(numerical[row, column]),
        max_abs_error=float(error.max().item()),
        max_rel_error=_max_relative(relative, meaningful, off),
        off=off,
    )


def _scalar(value: torch.Tensor) -> float:
    return float(value.real.item()) if value.is_complex() else float(value.item())


def _max_relative(
    relative: torch.Tensor, meaningful: torch.Tensor, off: torch.Tensor
) -> float | None:
    """The largest relative error among the entries that matter (the off ones, if any)."""
    considered = meaningful & off if off.any() else meaningful
    return float(relative[considered].max().item()) if considered.any() else None
