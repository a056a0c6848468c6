"""Elementwise Functions with kinks, for inputs from 10³ to 10⁷ elements.

All are correct except those named `...WrongAtOneElement`, whose gradient is off at the one
flat index WRONG_INDEX (modulo the input's size).
"""

from __future__ import annotations

from typing import Any

import torch

# The flat index whose gradient the `...WrongAtOneElement` Functions get wrong.
WRONG_INDEX = 7_654_321


class MyReLU(torch.autograd.Function):
    """The tutorial's ReLU: the mask of the input's sign."""

    @staticmethod
    def forward(ctx: Any, input: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (input,) = ctx.saved_tensors
        return grad_output * (input > 0)


class Clamp(torch.autograd.Function):
    """clamp(x, -0.5, 0.5): kinks at both bounds."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp(-0.5, 0.5)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * ((x >= -0.5) & (x <= 0.5))


class ClampAtZero(torch.autograd.Function):
    """clamp(x, 0, 1): a kink at 0, where small ranges around 0 put many inputs."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp(0.0, 1.0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * ((x > 0) & (x < 1))


class LeakyReLU(torch.autograd.Function):
    """max(x, 0.01·x)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.where(x > 0, x, 0.01 * x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * torch.where(x > 0, 1.0, 0.01).to(grad_output.dtype)


class Hardtanh(torch.autograd.Function):
    """clamp(x, -1, 1) written with torch.where: kinks at ±1."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.where(x < -1, -1.0, torch.where(x > 1, 1.0, x)).to(x.dtype)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * ((x >= -1) & (x <= 1))


class Softplus(torch.autograd.Function):
    """log(1 + exp(x)): smooth."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)


class ReLUWrongAtOneElement(torch.autograd.Function):
    """MyReLU whose gradient is doubled at flat index WRONG_INDEX (modulo its size)."""

    @staticmethod
    def forward(ctx: Any, input: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (input,) = ctx.saved_tensors
        grad = grad_output * (input > 0)
        return _doubled_at(grad, WRONG_INDEX % grad.numel())


class ClampWrongAtOneElement(torch.autograd.Function):
    """Clamp(-0.5, 0.5) whose gradient inside the bounds is 2 at flat index WRONG_INDEX."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp(-0.5, 0.5)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        grad = grad_output * ((x >= -0.5) & (x <= 0.5))
        return _doubled_at(grad, WRONG_INDEX % grad.numel())


def _doubled_at(grad: torch.Tensor, index: int) -> torch.Tensor:
    # Out of place and differentiable, so that double backward sees the same wrong element.
    scale = torch.ones(grad.numel(), dtype=grad.dtype)
    scale[index] = 2.0
    return grad * scale.reshape(grad.shape)
