"""A float32-only Function and a CUDA-only one, as kernel libraries write them."""

from __future__ import annotations

from typing import Any

import torch


class ScaledTanh(torch.autograd.Function):
    """2·tanh(x), float32 only (TypeError for float64, as a Triton launcher raises): correct."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            raise TypeError(f"kernel supports float32 only, got {x.dtype}")
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return 2 * y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return 2 * grad_output * (1 - y * y)


class CudaSquare(torch.autograd.Function):
    """x², on CUDA tensors only (forward asserts it)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        assert x.is_cuda, "this kernel runs on CUDA only"
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return 2 * grad_output * x
