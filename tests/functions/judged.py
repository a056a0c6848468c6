"""A Function that counts its forward's runs, so that a test sees whether gradverify ran the
user's code (tests/test_judging.py: building the judges and judging passes runs none)."""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd import Function


class CountedSquare(Function):
    """y = x², right; `calls` counts forward's runs."""

    calls = 0

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        CountedSquare.calls += 1
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return 2 * x * grad_output
