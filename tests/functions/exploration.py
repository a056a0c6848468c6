"""Functions for explore: a bug in part of the input space only (or for another value of a
number), correct kinked ones, and correct ones whose other numbers draw at random."""

from __future__ import annotations

from typing import Any

import torch


class CubeWrongBelowMinusTwo(torch.autograd.Function):
    """y = x³; backward drops the factor 3 for inputs below -2 (a branch nobody tested)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        slope = torch.where(x < -2, x**2, 3 * x**2)
        return grad_output * slope


class Clamp(torch.autograd.Function):
    """y = clamp(x, -1, 1), correct: kinks at -1 and 1."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp(-1.0, 1.0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * ((x > -1) & (x < 1))


class AddMulWrongForLargeY(torch.autograd.Function):
    """y = x * w + b (w and x of one shape); the gradient of w is wrong where x > 2.5."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x * w + b

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x, w = ctx.saved_tensors
        grad_w = torch.where(x > 2.5, grad_output, grad_output * x)
        return grad_output * w, grad_w, grad_output.sum_to_size(1)


class PowerRightForSquares(torch.autograd.Function):
    """y = x**p; backward is 2x, right only for the spec's p = 2 (a bug another p shows)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, p: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x**p

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x, None


class Power(torch.autograd.Function):
    """y = x**p, correct for every p."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, p: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.p = p
        return x**p

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        return grad_output * ctx.p * x ** (ctx.p - 1), None


class DropoutWhenTraining(torch.autograd.Function):
    """Dropout, correct: with `training` on, forward draws a new mask on every call (so
    finite differences see noise); off, it is the identity."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
        keep = torch.rand_like(x) >= p if training else torch.ones_like(x, dtype=torch.bool)
        scale = 1 / (1 - p) if training else 1.0
        ctx.save_for_backward(keep)
        ctx.scale = scale
        return x * keep * scale

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (keep,) = ctx.saved_tensors
        return grad_output * keep * ctx.scale, None, None


class ScaledCubeWrongBelowMinusTwo(torch.autograd.Function):
    """y = scale · x³; backward drops the factor 3 below x = -2, whatever the scale."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.scale = scale
        return scale * x**3

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        slope = torch.where(x < -2, x**2, 3 * x**2)
        return grad_output * ctx.scale * slope, None
