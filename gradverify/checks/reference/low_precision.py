"""How the `reference` check compares one output or gradient with the reference.

float64 cases: element by element, |Function - reference| <= atol + rtol * |reference|.
Lower dtypes: the rule kernel authors use, against the float64 truth (the reference on
float64 copies of the arguments), with error = max |value - truth| over the elements:

    error(Function) <= k * error(reference) + floor_ulps * eps(dtype) * max(1, max |truth|)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from gradverify.checks.shared.case import dtype_name
from gradverify.numerics.compare import wide_dtype
from gradverify.numerics.jacobian import unravel


@dataclass(frozen=True)
class PrecisionLoss:
    """How one item compares, and where it is worst."""

    ok: bool
    element: tuple[int, ...]
    analytical: float  # the Function's value at the worst element
    numerical: float  # the reference's there (float64 cases) or the truth's (lower dtypes)
    max_abs_error: float
    max_rel_error: float | None
    mismatched: int  # elements out of tolerance (or, in lower dtypes, above the allowance)
    total: int
    off: torch.Tensor  # their mask
    flat: int = 0  # the worst element's position in the flattened tensor
    budget: str = ""  # lower dtypes: both errors and the allowance, in words
    allowed: float = 0.0  # lower dtypes: the allowance itself
    details: tuple[str, ...] = ()
    # The two values as the report writes them: both parts of a complex value ("1.5-2j"),
    # where `analytical` and `numerical` keep the real part.
    analytical_text: str = ""
    numerical_text: str = ""


def tolerance_finding(
    function: torch.Tensor, reference: torch.Tensor, atol: float, rtol: float
) -> PrecisionLoss:
    """Element-wise |Function - reference| <= atol + rtol * |reference|."""
    ours, theirs = _widen(function, reference)
    error = _abs_error(ours, theirs)
    # Where the reference is infinite or NaN only the identical value (error 0) passes.
    scale = torch.nan_to_num(theirs.abs(), nan=0.0, posinf=0.0)
    off = ~(error <= atol + rtol * scale)
    return _finding(ours, theirs, error, off, judged=torch.ones_like(off))


def budget_finding(
    function: torch.Tensor,
    reference: torch.Tensor,
    truth: torch.Tensor,
    dtype: torch.dtype,
    k: float,
    floor_ulps: float,
) -> PrecisionLoss:
    """max |Function - truth| <= k * max |reference - truth| + floor_ulps * eps * max(1, |truth|)."""
    ours, truth = _widen(function, truth)
    theirs, _ = _widen(reference, truth)
    errors, reference_errors = _abs_error(ours, truth), _abs_error(theirs, truth)
    # Where the reference itself overflows in this dtype it is no yardstick: not judged there.
    judged = torch.isfinite(reference_errors)
    error, reference_error = max_value(errors[judged]), max_value(reference_errors[judged])
    scale = max(1.0, max_value(truth.abs()[judged & truth.isfinite()]))
    floor = floor_ulps * torch.finfo(dtype).eps * scale
    allowed = k * reference_error + floor
    finding = _finding(ours, truth, errors, judged & ~(errors <= allowed), judged)
    flat = finding.flat
    theirs_text = shown(theirs.reshape(-1)[flat]) if ours.numel() else "0"
    at_worst = (
        f"at element {list(finding.element)}: Function {finding.analytical_text}, reference in "
        f"{dtype_name(dtype)} {theirs_text}, float64 truth {finding.numerical_text}"
    )
    budget = (
        f"Function's error {sci(error)}, reference's own {dtype_name(dtype)} error "
        f"{sci(reference_error)}, allowed {sci(allowed)} = {k:g} × {sci(reference_error)} + "
        f"floor {sci(floor)}"
    )
    if not judged.all():
        budget += f" ({int((~judged).sum())} element(s) not judged: the reference overflows there)"
    return dataclasses.replace(finding, budget=budget, details=(at_worst,), allowed=allowed)


def _widen(value: torch.Tensor, other: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both in float64, or complex128 when either is complex."""
    wide = wide_dtype(value, other)
    return value.detach().to(wide), other.detach().to(wide)


def _abs_error(value: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """|value - exact|: 0 where both are the same non-finite value, inf for any other NaN."""
    error = (value - exact).abs()
    same = (value == exact) | (value.isnan() & exact.isnan())
    error = torch.where(same, torch.zeros_like(error), error)
    return torch.where(error.isnan(), torch.full_like(error, float("inf")), error)


def _finding(
    ours: torch.Tensor,
    theirs: torch.Tensor,
    error: torch.Tensor,
    off: torch.Tensor,
    judged: torch.Tensor,
) -> PrecisionLoss:
    if error.numel() == 0:
        return PrecisionLoss(True, (), 0.0, 0.0, 0.0, None, 0, 0, off)  # nothing to show
    # The worst element among those off, or the worst judged one when none is.
    ranked = torch.where(off if off.any() else judged, error, torch.full_like(error, -1.0))
    flat = int(torch.argmax(ranked.reshape(-1)).item())
    relevant = off & (theirs.abs() > 0)
    return PrecisionLoss(
        ok=not bool(off.any()),
        element=unravel(flat, ours.shape),
        analytical=scalar(ours.reshape(-1)[flat]),
        numerical=scalar(theirs.reshape(-1)[flat]),
        max_abs_error=max_value(error[judged]),
        max_rel_error=max_value(error[relevant] / theirs.abs()[relevant])
        if relevant.any()
        else None,
        mismatched=int(off.sum().item()),
        total=error.numel(),
        off=off,
        flat=flat,
        analytical_text=shown(ours.reshape(-1)[flat]),
        numerical_text=shown(theirs.reshape(-1)[flat]),
    )


def max_value(values: torch.Tensor) -> float:
    return float(values.max().item()) if values.numel() else 0.0


def shown(value: torch.Tensor) -> str:
    """One element as a report writes it: `1.5`, or both parts of a complex one, `1.5-2j`."""
    if not value.is_complex():
        return f"{float(value.item()):.6g}"
    number = complex(value.item())
    return f"{number.real:.6g}{number.imag:+.6g}j"


def scalar(value: torch.Tensor) -> float:
    return float(value.real.item()) if value.is_complex() else float(value.item())


def sci(value: float) -> str:
    """3.1e-3 rather than 0.0031 or 3.10e-03."""
    if value == 0 or value != value or abs(value) == float("inf"):
        return f"{value:g}"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"
