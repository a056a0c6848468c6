"""Smooth activations with hand-written backward passes.

The autograd graph of ``x * tanh(softplus(x))`` keeps four intermediates alive per
activation; these Functions keep one (or two) and rebuild the rest in backward.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MishFunction(torch.autograd.Function):
    """Mish (Misra, 2019): ``x * tanh(softplus(x))``.

    Only ``x`` is saved; the derivative

        tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2),   sp = softplus(x)

    is recomputed in backward, which keeps the activation memory at one tensor and lets
    the backward itself be differentiated (used by the gradient-penalty critic).
    """

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.tanh(F.softplus(x))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        tsp = torch.tanh(F.softplus(x))
        return grad_output * (tsp + x * torch.sigmoid(x) * (1.0 - tsp * tsp))


class FusedMish(torch.autograd.Function):
    # forward already has tanh(softplus(x)); keep it instead of recomputing it
    @staticmethod
    def forward(ctx, x):
        tsp = torch.tanh(F.softplus(x))
        ctx.save_for_backward(x, tsp)
        return x * tsp

    @staticmethod
    def backward(ctx, grad_output):
        x, tsp = ctx.saved_tensors
        return grad_output * (tsp + x * torch.sigmoid(x) * (1.0 - tsp.square()))


class Snake(torch.autograd.Function):
    """Snake activation with a learnable frequency per channel (Ziyin et al., 2020).

    ``y = x + sin(alpha * x)^2 / alpha``

    Args:
        x: ``[batch, channels, time]``.
        alpha: ``[channels]``, strictly positive (the module keeps it positive by
            parametrising ``log alpha``; the division is not guarded).

    Returns ``[batch, channels, time]``.
    """

    @staticmethod
    def forward(ctx, x, alpha):
        a = alpha.view(1, -1, 1)
        ctx.save_for_backward(x, alpha)
        return x + torch.sin(a * x).pow(2) / a

    @staticmethod
    def backward(ctx, grad_output):
        x, alpha = ctx.saved_tensors
        a = alpha.view(1, -1, 1)
        grad_x = grad_alpha = None
        sin2 = torch.sin(2.0 * a * x)
        if ctx.needs_input_grad[0]:
            grad_x = grad_output * (1.0 + sin2)
        if ctx.needs_input_grad[1]:
            d_alpha = x * sin2 / a - torch.sin(a * x).pow(2) / (a * a)
            grad_alpha = (grad_output * d_alpha).sum(dim=(0, 2))
        return grad_x, grad_alpha


class Mish(nn.Module):
    def __init__(self, fused: bool = False):
        super().__init__()
        self.fused = fused

    def forward(self, x):
        if self.fused:
            return FusedMish.apply(x)
        return MishFunction.apply(x)


class SnakeActivation(nn.Module):
    def __init__(self, channels: int, init_alpha: float = 1.0):
        super().__init__()
        self.log_alpha = nn.Parameter(torch.full((channels,), float(init_alpha)).log())

    def forward(self, x):
        return Snake.apply(x, self.log_alpha.exp())


@torch.no_grad()
def _sgd_step(params, lr: float):
    for p in params:
        if p.grad is not None:
            p.add_(p.grad, alpha=-lr)
            p.grad = None


def use_mish_function():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(16, 32), Mish(), nn.Linear(32, 1))
    x = torch.randn(8, 16)
    loss = net(x).pow(2).mean()
    loss.backward()
    return loss.item()


def use_fused_mish():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(16, 32), Mish(fused=True), nn.Linear(32, 1))
    x = torch.randn(8, 16)
    loss = net(x).pow(2).mean()
    loss.backward()
    return loss.item()


def use_snake():
    torch.manual_seed(0)
    conv = nn.Conv1d(4, 8, kernel_size=3, padding=1)
    act = SnakeActivation(8, init_alpha=0.8)
    params = list(conv.parameters()) + list(act.parameters())
    audio = torch.randn(2, 4, 64)
    loss = act(conv(audio)).abs().mean()
    loss.backward()
    _sgd_step(params, 1e-2)
    return loss.item()
