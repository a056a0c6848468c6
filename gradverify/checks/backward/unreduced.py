"""A broadcast argument's gradient that backward returns unreduced, and autograd sums back.

`y = x + b` with x [3, 4] and b [4]: a backward that returns grad_output, [3, 4], for b is
no wrong gradient through autograd, which sums any gradient that broadcasts to its
argument back to the argument's shape (`sum_to_size`). Measured with torch 2.13 (pinned in
tests/checks/test_unreduced_paths.py), every path through autograd delivers the reduced
gradient: `autograd.grad` and `.backward()`, double backward, `torch.func.grad`, `vjp`,
`jacrev` and `vmap` (with `setup_context`), `torch.compile`, checkpointing. Only code that
calls backward itself gets the unreduced tensor. So it is a warning with its cost, and the
gradient autograd delivers is checked here along one random direction against central
differences, so that the warning says whether it is right.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from gradverify.checks.shared.backward_call import broadcasts_back
from gradverify.checks.shared.case import CaseContext
from gradverify.checks.shared.own_precision import own_precision
from gradverify.inputs import fresh_copies
from gradverify.numerics import seeded
from gradverify.numerics.compare import wide_dtype
from gradverify.numerics.salts import Salt
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError, call_forward

PATHS = (
    "every path through autograd reduces it (autograd.grad and .backward(), double "
    "backward, torch.func.grad/vjp/jacrev/vmap, torch.compile and checkpointing, as measured "
    "with torch 2.13); only code that calls backward itself gets the unreduced tensor"
)


def summed_by_autograd(grad: torch.Tensor, argument: torch.Tensor) -> bool:
    """Whether autograd sums this gradient back to the argument's shape (it broadcasts to it
    with more elements): `[3, 4]` for `[4]`, or `[3, 4]` for `[1, 4]`."""
    if grad.shape == argument.shape or grad.numel() <= argument.numel():
        return False
    return broadcasts_back(grad.shape, argument.shape)


def unreduced_warning(
    context: CaseContext,
    check: str,
    index: int,
    grad: torch.Tensor,
    outputs: Sequence[Any],
    grad_outputs: Sequence[torch.Tensor | None],
) -> Result:
    """The warning for argument `index`, whose gradient `grad` autograd sums back."""
    argument = context.arguments[index]
    shape = list(argument.shape)
    dims = _summed_dims(tuple(grad.shape), tuple(argument.shape))
    over = f"over dim {dims[0]}" if len(dims) == 1 else f"over dims {', '.join(map(str, dims))}"
    plan = own_precision(context)  # float64 differences say nothing of a float32 kernel
    right = plan is None and _delivered_is_right(context, index, grad, outputs, grad_outputs)
    verdict = (
        "and the gradient it delivers is right (checked against central differences along a "
        "random direction)"
        if right
        else "but the gradient it delivers does not match central differences either (see "
        "finite_difference)"
        if plan is None
        else f"and `finite_difference` checks the gradient it delivers ({plan.note})"
    )
    name = context.target.argument_name(index) or "x"
    extra = grad.numel() - argument.numel()
    cost = (
        f"the unreduced gradient holds {grad.numel()} elements where {argument.numel()} are "
        f"kept ({extra * grad.element_size()} bytes more, {grad.numel() / argument.numel():.3g}×), "
        "and autograd runs one more sum kernel after backward"
    )
    return context.result(
        check,
        Status.WARN,
        f"gradient of {context.describe_argument(index)} has shape {list(grad.shape)}, but the "
        f"argument has shape {shape}: autograd sums it to {shape} ({over}), {verdict}",
        input_index=index,
        hint=f"return `grad.sum_to_size({name}.shape)` from backward: {cost}; {PATHS}",
    )


def _summed_dims(got: tuple[int, ...], expected: tuple[int, ...]) -> list[int]:
    """The dims of `got` that sum_to_size(expected) sums over."""
    lead = len(got) - len(expected)
    return [*range(lead)] + [
        lead + dim for dim, size in enumerate(expected) if size == 1 and got[lead + dim] != 1
    ]


def _delivered_is_right(
    context: CaseContext,
    index: int,
    grad: torch.Tensor,
    outputs: Sequence[Any],
    grad_outputs: Sequence[torch.Tensor | None],
) -> bool:
    """<delivered gradient, v> against the central difference of <grad_outputs, forward>
    along a random direction v of argument `index`, in float64: one pair of forward calls."""
    arguments = fresh_copies(context.arguments, torch.float64)
    base = arguments[index].detach()
    generator = context.generator(Salt.UNREDUCED_DIRECTION)
    direction = seeded.normal(base.shape, generator, base.device)
    eps = context.tolerance.eps
    try:
        plus = _weighted_output(context, arguments, index, base + eps * direction, grad_outputs)
        minus = _weighted_output(context, arguments, index, base - eps * direction, grad_outputs)
    except (UserCodeError, RuntimeError):
        return False
    numerical = (plus - minus) / (2 * eps)
    delivered = grad.detach().to(wide_dtype(grad)).sum_to_size(base.shape)
    analytical = float((delivered.conj() * direction).real.sum())  # Re<g, v>: complex g too
    tolerance = context.tolerance.atol + context.tolerance.rtol * abs(numerical)
    return abs(analytical - numerical) <= tolerance


def _weighted_output(
    context: CaseContext,
    arguments: Sequence[Any],
    index: int,
    value: torch.Tensor,
    grad_outputs: Sequence[torch.Tensor | None],
) -> float:
    """Re Σ conj(grad_output) · output at the arguments with argument `index` set to
    `value`: the real loss whose gradient backward gives, complex outputs too."""
    perturbed = list(arguments)
    perturbed[index] = value
    with torch.no_grad():
        produced = call_forward(context.target.call, perturbed)
    total = 0.0
    for output, grad_output in zip(produced, grad_outputs, strict=False):
        if isinstance(output, torch.Tensor) and grad_output is not None:
            wide = wide_dtype(grad_output, output)
            weighted = grad_output.to(wide).conj() * output.detach().to(wide)
            total += float(weighted.real.sum())
    return total
