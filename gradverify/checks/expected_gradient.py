"""`expected_gradient`: a surrogate backward against the gradient its author intended.

With `gradient: surrogate` backward is on purpose not the derivative (straight-through
estimators, gradient reversal), so finite differences say nothing. `expected_gradient:
module:callable` names a plain PyTorch function that computes the intended gradient; it is
called as `expected(*inputs, *grad_outputs)` and returns one gradient per forward argument
(None where there is none), like backward. Backward must agree with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from gradverify.checks.shared.backward_call import broadcasts_back
from gradverify.checks.shared.case import CaseContext, crash_result
from gradverify.errors import TargetError
from gradverify.inputs import differentiable_indices, fresh_copies
from gradverify.numerics import seeded
from gradverify.numerics.compare import compare
from gradverify.numerics.graph import backward_return, function_node
from gradverify.numerics.jacobian import differentiable_outputs, unravel
from gradverify.numerics.salts import Salt
from gradverify.results import Result, Status
from gradverify.target.loading import load_target
from gradverify.usercode import UserCodeError, call_forward, user_code


class ExpectedGradientCheck:
    """backward's gradients equal those of the spec's `expected_gradient` function."""

    id: ClassVar[str] = "expected_gradient"

    def run(self, context: CaseContext) -> list[Result]:
        path = context.spec.expected_gradient
        if path is None:
            return [
                context.result(
                    self.id, Status.SKIP, "no expected_gradient in the spec", applies=False
                )
            ]
        wrt = differentiable_indices(context.arguments)
        if not wrt:
            return [context.result(self.id, Status.SKIP, "no argument requires grad")]
        try:
            expected_function = load_target(path).call
        except TargetError as error:
            return [context.result(self.id, Status.FAIL, f"expected_gradient: {error.render()}")]
        arguments = fresh_copies(context.arguments)
        try:
            produced, grad_outputs = _forward(context, arguments)
            outputs = differentiable_outputs(produced)
            misshapen = _misshapen(context, self.id, produced, grad_outputs, arguments, wrt)
            if misshapen:
                return misshapen
            actual = _gradients(outputs, grad_outputs, arguments, wrt)
            with user_code("expected_gradient"):
                detached = [a.detach() if isinstance(a, torch.Tensor) else a for a in arguments]
                expected = expected_function(*detached, *grad_outputs)
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]
        expected_by_index = _by_argument(expected, len(arguments), wrt)
        if expected_by_index is None:
            count = len(expected) if isinstance(expected, tuple | list) else 1
            return [context.result(
                self.id, Status.FAIL,
                f"expected_gradient returned {count} value(s); return one per forward argument "
                f"({len(arguments)}), None where there is none",
            )]  # fmt: skip
        return self._compare(context, arguments, wrt, actual, expected_by_index)

    def _compare(
        self,
        context: CaseContext,
        arguments: Sequence[Any],
        wrt: Sequence[int],
        actual: dict[int, torch.Tensor],
        expected: dict[int, Any],
    ) -> list[Result]:
        tol = context.tolerance
        problems = []
        for index in wrt:
            mine = actual[index]
            theirs = expected.get(index)
            if theirs is None:
                theirs = torch.zeros_like(mine)
            if not isinstance(theirs, torch.Tensor) or theirs.shape != mine.shape:
                shape = (
                    list(theirs.shape)
                    if isinstance(theirs, torch.Tensor)
                    else type(theirs).__name__
                )
                problems.append(context.result(
                    self.id, Status.FAIL,
                    f"expected_gradient gives {shape} for {context.describe_argument(index)}, "
                    f"whose gradient has shape {list(mine.shape)}",
                    input_index=index,
                ))  # fmt: skip
                continue
            comparison = compare(
                mine.reshape(1, -1), theirs.reshape(1, -1).to(mine.dtype), tol.atol, tol.rtol
            )
            if comparison.ok:
                continue
            element = unravel(comparison.column, mine.shape)
            problems.append(context.result(
                self.id, Status.FAIL,
                f"backward's gradient of {context.describe_argument(index)} differs from "
                f"expected_gradient at element {list(element)}: backward {comparison.analytical:.6g}, "
                f"expected {comparison.numerical:.6g} ({comparison.mismatched} of "
                f"{comparison.total} elements off)",
                input_index=index, element=element,
                analytical=comparison.analytical, numerical=comparison.numerical,
                max_abs_error=comparison.max_abs_error, mismatched=comparison.mismatched,
                total=comparison.total,
                hint="`analytical` is what backward returned, `numerical` what expected_gradient gives",
            ))  # fmt: skip
        if problems:
            return problems
        return [context.result(
            self.id, Status.PASS,
            f"backward matches expected_gradient for {len(wrt)} argument(s)",
        )]  # fmt: skip


Outputs = list[tuple[int, torch.Tensor]]  # (position among forward's outputs, output)


def _forward(
    context: CaseContext, arguments: Sequence[Any]
) -> tuple[tuple[Any, ...], list[torch.Tensor]]:
    """forward's outputs, and seeded grad_outputs for its differentiable ones."""
    produced = call_forward(context.target.call, arguments)
    generator = context.generator(Salt.EXPECTED_GRADIENT_GRAD_OUTPUTS)
    grad_outputs = [
        seeded.normal(o.shape, generator, o.device).to(o.dtype)
        for _, o in differentiable_outputs(produced)
    ]
    return produced, grad_outputs


