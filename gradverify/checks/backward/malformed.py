"""Gradients backward returns that do not fit their arguments: not a tensor, or of another
shape, dtype or device, or not finite; each with how to make it fit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from gradverify.checks.backward.dtype_by_design import cast_line, chosen_by_forward
from gradverify.checks.backward.unreduced import summed_by_autograd
from gradverify.checks.shared.backward_call import Gradients
from gradverify.checks.shared.case import CaseContext, dtype_name
from gradverify.numerics.jacobian import unravel
from gradverify.results import Result, Status


def malformed(
    context: CaseContext,
    check: str,
    grads: Gradients,
    arguments: Sequence[Any],
    outputs: Sequence[Any] = (),
) -> list[Result]:
    problems: list[Result] = []
    for index, (argument, grad) in enumerate(zip(arguments, grads, strict=False)):
        if grad is None:
            continue
        describe = context.describe_argument(index)

        def fail(
            message: str,
            hint: str | None = None,
            element: tuple[int, ...] | None = None,
            index: int = index,
        ) -> None:
            problems.append(
                context.result(
                    check, Status.FAIL, message, input_index=index, hint=hint, element=element
                )
            )

        if not isinstance(grad, torch.Tensor):
            fail(
                f"backward returned a {type(grad).__name__} as the gradient of {describe}; expected a tensor or None"
            )
        elif not isinstance(argument, torch.Tensor):
            fail(
                f"backward returned a tensor gradient for {describe}, which is a {type(argument).__name__}, not a tensor",
                "return None for arguments that are not tensors",
            )
        elif not argument.requires_grad or summed_by_autograd(grad, argument):
            continue  # autograd sums a broadcast gradient back: a warning, once all else passes
        elif grad.shape != argument.shape:
            fail(
                f"gradient of {describe} has shape {list(grad.shape)}, but the argument has shape {list(argument.shape)}",
                _shape_hint(grad.shape, argument.shape, context.target.argument_name(index)),
            )
        elif grad.dtype != argument.dtype and chosen_by_forward(grad, outputs):
            problems.append(_forward_made_dtype(context, check, index, grad, argument))
        elif grad.dtype != argument.dtype:
            fail(
                f"gradient of {describe} is {dtype_name(grad.dtype)}, but the argument is {dtype_name(argument.dtype)}",
                _dtype_hint(grad.dtype, argument.dtype),
            )
        elif grad.device != argument.device:
            fail(
                f"gradient of {describe} is on {grad.device}, but the argument is on {argument.device}"
            )
        elif not bool(torch.isfinite(grad).all()):
            flat = int((~torch.isfinite(grad)).reshape(-1).nonzero()[0].item())
            element = unravel(flat, grad.shape)
            value = grad.reshape(-1)[flat].item()
            fail(
                f"gradient of {describe} is {value} at element {list(element)} for finite inputs",
                "likely a division by zero or an overflow in backward",
                element,
            )
    return problems


def _shape_hint(got: torch.Size, expected: torch.Size, name: str | None) -> str | None:
    """How to bring a gradient of the wrong shape to the argument's: reshape, expand or sum."""
    if got.numel() == expected.numel():
        if len(got) == len(expected) == 2 and tuple(got) == tuple(reversed(expected)):
            # `x.t() @ grad` where `grad.t() @ x` belongs: reshaping would hide wrong values
            return (
                "the argument's shape transposed: likely a transposed gradient (the operands "
                "of a matmul swapped or transposed); transpose it rather than reshape it, and "
                "check its values"
            )
        return (
            "same number of elements in another shape: reshape the gradient to the argument's shape"
        )
    argument, x = name or "the argument", name or "x"
    dropped = _dropped_dims(got, expected)
    if dropped:  # a reduction without keepdim: [3] for [3, 4]
        unsqueeze = "".join(f".unsqueeze({dim})" for dim in dropped)
        return (
            f"the gradient has fewer elements than {argument}: expand it to the argument's shape "
            f"(`grad{unsqueeze}.expand_as({x})`); {_REDUCTION}"
        )
    try:
        common = torch.broadcast_shapes(got, expected)
    except RuntimeError:
        return "the shapes are not even broadcast-compatible"
    if common == expected:  # fewer elements that broadcast up: [] or [4] for [3, 4]
        return (
            f"the gradient has fewer elements than {argument}: expand it to the argument's shape "
            f"(`grad.expand_as({x})`); {_REDUCTION}"
        )
    if common == got:
        return (
            f"{argument} is broadcast in forward, so its gradient must be summed back over the "
            f"broadcast dimensions (`grad.sum_to_size({x}.shape)`); autograd would silently sum "
            "it, hiding a missing reduction"
        )
    return None  # each shape is larger in some dimension: no single fix to name


_REDUCTION = (
    "a reduction in forward (a sum, a mean) gives every reduced element the output's gradient "
    "(divided by the count, for a mean)"
)


def _dropped_dims(got: torch.Size, expected: torch.Size) -> list[int]:
    """The dims of `expected` whose removal leaves `got` (a reduction without keepdim), if any.

    Only when the shapes cannot simply broadcast: `[4]` for `[3, 4]` needs no unsqueeze.
    """
    if got.numel() >= expected.numel() or not 0 < len(got) < len(expected):
        return []
    try:
        if torch.broadcast_shapes(got, expected) == expected:
            return []
    except RuntimeError:
        pass
    dropped, position = [], 0
    for dim, size in enumerate(expected):
        if position < len(got) and got[position] == size:
            position += 1
        else:
            dropped.append(dim)
    return dropped if position == len(got) else []


def _forward_made_dtype(
    context: CaseContext, check: str, index: int, grad: torch.Tensor, argument: torch.Tensor
) -> Result:
    """A warning: the gradient's dtype is the one forward gave its exact outputs."""
    made = dtype_name(grad.dtype)
    line = cast_line(context.target)
    where = f" (made at {line})" if line else ""
    return context.result(
        check,
        Status.WARN,
        f"gradient of {context.describe_argument(index)} is {made}, as forward's outputs are"
        f"{where}, but the argument is {dtype_name(argument.dtype)}",
        input_index=index,
        hint=(
            f"forward returns exact values in {made} by design, so grad_output and the gradient "
            f"come in {made}; autograd casts the gradient to {dtype_name(argument.dtype)}. "
            "Nothing is lost unless backward's own arithmetic needs more precision"
        ),
    )


def _dtype_hint(grad: torch.dtype, argument: torch.dtype) -> str:
    if argument.is_complex and not grad.is_complex:
        # Cast to complex, a real gradient gets an imaginary part of 0: ∂L/∂Im z is lost.
        return (
            "a real gradient for a complex argument loses its imaginary part (the derivative "
            "with respect to the imaginary part); return a complex gradient, ∂L/∂x + i·∂L/∂y"
        )
    if grad.is_complex and not argument.is_complex:
        # autograd refuses it (a real input's gradient must be real), it does not cast
        return (
            "a complex gradient for a real argument: autograd raises on it; the gradient of a "
            "real input of a complex computation is the real part, `grad.real`"
        )
    return (
        "autograd silently casts it back, hiding the precision lost in backward; compute the "
        "gradient in the argument's dtype"
    )
