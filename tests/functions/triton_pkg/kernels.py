"""y = 3 x as a Triton kernel, wrapped in a torch.autograd.Function."""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl
from torch.autograd.function import once_differentiable

BLOCK = 256


@triton.jit
def triple_kernel(x_pointer, y_pointer, count, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < count
    x = tl.load(x_pointer + offsets, mask=inside)
    tl.store(y_pointer + offsets, 3.0 * x, mask=inside)


def launch_triple(x: torch.Tensor) -> torch.Tensor:
    """3 x, through the kernel (on a contiguous copy: the kernel reads x flat)."""
    x = x.contiguous()
    y = torch.empty_like(x)
    triple_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, y, x.numel(), BLOCK=BLOCK)
    return y


class TripleKernel(torch.autograd.Function):
    """y = 3 x: forward and backward each launch the kernel (so backward is not itself
    differentiable: once_differentiable says so)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return launch_triple(x)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return launch_triple(grad_output)
