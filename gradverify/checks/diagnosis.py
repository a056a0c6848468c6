"""Name the likely cause of a gradient mismatch from the pattern of the errors.

Every hint says "likely" and carries its evidence: a diagnosis is a lead, not a verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import torch


def diagnose(
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    off: torch.Tensor,
    argument: torch.Tensor | None,
    argument_name: str,
    atol: float,
    rtol: float,
) -> str | None:
    """A plain-words hint for a mismatching Jacobian block [rows, argument elements]."""
    if not off.any() or analytical.is_complex() or numerical.is_complex():
        return None
    analytical = analytical.to(torch.float64)
    numerical = numerical.to(torch.float64)
    scale = float(numerical.abs().max().item())
    if scale <= atol:
        return (
            "the numerical gradient is zero here, but backward returns a nonzero gradient; if "
            "that is on purpose (a straight-through estimator), declare `gradient: surrogate`"
        )

    def close(x: torch.Tensor, y: torch.Tensor) -> bool:
        return bool(((x - y).abs() <= atol + rtol * y.abs()).all().item())

    if float(analytical.abs().max().item()) <= atol:
        return (
            f"backward returns zero for {argument_name} everywhere: likely its gradient is not "
            "returned (None), or is masked away"
        )
    if close(analytical, -numerical):
        return "the gradient has the opposite sign: likely a flipped sign in backward"
    factor = _constant_factor(analytical, numerical, atol)
    if factor is not None and close(analytical, factor * numerical):
        return _describe_factor(factor)
    if analytical.shape[0] == analytical.shape[1] and close(analytical, numerical.T):
        return (
            "the Jacobian is transposed: likely backward multiplies by a matrix where it should "
            "use its transpose (e.g. `grad @ w` instead of `grad @ w.T`)"
        )
    if _transposed_gradient(analytical, numerical, argument, close):
        return (
            f"the gradient of {argument_name} is transposed: likely a matrix product in the wrong "
            "order (e.g. `x.T @ grad` where `grad.T @ x` belongs)"
        )
    if _elementwise(analytical, numerical, atol):
        region = _region(off, argument, argument_name)
        if region is not None:
            return region
    zero_where_not = off & (analytical.abs() <= atol)
    if bool((zero_where_not == off).all().item()):
        return (
            f"backward returns zero at {int(off.sum())} entries where the gradient is not zero: "
            "likely a mask that is too wide or a missing term"
        )
    return None


def _constant_factor(
    analytical: torch.Tensor, numerical: torch.Tensor, atol: float
) -> float | None:
    significant = numerical.abs() > 10 * atol
    if not significant.any():
        return None
    ratios = analytical[significant] / numerical[significant]
    factor = float(ratios.median().item())
    if abs(factor - 1.0) < 1e-3 or abs(factor) < 1e-9:
        return None
    if bool(((ratios - factor).abs() <= 1e-3 * abs(factor)).all().item()):
        return factor
    return None


def _describe_factor(factor: float) -> str:
    sign = "and the opposite sign " if factor < 0 else ""
    magnitude = abs(factor)
    fraction = Fraction(magnitude).limit_denominator(64)
    exact = abs(float(fraction) - magnitude) <= 1e-3 * magnitude
    if exact and fraction.numerator == 1:
        n = fraction.denominator
        return (
            f"off by a constant factor 1/{n} {sign}(analytical = numerical / {n}): likely a "
            f"division by {n} too many, or a mean where a sum belongs"
        )
    if exact and fraction.denominator == 1:
        n = fraction.numerator
        return (
            f"off by a constant factor {n} {sign}(analytical = {n} × numerical): likely a missing "
            f"division by {n}, e.g. by the size of a reduced dimension"
        )
    return f"off by a constant factor {magnitude:.4g} {sign}(analytical = {factor:.4g} × numerical)"


def _transposed_gradient(
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    argument: torch.Tensor | None,
    close: Callable[[torch.Tensor, torch.Tensor], bool],
) -> bool:
    """Whether backward returned the transpose of a square matrix argument's gradient."""
    if argument is None or argument.dim() != 2 or argument.shape[0] != argument.shape[1]:
        return False
    size = argument.shape[0]
    transposed = torch.arange(size * size).reshape(size, size).T.reshape(-1)
    return close(analytical[:, transposed], numerical)


def _elementwise(analytical: torch.Tensor, numerical: torch.Tensor, atol: float) -> bool:
    """Whether output element i depends only on argument element i (a diagonal Jacobian)."""
    if analytical.shape[0] != analytical.shape[1]:
        return False
    off_diagonal = ~torch.eye(analytical.shape[0], dtype=torch.bool)
    return bool(
        (numerical[off_diagonal].abs() <= atol).all()
        and (analytical[off_diagonal].abs() <= atol).all()
    )


def _region(off: torch.Tensor, argument: torch.Tensor | None, name: str) -> str | None:
    """`wrong only where x > 1`, when the wrong elements are exactly those above (or below) a value."""
    if argument is None or argument.is_complex() or argument.numel() != off.shape[1]:
        return None
    values = argument.detach().reshape(-1).to(torch.float64)
    wrong = off.any(dim=0)
    if bool(wrong.all().item()):
        return None
    lowest_wrong, highest_wrong = values[wrong].min().item(), values[wrong].max().item()
    lowest_right, highest_right = values[~wrong].min().item(), values[~wrong].max().item()
    count = f"{int(wrong.sum())} of {wrong.numel()} elements"
    if lowest_wrong > highest_right:
        low, high, side = highest_right, lowest_wrong, ">"
    elif highest_wrong < lowest_right:
        low, high, side = highest_wrong, lowest_right, "<"
    else:
        return None
    return (
        f"wrong only where {name} {side} {_between(low, high)} ({count}; the cut-off lies "
        f"between {low:.4g} and {high:.4g}): likely a mask or branch for that region"
    )


def _between(low: float, high: float) -> str:
    """The shortest decimal t with low <= t < high."""
    for digits in range(0, 8):
        candidate = round((low + high) / 2, digits)
        if low <= candidate < high:
            return f"{candidate:g}"
    return f"{low:.6g}"
