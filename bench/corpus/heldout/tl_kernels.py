"""Triton elementwise kernels for the swish family (``x * sigmoid(beta * x)``).

``beta = 1`` is SiLU, ``beta = 1.702`` the sigmoid approximation of GELU. Kernels are
launched on flat contiguous buffers; backward is a single fused kernel and is not itself
differentiable.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.autograd.function import once_differentiable

try:
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - CPU-only installs
    triton = None
    tl = None

BLOCK = 64

if triton is not None:

    @triton.jit
    def _swish_fwd_kernel(x_ptr, y_ptr, n, beta, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        s = 1.0 / (1.0 + tl.exp(-beta * x))
        tl.store(y_ptr + offs, x * s, mask=mask)

    @triton.jit
    def _swish_bwd_kernel(x_ptr, g_ptr, dx_ptr, n, beta, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        g = tl.load(g_ptr + offs, mask=mask, other=0.0)
        s = 1.0 / (1.0 + tl.exp(-beta * x))
        tl.store(dx_ptr + offs, g * (s + beta * x * s * (1.0 - s)), mask=mask)

    @triton.jit
    def _swish_fused_bwd_kernel(x_ptr, g_ptr, dx_ptr, n, beta, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        g = tl.load(g_ptr + offs, mask=mask, other=0.0)
        s = tl.sigmoid(beta * x)
        y = x * s
        tl.store(dx_ptr + offs, g * (s + y * (1.0 - s)), mask=mask)


def _launch(kernel, *tensors, n, beta):
    if triton is None:
        raise RuntimeError("tl_kernels needs triton (set TRITON_INTERPRET=1 on CPU)")
    grid = (triton.cdiv(n, BLOCK),)
    kernel[grid](*tensors, n, beta, BLOCK=BLOCK)


class SwishKernel(torch.autograd.Function):
    """Swish ``x * sigmoid(beta * x)`` with Triton forward and backward kernels.

    x: any shape, floating; beta: float (any real; 1.0 gives SiLU).
    """

    @staticmethod
    def forward(ctx, x, beta: float = 1.0):
        xc = x.contiguous()
        y = torch.empty_like(xc)
        _launch(_swish_fwd_kernel, xc, y, n=xc.numel(), beta=float(beta))
        ctx.save_for_backward(xc)
        ctx.beta = float(beta)
        return y.view_as(x)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        g = grad.contiguous()
        dx = torch.empty_like(x)
        _launch(_swish_bwd_kernel, x, g, dx, n=x.numel(), beta=ctx.beta)
        return dx.view_as(grad), None


class FusedSwish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, beta: float = 1.0):
        xc = x.contiguous()
        y = torch.empty_like(xc)
        _launch(_swish_fwd_kernel, xc, y, n=xc.numel(), beta=float(beta))
        ctx.save_for_backward(xc)
        ctx.beta = float(beta)
        return y.view_as(x)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        g = grad.contiguous()
        dx = torch.empty_like(x)
        _launch(_swish_fused_bwd_kernel, x, g, dx, n=x.numel(), beta=ctx.beta)
        return dx.view_as(grad), None


class QuickGELU(nn.Module):
    """CLIP's ``x * sigmoid(1.702 x)``."""

    def __init__(self, fused: bool = False):
        super().__init__()
        self.fn = FusedSwish if fused else SwishKernel

    def forward(self, x):
        return self.fn.apply(x, 1.702)


def _mlp_step(fused):
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(4, 8), QuickGELU(fused), nn.Linear(8, 2))
    x = torch.randn(3, 4)
    mlp(x).pow(2).mean().backward()
    return mlp[0].weight.grad


def use_swish_kernel():
    return _mlp_step(fused=False)


def use_fused_swish():
    return _mlp_step(fused=True)
