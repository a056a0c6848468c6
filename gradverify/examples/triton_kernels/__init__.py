"""SiLU written as Triton kernels, wrapped in torch.autograd.Functions: a correct one and a
twin whose backward kernel drops a term below x = -1.

The kernels (`silu.py` beside this file) need triton (`pip install 'gradverify[triton]'`)
and are imported the first time forward runs, so this package imports without it (and a
walk over `gradverify.examples`' modules never reaches them). They run on
CUDA tensors, or on CPU tensors when `TRITON_INTERPRET=1` is set before they are first run
(Triton's interpreter). Like most kernels they take float16, bfloat16 and float32 only and
refuse float64, so `specs_triton/silu.yaml` checks them in float32 against
`silu_reference`.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

import torch
from torch.autograd.function import once_differentiable

KERNEL_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
BLOCK = 1024


def _kernels(x: torch.Tensor) -> ModuleType:
    """The kernel module, after the checks a kernel launcher makes on its input."""
    if x.dtype not in KERNEL_DTYPES:
        raise TypeError(f"the Triton SiLU supports float16/bfloat16/float32, got {x.dtype}")
    if x.device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError(
            f"the Triton SiLU runs on CUDA tensors, got one on {x.device}; "
            "set TRITON_INTERPRET=1 to run it on the CPU through Triton's interpreter"
        )
    try:
        from gradverify.examples.triton_kernels import silu
    except ImportError as error:
        raise ImportError(
            "the Triton examples need triton: pip install 'gradverify[triton]'"
        ) from error
    return silu


def _grid(count: int) -> tuple[int]:
    return ((count + BLOCK - 1) // BLOCK,)


def _silu_forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
    kernels = _kernels(x)
    x = x.contiguous()
    y = torch.empty_like(x)
    kernels.silu_forward[_grid(x.numel())](x, y, x.numel(), BLOCK=BLOCK)
    ctx.save_for_backward(x)
    return y


def _silu_backward(ctx: Any, grad_output: torch.Tensor, kernel_name: str) -> torch.Tensor:
    (x,) = ctx.saved_tensors
    kernel = getattr(_kernels(x), kernel_name)
    grad_output = grad_output.contiguous()
    grad_x = torch.empty_like(x)
    kernel[_grid(x.numel())](x, grad_output, grad_x, x.numel(), BLOCK=BLOCK)
    return grad_x


class TritonSiLU(torch.autograd.Function):
    """y = x * sigmoid(x), forward and backward each one Triton kernel, float32 inside.

    A kernel's backward is not itself differentiable: once_differentiable says so, and a
    double backward raises rather than returning a wrong second derivative.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return _silu_forward(ctx, x)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return _silu_backward(ctx, grad_output, "silu_backward")


class TritonSiLUDroppedTerm(TritonSiLU):
    """TritonSiLU's forward; the backward kernel drops x * s * (1 - s) wherever x < -1.

    Bug: the gradient of x (argument 0) is sigmoid(x) below -1 instead of
    sigmoid(x) * (1 + x * (1 - sigmoid(x))): off by up to 0.22 near x = -1.28.
    """

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return _silu_backward(ctx, grad_output, "silu_backward_dropped_term")


def silu_reference(x: torch.Tensor) -> torch.Tensor:
    """SiLU in plain PyTorch; autograd gives its gradient."""
    return torch.nn.functional.silu(x)
