"""`gradcheck`: torch.autograd.gradcheck, with failures mapped to forward's arguments and elements."""

from __future__ import annotations

from typing import ClassVar

import torch
from torch.autograd.gradcheck import GradcheckError

from gradverify.checks.base import CaseContext, UserCodeError, crash_result, user_code
from gradverify.checks.compare import compare
from gradverify.checks.finite_difference import jacobian_blocks, judge, promotion_notes
from gradverify.checks.torch_gradcheck import explain_other_failure, parse_mismatch, tensor_outputs
from gradverify.inputs import differentiable_indices, fresh_copies
from gradverify.results import Result, Status


class GradcheckCheck:
    """torch.autograd.gradcheck in float64 with the spec's tolerances."""

    id: ClassVar[str] = "gradcheck"
    description: ClassVar[str] = "torch.autograd.gradcheck passes (float64, the spec's tolerances)"

    def run(self, context: CaseContext) -> list[Result]:
        wrt = differentiable_indices(context.arguments)
        if not wrt:
            return [context.result(self.id, Status.SKIP, "no argument requires grad")]
        arguments = fresh_copies(context.arguments, torch.float64)
        notes = promotion_notes(context, context.arguments)
        tol = context.tolerance
        try:
            with user_code("gradcheck"):
                torch.autograd.gradcheck(
                    tensor_outputs(context.target.call),
                    arguments,
                    eps=tol.eps,
                    atol=tol.atol,
                    rtol=tol.rtol,
                    nondet_tol=tol.nondet_tol,
                )
        except UserCodeError as error:
            if not isinstance(error.error, GradcheckError):
                return [crash_result(context, self.id, error)]
            return [self._failure(context, str(error.error), arguments, wrt, notes)]
        return [
            context.result(self.id, Status.PASS, "torch.autograd.gradcheck passed", notes=notes)
        ]

    def _failure(
        self,
        context: CaseContext,
        message: str,
        arguments: tuple[object, ...],
        wrt: list[int],
        notes: tuple[str, ...],
    ) -> Result:
        mismatch = parse_mismatch(message)
        if mismatch is None or mismatch.input >= len(wrt):
            text, hint = explain_other_failure(message)
            return context.result(
                self.id, Status.FAIL, f"gradcheck: {text}", hint=hint, notes=notes
            )
        index = wrt[mismatch.input]
        headline = (
            f"gradcheck: Jacobian mismatch for {context.describe_argument(index)} "
            f"(torch's output {mismatch.output}, input {mismatch.input})"
        )
        try:
            blocks = jacobian_blocks(context, arguments, [index])
        except UserCodeError:
            blocks = None
        if blocks is None:
            return context.result(self.id, Status.FAIL, headline, input_index=index, notes=notes)
        layout, analytical, numerical = blocks
        comparison = compare(
            analytical[index], numerical[index], context.tolerance.atol, context.tolerance.rtol
        )
        argument = arguments[index]
        assert isinstance(argument, torch.Tensor)
        located = judge(
            context,
            self.id,
            index,
            argument,
            layout,
            comparison,
            analytical[index],
            numerical[index],
            notes,
        )
        if located.status is Status.PASS:  # our own comparison could not reproduce it
            return context.result(self.id, Status.FAIL, headline, input_index=index, notes=notes)
        return located
