"""`finite_difference`: our own central differences against backward, per argument, in float64."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from gradverify.checks.base import CaseContext, UserCodeError, call_forward, crash_result
from gradverify.checks.compare import Comparison, compare
from gradverify.checks.diagnosis import diagnose
from gradverify.checks.jacobian import (
    OutputLayout,
    analytical_jacobians,
    differentiable_outputs,
    numerical_jacobian,
    unravel,
)
from gradverify.inputs import differentiable_indices, fresh_copies, promoted_arguments
from gradverify.results import Result, Status

COMPLEX_SKIP = (
    "complex values: their Wirtinger derivatives are checked by `gradcheck`, not by real "
    "central differences"
)


class FiniteDifferenceCheck:
    """Full Jacobian of each differentiable argument: backward against central differences."""

    id: ClassVar[str] = "finite_difference"
    description: ClassVar[str] = (
        "backward's full Jacobian matches central finite differences, per argument, in float64"
    )

    def run(self, context: CaseContext) -> list[Result]:
        wrt = differentiable_indices(context.arguments)
        if not wrt:
            return [context.result(self.id, Status.SKIP, "no argument requires grad")]
        arguments = fresh_copies(context.arguments, torch.float64)
        notes = promotion_notes(context, context.arguments)
        complex_arguments = [i for i in wrt if arguments[i].is_complex()]
        if complex_arguments:
            return [
                context.result(self.id, Status.SKIP, COMPLEX_SKIP, input_index=index)
                for index in complex_arguments
            ]
        try:
            blocks = jacobian_blocks(context, arguments, wrt)
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]
        if blocks is None:
            return [
                context.result(self.id, Status.SKIP, "no output is differentiable", notes=notes)
            ]
        layout, analytical, numerical = blocks
        if any(block.is_complex() for block in numerical.values()):
            return [context.result(self.id, Status.SKIP, COMPLEX_SKIP, notes=notes)]
        tol = context.tolerance
        results = []
        for index in wrt:
            comparison = compare(analytical[index], numerical[index], tol.atol, tol.rtol)
            results.append(
                judge(
                    context,
                    self.id,
                    index,
                    arguments[index],
                    layout,
                    comparison,
                    analytical[index],
                    numerical[index],
                    notes,
                )
            )
        return results


def jacobian_blocks(
    context: CaseContext, arguments: Sequence[Any], wrt: Sequence[int]
) -> tuple[OutputLayout, dict[int, torch.Tensor], dict[int, torch.Tensor]] | None:
    """Analytical and numerical Jacobians of every differentiable output w.r.t. each of `wrt`."""
    outputs = call_forward(context.target.call, arguments)
    selected = differentiable_outputs(outputs)
    if not selected:
        return None
    layout = OutputLayout(tuple(i for i, _ in selected), tuple(tuple(o.shape) for _, o in selected))
    analytical = analytical_jacobians([o for _, o in selected], arguments, wrt)

    def selected_outputs(*perturbed: Any) -> list[torch.Tensor]:
        produced = call_forward(context.target.call, perturbed)
        return [produced[i] for i in layout.indices]

    numerical = {
        index: numerical_jacobian(selected_outputs, arguments, index, context.tolerance.eps)
        for index in wrt
    }
    return layout, analytical, numerical


def judge(
    context: CaseContext,
    check: str,
    index: int,
    argument: torch.Tensor,
    layout: OutputLayout,
    comparison: Comparison,
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    notes: tuple[str, ...] = (),
) -> Result:
    """One argument's verdict, naming the worst element and the likely cause."""
    describe = context.describe_argument(index)
    fields: dict[str, Any] = dict(
        input_index=index,
        max_abs_error=comparison.max_abs_error,
        max_rel_error=comparison.max_rel_error,
        mismatched=comparison.mismatched,
        total=comparison.total,
        notes=notes,
    )
    if comparison.ok:
        return context.result(
            check,
            Status.PASS,
            f"gradient of {describe} matches ({comparison.total} entries)",
            **fields,
        )
    output_index, output_element = layout.locate(comparison.row)
    element = unravel(comparison.column, argument.shape)
    name = context.target.argument_name(index) or f"argument {index}"
    hint = diagnose(
        analytical,
        numerical,
        comparison.off,
        argument,
        name,
        context.tolerance.atol,
        context.tolerance.rtol,
    )
    where = f"element {list(element)}"
    if len(layout.indices) > 1 or layout.rows != argument.numel():
        where += f", output {output_index} element {list(output_element)}"
    message = (
        f"gradient of {describe} is wrong at {where}: analytical {comparison.analytical:.6g}, "
        f"numerical {comparison.numerical:.6g} ({comparison.mismatched} of {comparison.total} entries off)"
    )
    return context.result(
        check,
        Status.FAIL,
        message,
        output_index=output_index,
        element=element,
        analytical=comparison.analytical,
        numerical=comparison.numerical,
        hint=hint,
        **fields,
    )


def promotion_notes(context: CaseContext, arguments: Sequence[Any]) -> tuple[str, ...]:
    return tuple(
        f"{context.describe_argument(index)} promoted from {str(dtype).removeprefix('torch.')} to float64 "
        "for this check"
        for index, dtype in promoted_arguments(arguments)
    )
