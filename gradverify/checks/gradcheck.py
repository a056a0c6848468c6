"""`gradcheck`: torch.autograd.gradcheck, with failures mapped to forward's arguments and elements.

At kinks (ReLU at 0) gradcheck fails correct code. When every mismatch we can reproduce sits
at a kink with a valid subgradient, gradcheck is run again with those elements held fixed,
so that everything else it checks (every other element, reentrancy, undefined grads) still
counts; the kinks become a warning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import torch
from torch.autograd.gradcheck import GradcheckError

from gradverify.checks.base import CaseContext, UserCodeError, crash_result, user_code
from gradverify.checks.finite_difference import (
    assess,
    jacobian_blocks,
    kink_warning,
    mismatch_failure,
    promotion_notes,
)
from gradverify.checks.kinks import hold_fixed, kink_masks
from gradverify.checks.torch_gradcheck import (
    explain_other_failure,
    parse_mismatch,
    tensor_outputs,
)
from gradverify.inputs import differentiable_indices, fresh_copies
from gradverify.results import Result, Status

MODE_SKIPS = {
    "surrogate": "gradient: surrogate — backward is intentionally not the derivative",
    "approximate": "gradient: approximate — judged by `finite_difference` against max_error",
}


class GradcheckCheck:
    """torch.autograd.gradcheck in float64 with the spec's tolerances."""

    id: ClassVar[str] = "gradcheck"
    description: ClassVar[str] = "torch.autograd.gradcheck passes (float64, the spec's tolerances)"

    def run(self, context: CaseContext) -> list[Result]:
        wrt = differentiable_indices(context.arguments)
        if not wrt:
            return [context.result(self.id, Status.SKIP, "no argument requires grad")]
        if context.spec.gradient in MODE_SKIPS:
            return [context.result(self.id, Status.SKIP, MODE_SKIPS[context.spec.gradient])]
        arguments = fresh_copies(context.arguments, torch.float64)
        notes = promotion_notes(context, context.arguments)
        try:
            failure = run_gradcheck(context, context.target.call, arguments)
            if failure is None:
                return [
                    context.result(
                        self.id, Status.PASS, "torch.autograd.gradcheck passed", notes=notes
                    )
                ]
            return self._failure(context, failure, arguments, wrt, notes)
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]

    def _failure(
        self,
        context: CaseContext,
        message: str,
        arguments: tuple[Any, ...],
        wrt: list[int],
        notes: tuple[str, ...],
    ) -> list[Result]:
        mismatch = parse_mismatch(message)
        if mismatch is None or mismatch.input >= len(wrt):
            text, hint = explain_other_failure(message)
            return [
                context.result(self.id, Status.FAIL, f"gradcheck: {text}", hint=hint, notes=notes)
            ]
        index = wrt[mismatch.input]
        headline = context.result(
            self.id, Status.FAIL,
            f"gradcheck: Jacobian mismatch for {context.describe_argument(index)} "
            f"(torch's output {mismatch.output}, input {mismatch.input})",
            input_index=index, notes=notes,
        )  # fmt: skip
        blocks = jacobian_blocks(context, arguments, wrt)
        if blocks is None:
            return [headline]
        assessments = {i: assess(context, i, blocks) for i in wrt}
        failing = [i for i in wrt if not assessments[i].comparison.ok]
        if failing:
            return [
                mismatch_failure(context, self.id, i, blocks, assessments[i].comparison,
                                 assessments[i].kinks, notes)
                for i in failing
            ]  # fmt: skip
        masks = kink_masks({i: a.kinks for i, a in assessments.items()}, arguments)
        if not masks:  # our own comparison cannot reproduce torch's complaint
            return [headline]
        again = run_gradcheck(context, hold_fixed(context.target.call, arguments, masks), arguments)
        if again is not None:
            text, hint = explain_other_failure(again)
            return [context.result(
                self.id, Status.FAIL,
                f"gradcheck fails even with the non-differentiable elements held fixed: {text}",
                hint=hint, notes=notes,
            )]  # fmt: skip
        held = (*notes, "gradcheck passes with the non-differentiable elements held fixed")
        return [
            kink_warning(context, self.id, i, blocks, assessments[i].admitted,
                         assessments[i].comparison, held)
            for i in masks
        ]  # fmt: skip


def run_gradcheck(
    context: CaseContext, call: Callable[..., Any], arguments: tuple[Any, ...]
) -> str | None:
    """torch's gradcheck on `call`: None if it passes, else its failure message."""
    tol = context.tolerance
    try:
        with user_code("gradcheck"):
            torch.autograd.gradcheck(
                tensor_outputs(call), arguments,
                eps=tol.eps, atol=tol.atol, rtol=tol.rtol, nondet_tol=tol.nondet_tol,
            )  # fmt: skip
    except UserCodeError as error:
        if isinstance(error.error, GradcheckError):
            return str(error.error)
        raise
    return None
