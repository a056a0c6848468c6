"""`finite_difference` in a kernel's own precision (float32): directional derivatives of
forward by central differences, against backward's projections on the same directions.

For each argument, a few random directions u (±1 on each of its elements) and output weights
v: backward with grad_output v gives vᵀJ, dotted with u; forward at x ± h·u gives
vᵀ(f₊ - f₋) / 2h. The step h and the tolerance come from a measured error bound
(`numerics/richardson.py`: step halving for truncation, the values for rounding), and a
direction fails only when the discrepancy is CLEAR times that bound and beyond the spec's
rtol of the projection's size (`directions.py`). A failing argument is localized
(`localize.py`). `checks/shared/own_precision.py` decides when a case is checked so.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from gradverify.checks.finite_difference.directions import (
    CLEAR,
    Direction,
    Line,
    draw_directions,
    judge_direction,
)
from gradverify.checks.finite_difference.localize import failure
from gradverify.checks.shared.case import CaseContext, crash_result, dtype_name
from gradverify.checks.shared.own_precision import OwnPrecision
from gradverify.inputs import fresh_copies
from gradverify.numerics.jacobian import element_words, forward_selection, unravel
from gradverify.numerics.richardson import ladder, step_words
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError


def run_own_precision(
    context: CaseContext, check: str, wrt: Sequence[int], plan: OwnPrecision
) -> list[Result]:
    """Every argument's verdict in the working dtype (or, without one, a skip saying why)."""
    if plan.working is None:
        return [_no_working_dtype(context, check, plan)]
    arguments = fresh_copies(context.arguments, plan.working)
    notes = (plan.note, *_promotions(context, plan.working))
    try:
        with torch.enable_grad():
            selection = forward_selection(context.target.call, arguments)
        if selection is None:
            return [context.result(check, Status.SKIP, "no output is differentiable", notes=notes)]
        directions = draw_directions(context, arguments, wrt, selection.outputs)
        return [
            _verdict(context, check, Line(selection.evaluate, arguments, index),
                     directions[index], selection.outputs, notes)
            for index in wrt
        ]  # fmt: skip
    except UserCodeError as error:
        return [crash_result(context, check, error)]


def _verdict(
    context: CaseContext,
    check: str,
    line: Line,
    directions: Sequence[Direction],
    outputs: Sequence[torch.Tensor],
    notes: tuple[str, ...],
) -> Result:
    index, argument = line.index, line.arguments[line.index]
    eps = torch.finfo(argument.dtype).eps
    scale = max(1.0, float(argument.detach().abs().max())) if argument.numel() else 1.0
    judged = [judge_direction(context, line, d, eps, ladder(scale)) for d in directions]
    measured = [j for j in judged if j.estimate is not None]
    working = dtype_name(argument.dtype)
    if not measured:
        broken = _not_finite(context, check, line, directions, notes)
        if broken is not None:
            return broken
        return context.result(
            check, Status.SKIP,
            f"central differences of {context.describe_argument(index)} in {working} were not "
            "finite at three neighbouring steps: nothing to compare",
            input_index=index, notes=notes,
        )  # fmt: skip
    worst = max(measured, key=lambda j: j.margin)
    if worst.fails:
        return failure(context, check, line, worst, outputs, notes)
    assert worst.estimate is not None
    bound = float(worst.estimate.bound)
    rule = (
        f"{CLEAR:g} × the error bound {bound:.2g}"
        if worst.allowed <= CLEAR * bound
        else f"the spec's rtol {context.tolerance.rtol:g} of its size; {CLEAR:g} × the error "
        f"bound is {CLEAR * bound:.2g}"
    )
    return context.result(
        check, Status.PASS,
        f"gradient of {context.describe_argument(index)} matches in {working} along "
        f"{len(measured)} random directions vᵀJu ({argument.numel()} elements): largest "
        f"discrepancy {worst.error:.2g}, allowed {worst.allowed:.2g} ({rule}, measured at step "
        f"{step_words(worst.estimate.step)})",
        input_index=index, max_abs_error=worst.error, notes=notes,
    )  # fmt: skip


def _not_finite(
    context: CaseContext,
    check: str,
    line: Line,
    directions: Sequence[Direction],
    notes: tuple[str, ...],
) -> Result | None:
    """A failure where backward's gradient or forward's output is NaN or Inf (the reason no
    step gave a finite difference), else None."""
    index, argument = line.index, line.arguments[line.index]
    for direction in directions:
        bad = (~torch.isfinite(direction.gradient)).reshape(-1).nonzero()
        if bad.numel():
            flat = int(bad[0])
            element = unravel(flat, tuple(argument.shape))
            value = float(direction.gradient.reshape(-1)[flat])
            return context.result(
                check, Status.FAIL,
                f"gradient of {context.describe_argument(index)} is {value} at "
                f"{element_words(element)} (backward's vᵀJ for a random v, in "
                f"{dtype_name(argument.dtype)})",
                input_index=index, element=element, analytical=value, notes=notes,
                hint="NaN or Inf from backward: likely a division by zero or an overflow there",
            )  # fmt: skip
    outputs, _ = line.at(torch.zeros_like(directions[0].u))
    if not bool(torch.isfinite(outputs).all()):
        return context.result(
            check, Status.FAIL,
            f"forward's output is not finite at the case's inputs: central differences of "
            f"{context.describe_argument(index)} mean nothing there (see `forward`)",
            input_index=index, notes=notes,
        )  # fmt: skip
    return None


def _no_working_dtype(context: CaseContext, check: str, plan: OwnPrecision) -> Result:
    """A half-precision-only forward: central differences in float16 or bfloat16 cannot tell
    a wrong gradient from rounding, so the result says what it saw and asks for a reference."""
    declared = dtype_name(plan.declared)
    name = context.target.spec.rsplit(":", 1)[-1]
    return context.result(
        check, Status.SKIP,
        f"not checked: {plan.evidence}, and forward refuses float32 too: central differences "
        f"in {declared} cannot tell a wrong gradient from rounding",
        hint=f"give a plain-PyTorch reference, which `reference` compares with in {declared} "
        f"by the k× rule; add to the spec:\n  reference: mypkg.reference:{name.lower()}  # the "
        "same forward in plain PyTorch\n  low_precision: {k: 2, floor_ulps: 4}",
        notes=(f"evidence: {plan.evidence}; forward refuses float32",),
    )  # fmt: skip


def _promotions(context: CaseContext, working: torch.dtype) -> tuple[str, ...]:
    """Half-precision arguments promoted to the working dtype."""
    return tuple(
        f"{context.describe_argument(index)} promoted from {dtype_name(a.dtype)} to "
        f"{dtype_name(working)} for this check"
        for index, a in enumerate(context.arguments)
        if isinstance(a, torch.Tensor) and a.is_floating_point()
        and a.dtype not in (working, torch.float64)
    )  # fmt: skip
