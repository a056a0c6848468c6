"""Triton kernels for activation and normalisation layers, with autograd wrappers.

The kernels take float32, float16 or bfloat16 and compute in float32. They run on CUDA
tensors, or on CPU tensors under Triton's interpreter (``TRITON_INTERPRET=1``, set before
this module is imported). Importing this module does not need triton; calling a kernel
does. The backward kernels are first-order only (``once_differentiable``).
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn
from torch.autograd.function import once_differentiable

try:
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - exercised only without triton
    triton = None
    tl = None

SUPPORTED = (torch.float32, torch.float16, torch.bfloat16)


def _check(x: torch.Tensor) -> None:
    if triton is None:
        raise ImportError("these kernels need triton: pip install triton")
    if x.dtype not in SUPPORTED:
        raise TypeError(f"kernel supports float16/bfloat16/float32, got {x.dtype}")
    if x.device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("CPU tensors need TRITON_INTERPRET=1")


if triton is not None:

    @triton.jit
    def _softplus_fwd(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        # log(1 + e^x) = max(x, 0) + log(1 + e^-|x|)
        y = tl.maximum(x, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(x)))
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def _softplus_bwd(x_ptr, dy_ptr, dx_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        dx = dy * tl.sigmoid(x)
        tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def _rmsnorm_fwd(x_ptr, w_ptr, y_ptr, rstd_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        tl.store(rstd_ptr + row, rstd)
        y = x * rstd * w
        tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def _rmsnorm_bwd(
        x_ptr, w_ptr, dy_ptr, rstd_ptr, dx_ptr, dw_ptr, stride, n_cols, BLOCK: tl.constexpr
    ):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + row)
        xhat = x * rstd
        wdy = w * dy
        c = tl.sum(xhat * wdy, axis=0) / n_cols
        dx = (wdy - xhat * c) * rstd
        tl.store(dx_ptr + row * stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        # per-row partial weight gradients, summed over rows on the host
        tl.store(dw_ptr + row * stride + cols, dy * xhat, mask=mask)

    @triton.jit
    def _rmsnorm_bwd_dx(x_ptr, w_ptr, dy_ptr, dx_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
        # recomputes rstd from x instead of reading it back
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        xhat = x * rstd
        wdy = w * dy
        c = tl.sum(xhat * wdy, axis=0) / BLOCK
        dx = (wdy - xhat * c) * rstd
        tl.store(dx_ptr + row * stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)


def _grid1d(n: int, block: int) -> tuple[int]:
    return (triton.cdiv(n, block),)


class TritonSoftplus(torch.autograd.Function):
    BLOCK = 256

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        _check(x)
        x = x.contiguous()
        y = torch.empty_like(x)
        _softplus_fwd[_grid1d(x.numel(), TritonSoftplus.BLOCK)](
            x, y, x.numel(), BLOCK=TritonSoftplus.BLOCK
        )
        ctx.save_for_backward(x)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, dy: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        dy = dy.contiguous()
        dx = torch.empty_like(x)
        _softplus_bwd[_grid1d(x.numel(), TritonSoftplus.BLOCK)](
            x, dy, dx, x.numel(), BLOCK=TritonSoftplus.BLOCK
        )
        return dx


class TritonRMSNorm(torch.autograd.Function):
    """RMSNorm over the last dim, one program per row. x: [M, N], weight: [N]."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6):
        _check(x)
        x = x.contiguous()
        m, n = x.shape
        block = triton.next_power_of_2(n)
        y = torch.empty_like(x)
        rstd = torch.empty(m, dtype=torch.float32, device=x.device)
        _rmsnorm_fwd[(m,)](x, weight, y, rstd, x.stride(0), n, eps, BLOCK=block)
        ctx.save_for_backward(x, weight, rstd)
        ctx.block = block
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, dy: torch.Tensor):
        x, weight, rstd = ctx.saved_tensors
        m, n = x.shape
        dy = dy.contiguous()
        dx = torch.empty_like(x)
        dw_rows = torch.empty(m, n, dtype=torch.float32, device=x.device)
        _rmsnorm_bwd[(m,)](x, weight, dy, rstd, dx, dw_rows, x.stride(0), n, BLOCK=ctx.block)
        return dx, dw_rows.sum(0).to(weight.dtype), None


class RMSNormKernel(torch.autograd.Function):
    """Memory-lean RMSNorm: saves nothing but x and weight, recomputes the statistics.

    x: [M, N] with N <= 8192; weight: [N].
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6):
        _check(x)
        x = x.contiguous()
        m, n = x.shape
        block = triton.next_power_of_2(n)
        y = torch.empty_like(x)
        rstd = torch.empty(m, dtype=torch.float32, device=x.device)
        _rmsnorm_fwd[(m,)](x, weight, y, rstd, x.stride(0), n, eps, BLOCK=block)
        ctx.save_for_backward(x, weight)
        ctx.eps = eps
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, dy: torch.Tensor):
        x, weight = ctx.saved_tensors
        m, n = x.shape
        dy = dy.contiguous()
        dx = torch.empty_like(x)
        block = triton.next_power_of_2(n)
        _rmsnorm_bwd_dx[(m,)](x, weight, dy, dx, x.stride(0), n, ctx.eps, BLOCK=block)
        xf = x.float()
        xhat = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + ctx.eps)
        dw = (dy.float() * xhat).sum(0)
        return dx, dw.to(weight.dtype), None


# --------------------------------------------------------------------------------------
# Modules


class TritonRMSNormLayer(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6, recompute: bool = False) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps
        self.recompute = recompute

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        fn = RMSNormKernel if self.recompute else TritonRMSNorm
        return fn.apply(x.reshape(-1, shape[-1]), self.weight, self.eps).reshape(shape)


# --------------------------------------------------------------------------------------
# Usage (needs TRITON_INTERPRET=1 on a machine without a GPU)


def use_triton_softplus() -> None:
    torch.manual_seed(0)
    lin = nn.Linear(8, 8)
    x = torch.randn(4, 8)
    TritonSoftplus.apply(lin(x)).sum().backward()
    assert lin.weight.grad is not None


def use_triton_rms_norm() -> None:
    torch.manual_seed(0)
    norm = TritonRMSNormLayer(24)
    x = torch.randn(2, 3, 24, requires_grad=True)
    norm(x).pow(2).mean().backward()
    assert norm.weight.grad is not None


def use_rms_norm_kernel() -> None:
    torch.manual_seed(0)
    norm = TritonRMSNormLayer(24, recompute=True)
    x = torch.randn(2, 3, 24, requires_grad=True)
    norm(x).pow(2).mean().backward()
    assert x.grad is not None
