"""A Function's outputs along a line through its inputs, and how far from smooth they are there.

Central differences assume the outputs are smooth within eps. We sample them at x + t·u for
t in OFFSETS·eps: a smooth function is fitted by a quadratic to rounding error, while a kink,
a jump or rounding noise leaves a residual (Chainer's `detect_nondifferentiable` does the
same). `kinks.py` and `noise.py` tell those apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

Evaluate = Callable[..., Sequence[torch.Tensor]]
Line = Callable[[float], torch.Tensor]  # t -> the flat float64 outputs at x + t·u

# Offsets along the line, in units of eps.
OFFSETS = (-1.0, -0.5, 0.0, 0.5, 1.0)
# A kink of slope change s leaves a quadratic-fit residual of about 0.07 * s * eps; a
# mismatch needs s > ~2 * tolerance. Flag from a third of that, well above rounding.
RESIDUAL_FRACTION = 0.05
ROUNDING = 1e-13


def _fit_projection() -> torch.Tensor:
    design = torch.tensor([[1.0, d, d * d] for d in OFFSETS], dtype=torch.float64, device="cpu")
    return design @ torch.linalg.pinv(design)  # maps samples to their quadratic fit


FIT = _fit_projection()  # samples -> their quadratic fit (also `diagonal.py`)


def line_through(
    evaluate: Evaluate, arguments: Sequence[Any], index: int, direction: torch.Tensor
) -> Line:
    """The outputs (concatenated, flat, float64) at arguments[index] + t·direction."""
    base = arguments[index].detach()
    step = direction.reshape(base.shape).to(device=base.device, dtype=base.dtype)

    def line(t: float) -> torch.Tensor:
        perturbed = list(arguments)
        perturbed[index] = base + t * step
        with torch.no_grad():
            outputs = evaluate(*perturbed)
        # No floating output (forward returns None, or mutates an argument in place): no rows.
        flat = [o.detach().reshape(-1).to(torch.float64) for o in outputs]
        return torch.cat(flat) if flat else base.new_zeros(0, dtype=torch.float64)

    return line


def sample(line: Line, eps: float, centre: float = 0.0) -> torch.Tensor:
    """The line's outputs at centre + offset·eps for each of the OFFSETS: [len(OFFSETS), rows]."""
    return torch.stack([line(centre + offset * eps) for offset in OFFSETS])


def fit_residual(values: torch.Tensor) -> torch.Tensor:
    """Per row, the largest distance of the samples from their quadratic fit (non-finite: 0)."""
    safe = torch.where(torch.isfinite(values), values, torch.zeros_like(values))
    # Written as weighted sums rather than `FIT @ safe`: a [5, 5] @ [5, rows] product goes to
    # BLAS, whose threads cost ~40 ms a call when the cores are busy (pytest -n 2, a worker
    # pool); these are elementwise and take microseconds.
    residual = safe.new_zeros(safe.shape[1:])
    weights = FIT.tolist()
    for row, sample in zip(weights, safe, strict=True):
        fitted = sum((weight * other for weight, other in zip(row, safe, strict=True)))
        residual = torch.maximum(residual, (sample - fitted).abs())
    return residual


def rough_rows(values: torch.Tensor, eps: float, tolerance: torch.Tensor) -> torch.Tensor:
    """Per row: are the samples further from smooth than float64 rounding allows? (bool)"""
    safe = torch.where(torch.isfinite(values), values, torch.zeros_like(values))
    scale = safe.abs().amax(dim=0).clamp_min(1.0)
    threshold = torch.maximum(RESIDUAL_FRACTION * tolerance * eps, ROUNDING * scale)
    return fit_residual(values) > threshold
