"""Functions whose backward returns well-formed but wrong gradient values (one bug each)."""

from __future__ import annotations

from typing import Any

import torch


class WrongTransposeMatMul(torch.autograd.Function):
    """a @ b with grad_a = grad @ b instead of grad @ b.T.

    Bug in argument 0 only; the shapes agree only for square b, which the spec must use.
    """

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = ctx.saved_tensors
        return grad_output @ b, a.t() @ grad_output


class FlippedSign(torch.autograd.Function):
    """x**2 whose gradient has the wrong sign: -2x instead of 2x (every nonzero element)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return -grad_output * 2 * x


class MissingOneOverN(torch.autograd.Function):
    """x.mean(-1) whose backward forgets to divide by n: gradient n times too large."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.input_shape = x.shape
        return x.mean(-1)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output.unsqueeze(-1).expand(ctx.input_shape)


class WrongBroadcastReduction(torch.autograd.Function):
    """x + bias, x [N, C] and bias [C] broadcast over rows.

    Bug: the bias gradient is grad.mean(0) instead of grad.sum(0), N times too small;
    argument 1 only, x's gradient is right.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return x + bias

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return grad_output, grad_output.mean(0)


class BugOnlyInSecondArgument(torch.autograd.Function):
    """a * b whose grad_b is twice too large (2 * grad * a); grad_a is right."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = ctx.saved_tensors
        return grad_output * b, 2 * grad_output * a


class ZeroGradient(torch.autograd.Function):
    """x**2 whose backward returns zeros: every element wrong, yet nothing looks broken."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(grad_output)


class CubeWithCosineBackward(torch.autograd.Function):
    """x**3 whose backward is cos(x): a wrong formula that no error pattern names (no hint)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * torch.cos(x)
