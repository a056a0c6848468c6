"""Spike functions and neurons for spiking neural networks trained with backprop.

A spike is the Heaviside step of the membrane potential above threshold; its derivative is
zero almost everywhere, so training replaces it in backward by a smooth pseudo-derivative.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn


class ATanSpike(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, v: torch.Tensor, alpha: float = 2.0) -> torch.Tensor:
        ctx.save_for_backward(v)
        ctx.alpha = alpha
        return (v >= 0).to(v.dtype)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        (v,) = ctx.saved_tensors
        a = ctx.alpha
        sg = a / 2 / (1 + (math.pi / 2 * a * v).pow(2))
        return grad_output * sg, None


class FastSigmoidSpike(torch.autograd.Function):
    """Spike with the SuperSpike surrogate gradient (Zenke & Ganguli, 2018).

    Forward is Heaviside(v); backward uses the derivative of the fast sigmoid
    v / (1 + slope * |v|), i.e. 1 / (1 + slope * |v|)^2.
    """

    @staticmethod
    def forward(ctx: Any, v: torch.Tensor, slope: float = 25.0) -> torch.Tensor:
        ctx.save_for_backward(v)
        ctx.slope = slope
        return v.gt(0).to(v.dtype)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        (v,) = ctx.saved_tensors
        return grad_output / (1 + ctx.slope * v.abs()).pow(2), None


class TriangleSpike(torch.autograd.Function):
    """Heaviside spike; backward: max(0, 1 - |v| / width) / width (piecewise-linear)."""

    @staticmethod
    def forward(ctx: Any, v: torch.Tensor, width: float = 1.0) -> torch.Tensor:
        ctx.save_for_backward(v)
        ctx.width = width
        return torch.heaviside(v, v.new_zeros(()))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        (v,) = ctx.saved_tensors
        w = ctx.width
        return grad_output * (1 - v.abs() / w).clamp(min=0) / w, None


class SigmoidSpike(torch.autograd.Function):
    """Soft spike sigmoid(k * v): a smooth stand-in for the step used to anneal networks
    towards hard spikes (k grows during training).

    v: membrane potential minus threshold, any shape; k > 0.
    """

    @staticmethod
    def forward(ctx: Any, v: torch.Tensor, k: float = 5.0) -> torch.Tensor:
        out = torch.sigmoid(k * v)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        (out,) = ctx.saved_tensors
        return grad_output * out * (1 - out), None


class SoftSpike(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, v: torch.Tensor, k: float = 5.0) -> torch.Tensor:
        ctx.save_for_backward(v)
        ctx.k = k
        return torch.sigmoid(k * v)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        (v,) = ctx.saved_tensors
        s = torch.sigmoid(ctx.k * v)
        return grad_output * ctx.k * s * (1 - s), None


class LeakyIntegrate(torch.autograd.Function):
    """Leaky integration over time without reset: v[t] = beta * v[t-1] + x[t], v[-1] = 0.

    x: [T, ...] input currents, time first; beta: decay in (0, 1). Returns v, [T, ...].
    Written as an explicit scan so backward can be a reverse scan instead of T graph nodes.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, beta: float = 0.9) -> torch.Tensor:
        v = torch.empty_like(x)
        acc = torch.zeros_like(x[0])
        for t in range(x.shape[0]):
            acc = beta * acc + x[t]
            v[t] = acc
        ctx.beta = beta
        return v

    @staticmethod
    def backward(ctx: Any, grad_v: torch.Tensor):
        grad_x = torch.empty_like(grad_v)
        acc = torch.zeros_like(grad_v[0])
        for t in range(grad_v.shape[0] - 1, -1, -1):
            acc = ctx.beta * acc + grad_v[t]
            grad_x[t] = acc
        return grad_x, None


class MembraneScan(torch.autograd.Function):
    # v[t] = beta * v[t-1] + x[t] along dim 0 (time), v[-1] = 0; 0 < beta < 1
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, beta: float) -> torch.Tensor:
        out = [x[0]]
        for t in range(1, x.shape[0]):
            out.append(beta * out[-1] + x[t])
        ctx.beta = beta
        return torch.stack(out)

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor):
        steps = grad_out.shape[0]
        grads = [grad_out[steps - 1]]
        for t in range(steps - 2, 0, -1):
            grads.append(grad_out[t] + ctx.beta * grads[-1])
        grads.append(grad_out[0])
        return torch.stack(grads[::-1]), None


