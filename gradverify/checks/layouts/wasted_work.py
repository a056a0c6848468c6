"""Wasted work: backward computes a gradient that ctx.needs_input_grad says is not needed.

Part of the `layouts` check: its requires_grad-off variants are where an argument's
needs_input_grad entry is False, so there backward's raw return values are inspected.
Handing grad_output (or another returned gradient) on again costs nothing, so it is not
wasted work.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from gradverify.checks.shared.backward_call import run_backward
from gradverify.checks.shared.case import CaseContext
from gradverify.numerics.graph import function_node
from gradverify.results import WASTED_WORK_WORDS, Result, Status
from gradverify.usercode import UserCodeError

WASTED_WORK_HINT = "check ctx.needs_input_grad before computing each gradient"


def computes_unneeded_gradient(
    context: CaseContext,
    input_index: int,
    outputs: Sequence[Any],
    arguments: Sequence[Any],
    grad_outputs: Sequence[torch.Tensor | None],
) -> bool:
    """Whether backward returns a gradient for `input_index` that ctx.needs_input_grad says
    is not needed, and computes it rather than handing a tensor it was given on again."""
    node = function_node(context.target, outputs)
    if node is None or len(outputs) != len(grad_outputs):
        return False
    try:
        raw = run_backward(context, outputs, arguments, grad_outputs)
    except UserCodeError:
        return False  # autograd's call of the same backward succeeded; `backward` judges this
    needed = node.needs_input_grad
    if (
        input_index >= len(raw)
        or raw[input_index] is None
        or input_index >= len(needed)
        or needed[input_index]
    ):
        return False
    others = [g for i, g in enumerate(raw) if i != input_index] + list(grad_outputs)
    # grad_output or another gradient handed on again: nothing computed
    return not shares_storage(raw[input_index], others)


def shares_storage(gradient: Any, others: Sequence[Any]) -> bool:
    """`gradient` is one of `others` or a view of one's memory (`return g, g`)."""
    if not isinstance(gradient, torch.Tensor):
        return False
    try:
        memory = gradient.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # a tensor without storage (sparse, ...)
        return any(gradient is other for other in others)
    for other in others:
        if not isinstance(other, torch.Tensor):
            continue
        if gradient is other:
            return True
        try:
            if memory and other.untyped_storage().data_ptr() == memory:
                return True
        except (RuntimeError, NotImplementedError):
            continue
    return False


def wasted_work_warning(context: CaseContext, check_id: str, indices: Sequence[int]) -> Result:
    """One warning naming every argument whose gradient backward computes in vain."""
    if len(indices) == 1:
        (index,) = indices
        return context.result(
            check_id,
            Status.WARN,
            f"backward computes a gradient for {context.describe_argument(index)} although "
            f"ctx.needs_input_grad[{index}] is False {WASTED_WORK_WORDS}",
            input_index=index,
            hint=WASTED_WORK_HINT,
        )
    names = [context.describe_argument(index) for index in indices]
    return context.result(
        check_id,
        Status.WARN,
        f"backward computes gradients for {', '.join(names[:-1])} and {names[-1]} even when "
        f"their ctx.needs_input_grad entry is False {WASTED_WORK_WORDS}",
        hint=WASTED_WORK_HINT,
    )
