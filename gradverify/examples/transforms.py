"""Functions written for torch.func (setup_context style), correct and seeded-buggy.

Each docstring names its bug. The `func` check runs torch.func.grad, vjp, jacrev and jacfwd
over them and compares with finite differences.
"""

from __future__ import annotations

from typing import Any

import torch


class Softplus(torch.autograd.Function):
    """log(1 + exp(beta·x)) / beta, transformable: forward without ctx, setup_context,
    generate_vmap_rule and a jvp, so every torch.func transform works. Correct."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor, beta: float) -> torch.Tensor:
        return torch.nn.functional.softplus(x, beta=beta)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        x, beta = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.beta = beta

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(ctx.beta * x), None

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor, _: None) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return x_tangent * torch.sigmoid(ctx.beta * x)


class Narrow(torch.autograd.Function):
    """x[..., start:stop], the slice of the last dim, in the setup_context style with
    generate_vmap_rule.

    Bug (torch.func only): backward writes grad_output into the slice of a zeros tensor
    shaped like x, in place. Eager autograd and torch.vmap are right, and so are
    torch.func.grad and vjp; but torch.func.jacrev runs backward under torch.vmap with x
    not batched and grad_output batched, and a batched value cannot be written into a tensor
    that is not batched: jacrev raises. Padding grad_output out of place
    (torch.nn.functional.pad) works everywhere.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        return x[..., start:stop]

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        x, ctx.start, ctx.stop = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (x,) = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        grad_x[..., ctx.start : ctx.stop] = grad_output
        return grad_x, None, None
