"""Functions that look at, or run into, what a GPU run depends on (tests/device/): the TF32
switches while the checks run, and the CUDA allocator's out-of-memory error, raised here
on the CPU with the text CUDA gives it."""

from __future__ import annotations

from typing import Any

import torch

# What RecordsPrecision's forward saw, one entry per call: (matmul, cudnn conv) fp32_precision.
SEEN: list[tuple[str, str]] = []

CUDA_OUT_OF_MEMORY = (
    "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.19 GiB "
    "of which 3.12 GiB is free. Including non-PyTorch memory, this process has 76.05 GiB "
    "memory in use."
)


class RecordsPrecision(torch.autograd.Function):
    """x ↦ 2x, noting the float32 matmul and convolution precision each forward runs with."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        SEEN.append(
            (torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision)
        )
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 2


class BackwardOutOfMemory(torch.autograd.Function):
    """x ↦ 2x whose backward runs out of GPU memory, as a kernel too large for the card."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        raise torch.OutOfMemoryError(CUDA_OUT_OF_MEMORY)
