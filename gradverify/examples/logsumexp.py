"""Numerically stable log-sum-exp over one dimension."""

from __future__ import annotations

from typing import Any

import torch


class LogSumExp(torch.autograd.Function):
    """y = log(sum(exp(x), dim)), with `dim` dropped from the output.

    The max is subtracted before exponentiating so large inputs do not overflow.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        dim = dim % x.dim()
        shift = x.amax(dim, keepdim=True)
        # A slice that is all -inf would give inf - inf = nan; shifting by 0 keeps it -inf.
        shift = torch.where(torch.isfinite(shift), shift, torch.zeros_like(shift))
        output = ((x - shift).exp().sum(dim, keepdim=True).log() + shift).squeeze(dim)
        ctx.dim = dim
        ctx.save_for_backward(x, output)
        return output

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        x, output = ctx.saved_tensors
        # softmax(x) = exp(x - logsumexp(x)); built from saved tensors so it stays differentiable.
        softmax = (x - output.unsqueeze(ctx.dim)).exp()
        return grad_output.unsqueeze(ctx.dim) * softmax, None