# --------------------------------------------------------------------------------------
# Neurons


class LIF(nn.Module):
    """Leaky integrate-and-fire neuron, unrolled over the leading (time) dim.

    v[t] = beta * v[t-1] * (1 - s[t-1]) + x[t];  s[t] = spike(v[t] - threshold)

    Input [T, B, N], output spikes [T, B, N].
    """

    def __init__(self, beta: float = 0.9, threshold: float = 1.0, width: float = 0.5) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold
        self.width = width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = torch.zeros_like(x[0])
        s = torch.zeros_like(x[0])
        spikes = []
        for t in range(x.shape[0]):
            v = self.beta * v * (1 - s) + x[t]
            s = TriangleSpike.apply(v - self.threshold, self.width)
            spikes.append(s)
        return torch.stack(spikes)


class ResetFreeLIF(nn.Module):
    """LIF layer without reset (a common simplification for rate-coded inputs): integrate the
    currents with a leaky scan, then spike with the arctan surrogate."""

    def __init__(self, beta: float = 0.9, threshold: float = 1.0, fused_scan: bool = True):
        super().__init__()
        self.beta = beta
        self.threshold = threshold
        self.scan = LeakyIntegrate if fused_scan else MembraneScan

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = self.scan.apply(x, self.beta)
        return ATanSpike.apply(v - self.threshold, 2.0)


class SpikingMLP(nn.Module):
    def __init__(self, dim: int, hidden: int, spike: str = "atan") -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.spike = spike

    def forward(self, x: torch.Tensor, k: float = 5.0) -> torch.Tensor:
        h = self.fc1(x) - 1.0
        if self.spike == "atan":
            h = ATanSpike.apply(h, 2.0)
        elif self.spike == "fast_sigmoid":
            h = FastSigmoidSpike.apply(h, 25.0)
        elif self.spike == "sigmoid":
            h = SigmoidSpike.apply(h, k)
        else:
            h = SoftSpike.apply(h, k)
        return self.fc2(h)


# --------------------------------------------------------------------------------------
# Usage


def _sgd_step(params, lr: float) -> None:
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p -= lr * p.grad


def _step(model: nn.Module, x: torch.Tensor, **kwargs: Any) -> None:
    loss = model(x, **kwargs).pow(2).mean()
    loss.backward()
    _sgd_step(model.parameters(), 0.1)


def use_atan_spike() -> None:
    torch.manual_seed(0)
    _step(SpikingMLP(8, 16, "atan"), torch.randn(32, 8))


def use_fast_sigmoid_spike() -> None:
    torch.manual_seed(0)
    _step(SpikingMLP(8, 16, "fast_sigmoid"), torch.randn(32, 8))


def use_triangle_spike() -> None:
    torch.manual_seed(0)
    fc = nn.Linear(10, 20)
    lif = LIF(beta=0.8)
    x = torch.randn(12, 4, 10)
    rate = lif(fc(x) * 2).mean(0)
    (rate - 0.2).pow(2).mean().backward()
    assert fc.weight.grad is not None


def use_leaky_integrate() -> None:
    torch.manual_seed(0)
    fc = nn.Linear(6, 10)
    lif = ResetFreeLIF(beta=0.8, fused_scan=True)
    lif(fc(torch.randn(8, 4, 6))).mean().backward()
    assert fc.weight.grad is not None


def use_membrane_scan() -> None:
    torch.manual_seed(0)
    fc = nn.Linear(6, 10)
    lif = ResetFreeLIF(beta=0.8, fused_scan=False)
    lif(fc(torch.randn(8, 4, 6))).mean().backward()
    assert fc.weight.grad is not None


def use_sigmoid_spike() -> None:
    torch.manual_seed(0)
    _step(SpikingMLP(8, 16, "sigmoid"), torch.randn(32, 8), k=4.0)


def use_soft_spike() -> None:
    torch.manual_seed(0)
    _step(SpikingMLP(8, 16, "soft"), torch.randn(32, 8), k=4.0)
