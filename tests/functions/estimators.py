"""Functions whose forward draws random numbers, and whose backward is, or is not, the
derivative of the sample they return.

A backward may be a *different* unbiased estimator of the gradient of forward's expectation
(an optimal-transport or control-variate estimator, as pyro's OMT sampler returns for
`scale_tril`): not the derivative of this sample, but right on average. Such a backward is
correct; one that is off on average is a bug.
"""

from __future__ import annotations

from typing import Any

import torch


class UnbiasedScale(torch.autograd.Function):
    """y = x * u, u ~ U(0, 2) drawn in forward; backward returns grad, E[u] = 1: an unbiased
    estimator of d E[y] / dx, not the derivative of this sample (u * grad)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        u = 2 * torch.rand_like(x)
        return x * u

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output


class PathwiseScale(torch.autograd.Function):
    """UnbiasedScale's pathwise twin: backward is the derivative of this sample."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        u = 2 * torch.rand_like(x)
        ctx.save_for_backward(u)
        return x * u

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (u,) = ctx.saved_tensors
        return grad_output * u


class BiasedScale(torch.autograd.Function):
    """UnbiasedScale whose backward is twice too large on average (a bug)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        u = 2 * torch.rand_like(x)
        return x * u

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return 2 * grad_output


def _rotated(eps: torch.Tensor) -> torch.Tensor:
    """eps + R eps with R antisymmetric (R = P - Pᵀ, P a cyclic shift): for any loss f,
    E[∇f(z) · R eps] = s Σ R_ij E[∂_i ∂_j f] = 0 (Stein's lemma), so adding it keeps the
    scale's estimator unbiased; it is the transport trick of OMT samplers."""
    flat = eps.reshape(-1)
    return (flat + flat.roll(1) - flat.roll(-1)).reshape(eps.shape)


class TransportSampler(torch.autograd.Function):
    """z = loc + scale * eps, eps ~ N(0, I), `scale` a 0-d tensor. loc's gradient is the
    pathwise one; scale's is grad · (eps + R eps): unbiased, not the pathwise grad · eps."""

    @staticmethod
    def forward(ctx: Any, loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        eps = torch.randn_like(loc)
        ctx.save_for_backward(eps)
        return loc + scale * eps

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        (eps,) = ctx.saved_tensors
        return grad_output, (grad_output * _rotated(eps)).sum()


class TransportSamplerLocBug(torch.autograd.Function):
    """TransportSampler with loc's gradient twice too large (a bug on loc)."""

    @staticmethod
    def forward(ctx: Any, loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        eps = torch.randn_like(loc)
        ctx.save_for_backward(eps)
        return loc + scale * eps

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        (eps,) = ctx.saved_tensors
        return 2 * grad_output, (grad_output * _rotated(eps)).sum()


class TransportSamplerScaleBug(torch.autograd.Function):
    """TransportSampler whose scale estimator squares eps where eps belongs: E[z] does not
    depend on scale, yet this estimator's mean is grad.sum(), not 0 (biased)."""

    @staticmethod
    def forward(ctx: Any, loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        eps = torch.randn_like(loc)
        ctx.save_for_backward(eps)
        return loc + scale * eps

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        (eps,) = ctx.saved_tensors
        return grad_output, (grad_output * _rotated(eps * eps)).sum()


class SamplerScaleTwice(torch.autograd.Function):
    """loc + scale * eps whose scale gradient is twice the pathwise one: E[z] does not
    depend on scale, so on average it agrees for linear losses, and only a loss of the
    spread (a quadratic one) shows the bug."""

    @staticmethod
    def forward(ctx: Any, loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        eps = torch.randn_like(loc)
        ctx.save_for_backward(eps)
        return loc + scale * eps

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        (eps,) = ctx.saved_tensors
        return grad_output, 2 * (grad_output * eps).sum()


# Backwards that draw random numbers of their own (random gradient sparsification): each
# call keeps every entry of the gradient with probability KEEP. Rescaled by 1 / KEEP, the
# mean over backward's draws is the gradient (an unbiased stochastic estimator); not
# rescaled, it is KEEP times the gradient (a bias).
KEEP = 0.5


def _sparsified(gradient: torch.Tensor, rescale: bool = True) -> torch.Tensor:
    kept = torch.bernoulli(torch.full_like(gradient, KEEP))  # the global RNG: another mask each run
    return gradient * kept / KEEP if rescale else gradient * kept


class SparsifiedSin(torch.autograd.Function):
    """y = sin(x); backward sparsifies cos(x) * grad, rescaled: unbiased."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return _sparsified(grad_output * x.cos())


class SparsifiedSinUnscaled(torch.autograd.Function):
    """SparsifiedSin whose mask is not rescaled by 1 / KEEP: half the gradient on average."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return _sparsified(grad_output * x.cos(), rescale=False)


class SparsifiedSampler(torch.autograd.Function):
    """z = loc + scale * eps, eps ~ N(0, 1) drawn in forward (loc, scale of one shape);
    backward sparsifies the pathwise gradient, rescaled: unbiased."""

    @staticmethod
    def forward(ctx: Any, loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        eps = torch.randn_like(loc)
        ctx.save_for_backward(eps)
        return loc + scale * eps

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        (eps,) = ctx.saved_tensors
        kept = _sparsified(grad_output)
        return kept, kept * eps


class SparsifiedSamplerUnscaled(torch.autograd.Function):
    """SparsifiedSampler whose mask is not rescaled by 1 / KEEP: half the gradient on average."""

    @staticmethod
    def forward(ctx: Any, loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        eps = torch.randn_like(loc)
        ctx.save_for_backward(eps)
        return loc + scale * eps

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        (eps,) = ctx.saved_tensors
        kept = _sparsified(grad_output, rescale=False)
        return kept, kept * eps


class DriftingSin(torch.autograd.Function):
    """y = sin(x); backward's gradient drifts with a count of its calls, whatever the seed
    of the global RNG: nondeterministic as a race that loses writes is, not an estimator."""

    calls = 0

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        DriftingSin.calls += 1
        return grad_output * x.cos() * (1 + 0.1 * (DriftingSin.calls % 2))
