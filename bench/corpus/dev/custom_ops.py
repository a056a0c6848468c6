"""Operators registered with torch.library so they survive torch.compile and export.

Each op has a fake (meta) implementation for tracing and an autograd formula registered with
``register_autograd``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

# --------------------------------------------------------------------------------------
# softplus with a sharpness parameter


@torch.library.custom_op("corpus_dev::softplus_beta", mutates_args=())
def softplus_beta(x: Tensor, beta: float, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, linear above ``threshold`` (in units of beta * x)."""
    bx = x * beta
    return torch.where(bx > threshold, x, torch.log1p(torch.exp(bx.clamp(max=threshold))) / beta)


@softplus_beta.register_fake
def _(x: Tensor, beta: float, threshold: float = 20.0) -> Tensor:
    return torch.empty_like(x)


def _softplus_setup(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    x, beta, threshold = inputs
    ctx.save_for_backward(x)
    ctx.beta, ctx.threshold = beta, threshold


def _softplus_backward(ctx: Any, grad: Tensor):
    (x,) = ctx.saved_tensors
    bx = x * ctx.beta
    slope = torch.where(bx > ctx.threshold, torch.ones_like(x), torch.sigmoid(bx))
    return grad * slope, None, None


softplus_beta.register_autograd(_softplus_backward, setup_context=_softplus_setup)


# --------------------------------------------------------------------------------------
# row-wise L2 normalisation


@torch.library.custom_op("corpus_dev::l2_normalize", mutates_args=())
def l2_normalize(x: Tensor, eps: float = 1e-12) -> Tensor:
    """x / max(||x||, eps) along the last dim (x: [..., D])."""
    norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp_min(eps)
    return x / norm


@l2_normalize.register_fake
def _(x: Tensor, eps: float = 1e-12) -> Tensor:
    return torch.empty_like(x)


def _l2_setup(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    x, eps = inputs
    ctx.save_for_backward(x)
    ctx.eps = eps


def _l2_backward(ctx: Any, grad: Tensor):
    (x,) = ctx.saved_tensors
    norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    clamped = norm < ctx.eps
    norm = norm.clamp_min(ctx.eps)
    y = x / norm
    radial = (grad * y).sum(-1, keepdim=True)
    grad_x = torch.where(clamped, grad, grad - y * radial) / norm
    return grad_x, None


l2_normalize.register_autograd(_l2_backward, setup_context=_l2_setup)


# --------------------------------------------------------------------------------------
# Huber loss, elementwise and fused with its mean


@torch.library.custom_op("corpus_dev::huber_loss", mutates_args=())
def huber_loss(pred: Tensor, target: Tensor, delta: float = 1.0) -> Tensor:
    """Elementwise Huber loss: 0.5 d^2 for |d| <= delta, else delta * (|d| - 0.5 delta)."""
    d = pred - target
    quad = 0.5 * d * d
    lin = delta * (d.abs() - 0.5 * delta)
    return torch.where(d.abs() <= delta, quad, lin)


@huber_loss.register_fake
def _(pred: Tensor, target: Tensor, delta: float = 1.0) -> Tensor:
    return torch.empty_like(pred)


def _huber_setup(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    pred, target, delta = inputs
    ctx.save_for_backward(pred, target)
    ctx.delta = delta


def _huber_backward(ctx: Any, grad: Tensor):
    pred, target = ctx.saved_tensors
    d = (pred - target).clamp(-ctx.delta, ctx.delta)
    g = grad * d
    return (
        g if ctx.needs_input_grad[0] else None,
        -g if ctx.needs_input_grad[1] else None,
        None,
    )


huber_loss.register_autograd(_huber_backward, setup_context=_huber_setup)


@torch.library.custom_op("corpus_dev::fused_huber", mutates_args=())
def fused_huber(pred: Tensor, target: Tensor, delta: float = 1.0) -> Tensor:
    """mean(huber(pred - target)) in one pass; returns a 0-d tensor.

    pred, target: same shape. delta > 0.
    """
    d = (pred - target).abs()
    return torch.where(d <= delta, 0.5 * d * d, delta * (d - 0.5 * delta)).mean()


@fused_huber.register_fake
def _(pred: Tensor, target: Tensor, delta: float = 1.0) -> Tensor:
    return pred.new_empty(())


def _fused_huber_setup(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    pred, target, delta = inputs
    ctx.save_for_backward(pred, target)
    ctx.delta = delta


def _fused_huber_backward(ctx: Any, grad: Tensor):
    pred, target = ctx.saved_tensors
    d = pred - target
    small = d.abs() <= ctx.delta
    g = torch.where(small, d, torch.sign(d)) * (grad / d.numel())
    return g, -g, None


fused_huber.register_autograd(_fused_huber_backward, setup_context=_fused_huber_setup)


# --------------------------------------------------------------------------------------
# Modules


class ProjectionHead(nn.Module):
    """Projection head of a contrastive model: MLP with softplus, L2-normalised output."""

    def __init__(self, dim: int, out: int, beta: float = 2.0) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(dim, out)
        self.beta = beta

    def forward(self, x: Tensor) -> Tensor:
        return l2_normalize(self.fc2(softplus_beta(self.fc1(x), self.beta)))


class HuberLoss(nn.Module):
    def __init__(self, delta: float = 1.0, reduction: str = "mean") -> None:
        super().__init__()
        self.delta = delta
        self.reduction = reduction

    def forward(self, pred: Tensor, target: Tensor) -> Tensor:
        if self.reduction == "mean":
            return fused_huber(pred, target, self.delta)
        loss = huber_loss(pred, target, self.delta)
        return loss.sum() if self.reduction == "sum" else loss


# --------------------------------------------------------------------------------------
# Usage


def _sgd_step(params, lr: float) -> None:
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p -= lr * p.grad


def use_softplus_beta() -> None:
    torch.manual_seed(0)
    x = torch.randn(16, 8, requires_grad=True)
    (softplus_beta(x * 4, 2.0) ** 2).mean().backward()
    assert x.grad is not None


def use_l2_normalize() -> None:
    torch.manual_seed(0)
    head = ProjectionHead(8, 4)
    a, b = head(torch.randn(6, 8)), head(torch.randn(6, 8))
    logits = a @ b.T / 0.1
    nn.functional.cross_entropy(logits, torch.arange(6)).backward()
    assert head.fc1.weight.grad is not None


def use_huber_loss() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    x, y = torch.randn(32, 4), torch.randn(32, 1) * 3
    HuberLoss(delta=0.5, reduction="sum")(model(x), y).backward()
    assert model.weight.grad is not None


def use_fused_huber() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    x, y = torch.randn(32, 4), torch.randn(32, 1) * 3
    HuberLoss(delta=0.5)(model(x), y).backward()
    _sgd_step(model.parameters(), 0.1)
