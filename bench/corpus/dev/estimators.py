"""Sampling layers and gradient estimators for discrete and continuous latent variables.

The samplers here are used by the variational models of the package: a Bernoulli gate, a
hard Gumbel-softmax, a score-function (REINFORCE) categorical, the reparameterised Normal of
a VAE encoder, and dropout.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class BernoulliSample(torch.autograd.Function):
    """Draw b ~ Bernoulli(probs) elementwise.

    The sample is piecewise constant in ``probs``, so its pathwise derivative is zero almost
    everywhere. Backward instead returns the gradient of the expectation, d E[b] / dp = 1,
    which is what a stochastic binary gate in a variational model needs.

    Args:
        probs: probabilities, every element in (0, 1).
    """

    @staticmethod
    def forward(ctx: Any, probs: torch.Tensor) -> torch.Tensor:
        return torch.bernoulli(probs)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output


class GumbelSoftmaxST(torch.autograd.Function):
    """Straight-through Gumbel-softmax: a one-hot sample forward, the relaxed sample's
    gradient backward (Jang et al., 2017)."""

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, tau: float = 1.0, dim: int = -1) -> torch.Tensor:
        gumbels = -torch.empty_like(logits).exponential_().log()
        y_soft = ((logits + gumbels) / tau).softmax(dim)
        index = y_soft.argmax(dim, keepdim=True)
        y_hard = torch.zeros_like(logits).scatter_(dim, index, 1.0)
        ctx.save_for_backward(y_soft)
        ctx.tau = tau
        ctx.dim = dim
        return y_hard

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        (y_soft,) = ctx.saved_tensors
        dot = (grad_output * y_soft).sum(ctx.dim, keepdim=True)
        return y_soft * (grad_output - dot) / ctx.tau, None, None


class ReinforceCategorical(torch.autograd.Function):
    """One-hot sample a ~ Categorical(softmax(logits)) along the last dim.

    Backward is the score-function (REINFORCE) estimator of the gradient of E[f(a)] for the
    downstream loss f: with the loss linear in the one-hot sample, f(a) = <grad_output, a>
    and the estimator is f(a) * d log p(a) / d logits = f(a) * (a - softmax(logits)). It is
    unbiased but noisy; no baseline is subtracted here (see ``ReinforceHead``).

    logits: [..., K]
    """

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor) -> torch.Tensor:
        probs = logits.softmax(-1)
        index = torch.multinomial(probs.reshape(-1, probs.shape[-1]), 1)
        sample = F.one_hot(index.reshape(probs.shape[:-1]), probs.shape[-1]).to(probs)
        ctx.save_for_backward(sample, probs)
        return sample

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        sample, probs = ctx.saved_tensors
        f = (grad_output * sample).sum(-1, keepdim=True)
        return f * (sample - probs)


class ReparamNormal(torch.autograd.Function):
    """z = mu + exp(log_sigma) * eps, with the standard-normal noise eps given by the caller.

    Fused so the encoder keeps only (mu, log_sigma, eps) for backward instead of sigma and
    the product.

    Shapes: mu, log_sigma, eps all [B, D].
    """

    @staticmethod
    def forward(
        ctx: Any, mu: torch.Tensor, log_sigma: torch.Tensor, eps: torch.Tensor
    ) -> torch.Tensor:
        ctx.save_for_backward(log_sigma, eps)
        return mu + log_sigma.exp() * eps

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        log_sigma, eps = ctx.saved_tensors
        sigma = log_sigma.exp()
        grad_mu = grad_output if ctx.needs_input_grad[0] else None
        grad_log_sigma = grad_output * sigma * eps if ctx.needs_input_grad[1] else None
        grad_eps = grad_output * sigma if ctx.needs_input_grad[2] else None
        return grad_mu, grad_log_sigma, grad_eps


class GaussianRsample(torch.autograd.Function):
    """Reparameterised sample of N(loc, exp(log_scale)^2) from given standard-normal noise.

    loc, log_scale, noise: same shape. Differentiable in all three (twice, for gradient
    penalties on the encoder).
    """

    @staticmethod
    def forward(ctx: Any, loc: torch.Tensor, log_scale: torch.Tensor, noise: torch.Tensor):
        scale = log_scale.exp()
        ctx.save_for_backward(scale, noise)
        return loc + scale * noise

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        scale, noise = ctx.saved_tensors
        grad_scaled = grad_output * scale
        return grad_output, grad_scaled * noise, grad_scaled


class Dropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, p: float = 0.5, training: bool = True):
        if not training or p == 0.0:
            ctx.save_for_backward(None)
            return x.clone()
        keep = torch.rand_like(x) >= p
        mask = keep.to(x.dtype) / (1.0 - p)
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        (mask,) = ctx.saved_tensors
        if mask is None:
            return grad_output, None, None
        return grad_output * mask, None, None


class ScaledDropout(torch.autograd.Function):
    """Inverted dropout: zero each element with probability p, scale the rest by 1/(1-p).

    Keeps the boolean mask (1 byte per element) instead of the scaled float mask.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, p: float = 0.5, training: bool = True):
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        ctx.scale = 1.0 / (1.0 - p) if training else 1.0
        if not training:
            return x.clone()
        keep = torch.rand_like(x) >= p
        ctx.save_for_backward(keep)
        return x * keep * ctx.scale

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        return grad_output * ctx.scale, None, None


