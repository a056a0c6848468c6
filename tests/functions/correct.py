"""Correct Functions: every check must pass on them, to first and second order."""

from __future__ import annotations

from typing import Any

import torch


class Square(torch.autograd.Function):
    """y = x**2."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x


class Scale(torch.autograd.Function):
    """y = alpha * x, alpha a float literal (gradient None)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, alpha: float) -> torch.Tensor:
        ctx.alpha = alpha
        return x * alpha

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad_output * ctx.alpha, None


class Mul(torch.autograd.Function):
    """y = a * b, elementwise, same shape."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = ctx.saved_tensors
        return grad_output * b, grad_output * a


class MatMul(torch.autograd.Function):
    """y = a @ b for 2-D a [n, k] and b [k, m]."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = ctx.saved_tensors
        return grad_output @ b.t(), a.t() @ grad_output


class SumDim(torch.autograd.Function):
    """y = x.sum(dim), dim an int literal."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int) -> torch.Tensor:
        ctx.dim = dim % x.dim()
        ctx.input_shape = x.shape
        return x.sum(dim)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad_output.unsqueeze(ctx.dim).expand(ctx.input_shape), None


class TwoOutputs(torch.autograd.Function):
    """(x * 2, x**2): two differentiable outputs, so backward takes two grad_outputs."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.save_for_backward(x)
        return x * 2, x * x

    @staticmethod
    def backward(ctx: Any, grad_double: torch.Tensor, grad_square: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_double * 2 + grad_square * 2 * x


class ArgmaxWithIndex(torch.autograd.Function):
    """(values, indices) of the max over the last dim; indices are non-differentiable."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values, indices = x.max(dim=-1)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.input_shape = x.shape
        return values, indices

    @staticmethod
    def backward(
        ctx: Any, grad_values: torch.Tensor, grad_indices: torch.Tensor | None
    ) -> torch.Tensor:
        (indices,) = ctx.saved_tensors
        grad_input = grad_values.new_zeros(ctx.input_shape)
        return grad_input.scatter(-1, indices.unsqueeze(-1), grad_values.unsqueeze(-1))


class SetupContextSquare(torch.autograd.Function):
    """y = x**2 in the new style: forward without ctx, state saved in setup_context."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x * x

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x
