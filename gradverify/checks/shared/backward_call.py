"""Calling backward as the checks do: seeded grad_outputs for forward's outputs, and
backward's raw return (backward, layouts and compile call it so)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from gradverify.checks.shared.case import CaseContext
from gradverify.numerics.graph import backward_return
from gradverify.numerics.jacobian import differentiable_outputs
from gradverify.usercode import user_code

Gradients = tuple[Any, ...]  # one entry per forward argument


def seeded_grad_outputs(
    outputs: Sequence[Any], generator: torch.Generator
) -> list[torch.Tensor | None]:
    """Seeded random grad_outputs for differentiable outputs; zeros for the others, as autograd does."""
    differentiable = {index for index, _ in differentiable_outputs(outputs)}
    grads: list[torch.Tensor | None] = []
    for index, output in enumerate(outputs):
        if not isinstance(output, torch.Tensor):
            grads.append(None)
        elif index in differentiable:
            random = torch.randn(output.shape, generator=generator, dtype=torch.float64)
            grads.append(random.to(dtype=output.dtype, device=output.device))
        else:
            grads.append(torch.zeros_like(output))
    return grads


def run_backward(
    context: CaseContext,
    outputs: Sequence[Any],
    arguments: Sequence[Any],
    grad_outputs: Sequence[Any],
) -> Gradients:
    """backward's raw return, called directly where possible so that autograd casts nothing."""
    with user_code("backward"):
        return backward_return(context.target, outputs, arguments, grad_outputs)
