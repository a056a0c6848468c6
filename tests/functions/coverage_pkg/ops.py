"""Correct Functions of three kinds for gradient coverage: one a spec names (Cube), one whose
inputs zero-config infers (Twice), one it cannot (SumAll: forward(ctx, *tensors))."""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd import Function as AutogradFunction


class Cube(torch.autograd.Function):
    """y = x ** 3."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x**2


class Twice(AutogradFunction):
    """y = 2 x, derived from Function under another name."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return 2 * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return 2 * grad_output


class _Summing(torch.autograd.Function):
    """A base with backward only: a mixin, not a Function to check."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (grad_output,) * ctx.count


class SumAll(_Summing):
    """y = the sum of every tensor given: how many, only a spec can say."""

    @staticmethod
    def forward(ctx: Any, *tensors: torch.Tensor) -> torch.Tensor:
        ctx.count = len(tensors)
        return torch.stack(tensors).sum(0)


def not_a_function(x: torch.Tensor) -> torch.Tensor:
    return Cube.apply(x)
