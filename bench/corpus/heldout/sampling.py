"""Samplers with custom gradients for the latent-variable models.

Two families:

* reparameterised samples, where the noise is drawn by the caller and passed in, so the
  sample is a deterministic function of the parameters;
* discrete samples drawn inside forward, whose backward returns a Monte-Carlo estimate of
  the gradient of the *expected* output (the sample itself is piecewise constant).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ReparamNormal(torch.autograd.Function):
    """z = loc + exp(log_scale) * eps.

    ``eps`` is standard normal noise of the same shape, drawn by the caller (so the same
    draw can be reused for the control variate). Gradients flow to ``loc`` and
    ``log_scale``; ``eps`` gets one too, for completeness.
    """

    @staticmethod
    def forward(ctx, loc, log_scale, eps):
        ctx.save_for_backward(log_scale, eps)
        return loc + torch.exp(log_scale) * eps

    @staticmethod
    def backward(ctx, grad):
        log_scale, eps = ctx.saved_tensors
        scale = torch.exp(log_scale)
        grad_loc = grad if ctx.needs_input_grad[0] else None
        grad_log_scale = grad * eps * scale if ctx.needs_input_grad[1] else None
        grad_eps = grad * scale if ctx.needs_input_grad[2] else None
        return grad_loc, grad_log_scale, grad_eps


class NormalRsample(torch.autograd.Function):
    # Fused rsample for the diagonal-Gaussian encoder head. The scale is parameterised by
    # its log for stability; noise comes from the caller.
    @staticmethod
    def forward(ctx, loc, log_scale, noise):
        scale = log_scale.exp()
        ctx.save_for_backward(scale, noise)
        return torch.addcmul(loc, scale, noise)

    @staticmethod
    def backward(ctx, grad):
        scale, noise = ctx.saved_tensors
        return grad, grad * noise, grad * scale


class ScoreFunctionCategorical(torch.autograd.Function):
    """Draw one-hot samples from ``softmax(logits)`` along the last dim.

    The sample is piecewise constant in ``logits``, so its derivative is zero almost
    everywhere. Backward instead returns the score-function (REINFORCE) estimator

        f(a) * d log p(a) / d logits = <grad, onehot(a)> * (onehot(a) - p),

    an unbiased single-sample estimate of the gradient of ``E[<grad, onehot(a)>]``. It is
    noisy by design; average over many samples or use a baseline upstream.
    """

    @staticmethod
    def forward(ctx, logits):
        probs = torch.softmax(logits, dim=-1)
        idx = torch.multinomial(probs.reshape(-1, probs.shape[-1]), 1)
        onehot = F.one_hot(idx.squeeze(-1), probs.shape[-1]).to(logits.dtype)
        onehot = onehot.reshape(probs.shape)
        ctx.save_for_backward(probs, onehot)
        return onehot

    @staticmethod
    def backward(ctx, grad):
        probs, onehot = ctx.saved_tensors
        reward = (grad * onehot).sum(-1, keepdim=True)
        return reward * (onehot - probs)


class CategoricalSample(torch.autograd.Function):
    """One-hot sample of a categorical over the last dim of ``logits``."""

    @staticmethod
    def forward(ctx, logits):
        probs = logits.softmax(-1)
        flat = probs.reshape(-1, probs.shape[-1])
        onehot = torch.zeros_like(flat).scatter_(1, torch.multinomial(flat, 1), 1.0)
        onehot = onehot.view_as(probs)
        ctx.save_for_backward(probs, onehot)
        return onehot

    @staticmethod
    def backward(ctx, grad):
        probs, onehot = ctx.saved_tensors
        # d log p_a / d logits_a = 1 - p_a
        return grad * onehot * (1 - probs)


class DiagonalGaussianHead(nn.Module):
    def __init__(self, d_in: int, d_latent: int, fused: bool = False):
        super().__init__()
        self.proj = nn.Linear(d_in, 2 * d_latent)
        self.sample = NormalRsample.apply if fused else ReparamNormal.apply

    def forward(self, h):
        loc, log_scale = self.proj(h).chunk(2, dim=-1)
        eps = torch.randn_like(loc)
        z = self.sample(loc, log_scale, eps)
        kl = 0.5 * (loc.pow(2) + torch.exp(2 * log_scale) - 1 - 2 * log_scale).sum(-1)
        return z, kl


def _vae_step(fused):
    torch.manual_seed(0)
    head = DiagonalGaussianHead(8, 4, fused=fused)
    dec = nn.Linear(4, 8)
    x = torch.randn(16, 8)
    z, kl = head(x)
    loss = (dec(z) - x).pow(2).sum(-1).mean() + kl.mean()
    loss.backward()
    return head.proj.weight.grad


def use_reparam_normal():
    return _vae_step(fused=False)


def use_normal_rsample():
    return _vae_step(fused=True)


def _policy_step(sampler):
    torch.manual_seed(0)
    policy = nn.Linear(6, 5)
    rewards = torch.randn(5)
    obs = torch.randn(32, 6)
    actions = sampler(policy(obs))
    loss = -(actions * rewards).sum(-1).mean()
    loss.backward()
    return policy.weight.grad


def use_score_function_categorical():
    return _policy_step(ScoreFunctionCategorical.apply)


def use_categorical_sample():
    return _policy_step(CategoricalSample.apply)
