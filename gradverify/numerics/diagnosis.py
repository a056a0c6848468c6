"""Name the likely cause of a gradient mismatch from the pattern of the errors.

Every hint says "likely" and carries its evidence: a diagnosis is a lead, not a verdict. A
pattern is named only when the errors show it plainly (every entry obeys it, well within the
tolerance, on enough entries); otherwise there is no hint. Patterns that an intended
surrogate gradient also makes (a reversed sign, clipping) say how to declare one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction

import torch

from gradverify.numerics.patterns import (
    EXPLAINED,
    MIN_ENTRIES,
    OutputShapes,
    flipped_outputs,
    grouped_factors,
    repeated_indices,
    wrong_axis,
)

# Hints only on this much evidence: entries a pattern is seen on, and how much better than
# the tolerance the pattern explains them.
PRECISE = 0.1  # a region's right side: errors at most this fraction of the tolerance
CLEARLY_WRONG = 10.0  # a region's wrong side: errors at least this many tolerances

SURROGATE = "declare `gradient: surrogate`"


def diagnose(
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    off: torch.Tensor,
    argument: torch.Tensor | None,
    argument_name: str,
    atol: float,
    rtol: float,
    linearity: Callable[[], bool | None] | None = None,
    excused: torch.Tensor | None = None,
    pairs: bool = False,
    numbers: Mapping[str, float] | None = None,
    outputs: OutputShapes = (),
    indices: Mapping[str, torch.Tensor] | None = None,
    per_element: bool = False,
    surrogate: bool = True,
) -> str | None:
    """A plain-words hint for a mismatching Jacobian block [rows, argument elements].

    `linearity`, when given, asks backward whether it is linear in grad_output (True, False,
    or None for unknown); it tells a wrong constant from a clipped gradient where the
    Jacobian alone cannot (see `checks/shared/linearity.py`). `excused` entries (kinks with a valid
    subgradient) are neither right nor wrong evidence. `pairs`: complex values seen as
    (real, imaginary) pairs (`complex_parts.py`), whose real Jacobian transposed is no
    transposed matrix in backward (that would want `.mH`): no transposition hints then.
    `numbers`: forward's number arguments by name; a constant factor equal to one of them
    (or its inverse) is named after it. `outputs`: (output index, shape) of the rows, in order,
    for hints per output and along axes; `indices`: forward's integer tensor arguments by name,
    for repeated indices (`numerics/patterns.py`). `per_element`: the block is one row, a
    gradient vᵀJ compared element by element (as `reference` compares), so a region of the
    argument's values can be read off it as off a diagonal Jacobian. `surrogate`: whether a
    pattern an intended surrogate also makes may advise declaring one; not where backward
    passed finite_difference on the case (its gradient is the derivative there).
    """
    if not off.any() or analytical.is_complex() or numerical.is_complex():
        return None
    analytical = analytical.to(torch.float64)
    numerical = numerical.to(torch.float64)
    scale = float(numerical.abs().max().item())
    if scale <= atol:
        if argument is not None and argument.numel() == 1:
            # One number with no effect on these outputs (a clip level above every input)
            # says nothing of a piecewise-constant forward: no surrogate suggested.
            return (
                f"the numerical gradient is zero here: on these inputs {argument_name} does not "
                "change the output, but backward returns a nonzero gradient for it; likely a "
                f"mask in {argument_name}'s gradient that keeps elements it does not affect"
            )
        return (
            "the numerical gradient is zero here, but backward returns a nonzero gradient"
            + _offer("if that is on purpose (a straight-through estimator)", surrogate)
        )

    def close(x: torch.Tensor, y: torch.Tensor) -> bool:
        return bool(((x - y).abs() <= atol + rtol * y.abs()).all().item())

    def linear() -> bool | None:
        return linearity() if linearity is not None else None

    if float(analytical.abs().max().item()) <= atol:
        return (
            f"backward returns zero for {argument_name} everywhere: likely its gradient is not "
            "returned (None), or is masked away"
        )
    if close(analytical, -numerical):
        return (
            "the gradient has the opposite sign everywhere: likely a flipped sign in backward"
            + _offer("if that is on purpose (a gradient-reversal layer)", surrogate)
        )
    structural = not pairs
    flipped = (
        flipped_outputs(analytical, numerical, off, outputs, atol, close) if structural else None
    )
    if flipped is not None:
        return flipped
    scaled = _scaled(analytical, numerical, off, atol, rtol, linear, numbers or {}, surrogate)
    if scaled is not None:
        return scaled
    square = analytical.shape[0] == analytical.shape[1]
    if not pairs and square and close(analytical, numerical.T):
        return (
            "the Jacobian is transposed: likely backward multiplies by a matrix where it should "
            "use its transpose (e.g. `grad @ w` instead of `grad @ w.T`)"
        )
    if not pairs and _transposed_gradient(analytical, numerical, argument, close):
        return (
            f"the gradient of {argument_name} is transposed: likely a matrix product in the wrong "
            "order (e.g. `x.T @ grad` where `grad.T @ x` belongs)"
        )
    if per_element or _elementwise(analytical, numerical, atol):
        region = _region(analytical, numerical, off, argument, argument_name, atol, rtol, excused)
        if region is not None:
            return region
    if structural:
        axis = wrong_axis(analytical, numerical, argument, outputs, numbers or {}, atol)
        repeated = repeated_indices(
            analytical, numerical, off, argument, argument_name, indices or {}, atol, close
        )
        if axis is not None or repeated is not None:
            return axis or repeated
        grouped = grouped_factors(analytical, numerical, off, atol, rtol)
        if grouped is not None:
            return grouped
    zero_where_not = off & (analytical.abs() <= atol)
    if bool((zero_where_not == off).all().item()):
        return (
            f"backward returns zero at {int(off.sum())} entries where the gradient is not zero: "
            "likely a mask that is too wide or a missing term"
        )
    if linear() is False:
        return (
            "backward is not linear in grad_output (scaled down, grad_output does not scale the "
            "gradient alike), as every derivative is: likely backward clips, normalizes or "
            "otherwise reshapes the gradient" + _offer("if that is on purpose", surrogate)
        )
    return None


def _scaled(
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    off: torch.Tensor,
    atol: float,
    rtol: float,
    linear: Callable[[], bool | None],
    numbers: Mapping[str, float],
    surrogate: bool,
) -> str | None:
    """A constant factor or a clip level, whichever the errors and backward's linearity show.

    When every entry has the same size, `analytical = numerical / 4` is also a clip at 0.25:
    then only backward's linearity in grad_output tells them apart.
    """
    factor = _constant_factor(analytical, numerical, off, atol, rtol)
    level = _clip_level(analytical, numerical, off, atol, rtol)
    if level is not None and factor is not None:
        verdict = linear()
        if verdict is None:
            return None  # either would be a guess
        return (
            _describe_factor(factor, numbers, surrogate)
            if verdict
            else _describe_clip(level, True, surrogate)
        )
    if level is not None and linear() is not True:
        return _describe_clip(level, linear() is False, surrogate)
    if factor is not None and linear() is not False:
        return _describe_factor(factor, numbers, surrogate)
    return None


def _tolerance(numerical: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    return atol + rtol * numerical.abs()


def _constant_factor(
    analytical: torch.Tensor, numerical: torch.Tensor, off: torch.Tensor, atol: float, rtol: float
) -> float | None:
    """f with analytical = f·numerical on every entry, seen on enough entries, else None."""
    significant = numerical.abs() > 10 * atol
    if int(significant.sum()) < MIN_ENTRIES or not bool(off[significant].all()):
        return None  # too few entries, or the factor is not visible wherever it should be
    ratios = analytical[significant] / numerical[significant]
    factor = float(ratios.median().item())
    if abs(factor - 1.0) < 1e-3 or abs(factor) < 1e-9:
        return None
    residual = (analytical - factor * numerical).abs()
    if bool((residual <= EXPLAINED * _tolerance(numerical, atol, rtol)).all().item()):
        return factor
    return None


def _clip_level(
    analytical: torch.Tensor, numerical: torch.Tensor, off: torch.Tensor, atol: float, rtol: float
) -> float | None:
    """c with analytical = sign(numerical)·min(|numerical|, c): right where the gradient is
    small, capped at c where it is larger; None unless enough entries show it."""
    if int(off.sum()) < 2:
        return None
    capped, wanted = analytical[off].abs(), numerical[off].abs()
    level = float(capped.median().item())
    if level <= 10 * atol:
        return None  # a zero is a mask, not a clip
    same_sign = bool((analytical[off] * numerical[off] > 0).all().item())
    at_level = bool(((capped - level).abs() <= EXPLAINED * (atol + rtol * level)).all().item())
    above = bool((wanted > level + atol + rtol * level).all().item())
    # The entries that are right must be those the cap leaves alone.
    below = bool((numerical[~off].abs() <= level + atol + rtol * level).all().item())
    return level if same_sign and at_level and above and below else None


def _describe_clip(level: float, nonlinear: bool, surrogate: bool) -> str:
    evidence = ", and backward is not linear in grad_output" if nonlinear else ""
    on_purpose = (
        f"if that is on purpose (gradient clipping), {SURROGATE}; else " if surrogate else ""
    )
    return (
        f"backward caps the gradient at {level:.4g} (analytical = numerical where |numerical| "
        f"<= {level:.4g}, ±{level:.4g} beyond{evidence}): {on_purpose}likely a clamp in "
        "backward that does not belong there"
    )


def _describe_factor(factor: float, numbers: Mapping[str, float], surrogate: bool) -> str:
    hint = _argument_factor(factor, numbers) or _factor_cause(factor)
    if factor < 0:
        hint += _offer(
            "if the reversed sign is on purpose (a gradient-reversal layer with λ = "
            f"{_fraction(abs(factor))})",
            surrogate,
        )
    return hint


def _offer(condition: str, surrogate: bool) -> str:
    """`; <condition>, declare `gradient: surrogate``, or nothing where no surrogate may be
    offered."""
    return f"; {condition}, {SURROGATE}" if surrogate else ""


def _argument_factor(factor: float, numbers: Mapping[str, float]) -> str | None:
    """The cause when the factor is a number argument of forward (or its inverse): a zero-config
    `scale` of 0.5 makes a forgotten `* scale` look like a division by 2 too many."""
    sign, minus = ("and the opposite sign ", "-") if factor < 0 else ("", "")
    magnitude = abs(factor)
    for name, value in numbers.items():
        if value == 0 or abs(abs(value) - 1) < 1e-3:
            continue  # no factor to forget
        if abs(magnitude * abs(value) - 1) <= 1e-3:
            return (
                f"off by a constant factor {_fraction(magnitude)} {sign}(analytical = "
                f"{minus}numerical / {name}, {name} = {value:g}): likely backward forgets to "
                f"multiply by {name}"
            )
        if abs(magnitude / abs(value) - 1) <= 1e-3:
            return (
                f"off by a constant factor {_fraction(magnitude)} {sign}(analytical = {minus}{name} "
                f"× numerical, {name} = {value:g}): likely backward multiplies by {name} where "
                "forward does not, or forgets to divide by it"
            )
    return None


def _factor_cause(factor: float) -> str:
    sign, minus = ("and the opposite sign ", "-") if factor < 0 else ("", "")
    magnitude = abs(factor)
    fraction = Fraction(magnitude).limit_denominator(64)
    exact = abs(float(fraction) - magnitude) <= 1e-3 * magnitude
    if exact and fraction.numerator == 1:
        n = fraction.denominator
        return (
            f"off by a constant factor 1/{n} {sign}(analytical = {minus}numerical / {n}): likely "
            f"a division by {n} too many, or a mean where a sum belongs"
        )
    if exact and fraction.denominator == 1:
        n = fraction.numerator
        return (
            f"off by a constant factor {n} {sign}(analytical = {minus}{n} × numerical): likely a "
            f"missing division by {n}, e.g. by the size of a reduced dimension"
        )
    return f"off by a constant factor {magnitude:.4g} {sign}(analytical = {factor:.4g} × numerical)"


def _fraction(value: float) -> str:
    fraction = Fraction(value).limit_denominator(64)
    exact = abs(float(fraction) - value) <= 1e-3 * value
    return str(fraction) if exact else f"{value:.4g}"


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
    transposed = (
        torch.arange(size * size, device=analytical.device).reshape(size, size).T.reshape(-1)
    )
    return close(analytical[:, transposed], numerical)


def _elementwise(analytical: torch.Tensor, numerical: torch.Tensor, atol: float) -> bool:
    """Whether output element i depends only on argument element i (a diagonal Jacobian)."""
    if analytical.shape[0] != analytical.shape[1]:
        return False
    off_diagonal = ~torch.eye(analytical.shape[0], dtype=torch.bool, device=numerical.device)
    return bool(
        (numerical[off_diagonal].abs() <= atol).all()
        and (analytical[off_diagonal].abs() <= atol).all()
    )


def _region(
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    off: torch.Tensor,
    argument: torch.Tensor | None,
    name: str,
    atol: float,
    rtol: float,
    excused: torch.Tensor | None = None,
) -> str | None:
    """`wrong only where x > 1`, when a cut separates wrong elements from right ones plainly.

    A mask or branch bug is right to the last digits on one side of a value and wrong by far
    on the other. Noise is wrong by a little everywhere, some of it under the tolerance by
    chance; a cut through noise is no evidence, so both sides need enough elements, the
    right ones errors well under the tolerance and the wrong ones errors far above it.
    """
    if argument is None or argument.is_complex() or argument.numel() != off.shape[1]:
        return None
    values = argument.detach().reshape(-1).to(torch.float64)
    wrong = off.any(dim=0)
    # Elements excused at a kink are evidence of neither side.
    at_kink = excused.any(dim=0) & ~wrong if excused is not None else torch.zeros_like(wrong)
    right = ~wrong & ~at_kink
    if int(wrong.sum()) < 2 or int(right.sum()) < 2:
        return None
    errors = ((analytical - numerical).abs() / _tolerance(numerical, atol, rtol)).amax(dim=0)
    if float(errors[right].max()) > PRECISE or float(errors[wrong].min()) < CLEARLY_WRONG:
        return None
    lowest_wrong, highest_wrong = values[wrong].min().item(), values[wrong].max().item()
    lowest_right, highest_right = values[right].min().item(), values[right].max().item()
    count = f"{int(wrong.sum())} of {wrong.numel()} elements"
    if lowest_wrong > highest_right:
        low, high, side = highest_right, lowest_wrong, ">"
    elif highest_wrong < lowest_right:
        low, high, side = highest_wrong, lowest_right, "<"
    else:
        return None
    cause = _wrong_side(analytical[:, wrong], numerical[:, wrong], atol, rtol)
    return (
        f"wrong only where {name} {side} {_between(low, high)} ({count}; the cut-off lies "
        f"between {low:.4g} and {high:.4g}){cause}"
    )


def _wrong_side(analytical: torch.Tensor, numerical: torch.Tensor, atol: float, rtol: float) -> str:
    """What the wrong side of a region shows: the opposite sign, zero, or neither."""
    allowed = _tolerance(numerical, atol, rtol)
    significant = numerical.abs() > allowed
    if bool(significant.any()) and bool(((analytical + numerical).abs() <= allowed).all()):
        return (
            ", with the opposite sign there (analytical = -numerical): likely a flipped sign "
            "in the branch for that region"
        )
    if bool((analytical.abs() <= atol).all()):
        return ", where backward gives 0: likely a mask or branch that drops that region"
    return ": likely a mask or branch for that region"


def _between(low: float, high: float) -> str:
    """The shortest decimal t with low <= t < high."""
    for digits in range(0, 8):
        candidate = round((low + high) / 2, digits)
        if low <= candidate < high:
            return f"{candidate + 0.0:g}"  # + 0.0: a cut-off rounded to -0.0 reads 0
    return f"{low:.6g}"


# Ops whose derivative is infinite at 0 (or NaN below it): inside `torch.where`, the branch
# not taken is still differentiated, and 0 × inf is NaN in double backward.
SINGULAR_AT_ZERO = frozenset({"sqrt", "rsqrt", "pow", "**", "log", "log2", "log10", "reciprocal"})


def nan_second_derivative(
    ops: frozenset[str], inside_where: bool, place: str, zeros: str = ""
) -> str:
    """The hint for a NaN (or infinite) second derivative where the first is finite, from the
    ops backward applies (`ops`: those of SINGULAR_AT_ZERO it calls; `place`: `backward (line
    41)`, say) and where the output is 0 (`zeros`: `3 of 8 elements`, a saved output such an
    op may be fed). Not `.detach()`: a non-finite value is no missing term."""
    named = ", ".join(f"`{op}`" for op in sorted(ops))
    at_zero = f"at 0 (the output is 0 at {zeros})" if zeros else "at 0"
    if ops and inside_where:
        return (
            f"the second derivative is NaN where the first is finite: likely {named} {at_zero} "
            f"or below inside `torch.where` in {place}. where picks the value but both branches "
            "are differentiated, and the unused branch's infinite derivative times 0 is NaN. "
            "The double-where trick: feed the op a safe value where it is not used, "
            "`safe = torch.where(mask, x, torch.ones_like(x))`, then "
            "`torch.where(mask, torch.sqrt(safe), 0)`"
        )
    if ops:
        return (
            f"the second derivative is NaN where the first is finite: likely {named} {at_zero} "
            f"in {place}, whose derivative is infinite there; keep its input away from 0 "
            "(`x.clamp_min(eps)`), or mask it with the double-where trick"
        )
    return (
        f"the second derivative is NaN or infinite where the first is finite: likely an op in "
        f"{place} whose derivative is infinite at these inputs (a division, sqrt or log at 0)"
    )
