"""Correct Functions whose forward signatures vary: defaults, *args, keyword-only, new style.

Fixtures for gradverify.target.arity: a case must fit the signature before anything runs.
"""

from __future__ import annotations

from typing import Any

import torch


class SumAll(torch.autograd.Function):
    """y = sum of every tensor given: forward(ctx, *tensors) takes any number of inputs
    (and, given none, returns the int 0)."""

    @staticmethod
    def forward(ctx: Any, *tensors: torch.Tensor) -> Any:
        ctx.count = len(tensors)
        return sum(tensors)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(grad_output for _ in range(ctx.count))


class ScaledMul(torch.autograd.Function):
    """y = alpha * x * w, alpha optional: forward(ctx, x, w, alpha=1.0)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        ctx.alpha = alpha
        return alpha * x * w

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, ...]:
        x, w = ctx.saved_tensors
        return ctx.alpha * grad_output * w, ctx.alpha * grad_output * x, None


class NewStyleMul(torch.autograd.Function):
    """y = x * w in the new style: forward(x, w) without ctx, state saved in setup_context."""

    @staticmethod
    def forward(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x * w

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return grad_output * w, grad_output * x


class KeywordOnlyScale(torch.autograd.Function):
    """y = scale * x with scale keyword-only and required: apply() can never pass it."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, *, scale: float) -> torch.Tensor:
        ctx.scale = scale
        return scale * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return ctx.scale * grad_output
