"""A Function slow enough to interrupt mid-case: forward sleeps, in short steps, for minutes."""

from __future__ import annotations

import time
from typing import Any

import torch


class SleepsInForward(torch.autograd.Function):
    """Correct, but forward takes about five minutes."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        for _ in range(3000):
            time.sleep(0.1)
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output * 2


class SleepsInBackward(torch.autograd.Function):
    """Correct, but backward takes about five minutes: slow, not wrong."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        for _ in range(3000):
            time.sleep(0.1)
        return grad_output * 2
