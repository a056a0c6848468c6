"""Elementwise activations with hand-written backward passes."""

from __future__ import annotations

from typing import Any

import torch


class ReLU(torch.autograd.Function):
    """y = max(x, 0)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * (x > 0)


class ClippedReLU(torch.autograd.Function):
    """y = clamp(x, 0, clip_val), as in ReLU6; the gradient is zero outside (0, clip_val)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, clip_val: float = 6.0) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.clip_val = clip_val
        return x.clamp(0.0, clip_val)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        inside = (x > 0) & (x < ctx.clip_val)
        return grad_output * inside, None
