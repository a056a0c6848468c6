"""The Function; its backward calls into conv/lowlevel.py, which raises."""

from __future__ import annotations

from typing import Any

import torch

from .conv import lowlevel as conv_lowlevel


class FilterWithBrokenBackward(torch.autograd.Function):
    """y = 2x; backward delegates to a helper in another lowlevel.py that raises."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return 2 * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return conv_lowlevel.filter_gradient(grad_output)
