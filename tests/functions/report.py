"""Functions whose one root cause shows up in several checks: the report must say it once."""

from __future__ import annotations

from typing import Any

import torch


class LogOfZero(torch.autograd.Function):
    """log(x) with x's first element replaced by 0: forward gives -inf there, backward inf.

    One non-finite output, and every check downstream of forward trips over it.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        zeroed = x.clone()
        zeroed.view(-1)[0] = 0.0
        ctx.save_for_backward(zeroed)
        return torch.log(zeroed)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (zeroed,) = ctx.saved_tensors
        return grad_output / zeroed


class MulWastesOnlyW(torch.autograd.Function):
    """y = x * w whose backward checks ctx.needs_input_grad for x but always computes w's.

    Correct, only wasteful for one argument (w).
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor]:
        x, w = ctx.saved_tensors
        grad_x = grad_output * w if ctx.needs_input_grad[0] else None
        return grad_x, grad_output * x


class WastesWCrashesWithoutX(torch.autograd.Function):
    """y = x * w whose backward always computes w's gradient (wasted when w is frozen) and
    leaves x's unassigned when x needs none (a crash when x is frozen)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            grad_x = grad_output * w
        return grad_x, grad_output * x  # grad_x unbound when x is frozen: the bug
