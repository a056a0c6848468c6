"""Functions recorded from real runs (tests/record): a smoothing whose backward relies on
its constant filter being symmetric, and an Lp normalisation whose run uses only its
defaults (p=2, dim=-1, eps=1e-8), each with twins whose bug those defaults hide."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F


def _correlate(signal: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """`signal` correlated with `kernel` along its last dim, zero-padded to keep its length."""
    radius = kernel.shape[0] // 2
    padded = F.pad(signal, (radius, radius))
    length = signal.shape[-1]
    return sum(kernel[k] * padded[..., k : k + length] for k in range(kernel.shape[0]))  # type: ignore[return-value]


class SymmetricSmooth(torch.autograd.Function):
    """y = x correlated with a constant filter. The gradient of a correlation is the
    correlation with the flipped filter: the same filter, for a symmetric one such as
    [0.25, 0.5, 0.25], which this backward relies on (correct for such a filter)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(kernel)
        return _correlate(x, kernel)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (kernel,) = ctx.saved_tensors
        return _correlate(grad, kernel), None


class SymmetricSmoothWrapsAround(SymmetricSmooth):
    """Bug: backward pads circularly, so the ends get the other end's gradient."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (kernel,) = ctx.saved_tensors
        radius = kernel.shape[0] // 2
        shifted = [torch.roll(grad, radius - k, dims=-1) for k in range(kernel.shape[0])]
        return sum(kernel[k] * shifted[k] for k in range(kernel.shape[0])), None  # type: ignore[return-value]


def _norm(x: torch.Tensor, p: float, dim: int) -> torch.Tensor:
    return x.abs().pow(p).sum(dim, keepdim=True).pow(1.0 / p)


class LpNormalize(torch.autograd.Function):
    """y = x / (||x||_p + eps) along `dim`."""

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, p: float = 2.0, dim: int = -1, eps: float = 1e-8
    ) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.p, ctx.dim, ctx.eps = p, dim, eps
        return x / (_norm(x, p, dim) + eps)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        (x,) = ctx.saved_tensors
        p, dim, eps = ctx.p, ctx.dim, ctx.eps
        norm = _norm(x, p, dim)  # again, so that the second derivative sees it depend on x
        denominator = norm + eps
        # d||x||_p / dx = sign(x) |x|^(p-1) / ||x||_p^(p-1)
        dnorm = x.sign() * x.abs().pow(p - 1) / norm.pow(p - 1)
        inner = (grad * x).sum(dim, keepdim=True)
        return grad / denominator - inner / denominator**2 * dnorm, None, None, None


class LpNormalizeAssumesP2(LpNormalize):
    """Bug: backward uses the p=2 derivative of the norm, x / ||x||, whatever p is."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        (x,) = ctx.saved_tensors
        norm = _norm(x, ctx.p, ctx.dim)
        denominator = norm + ctx.eps
        inner = (grad * x).sum(ctx.dim, keepdim=True)
        return grad / denominator - inner / denominator**2 * (x / norm), None, None, None


class LpNormalizeLastDim(LpNormalize):
    """Bug: backward sums over the last dim, whatever dim forward normalised."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        (x,) = ctx.saved_tensors
        p = ctx.p
        norm = _norm(x, p, ctx.dim)
        denominator = norm + ctx.eps
        dnorm = x.sign() * x.abs().pow(p - 1) / norm.pow(p - 1)
        inner = (grad * x).sum(-1, keepdim=True)
        return grad / denominator - inner / denominator**2 * dnorm, None, None, None


class LpNormalizeForgotEps(LpNormalize):
    """Bug: backward divides by ||x||_p, forgetting eps (invisible at eps=1e-8)."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        (x,) = ctx.saved_tensors
        p, dim = ctx.p, ctx.dim
        norm = _norm(x, p, dim)
        dnorm = x.sign() * x.abs().pow(p - 1) / norm.pow(p - 1)
        inner = (grad * x).sum(dim, keepdim=True)
        return grad / norm - inner / norm**2 * dnorm, None, None, None


class CoarseToFine(torch.autograd.Function):
    """fine + the coarse grid repeated 2×2: `coarse` [..., H/2, W/2] beside `fine` [..., H, W],
    as the levels of a pyramid are; no halving of one of them alone runs."""

    @staticmethod
    def forward(ctx: Any, fine: torch.Tensor, coarse: torch.Tensor) -> torch.Tensor:
        if fine.shape[-2:] != tuple(2 * size for size in coarse.shape[-2:]):
            raise ValueError(f"coarse {list(coarse.shape)} is not half of fine {list(fine.shape)}")
        return fine + coarse.repeat_interleave(2, -2).repeat_interleave(2, -1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        height, width = grad.shape[-2] // 2, grad.shape[-1] // 2
        pooled = grad.reshape(*grad.shape[:-2], height, 2, width, 2).sum((-3, -1))
        return grad, pooled
