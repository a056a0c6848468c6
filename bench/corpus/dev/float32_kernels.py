"""Fused kernels written the way a CUDA kernel would be, in PyTorch.

Every kernel upcasts its inputs to float32, computes in float32 whatever the input dtype
(half, bfloat16, float32, or float64 in tests), and casts the results back to the input's
dtype, so that training in mixed precision matches the CUDA kernels bit for bit. The
backward passes are hand-fused and not themselves differentiable.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.autograd.function import once_differentiable

ACC = torch.float32


class SoftmaxCrossEntropy(torch.autograd.Function):
    """Per-row cross-entropy with label smoothing, fused with its softmax.

    logits: [N, C]; target: [N] int64 class indices in [0, C); smoothing in [0, 1).
    Returns the per-row loss [N] in the logits' dtype. Only the probabilities are kept for
    backward (the log-softmax is recomputed from them).
    """

    @staticmethod
    def forward(
        ctx: Any, logits: torch.Tensor, target: torch.Tensor, smoothing: float = 0.0
    ) -> torch.Tensor:
        x = logits.to(ACC)
        x = x - x.amax(-1, keepdim=True)
        lse = x.exp().sum(-1, keepdim=True).log()
        logp = x - lse
        nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        smooth = -logp.mean(-1)
        loss = (1.0 - smoothing) * nll + smoothing * smooth
        ctx.save_for_backward(logp.exp(), target)
        ctx.smoothing = smoothing
        ctx.in_dtype = logits.dtype
        return loss.to(logits.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_loss: torch.Tensor):
        probs, target = ctx.saved_tensors
        eps = ctx.smoothing
        num_classes = probs.shape[-1]
        grad = probs - eps / num_classes
        grad.scatter_add_(-1, target.unsqueeze(-1), torch.full_like(probs[:, :1], -(1.0 - eps)))
        grad = grad * grad_loss.to(ACC).unsqueeze(-1)
        return grad.to(ctx.in_dtype), None, None


class FusedRMSNorm(torch.autograd.Function):
    """y = x / sqrt(mean(x^2, -1) + eps) * weight.  x: [..., D], weight: [D]."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6):
        x32 = x.to(ACC)
        rstd = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, rstd)
        return (x32 * rstd * weight.to(ACC)).to(x.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_y: torch.Tensor):
        x, weight, rstd = ctx.saved_tensors
        x32, w32, g32 = x.to(ACC), weight.to(ACC), grad_y.to(ACC)
        xhat = x32 * rstd
        gw = g32 * w32
        d = x32.shape[-1]
        grad_x = rstd * (gw - xhat * (gw * xhat).sum(-1, keepdim=True) / d)
        grad_w = (g32 * xhat).reshape(-1, d).sum(0)
        return grad_x.to(x.dtype), grad_w.to(weight.dtype), None


class RMSNormFunction(torch.autograd.Function):
    # Same math as FusedRMSNorm but keeps the normalised activations instead of x so the
    # weight gradient needs no recomputation. x: [..., D], weight: [D]
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6):
        x32 = x.float()
        ms = x32.square().mean(dim=-1, keepdim=True)
        rstd = (ms + eps).rsqrt()
        xhat = x32 * rstd
        ctx.save_for_backward(xhat, weight, rstd)
        return (xhat * weight.float()).to(x.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_y: torch.Tensor):
        xhat, weight, rstd = ctx.saved_tensors
        n = xhat.shape[-1]
        gw = grad_y.float() * weight.float()
        c = (gw * xhat).sum(dim=-1, keepdim=True) / (n - 1)
        grad_x = (gw - xhat * c) * rstd
        grad_w = (grad_y.float() * xhat).flatten(0, -2).sum(0)
        return grad_x.to(grad_y.dtype), grad_w.to(weight.dtype), None


class FusedSwiGLU(torch.autograd.Function):
    """silu(gate) * up, the gated MLP activation of LLaMA-style blocks.

    Backward recomputes sigmoid(gate) rather than storing it (one fewer activation kept).
    """

    @staticmethod
    def forward(ctx: Any, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        g, u = gate.to(ACC), up.to(ACC)
        ctx.save_for_backward(gate, up)
        return (g * torch.sigmoid(g) * u).to(gate.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_out: torch.Tensor):
        gate, up = ctx.saved_tensors
        g, u, go = gate.to(ACC), up.to(ACC), grad_out.to(ACC)
        s = torch.sigmoid(g)
        silu = g * s
        grad_gate = go * u * s * (1 + g * (1 - s))
        grad_up = go * silu
        return grad_gate.to(gate.dtype), grad_up.to(up.dtype)


# --------------------------------------------------------------------------------------
# Modules


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6, fused: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps
        self.fn = FusedRMSNorm if fused else RMSNormFunction

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn.apply(x, self.weight, self.eps)


class GatedMLP(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(FusedSwiGLU.apply(self.gate(x), self.up(x)))


def cross_entropy(logits: torch.Tensor, target: torch.Tensor, smoothing: float = 0.0):
    return SoftmaxCrossEntropy.apply(logits, target, smoothing).mean()


# --------------------------------------------------------------------------------------
# Usage


def _lm_step(norm: nn.Module) -> None:
    torch.manual_seed(0)
    emb = nn.Embedding(50, 32)
    mlp = GatedMLP(32, 64)
    head = nn.Linear(32, 50)
    tokens = torch.randint(0, 50, (4, 9))
    h = emb(tokens[:, :-1])
    h = h + mlp(norm(h))
    logits = head(norm(h)).flatten(0, 1)
    cross_entropy(logits, tokens[:, 1:].flatten(), 0.1).backward()
    assert emb.weight.grad is not None


def use_softmax_cross_entropy() -> None:
    torch.manual_seed(0)
    logits = torch.randn(16, 10, requires_grad=True)
    target = torch.randint(0, 10, (16,))
    cross_entropy(logits, target).backward()
    assert logits.grad is not None


def use_fused_rms_norm() -> None:
    _lm_step(RMSNorm(32, fused=True))


def use_rms_norm_function() -> None:
    _lm_step(RMSNorm(32, fused=False))


def use_fused_swi_glu() -> None:
    torch.manual_seed(0)
    mlp = GatedMLP(16, 48)
    mlp(torch.randn(8, 16)).pow(2).mean().backward()
    assert mlp.gate.weight.grad is not None
