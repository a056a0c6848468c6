"""Swish with a learnable beta, with a backward that is itself differentiable."""

from __future__ import annotations

from typing import Any

import torch


class Swish(torch.autograd.Function):
    """y = x * sigmoid(beta * x), beta a one-element tensor (shape [] or [1]) broadcast over x.

    The backward uses only ordinary torch ops on the saved tensors, so autograd can
    differentiate it again (double backward, gradgradcheck).
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, beta)
        return x * torch.sigmoid(beta * x)

    @staticmethod
    def backward(
        ctx: Any, grad_output: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        x, beta = ctx.saved_tensors
        sig = torch.sigmoid(beta * x)
        dsig = sig * (1 - sig)
        grad_x = grad_beta = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_output * (sig + beta * x * dsig)
        if ctx.needs_input_grad[1]:
            # beta was broadcast over every element of x: sum, then give it beta's own shape.
            grad_beta = (grad_output * x * x * dsig).sum().reshape(beta.shape)
        return grad_x, grad_beta
