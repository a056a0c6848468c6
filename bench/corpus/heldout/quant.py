"""Quantisation-aware training: fake quantisation, learned activation clipping (PACT) and a
differentiable soft rounding for learned compression."""

from __future__ import annotations

import math

import torch
from torch import nn


class FakeQuantize(torch.autograd.Function):
    """Per-tensor affine fake quantisation with a straight-through estimator.

    ``q = clamp(round(x / scale) + zero_point, quant_min, quant_max)``,
    ``y = (q - zero_point) * scale``.

    Rounding has a zero derivative almost everywhere, so backward passes the gradient
    straight through inside the representable range and zeroes it where the value was
    clamped (the convention of ``torch.fake_quantize_per_tensor_affine``).
    """

    @staticmethod
    def forward(
        ctx, x, scale: float, zero_point: int = 0, quant_min: int = -128, quant_max: int = 127
    ):
        q = torch.round(x / scale) + zero_point
        ctx.save_for_backward((q >= quant_min) & (q <= quant_max))
        return (q.clamp(quant_min, quant_max) - zero_point) * scale

    @staticmethod
    def backward(ctx, grad_output):
        (inside,) = ctx.saved_tensors
        return grad_output * inside, None, None, None, None


class LearnedClip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x, alpha)
        return torch.minimum(x.clamp(min=0.0), alpha)

    @staticmethod
    def backward(ctx, grad_output):
        x, alpha = ctx.saved_tensors
        below = x < alpha
        grad_x = grad_output * below
        grad_alpha = (grad_output * ~below).sum().reshape(alpha.shape)
        return grad_x, grad_alpha


class PACT(torch.autograd.Function):
    """PACT clipping (Choi et al., 2018): ``y = clamp(x, 0, alpha)`` with a learned
    upper bound.

    x: any shape; alpha: a one-element tensor, alpha > 0. ``dy/dalpha`` is 1 where the
    input is clipped from above and 0 elsewhere.
    """

    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x, alpha)
        return torch.minimum(torch.relu(x), alpha)

    @staticmethod
    def backward(ctx, grad_output):
        x, alpha = ctx.saved_tensors
        grad_x = grad_alpha = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_output * ((x > 0) & (x < alpha))
        if ctx.needs_input_grad[1]:
            grad_alpha = (grad_output * (x >= alpha)).sum().reshape(alpha.shape)
        return grad_x, grad_alpha


# --- soft rounding (Agustsson & Theis, 2020) as a custom op --------------------------


@torch.library.custom_op("corpus_heldout::soft_round", mutates_args=())
def soft_round(x: torch.Tensor, alpha: float) -> torch.Tensor:
    """``s(x) = m + tanh(alpha * r) / (2 tanh(alpha / 2))``, ``m = floor(x) + 1/2``,
    ``r = x - m``. Approaches ``round`` as alpha grows; alpha must be > 0."""
    m = torch.floor(x) + 0.5
    return m + torch.tanh(alpha * (x - m)) / (2.0 * math.tanh(alpha / 2.0))


@soft_round.register_fake
def _(x, alpha):
    return torch.empty_like(x)


def _soft_round_setup(ctx, inputs, output):
    x, alpha = inputs
    ctx.save_for_backward(x)
    ctx.alpha = alpha


def _soft_round_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    a = ctx.alpha
    r = x - (torch.floor(x) + 0.5)
    sech2 = 1.0 - torch.tanh(a * r).pow(2)
    return grad * a * sech2 / (2.0 * math.tanh(a / 2.0)), None


soft_round.register_autograd(_soft_round_backward, setup_context=_soft_round_setup)


class QuantStub(nn.Module):
    def __init__(self, scale: float = 0.05, bits: int = 8):
        super().__init__()
        self.scale = scale
        self.qmin, self.qmax = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def forward(self, x):
        return FakeQuantize.apply(x, self.scale, 0, self.qmin, self.qmax)


class ClippedReLU(nn.Module):
    def __init__(self, init: float = 6.0, fn=PACT):
        super().__init__()
        self.alpha = nn.Parameter(torch.tensor([init]))
        self.fn = fn

    def forward(self, x):
        return self.fn.apply(x, self.alpha)


@torch.no_grad()
def _sgd_step(params, lr: float):
    for p in params:
        if p.grad is not None:
            p.add_(p.grad, alpha=-lr)
            p.grad = None


def _qat_step(clip_fn):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(8, 16), ClippedReLU(2.0, clip_fn), QuantStub(), nn.Linear(16, 1)
    )
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    loss = (model(x) - y).pow(2).mean()
    loss.backward()
    _sgd_step(model.parameters(), 1e-2)
    return loss.item()


def use_fake_quantize():
    return _qat_step(PACT)


def use_learned_clip():
    return _qat_step(LearnedClip)


def use_pact():
    return _qat_step(PACT)


def use_soft_round():
    torch.manual_seed(0)
    enc = nn.Linear(6, 4)
    latent = enc(torch.randn(5, 6)) * 3.0
    y = soft_round(latent, 4.0)
    loss = (y - latent.detach().round()).pow(2).mean() + 0.01 * y.abs().mean()
    loss.backward()
    return enc.weight.grad.norm().item()
