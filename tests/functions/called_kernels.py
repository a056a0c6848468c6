"""Kernels in the style of Triton's, for tests/functions/called_helpers.py: `@jit` functions
launched as `kernel[grid](x, out, n)`, written to pointers (here: the tensors themselves)
and computed with torch, so that no test needs triton. The branch at x = -2 of the buggy
backward kernel lives only here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


class Launch:
    """What `@jit` makes of a kernel: `kernel[grid]` is the kernel, run once for the grid."""

    def __init__(self, kernel: Callable[..., None]) -> None:
        self.kernel = kernel

    def __getitem__(self, grid: tuple[int, ...]) -> Callable[..., None]:
        return self.kernel


def jit(kernel: Callable[..., None]) -> Launch:
    return Launch(kernel)


@jit
def silu_forward(x_pointer: Any, y_pointer: Any, count: int) -> None:
    """y = x * sigmoid(x)."""
    x = x_pointer[:count]
    y_pointer[:count] = x * torch.sigmoid(x)


@jit
def silu_backward(x_pointer: Any, grad_y_pointer: Any, grad_x_pointer: Any, count: int) -> None:
    """grad_x = grad_y * (s + x * s * (1 - s)), s = sigmoid(x)."""
    x = x_pointer[:count]
    s = torch.sigmoid(x)
    grad_x_pointer[:count] = grad_y_pointer[:count] * (s + x * s * (1.0 - s))


@jit
def silu_backward_dropped_term(
    x_pointer: Any, grad_y_pointer: Any, grad_x_pointer: Any, count: int
) -> None:
    """Bug: below x = -2 the x * s * (1 - s) term is dropped (off by 0.14 at x = -3)."""
    x = x_pointer[:count]
    s = torch.sigmoid(x)
    slope = torch.where(x < -2.0, s, s + x * s * (1.0 - s))
    grad_x_pointer[:count] = grad_y_pointer[:count] * slope
