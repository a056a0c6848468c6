"""Fused normalisation / quantisation kernels that accumulate in float32.

Whatever dtype comes in (bf16 / fp16 activations, or fp64 in tests), the arithmetic runs
in float32 and results are cast back to the input dtype, matching the CUDA kernels these
replace on CPU. The backward passes are fused too and are first-order only.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.autograd.function import once_differentiable


class RMSNorm32(torch.autograd.Function):
    """Root-mean-square norm over the last dim, computed in float32.

    Args:
        x: ``[..., D]``.
        weight: ``[D]``.
        eps: added to the mean square; must be > 0.

    Returns ``x / sqrt(mean(x^2) + eps) * weight`` in ``x.dtype``.
    """

    @staticmethod
    def forward(ctx, x, weight, eps: float = 1e-6):
        xf, wf = x.float(), weight.float()
        rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, rstd)
        return (xf * rstd * wf).to(x.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        x, weight, rstd = ctx.saved_tensors
        xhat = x.float() * rstd
        gf = grad.float()
        gy = gf * weight.float()
        grad_x = rstd * (gy - xhat * (gy * xhat).mean(-1, keepdim=True))
        grad_w = (gf * xhat).reshape(-1, x.shape[-1]).sum(0)
        return grad_x.to(x.dtype), grad_w.to(weight.dtype), None


class FusedRMSNormF32(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps: float = 1e-6):
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).float()
        rstd = (x2.square().mean(dim=1, keepdim=True) + eps).rsqrt()
        ctx.save_for_backward(x2, weight, rstd)
        ctx.shape, ctx.dtype = shape, x.dtype
        return (x2 * rstd * weight.float()).reshape(shape).to(x.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        x2, weight, rstd = ctx.saved_tensors
        g2 = grad.reshape(x2.shape).float()
        xhat = x2 * rstd
        wg = g2 * weight.float()
        dot = (wg * xhat).sum(dim=1, keepdim=True)
        dx = rstd * (wg - xhat * dot)
        dw = (g2 * xhat).sum(0)
        return dx.reshape(ctx.shape).to(ctx.dtype), dw.to(weight.dtype), None


class FakeQuantSTE(torch.autograd.Function):
    """Symmetric int8 fake quantisation with a straight-through estimator.

    forward:  ``clamp(round(x / scale), qmin, qmax) * scale`` (float32 internally).
    backward: the rounding is treated as the identity (straight-through), and the
    gradient is zeroed where ``x / scale`` falls outside ``[qmin, qmax]`` (the clamp's own
    derivative). This is the usual QAT surrogate, not the (zero almost everywhere)
    derivative of the rounding.

    ``scale`` must be > 0.
    """

    @staticmethod
    def forward(ctx, x, scale: float, qmin: int = -128, qmax: int = 127):
        v = x.float() / scale
        ctx.save_for_backward((v >= qmin) & (v <= qmax))
        return (torch.clamp(torch.round(v), qmin, qmax) * scale).to(x.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (inside,) = ctx.saved_tensors
        return grad * inside.to(grad.dtype), None, None, None


class Saturate32(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, limit: float):
        return x.float().clamp(-limit, limit).to(x.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        return grad, None


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6, fused: bool = False):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps
        self.fn = FusedRMSNormF32 if fused else RMSNorm32

    def forward(self, x):
        return self.fn.apply(x, self.weight, self.eps)


class QATLinear(nn.Linear):
    """Linear layer with int8 fake-quantised weights and saturated activations."""

    def __init__(self, d_in, d_out, act_limit: float = 4.0):
        super().__init__(d_in, d_out)
        self.act_limit = act_limit

    def forward(self, x):
        scale = float(self.weight.detach().abs().max()) / 127
        w = FakeQuantSTE.apply(self.weight, scale)
        return Saturate32.apply(nn.functional.linear(x, w, self.bias), self.act_limit)


def _norm_step(fused):
    torch.manual_seed(0)
    norm = RMSNorm(16, fused=fused).to(torch.bfloat16)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    x = torch.randn(4, 8, 16, dtype=torch.bfloat16, requires_grad=True)
    norm(x).float().pow(2).mean().backward()
    return x.grad


def use_rms_norm32():
    return _norm_step(fused=False)


def use_fused_rms_norm_f32():
    return _norm_step(fused=True)


def _qat_step():
    torch.manual_seed(0)
    layer = QATLinear(8, 4, act_limit=1.0)
    x = torch.randn(32, 8) * 2
    loss = (layer(x) - torch.randn(32, 4)).pow(2).mean()
    loss.backward()
    return layer.weight.grad


def use_fake_quant_ste():
    return _qat_step()


def use_saturate32():
    return _qat_step()