def _gradients(
    outputs: Outputs, grad_outputs: list[torch.Tensor], arguments: Sequence[Any], wrt: Sequence[int]
) -> dict[int, torch.Tensor]:
    """backward's gradients as autograd delivers them to the arguments."""
    with user_code("backward"):
        grads = torch.autograd.grad(
            [o for _, o in outputs], [arguments[i] for i in wrt], grad_outputs, allow_unused=True
        )
    return {
        index: (g if g is not None else torch.zeros_like(arguments[index])).detach()
        for index, g in zip(wrt, grads, strict=True)
    }


def _misshapen(
    context: CaseContext,
    check: str,
    produced: tuple[Any, ...],
    grad_outputs: list[torch.Tensor],
    arguments: Sequence[Any],
    wrt: Sequence[int],
) -> list[Result]:
    """Gradients whose shape, as backward itself returns them, is not the argument's.

    autograd sums a gradient that broadcasts to more dimensions back to the argument's
    shape, so comparing what it delivers would let such a backward pass.
    """
    raw = _raw_backward(context, produced, grad_outputs)
    problems = []
    for index in wrt:
        grad = raw[index] if index < len(raw) else None
        argument = arguments[index]
        if not isinstance(grad, torch.Tensor) or grad.shape == argument.shape:
            continue
        got, shape = list(grad.shape), list(argument.shape)
        if broadcasts_back(grad.shape, argument.shape):
            hint = (
                "autograd sums a gradient of a broadcast shape back to the argument's shape, "
                "so its values can look right; return the gradient in the argument's shape"
            )
        else:
            hint = "autograd rejects a gradient of another shape; return it in the argument's shape"
        problems.append(context.result(
            check, Status.FAIL,
            f"backward returns a gradient of shape {got} for {context.describe_argument(index)}, "
            f"whose shape is {shape}",
            input_index=index, hint=hint,
        ))  # fmt: skip
    return problems


def _raw_backward(
    context: CaseContext, produced: tuple[Any, ...], grad_outputs: list[torch.Tensor]
) -> tuple[Any, ...]:
    """What the Function's backward itself returns, before autograd reshapes or casts it;
    () for a plain callable, whose gradients autograd computes."""
    if function_node(context.target, produced) is None:
        return ()
    # backward receives one grad_output per output of forward: zeros for the others.
    outputs = differentiable_outputs(produced)
    given = dict(zip((position for position, _ in outputs), grad_outputs, strict=True))
    every = [
        given.get(position, torch.zeros_like(output) if isinstance(output, torch.Tensor) else None)
        for position, output in enumerate(produced)
    ]
    with user_code("backward"):
        return backward_return(context.target, produced, (), every)


def _by_argument(expected: Any, n_arguments: int, wrt: Sequence[int]) -> dict[int, Any] | None:
    values = tuple(expected) if isinstance(expected, tuple | list) else (expected,)
    if len(values) >= n_arguments and all(v is None for v in values[n_arguments:]):
        return dict(enumerate(values[:n_arguments]))
    if len(values) == len(wrt):  # one per differentiable argument is unambiguous too
        return dict(zip(wrt, values, strict=True))
    return None
