"""Spiking neuron primitives: spike non-linearities and leaky membrane integration."""

from __future__ import annotations

import torch
from torch import nn


class SuperSpike(torch.autograd.Function):
    """Heaviside spike ``S = 1[v > threshold]`` with the SuperSpike surrogate gradient.

    The step has no useful derivative (0 almost everywhere). Following Zenke & Ganguli
    (2018), backward replaces it by the derivative of a fast sigmoid,
    ``1 / (slope * |v - threshold| + 1)^2``. This is a surrogate on purpose: backward is not
    the derivative of forward.
    """

    @staticmethod
    def forward(ctx, v, threshold: float = 1.0, slope: float = 10.0):
        ctx.save_for_backward(v)
        ctx.threshold, ctx.slope = threshold, slope
        return (v > threshold).to(v.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        (v,) = ctx.saved_tensors
        surrogate = 1.0 / (ctx.slope * (v - ctx.threshold).abs() + 1.0).pow(2)
        return grad_output * surrogate, None, None


class SmoothSpike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, threshold: float = 1.0, slope: float = 5.0):
        s = torch.sigmoid(slope * (v - threshold))
        ctx.save_for_backward(s)
        ctx.slope = slope
        return s

    @staticmethod
    def backward(ctx, grad_output):
        (s,) = ctx.saved_tensors
        return grad_output * s * (1 - s), None, None


class SigmoidSpikeFunction(torch.autograd.Function):
    """Soft spike ``sigmoid(slope * (v - threshold))`` for rate-coded training.

    Args:
        v: membrane potential, any shape.
        threshold: firing threshold.
        slope: steepness, > 0.
    """

    @staticmethod
    def forward(ctx, v, threshold: float = 1.0, slope: float = 5.0):
        s = torch.sigmoid(slope * (v - threshold))
        ctx.save_for_backward(s)
        ctx.slope = slope
        return s

    @staticmethod
    def backward(ctx, grad_output):
        (s,) = ctx.saved_tensors
        return grad_output * ctx.slope * s * (1.0 - s), None, None


def _reverse_leaky_scan(grad, beta):
    """``out_t = grad_t + beta * out_{t+1}`` along dim 1."""
    acc = torch.zeros_like(grad[:, 0])
    outs = []
    for t in reversed(range(grad.shape[1])):
        acc = grad[:, t] + beta * acc
        outs.append(acc)
    return torch.stack(outs[::-1], dim=1)


class LIFMembrane(torch.autograd.Function):
    """Membrane potential of a layer of leaky integrators without reset.

    ``v_t = beta * v_{t-1} + I_t``, ``v_{-1} = 0``.

    Args:
        current: input current ``[batch, time, neurons]``.
        beta: per-neuron decay ``[neurons]``, in (0, 1).

    Returns ``v`` with the shape of ``current``.
    """

    @staticmethod
    def forward(ctx, current, beta):
        v = torch.zeros_like(current[:, 0])
        vs = []
        for t in range(current.shape[1]):
            v = beta * v + current[:, t]
            vs.append(v)
        out = torch.stack(vs, dim=1)
        ctx.save_for_backward(beta, out)
        return out

    @staticmethod
    def backward(ctx, grad_v):
        beta, v = ctx.saved_tensors
        gv = _reverse_leaky_scan(grad_v, beta)
        grad_beta = (gv[:, 1:] * v[:, :-1]).sum(dim=(0, 1))
        return gv, grad_beta


class LeakyIntegrator(torch.autograd.Function):
    """Leaky integration ``v[t] = beta * v[t-1] + current[t]`` (zero initial state),
    with a learnable decay per neuron. current: [B, T, N]; beta: [N]."""

    @staticmethod
    def forward(ctx, current, beta):
        v = torch.empty_like(current)
        acc = torch.zeros_like(current[:, 0])
        for t in range(current.shape[1]):
            acc = beta * acc + current[:, t]
            v[:, t] = acc
        ctx.save_for_backward(beta, v)
        return v

    @staticmethod
    def backward(ctx, grad_v):
        beta, v = ctx.saved_tensors
        gv = _reverse_leaky_scan(grad_v, beta)
        # dv[t]/dbeta = v[t-1]
        grad_beta = (gv[:, :-1] * v[:, :-1]).sum(dim=(0, 1))
        return gv, grad_beta


class LIFLayer(nn.Module):
    def __init__(self, n_in: int, n_out: int, integrator=LIFMembrane, spike=SuperSpike):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
        self.beta_logit = nn.Parameter(torch.full((n_out,), 1.5))
        self.integrator = integrator
        self.spike = spike

    def forward(self, x):
        v = self.integrator.apply(self.fc(x), torch.sigmoid(self.beta_logit))
        return self.spike.apply(v, 1.0, 5.0)


def _rate_step(**kw):
    torch.manual_seed(0)
    layer = LIFLayer(10, 6, **kw)
    x = (torch.rand(4, 20, 10) < 0.3).float()
    target = torch.rand(4, 6)
    loss = (layer(x).mean(dim=1) - target).pow(2).mean()
    loss.backward()
    return layer.beta_logit.grad.norm().item()


def use_super_spike():
    return _rate_step()


def use_smooth_spike():
    return _rate_step(spike=SmoothSpike)


def use_sigmoid_spike_function():
    return _rate_step(spike=SigmoidSpikeFunction)


def use_lif_membrane():
    return _rate_step(integrator=LIFMembrane, spike=SigmoidSpikeFunction)


def use_leaky_integrator():
    return _rate_step(integrator=LeakyIntegrator, spike=SigmoidSpikeFunction)
