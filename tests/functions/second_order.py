"""Functions whose first derivative is right and whose second derivative is wrong."""

from __future__ import annotations

from typing import Any

import torch


class DetachedBackwardSquare(torch.autograd.Function):
    """x**2 whose backward detaches x.

    Bug: first-order gradients are right, but autograd cannot see through x.detach(), so
    the second derivative d/dx (2 * x * grad_output) comes out 0 instead of 2 * grad_output,
    silently; only gradgradcheck catches it.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x.detach()
