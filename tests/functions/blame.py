"""Functions whose forward rejects every input inference guesses, each for another reason
than the shapes: the reason inference stopped must blame what forward blamed."""

from __future__ import annotations

from typing import Any

import torch


class ScaleFromContext(torch.autograd.Function):
    """forward reads an attribute nothing set: no shape would help."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * ctx.scale

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output * ctx.scale


class LogAboveOne(torch.autograd.Function):
    """y = log(log(x)), defined for x > 1 only: the values, not the shapes, are refused."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        if bool((x <= 1).any()):
            raise ValueError("x must be > 1")
        ctx.save_for_backward(x)
        return torch.log(torch.log(x))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output / (x * torch.log(x))


class Int8Only(torch.autograd.Function):
    """A quantized kernel: int8 only, a dtype inference never draws."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.int8:
            raise TypeError(f"expected dtype torch.int8, got {x.dtype}")
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output
