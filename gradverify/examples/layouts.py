"""A Function whose `.view` assumes contiguous memory: right for some layouts, a crash for others."""

from __future__ import annotations

from typing import Any

import torch


class FlattenScale(torch.autograd.Function):
    """y = x.flatten(1) * scale: each sample's features flattened, then scaled one by one.

    x is [N, ...] and scale is [F], F the number of features per sample. The bug: forward
    flattens with `x.view(N, -1)`, which needs the merged dims laid out contiguously, so a
    non-contiguous x (as `x.transpose(1, 2)` hands it over) makes forward raise. The values
    are right for contiguous inputs, so every value check passes; `.reshape` is the fix.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, scale)
        return x.view(x.shape[0], -1) * scale

    @staticmethod
    def backward(
        ctx: Any, grad_output: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        x, scale = ctx.saved_tensors
        grad_x = grad_scale = None
        if ctx.needs_input_grad[0]:
            grad_x = (grad_output * scale).view(x.shape)
        if ctx.needs_input_grad[1]:
            grad_scale = (grad_output * x.view(x.shape[0], -1)).sum(0)
        return grad_x, grad_scale
