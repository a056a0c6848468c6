"""Where a float32 directional check failed: the element, and the likely cause.

Up to FULL_ELEMENTS elements, every element's Jacobian column is differenced on the ladder
around the failing step (each with its measured bound) and compared with backward's full
Jacobian, so the pattern can be read as in float64 (`numerics/diagnosis.py`: sign, region,
factor, transpose). Beyond that, the failing direction's support is halved while a half still
fails on its own (group testing, as `numerics/localizer.py` does in float64), down to one
element.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from gradverify.checks.finite_difference.directions import CLEAR, Judged, Line, judge_direction
from gradverify.checks.finite_difference.one_sided import at_kinks
from gradverify.checks.shared.case import CaseContext, dtype_name
from gradverify.checks.shared.modes import entry_hint
from gradverify.numerics.diagnosis import diagnose
from gradverify.numerics.jacobian import analytical_jacobians, element_words, unravel
from gradverify.numerics.localization import Entry
from gradverify.numerics.maps import full_jacobian_map, located_map
from gradverify.numerics.richardson import (
    ROUNDING_ULPS,
    Probe,
    Rung,
    around,
    estimate,
    step_words,
)
from gradverify.results import Result, Status

FULL_ELEMENTS = 256  # columns differenced one by one up to this many elements (~10 forwards each)
MAX_ROWS = 1024  # and backward's full Jacobian up to this many output elements (one run each)


def failure(
    context: CaseContext,
    check: str,
    line: Line,
    worst: Judged,
    outputs: Sequence[torch.Tensor],
    notes: tuple[str, ...],
) -> Result:
    """The failure of one argument, localized to an element where it can be."""
    argument = line.arguments[line.index]
    rows = sum(o.numel() for o in outputs)
    if argument.numel() <= FULL_ELEMENTS and rows <= MAX_ROWS:
        found = _by_columns(context, check, line, worst, outputs, notes)
        if found is not None:
            return found
    return _by_halving(context, check, line, worst, notes)


def _by_columns(
    context: CaseContext,
    check: str,
    line: Line,
    worst: Judged,
    outputs: Sequence[torch.Tensor],
    notes: tuple[str, ...],
) -> Result | None:
    """Full Jacobian blocks in the working dtype, each column at its own best step; None when
    no single entry is off (the errors spread thinly: the projection's failure stands)."""
    index, argument = line.index, line.arguments[line.index]
    assert worst.estimate is not None
    eps = torch.finfo(argument.dtype).eps
    analytical = analytical_jacobians(list(outputs), line.arguments, [index])[index]
    analytical = analytical.to(torch.float64)
    numerical = torch.zeros_like(analytical)
    bound = torch.full_like(analytical, math.inf)
    steps: dict[int, float] = {}
    for column in range(argument.numel()):
        found = estimate(_column_probe(line, column, analytical[:, column], eps),
                         around(worst.estimate.step))  # fmt: skip
        if found is not None:
            numerical[:, column], bound[:, column] = found.rung.numerical, found.bound
            steps[column] = found.step
    error = (analytical - numerical).abs()
    tol = context.tolerance
    off = (error > CLEAR * bound) & (error > tol.rtol * numerical.abs())
    excused, slopes = at_kinks(line, analytical, off, bound, steps)
    if bool(excused.any()) and not bool((off & ~excused).any()):
        return _kink_warning(context, check, line, analytical, excused, slopes, notes)
    if excused.any():
        notes = (*notes, f"{len(slopes)} mismatch(es) at non-differentiable points excused")
    off = off & ~excused
    if not bool(off.any()):
        return None
    ratio = torch.where(off, error / (CLEAR * bound).clamp_min(1e-300), torch.zeros_like(error))
    row, column = divmod(int(ratio.argmax()), analytical.shape[1])
    element = unravel(column, tuple(argument.shape))
    name = context.target.argument_name(index) or f"argument {index}"
    finite = bound[torch.isfinite(bound)]
    atol = CLEAR * float(finite.max()) if finite.numel() else 0.0
    hint = diagnose(
        analytical, numerical, off, argument.detach().to(torch.float64), name, atol, tol.rtol,
        outputs=tuple((i, tuple(o.shape)) for i, o in enumerate(outputs)),
    )  # fmt: skip
    where = element_words(element)
    if len(outputs) > 1 or analytical.shape[0] != analytical.shape[1]:
        where += f", output row {row}"
    message = (
        f"gradient of {context.describe_argument(index)} is wrong in "
        f"{dtype_name(argument.dtype)} at {where}: analytical {float(analytical[row, column]):.6g}, "
        f"numerical {float(numerical[row, column]):.6g} ({int(off.sum())} of {off.numel()} "
        f"entries off by more than {CLEAR:g} × their measured error bound)"
    )
    return context.result(
        check, Status.FAIL, message,
        input_index=index, element=element,
        analytical=float(analytical[row, column]), numerical=float(numerical[row, column]),
        max_abs_error=float(error[off].max()), mismatched=int(off.sum()), total=off.numel(),
        hint=hint or _generic_hint(argument.dtype),
        mismatch_map=full_jacobian_map(off, tuple(argument.shape)),
        notes=(*notes, _evidence(worst)),
    )  # fmt: skip


def _kink_warning(
    context: CaseContext,
    check: str,
    line: Line,
    analytical: torch.Tensor,
    excused: torch.Tensor,
    slopes: dict[int, tuple[float, float]],
    notes: tuple[str, ...],
) -> Result:
    """`warn`: the only entries off sit at kinks, where backward's value is a subgradient."""
    index, argument = line.index, line.arguments[line.index]
    column = min(slopes)
    left, right = slopes[column]
    row = int(excused[:, column].nonzero()[0])
    element = unravel(column, tuple(argument.shape))
    more = f" (and {len(slopes) - 1} more element(s))" if len(slopes) > 1 else ""
    value = float(analytical[row, column])
    return context.result(
        check, Status.WARN,
        f"non-differentiable at {context.describe_argument(index)}, {element_words(element)}"
        f"{more}: left slope {left:.4g}, right slope {right:.4g} in "
        f"{dtype_name(argument.dtype)}; analytical {value:.4g} lies between them",
        input_index=index, element=element, analytical=value,
        hint="kink: central differences mean nothing there, and backward's value is a valid "
        "subgradient; every other entry of the gradient matches",
        notes=notes,
    )  # fmt: skip


def _column_probe(line: Line, column: int, analytical: torch.Tensor, eps: float) -> Probe:
    """Column `column` of the Jacobian at step h: (f₊ - f₋) over the displacement made."""

    def probe(step: float) -> Rung:
        (plus, moved_plus), (minus, moved_minus) = line.at_element(column, step)
        span = moved_plus - moved_minus
        numerical = (plus - minus) / span
        noise = ROUNDING_ULPS * eps * ((plus.abs() + minus.abs()) / abs(span) + analytical.abs())
        return Rung(step, numerical, analytical, noise)

    return probe


def _by_halving(
    context: CaseContext, check: str, line: Line, worst: Judged, notes: tuple[str, ...]
) -> Result:
    """Group testing on the failing direction: keep the half that still fails by itself."""
    index, argument = line.index, line.arguments[line.index]
    assert worst.estimate is not None
    eps = torch.finfo(argument.dtype).eps
    steps = around(worst.estimate.step, 1)
    flat = torch.arange(argument.numel(), device=argument.device).reshape(argument.shape)
    low, high, current, calls = 0, argument.numel(), worst, 0
    while high - low > 1:
        middle = (low + high) // 2
        narrowed = None
        for start, stop in ((low, middle), (middle, high)):
            half = worst.direction.restricted((flat >= start) & (flat < stop))
            judged = judge_direction(context, line, half, eps, steps)
            calls += 2 * len(steps)
            if judged.fails:
                narrowed = (start, stop, judged)
                break
        if narrowed is None:
            break  # neither half fails alone: the error is spread over both
        low, high, current = narrowed
    if high - low > 1:
        return _spread_failure(context, check, line, worst, low, high, notes)
    assert current.estimate is not None
    sign = float(worst.direction.u.reshape(-1)[low])
    entry = Entry(
        index, 0, low, float(worst.direction.gradient.reshape(-1)[low]),
        float(current.estimate.rung.numerical) * sign, off=True,
    )  # fmt: skip
    element = unravel(low, tuple(argument.shape))
    return context.result(
        check, Status.FAIL,
        f"gradient of {context.describe_argument(index)} is wrong in {dtype_name(argument.dtype)} "
        f"at {element_words(element)}: along a random vᵀ, analytical {entry.analytical:.6g}, "
        f"numerical {entry.numerical:.6g} (localized by halving in {calls} forward calls)",
        input_index=index, element=element, analytical=entry.analytical,
        numerical=entry.numerical, max_abs_error=abs(entry.analytical - entry.numerical),
        mismatched=1, mismatched_at_least=True,
        hint=entry_hint(entry, float(current.estimate.bound), context.tolerance.rtol)
        or _generic_hint(argument.dtype),
        mismatch_map=located_map([low], [], tuple(argument.shape)),
        notes=(*notes, _evidence(worst)),
    )  # fmt: skip


def _spread_failure(
    context: CaseContext,
    check: str,
    line: Line,
    worst: Judged,
    low: int,
    high: int,
    notes: tuple[str, ...],
) -> Result:
    index, argument = line.index, line.arguments[line.index]
    assert worst.estimate is not None
    rung = worst.estimate.rung
    first, last = unravel(low, tuple(argument.shape)), unravel(high - 1, tuple(argument.shape))
    return context.result(
        check, Status.FAIL,
        f"gradient of {context.describe_argument(index)} is wrong in {dtype_name(argument.dtype)} "
        f"along a random direction: vᵀJu analytical {float(rung.analytical):.6g}, numerical "
        f"{float(rung.numerical):.6g}; no single element fails alone between elements "
        f"{list(first)} and {list(last)} (the errors spread thinly)",
        input_index=index, analytical=float(rung.analytical), numerical=float(rung.numerical),
        max_abs_error=worst.error, hint=_generic_hint(argument.dtype),
        notes=(*notes, _evidence(worst)),
    )  # fmt: skip


def _evidence(judged: Judged) -> str:
    assert judged.estimate is not None
    found = judged.estimate
    return (
        f"vᵀJu differs by {judged.error:.3g}, {judged.margin:.3g} × the {judged.allowed:.2g} "
        f"allowed; the error bound measured at step {step_words(found.step)} is "
        f"{float(found.bound):.2g} (truncation by step halving {float(found.truncation):.2g}, "
        f"the rest rounding), and {CLEAR:g} × it is allowed (or the spec's rtol of vᵀJu's "
        "size, if larger)"
    )


def _generic_hint(dtype: torch.dtype) -> str:
    return (
        f"more than {dtype_name(dtype)} rounding and truncation explain, measured at several "
        "steps: likely a wrong term, branch or constant in backward (a correct kernel passes "
        "this check in its own precision, so loosening `tolerance` would hide the bug)"
    )
