"""Functions with seeded backward bugs, for the demo: each docstring names its bug."""

from __future__ import annotations

from typing import Any

import torch


class ClippedReLUForgotMask(torch.autograd.Function):
    """clamp(x, 0, clip_val) whose backward masks only x > 0.

    Bug: the upper mask is forgotten, so the gradient of x is grad_output instead of 0
    wherever x > clip_val.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, clip_val: float = 6.0) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.clip_val = clip_val
        return x.clamp(0.0, clip_val)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        return grad_output * (x > 0), None


class SwishWrongBeta(torch.autograd.Function):
    """x * sigmoid(beta * x) whose beta gradient drops a factor of x.

    Bug: grad_beta = sum(grad_output * x * s * (1 - s)) instead of
    sum(grad_output * x**2 * s * (1 - s)); the gradient of x (argument 0) is right,
    only argument 1 (beta) is wrong.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, beta)
        return x * torch.sigmoid(beta * x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, beta = ctx.saved_tensors
        sig = torch.sigmoid(beta * x)
        dsig = sig * (1 - sig)
        grad_x = grad_output * (sig + beta * x * dsig)
        grad_beta = (grad_output * x * dsig).sum().reshape(beta.shape)
        return grad_x, grad_beta


class LinearTransposedWeightGrad(torch.autograd.Function):
    """input @ weight.T (no bias) whose weight gradient is transposed.

    Bug: grad_weight = input.T @ grad_output instead of grad_output.T @ input. The shapes
    only agree for a square weight, which is how the bug survives; argument 1 (weight) is
    wrong, the gradient of input (argument 0) is right.
    """

    @staticmethod
    def forward(ctx: Any, input: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(input, weight)
        return input.mm(weight.t())

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        input, weight = ctx.saved_tensors
        grad_input = grad_output.mm(weight)
        grad_weight = input.t().mm(grad_output)
        return grad_input, grad_weight
