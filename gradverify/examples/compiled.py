"""Functions under torch.compile: two that compile whole, one that graph-breaks.

All three have correct gradients; the `compile` check tells them apart.
"""

from __future__ import annotations

from typing import Any

import torch


class ScaledSin(torch.autograd.Function):
    """y = scale * sin(x), classic style (forward takes ctx), scale a float literal."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.scale = scale
        return scale * torch.sin(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        return grad_output * ctx.scale * torch.cos(x), None


class SoftClip(torch.autograd.Function):
    """y = limit * tanh(x / limit), new style (setup_context), the form torch.func prefers."""

    @staticmethod
    def forward(x: torch.Tensor, limit: float) -> torch.Tensor:
        return limit * torch.tanh(x / limit)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        _, limit = inputs
        ctx.save_for_backward(output)
        ctx.limit = limit

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (output,) = ctx.saved_tensors
        return grad_output * (1 - (output / ctx.limit) ** 2), None


class MeanCentered(torch.autograd.Function):
    """y = x - mean(x), with the mean read out as a Python float: correct, but `.item()` is a
    graph break, so torch.compile runs it in pieces (and fullgraph=True refuses it)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean().item()  # a Python number: dynamo cannot keep it in the graph
        return x - mean

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output - grad_output.mean()
