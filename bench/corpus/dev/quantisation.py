"""Fake quantisation for quantisation-aware training.

All quantisers are symmetric and per-tensor unless stated; ``qmin``/``qmax`` are the integer
grid's bounds (-128/127 for int8, -8/7 for int4).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn


class RoundSTE(torch.autograd.Function):
    """Round to the nearest multiple of ``step`` with a straight-through estimator (STE).

    The rounding is piecewise constant, so its true gradient is zero almost everywhere;
    backward passes ``grad_output`` through unchanged, as in Bengio et al. (2013).
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, step: float = 1.0) -> torch.Tensor:
        return torch.round(x / step) * step

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        return grad_output, None


class LSQFakeQuantize(torch.autograd.Function):
    """Learned step size quantisation (Esser et al., ICLR 2020).

    q = clamp(round(x / s), qmin, qmax) * s

    x: any shape; scale: a one-element tensor, s > 0.

    The gradient for ``x`` is the STE inside the grid and zero outside it. The gradient for
    ``s`` is LSQ's estimator: round(x/s) - x/s inside, qmin or qmax outside, multiplied by
    g = 1 / sqrt(numel * qmax) to balance the step's update against the weights'.
    """

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, scale: torch.Tensor, qmin: int = -128, qmax: int = 127
    ) -> torch.Tensor:
        v = x / scale
        q = v.round().clamp(qmin, qmax)
        ctx.save_for_backward(v)
        ctx.bounds = (qmin, qmax)
        return q * scale

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        (v,) = ctx.saved_tensors
        qmin, qmax = ctx.bounds
        below, above = v < qmin, v > qmax
        inside = ~(below | above)
        grad_x = grad_output * inside
        g = 1.0 / math.sqrt(v.numel() * qmax)
        ds = torch.where(inside, v.round() - v, torch.where(below, float(qmin), float(qmax)))
        grad_scale = (grad_output * ds).sum().mul(g).reshape(1)
        return grad_x, grad_scale, None, None


class StochasticRound(torch.autograd.Function):
    """Stochastic rounding to a grid of ``step``: round up with probability equal to the
    fractional part, so E[q(x)] = x and the identity is the gradient of the expectation."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, step: float) -> torch.Tensor:
        v = x / step
        floor = v.floor()
        up = torch.rand_like(v) < (v - floor)
        return (floor + up) * step

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        return grad_output, None


class Clamp(torch.autograd.Function):
    """clamp(x, lo, hi) with the gradient passed only where x is inside [lo, hi]."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        (x,) = ctx.saved_tensors
        inside = (x >= ctx.lo) & (x <= ctx.hi)
        return grad_output * inside, None, None


class SaturatingClamp(torch.autograd.Function):
    # Activation range clipping before the observer: values past the calibrated range
    # saturate. lo < hi.
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
        if lo >= hi:
            raise ValueError("lo must be below hi")
        return torch.minimum(torch.maximum(x, x.new_tensor(lo)), x.new_tensor(hi))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        return grad_output.clone(), None, None


# --------------------------------------------------------------------------------------
# Modules


class QuantLinear(nn.Module):
    """Linear layer whose weight is LSQ fake-quantised to ``bits`` bits."""

    def __init__(self, in_features: int, out_features: int, bits: int = 4) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.qmin, self.qmax = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        init = 2 * self.linear.weight.detach().abs().mean() / math.sqrt(self.qmax)
        self.scale = nn.Parameter(init.reshape(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = LSQFakeQuantize.apply(self.linear.weight, self.scale, self.qmin, self.qmax)
        return nn.functional.linear(x, w, self.linear.bias)


class ActivationQuantizer(nn.Module):
    """Clip to [-bound, bound] then round to 2**bits levels (straight-through)."""

    def __init__(self, bits: int = 8, bound: float = 4.0, stochastic: bool = False) -> None:
        super().__init__()
        self.bound = bound
        self.step = 2 * bound / (2**bits - 1)
        self.stochastic = stochastic

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = SaturatingClamp.apply(x, -self.bound, self.bound)
        if self.stochastic and self.training:
            return StochasticRound.apply(x, self.step)
        return RoundSTE.apply(x, self.step)


def round_ste(x: torch.Tensor, step: float = 1.0) -> torch.Tensor:
    return RoundSTE.apply(x, step)


def clamp(x: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
    return Clamp.apply(x, lo, hi)


# --------------------------------------------------------------------------------------
# Usage


def _sgd_step(params, lr: float) -> None:
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p -= lr * p.grad


def use_round_ste() -> None:
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(8, 8))
    x = torch.randn(4, 8)
    (x @ round_ste(w, 0.25).T).pow(2).mean().backward()
    assert w.grad is not None


def use_lsq_fake_quantize() -> None:
    torch.manual_seed(0)
    layer = QuantLinear(16, 8, bits=4)
    x, y = torch.randn(32, 16), torch.randn(32, 8)
    loss = nn.functional.mse_loss(layer(x), y)
    loss.backward()
    _sgd_step(layer.parameters(), 1e-2)


def use_stochastic_round() -> None:
    torch.manual_seed(0)
    quant = ActivationQuantizer(bits=4, stochastic=True)
    x = torch.randn(16, 16, requires_grad=True)
    quant(x * 2).sum().backward()
    assert x.grad is not None


def use_clamp() -> None:
    torch.manual_seed(0)
    x = torch.randn(32, requires_grad=True)
    clamp(x * 3, -1.0, 1.0).pow(2).sum().backward()
    assert x.grad is not None


def use_saturating_clamp() -> None:
    torch.manual_seed(0)
    quant = ActivationQuantizer(bits=8, bound=2.0).eval()
    lin = nn.Linear(8, 8)
    x = torch.randn(16, 8) * 3
    quant(lin(x)).pow(2).mean().backward()
    assert lin.weight.grad is not None
