"""Scaling ops registered with torch.library, so they survive torch.compile and export.

- ``grad_scale``: identity forward, scaled gradient (gradient reversal with a negative
  scale, as in domain-adversarial training).
- ``residual_scale``: a fixed scalar on a residual branch.
- ``layer_scale``: CaiT-style learnable per-channel scale.
"""

from __future__ import annotations

import torch
from torch import nn


@torch.library.custom_op("corpus_heldout::grad_scale", mutates_args=())
def grad_scale(x: torch.Tensor, scale: float) -> torch.Tensor:
    """Returns ``x`` unchanged; multiplies the incoming gradient by ``scale``.

    The backward is intentionally not the derivative of the forward: ``scale=-1`` is the
    gradient reversal layer of DANN, ``0 < scale < 1`` damps the gradient reaching a shared
    trunk from an auxiliary head.
    """
    return x.clone()


@grad_scale.register_fake
def _(x, scale):
    return torch.empty_like(x)


def _grad_scale_setup(ctx, inputs, output):
    ctx.scale = inputs[1]


def _grad_scale_backward(ctx, grad):
    return grad * ctx.scale, None


grad_scale.register_autograd(_grad_scale_backward, setup_context=_grad_scale_setup)


@torch.library.custom_op("corpus_heldout::residual_scale", mutates_args=())
def residual_scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return x * alpha


@residual_scale.register_fake
def _(x, alpha):
    return torch.empty_like(x)


def _residual_scale_setup(ctx, inputs, output):
    ctx.alpha = inputs[1]


def _residual_scale_backward(ctx, grad):
    return grad, None


residual_scale.register_autograd(_residual_scale_backward, setup_context=_residual_scale_setup)


@torch.library.custom_op("corpus_heldout::layer_scale", mutates_args=())
def layer_scale(x: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """x: [..., D], gamma: [D]. Returns x * gamma."""
    return x * gamma


@layer_scale.register_fake
def _(x, gamma):
    torch._check(gamma.shape[-1] == x.shape[-1])
    return torch.empty_like(x)


def _layer_scale_setup(ctx, inputs, output):
    x, gamma = inputs
    ctx.save_for_backward(x, gamma)


def _layer_scale_backward(ctx, grad):
    x, gamma = ctx.saved_tensors
    grad_x = grad * gamma if ctx.needs_input_grad[0] else None
    grad_gamma = None
    if ctx.needs_input_grad[1]:
        grad_gamma = (grad * x).reshape(-1, x.shape[-1]).sum(0)
    return grad_x, grad_gamma


layer_scale.register_autograd(_layer_scale_backward, setup_context=_layer_scale_setup)


class ResidualMLPBlock(nn.Module):
    def __init__(self, dim: int, init_scale: float = 0.1, learnable: bool = True):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.learnable = learnable
        self.init_scale = init_scale
        if learnable:
            self.gamma = nn.Parameter(torch.full((dim,), init_scale))

    def forward(self, x):
        h = torch.nn.functional.gelu(self.fc(x))
        if self.learnable:
            return x + layer_scale(h, self.gamma)
        return x + residual_scale(h, self.init_scale)


class DomainAdversarialHead(nn.Module):
    def __init__(self, dim: int, lambd: float = 1.0):
        super().__init__()
        self.lambd = lambd
        self.clf = nn.Linear(dim, 2)

    def forward(self, feats):
        return self.clf(grad_scale(feats, -self.lambd))


def use_grad_scale():
    torch.manual_seed(0)
    trunk = nn.Linear(8, 8)
    head = DomainAdversarialHead(8, lambd=0.5)
    x = torch.randn(16, 8)
    domain = torch.randint(0, 2, (16,))
    loss = nn.functional.cross_entropy(head(trunk(x)), domain)
    loss.backward()
    return trunk.weight.grad


def use_residual_scale():
    torch.manual_seed(0)
    block = ResidualMLPBlock(8, init_scale=0.1, learnable=False)
    x = torch.randn(4, 10, 8)
    block(x).pow(2).mean().backward()
    return block.fc.weight.grad


def use_layer_scale():
    torch.manual_seed(0)
    block = ResidualMLPBlock(8, init_scale=0.1)
    x = torch.randn(4, 10, 8)
    block(x).pow(2).mean().backward()
    return block.gamma.grad