# --------------------------------------------------------------------------------------
# Modules


class StochasticGate(nn.Module):
    """A gate that keeps each feature with a learned probability, sampled hard."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.logit = nn.Parameter(torch.zeros(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        probs = torch.sigmoid(self.logit).clamp(1e-4, 1 - 1e-4).expand_as(x)
        return x * BernoulliSample.apply(probs)


class GumbelRouter(nn.Module):
    """Routes each token to one expert with a hard Gumbel-softmax choice."""

    def __init__(self, dim: int, experts: int, tau: float = 0.5) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(experts))
        self.tau = tau

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        choice = GumbelSoftmaxST.apply(self.proj(x), self.tau, -1)
        outs = torch.stack([expert(x) for expert in self.experts], dim=-1)
        return (outs * choice.unsqueeze(-2)).sum(-1)


class ReinforceHead(nn.Module):
    def __init__(self, dim: int, actions: int) -> None:
        super().__init__()
        self.policy = nn.Linear(dim, actions)

    def forward(self, x: torch.Tensor, rewards: torch.Tensor) -> torch.Tensor:
        action = ReinforceCategorical.apply(self.policy(x))
        baseline = rewards.mean(-1, keepdim=True)
        return -(action * (rewards - baseline)).sum(-1).mean()


class GaussianEncoder(nn.Module):
    def __init__(self, dim: int, latent: int) -> None:
        super().__init__()
        self.mu = nn.Linear(dim, latent)
        self.log_sigma = nn.Linear(dim, latent)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, log_sigma = self.mu(x), self.log_sigma(x).clamp(-6.0, 3.0)
        z = ReparamNormal.apply(mu, log_sigma, torch.randn_like(mu))
        kl = 0.5 * (mu.pow(2) + (2 * log_sigma).exp() - 2 * log_sigma - 1).sum(-1)
        return z, kl


def dropout(x: torch.Tensor, p: float = 0.5, training: bool = True) -> torch.Tensor:
    return Dropout.apply(x, p, training)


def scaled_dropout(x: torch.Tensor, p: float = 0.5, training: bool = True) -> torch.Tensor:
    return ScaledDropout.apply(x, p, training)


# --------------------------------------------------------------------------------------
# Usage


def use_bernoulli_sample() -> None:
    torch.manual_seed(0)
    gate = StochasticGate(16)
    x = torch.randn(8, 16)
    loss = gate(x).pow(2).mean()
    loss.backward()
    assert gate.logit.grad is not None


def use_gumbel_softmax_st() -> None:
    torch.manual_seed(0)
    router = GumbelRouter(8, 4)
    x = torch.randn(6, 8)
    router(x).pow(2).mean().backward()
    assert router.proj.weight.grad is not None


def use_reinforce_categorical() -> None:
    torch.manual_seed(0)
    head = ReinforceHead(8, 5)
    x = torch.randn(16, 8)
    rewards = torch.rand(16, 5)
    head(x, rewards).backward()
    assert head.policy.weight.grad is not None


def use_reparam_normal() -> None:
    torch.manual_seed(0)
    enc = GaussianEncoder(12, 4)
    decoder = nn.Linear(4, 12)
    x = torch.randn(10, 12)
    z, kl = enc(x)
    loss = F.mse_loss(decoder(z), x) + kl.mean()
    loss.backward()


def use_gaussian_rsample() -> None:
    torch.manual_seed(0)
    loc = torch.randn(8, 3, requires_grad=True)
    log_scale = torch.full((8, 3), -1.0, requires_grad=True)
    z = GaussianRsample.apply(loc, log_scale, torch.randn(8, 3))
    (g,) = torch.autograd.grad(z.pow(2).sum(), log_scale, create_graph=True)
    (z.pow(2).mean() + 0.1 * g.pow(2).sum()).backward()
    assert log_scale.grad is not None


def use_dropout() -> None:
    torch.manual_seed(0)
    lin = nn.Linear(16, 16)
    x = torch.randn(4, 16)
    dropout(torch.relu(lin(x)), 0.1).sum().backward()
    assert lin.weight.grad is not None


def use_scaled_dropout() -> None:
    torch.manual_seed(0)
    lin = nn.Linear(16, 16)
    x = torch.randn(4, 16)
    scaled_dropout(torch.tanh(lin(x)), 0.25).pow(2).sum().backward()
    assert lin.weight.grad is not None
