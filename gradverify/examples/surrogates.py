"""Surrogate gradients from the field: backward is on purpose not the derivative.

`ClampWithGrad` and `ReplaceGrad` are as in VQGAN+CLIP notebooks; `StraightThroughSign` is the
straight-through estimator of binarized networks (the hardtanh variant).
"""

from __future__ import annotations

from typing import Any

import torch


class ClampWithGrad(torch.autograd.Function):
    """clamp(x, min, max) whose gradient still pushes values back inside the range."""

    @staticmethod
    def forward(ctx: Any, input: torch.Tensor, min: float, max: float) -> torch.Tensor:
        ctx.min = min
        ctx.max = max
        ctx.save_for_backward(input)
        return input.clamp(min, max)

    @staticmethod
    def backward(ctx: Any, grad_in: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (input,) = ctx.saved_tensors
        inside_or_returning = grad_in * (input - input.clamp(ctx.min, ctx.max)) >= 0
        return grad_in * inside_or_returning, None, None


class ReplaceGrad(torch.autograd.Function):
    """Forward passes `x_forward`; backward routes the whole gradient to `x_backward`."""

    @staticmethod
    def forward(ctx: Any, x_forward: torch.Tensor, x_backward: torch.Tensor) -> torch.Tensor:
        ctx.shape = x_backward.shape
        return x_forward.clone()

    @staticmethod
    def backward(ctx: Any, grad_in: torch.Tensor) -> tuple[None, torch.Tensor]:
        return None, grad_in.sum_to_size(ctx.shape)


class StraightThroughSign(torch.autograd.Function):
    """sign(x) forward; the gradient passes straight through where |x| <= 1."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * (x.abs() <= 1).to(grad_output.dtype)


def straight_through_sign_gradient(x: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
    """The intended gradient of StraightThroughSign: hardtanh's derivative times grad_output."""
    return torch.where(x.abs() <= 1, grad_output, torch.zeros_like(grad_output))


def replace_grad_gradient(
    x_forward: torch.Tensor, x_backward: torch.Tensor, grad_output: torch.Tensor
) -> tuple[None, torch.Tensor]:
    """The intended gradient of ReplaceGrad: all of it to x_backward, summed to its shape."""
    return None, grad_output.sum_to_size(x_backward.shape)
