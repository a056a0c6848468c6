"""Normalisation layers with explicit backward passes (RMSNorm, channels-first LayerNorm)."""

from __future__ import annotations

import torch
from torch import nn


def _reduce_to(grad: torch.Tensor, ndim_keep: int) -> torch.Tensor:
    """Sum ``grad`` over every leading dim so that ``ndim_keep`` trailing dims remain."""
    lead = grad.dim() - ndim_keep
    if lead <= 0:
        return grad
    return grad.sum(dim=tuple(range(lead)))


def _normalized_grad(gxhat, xhat, rstd, dim: int = -1):
    """Gradient through ``xhat = (x - mean) * rstd`` along ``dim``."""
    c1 = gxhat.mean(dim=dim, keepdim=True)
    c2 = (gxhat * xhat).mean(dim=dim, keepdim=True)
    return rstd * (gxhat - c1 - xhat * c2)


class RMSNormFunction(torch.autograd.Function):
    """Root-mean-square layer norm over the last dimension.

    ``y = x / sqrt(mean(x^2, -1) + eps) * weight``

    x: ``[..., hidden]``; weight: ``[hidden]``; eps > 0.
    """

    @staticmethod
    def forward(ctx, x, weight, eps: float = 1e-6):
        rstd = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight)
        ctx.eps = eps
        return x * rstd * weight

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        rstd = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + ctx.eps)
        xhat = x * rstd
        gxhat = grad_output * weight
        grad_x = rstd * (gxhat - xhat * (gxhat * xhat).mean(dim=-1, keepdim=True))
        grad_w = _reduce_to(grad_output * xhat, 1)
        return grad_x, grad_w, None


class FusedRMSNorm(torch.autograd.Function):
    """RMSNorm whose forward keeps the reciprocal rms for backward (saves a reduction)."""

    @staticmethod
    def forward(ctx, x, weight, eps: float = 1e-6):
        rstd = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, rstd)
        return x * rstd * weight

    @staticmethod
    def backward(ctx, grad_output):
        x, weight, rstd = ctx.saved_tensors
        xhat = x * rstd
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            proj = (grad_output * xhat).mean(dim=-1, keepdim=True)
            grad_x = rstd * (grad_output * weight - xhat * proj)
        if ctx.needs_input_grad[1]:
            grad_w = _reduce_to(grad_output * xhat, 1)
        return grad_x, grad_w, None


class LayerNorm2dFunction(torch.autograd.Function):
    """LayerNorm over the channel dim of an NCHW tensor (ConvNeXt's ``channels_first``).

    Args:
        x: ``[N, C, H, W]``
        weight, bias: ``[C]``
        eps: added to the variance.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, eps: float = 1e-6):
        mean = x.mean(dim=1, keepdim=True)
        var = (x - mean).pow(2).mean(dim=1, keepdim=True)
        rstd = torch.rsqrt(var + eps)
        xhat = (x - mean) * rstd
        ctx.save_for_backward(x, weight)
        ctx.eps = eps
        return xhat * weight[:, None, None] + bias[:, None, None]

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        mean = x.mean(dim=1, keepdim=True)
        rstd = torch.rsqrt((x - mean).pow(2).mean(dim=1, keepdim=True) + ctx.eps)
        xhat = (x - mean) * rstd
        gxhat = grad_output * weight[:, None, None]
        grad_x = _normalized_grad(gxhat, xhat, rstd, dim=1)
        grad_w = (grad_output * xhat).sum(dim=(0, 2, 3))
        grad_b = grad_output.sum(dim=(0, 2, 3))
        return grad_x, grad_w, grad_b, None


class ChannelsFirstLayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps: float = 1e-6):
        # x: (N, C, H, W); statistics over C
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        rstd = (s + eps).rsqrt()
        xhat = (x - u) * rstd
        ctx.save_for_backward(xhat, weight, rstd)
        return weight[:, None, None] * xhat + bias[:, None, None]

    @staticmethod
    def backward(ctx, grad_output):
        xhat, weight, rstd = ctx.saved_tensors
        gxhat = grad_output * weight[:, None, None]
        grad_x = _normalized_grad(gxhat, xhat, rstd)
        grad_w = (grad_output * xhat).sum((0, 2, 3))
        grad_b = grad_output.sum((0, 2, 3))
        return grad_x, grad_w, grad_b, None


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6, fused: bool = False):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps
        self.fn = FusedRMSNorm if fused else RMSNormFunction

    def forward(self, x):
        return self.fn.apply(x, self.weight, self.eps)


class LayerNorm2d(nn.Module):
    def __init__(self, channels: int, eps: float = 1e-6, impl: str = "default"):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps
        self.fn = ChannelsFirstLayerNorm if impl == "channels_first" else LayerNorm2dFunction

    def forward(self, x):
        return self.fn.apply(x, self.weight, self.bias, self.eps)


@torch.no_grad()
def _sgd_step(params, lr: float):
    for p in params:
        if p.grad is not None:
            p.add_(p.grad, alpha=-lr)
            p.grad = None


def _train_step(model, x):
    loss = model(x).pow(2).mean()
    loss.backward()
    _sgd_step(model.parameters(), 1e-3)
    return loss.item()


def use_rms_norm_function():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), RMSNorm(64), nn.Linear(64, 8))
    return _train_step(model, torch.randn(4, 10, 32))


def use_fused_rms_norm():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), RMSNorm(64, fused=True), nn.Linear(64, 8))
    return _train_step(model, torch.randn(4, 10, 32))


def use_layer_norm2d_function():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), LayerNorm2d(16), nn.GELU())
    return _train_step(model, torch.randn(2, 3, 8, 8))


def use_channels_first_layer_norm():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), LayerNorm2d(16, impl="channels_first"), nn.GELU()
    )
    return _train_step(model, torch.randn(2, 3, 8, 8))
