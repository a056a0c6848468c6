"""`finite_difference`: our own central differences against backward, per argument, in float64.

In randomized mode (`checks/shared/modes.py`) the full Jacobians give way to random projections,
with group testing to name a wrong entry (`numerics/localizer.py`). A kernel that refuses
float64, or computes in float32 whatever it is given, is checked in float32 instead
(`checks/shared/own_precision.py`, `own_precision.py` here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from gradverify.checks.finite_difference.own_precision import run_own_precision
from gradverify.checks.shared.case import (
    CaseContext,
    crash_result,
    no_gradient_to_check,
)
from gradverify.checks.shared.jacobian_verdicts import jacobian_blocks, judge, measure
from gradverify.checks.shared.modes import (
    first_order_problem,
    float64_case,
    projected_measure,
    randomized_verdict,
)
from gradverify.checks.shared.own_precision import exact_own_precision
from gradverify.checks.shared.real_case import realify
from gradverify.inputs import differentiable_indices
from gradverify.numerics.localizer import examine_all
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError

SURROGATE_SKIP = (
    "gradient: surrogate — backward is intentionally not the derivative, so values are not "
    "compared (give `expected_gradient` to compare backward with the intended gradient)"
)


class FiniteDifferenceCheck:
    """Each differentiable argument's Jacobian, full or by random projections (by mode):
    backward against central differences."""

    id: ClassVar[str] = "finite_difference"

    def run(self, context: CaseContext) -> list[Result]:
        nothing = no_gradient_to_check(context, self.id)  # an op that returns nothing
        if nothing is not None:
            return [nothing]
        wrt = differentiable_indices(context.arguments)
        if not wrt:
            return [context.result(self.id, Status.SKIP, "no argument requires grad")]
        if context.spec.gradient == "surrogate":
            # Declared by the user; shown only while nothing else checks backward's values.
            checked = context.spec.expected_gradient is not None
            return [context.result(self.id, Status.SKIP, SURROGATE_SKIP, applies=not checked)]
        plan = exact_own_precision(context)
        if plan is not None:
            return run_own_precision(context, self.id, wrt, plan)
        arguments, notes, fast = float64_case(context)
        if fast:
            return randomized_run(context, self.id, arguments, wrt, notes)
        # Complex values as (real, imaginary) pairs, checked as torch's gradcheck checks them.
        real = realify(context, arguments, wrt)
        context, arguments = real.context, real.arguments
        try:
            approximate = context.spec.gradient == "approximate"
            blocks = jacobian_blocks(context, arguments, wrt, approximate, real.parts)
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]
        if blocks is None:
            return [
                context.result(self.id, Status.SKIP, "no output is differentiable", notes=notes)
            ]
        if context.spec.gradient == "approximate":
            return [measure(context, self.id, index, blocks, notes) for index in wrt]
        try:
            return [judge(context, self.id, index, blocks, notes) for index in wrt]
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]


def randomized_run(
    context: CaseContext,
    check: str,
    arguments: tuple[Any, ...],
    wrt: Sequence[int],
    notes: tuple[str, ...],
) -> list[Result]:
    """Randomized mode: random projections per argument, group testing on a discrepancy."""
    try:
        problem = first_order_problem(context, arguments, wrt)
        if problem is None:
            return [context.result(check, Status.SKIP, "no output is differentiable", notes=notes)]
        approximate = context.spec.gradient == "approximate"
        exams = examine_all(
            problem, context.generator, search=not approximate, kinks_first=False
        ).values()
    except UserCodeError as error:
        return [crash_result(context, check, error)]
    if approximate:
        return [projected_measure(context, check, exam, notes) for exam in exams]
    return [randomized_verdict(context, check, problem, exam, notes) for exam in exams]
