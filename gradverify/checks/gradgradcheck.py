"""`gradgradcheck`: second derivatives by torch.autograd.gradgradcheck, mapped to arguments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from torch.autograd.gradcheck import GradcheckError

from gradverify.checks.base import CaseContext, UserCodeError, call_forward, crash_result, user_code
from gradverify.checks.compare import compare
from gradverify.checks.finite_difference import promotion_notes
from gradverify.checks.jacobian import (
    analytical_jacobians,
    differentiable_outputs,
    numerical_jacobian,
    unravel,
)
from gradverify.checks.torch_gradcheck import (
    explain_other_failure,
    first_order_grads,
    parse_mismatch,
    tensor_outputs,
)
from gradverify.inputs import differentiable_indices, fresh_copies
from gradverify.results import Result, Status

FIRST_ORDER_CHECKS = ("finite_difference", "gradcheck")

SILENTLY_WRONG = (
    "the first derivative is right but the second is silently wrong: backward is likely not "
    "differentiable as written (.detach(), .data, or values saved without grad). Make backward "
    "differentiable with ordinary torch ops, or mark it @once_differentiable so that double "
    "backward raises instead of returning wrong values"
)


class GradgradcheckCheck:
    """torch.autograd.gradgradcheck in float64 with seeded grad_outputs."""

    id: ClassVar[str] = "gradgradcheck"
    description: ClassVar[str] = (
        "torch.autograd.gradgradcheck passes: second derivatives (double backward) are right"
    )

    def run(self, context: CaseContext) -> list[Result]:
        wrt = differentiable_indices(context.arguments)
        if not wrt:
            return [context.result(self.id, Status.SKIP, "no argument requires grad")]
        arguments = fresh_copies(context.arguments, torch.float64)
        notes = promotion_notes(context, context.arguments)
        try:
            grad_outputs = self._grad_outputs(context, arguments)
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]
        if not grad_outputs:
            return [
                context.result(self.id, Status.SKIP, "no output is differentiable", notes=notes)
            ]
        tol = context.tolerance
        try:
            with user_code("gradgradcheck"):
                torch.autograd.gradgradcheck(
                    tensor_outputs(context.target.call),
                    arguments,
                    grad_outputs,
                    eps=tol.eps,
                    atol=tol.atol,
                    rtol=tol.rtol,
                    nondet_tol=tol.nondet_tol,
                )
        except UserCodeError as error:
            if not isinstance(error.error, GradcheckError):
                return [crash_result(context, self.id, error)]
            return [self._failure(context, str(error.error), arguments, wrt, grad_outputs, notes)]
        return [
            context.result(self.id, Status.PASS, "torch.autograd.gradgradcheck passed", notes=notes)
        ]

    def _grad_outputs(self, context: CaseContext, arguments: Sequence[Any]) -> list[torch.Tensor]:
        outputs = call_forward(context.target.call, arguments)
        generator = context.generator(salt=2)
        return [
            (torch.rand(o.shape, generator=generator, dtype=torch.float64) * 2 - 1)
            .to(o.dtype)
            .requires_grad_()
            for _, o in differentiable_outputs(outputs)
        ]

    def _failure(
        self,
        context: CaseContext,
        message: str,
        arguments: tuple[Any, ...],
        wrt: list[int],
        grad_outputs: list[torch.Tensor],
        notes: tuple[str, ...],
    ) -> Result:
        hint = self._hint(context)
        mismatch = parse_mismatch(message)
        if mismatch is None:
            text, other_hint = explain_other_failure(message)
            return context.result(
                self.id, Status.FAIL, f"gradgradcheck: {text}", hint=other_hint or hint, notes=notes
            )
        try:
            return self._locate(
                context, mismatch.output, mismatch.input, arguments, wrt, grad_outputs, hint, notes
            )
        except UserCodeError:
            return context.result(
                self.id,
                Status.FAIL,
                f"gradgradcheck: {message.splitlines()[0]}",
                hint=hint,
                notes=notes,
            )

    def _hint(self, context: CaseContext) -> str:
        """What earlier checks say about the first derivative (values and structure)."""
        earlier = [r for r in context.earlier if r.check in FIRST_ORDER_CHECKS]
        structural = [r for r in context.earlier if r.check == "backward"]
        if any(r.failed for r in [*earlier, *structural]):
            return (
                "the first derivative or backward's output is already wrong (see the checks "
                "above); fix that first"
            )
        if not earlier:  # nothing vouches for the first derivative, nor condemns it
            return (
                "no first-order check ran for this case; add finite_difference or gradcheck to "
                "`checks`. If the first derivative is right, " + SILENTLY_WRONG.split(": ", 1)[1]
            )
        return SILENTLY_WRONG

    def _locate(
        self,
        context: CaseContext,
        output: int,
        source: int,
        arguments: tuple[Any, ...],
        wrt: list[int],
        grad_outputs: list[torch.Tensor],
        hint: str,
        notes: tuple[str, ...],
    ) -> Result:
        """Rebuild the one Jacobian block torch complained about and find its worst element."""
        grads = first_order_grads(context.target.call, len(arguments), wrt)
        values = [*arguments, *grad_outputs]
        # torch's input j counts the arguments that require grad, then the grad_outputs.
        position = [*wrt, *range(len(arguments), len(values))][source]
        with user_code("backward"):
            gradient_of, produced = grads(*values)[output]
        analytical = analytical_jacobians([produced], values, [position])[position]
        numerical = numerical_jacobian(
            lambda *v: [grads(*v)[output][1]], values, position, context.tolerance.eps
        )
        comparison = compare(analytical, numerical, context.tolerance.atol, context.tolerance.rtol)
        of = f"the gradient of {context.describe_argument(gradient_of)}"
        if position < len(arguments):
            by, input_index, output_index = context.describe_argument(position), position, None
            shape = arguments[position].shape
        else:
            k = position - len(arguments)
            by, input_index, output_index = f"grad_output {k}", None, k
            shape = grad_outputs[k].shape
        element = unravel(comparison.column, shape)
        text = (
            f"second derivative is wrong: d({of}) / d({by}) at element {list(element)}: analytical "
            f"{comparison.analytical:.6g}, numerical {comparison.numerical:.6g} "
            f"({comparison.mismatched} of {comparison.total} entries off)"
        )
        return context.result(
            self.id,
            Status.FAIL,
            text,
            input_index=input_index if input_index is not None else gradient_of,
            output_index=output_index,
            element=element,
            analytical=comparison.analytical,
            numerical=comparison.numerical,
            max_abs_error=comparison.max_abs_error,
            max_rel_error=comparison.max_rel_error,
            mismatched=comparison.mismatched,
            total=comparison.total,
            hint=hint,
            notes=notes,
        )
