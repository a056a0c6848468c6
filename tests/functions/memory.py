"""Functions whose own code runs out of memory: a failure of the check, never of the run."""

from __future__ import annotations

from typing import Any

import torch

# 2^53 float64 elements: 72 PB, more than any machine has, so the allocation fails at once.
IMPOSSIBLE_SHAPE = (2**20, 2**20, 2**13)


class RaisesMemoryErrorInForward(torch.autograd.Function):
    """y = x**2, but forward raises MemoryError (as a Python-side allocation does)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        raise MemoryError

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output


class AllocatesTooMuchInBackward(torch.autograd.Function):
    """y = x**2; backward asks torch for a buffer no machine has."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        scratch = torch.empty(IMPOSSIBLE_SHAPE, dtype=torch.float64)
        return grad_output * 2 * x + scratch.sum()
