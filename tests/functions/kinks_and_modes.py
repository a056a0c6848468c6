"""Functions for kink handling and gradient modes: correct ones with kinks, and buggy ones."""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd.function import once_differentiable


class Abs(torch.autograd.Function):
    """|x|, with the subgradient sign(x) (0 at 0): correct, kinked at 0."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.abs()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * torch.sign(x)


class ReLUWrongAtZero(torch.autograd.Function):
    """ReLU whose backward returns 2 at exactly x == 0: outside the one-sided slopes [0, 1]."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp_min(0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        slope = (x > 0).to(grad_output.dtype) + 2.0 * (x == 0).to(grad_output.dtype)
        return grad_output * slope


class OnceDifferentiableSquare(torch.autograd.Function):
    """x**2 with a backward marked @once_differentiable: correct; double backward raises."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x


class SlightlyOffSquare(torch.autograd.Function):
    """x**2 whose backward is 0.05% off, as an approximate gradient from an external library."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x * 1.0005


def sign_gradient_wrong(x: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
    """A deliberately different 'intended' gradient for StraightThroughSign: plain identity."""
    return grad_output
