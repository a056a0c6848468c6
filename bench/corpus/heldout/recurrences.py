"""Recurrent building blocks for a MuZero-style latent model and linear RNN layers."""

from __future__ import annotations

import torch
from torch import nn


class ScaleGradient(torch.autograd.Function):
    """Identity in forward; multiplies the incoming gradient by ``scale`` in backward.

    This is the ``scale_gradient`` of MuZero (Schrittwieser et al., 2020, Appendix G):
    the hidden state fed back into the dynamics network has its gradient halved at every
    unroll step, so that the total gradient into the representation network stays the
    same however many steps are unrolled. It is deliberately not the derivative of
    forward.
    """

    @staticmethod
    def forward(ctx, x, scale: float = 0.5):
        ctx.scale = scale
        return x.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale, None


class LeakyCarry(torch.autograd.Function):
    """Leaky carry between unroll steps: ``h_new = decay * h + (1 - decay) * x``."""

    @staticmethod
    def forward(ctx, h, x, decay: float = 0.9):
        ctx.decay = decay
        return decay * h + (1.0 - decay) * x

    @staticmethod
    def backward(ctx, grad_output):
        grad_h = grad_output
        grad_x = grad_output * (1.0 - ctx.decay)
        return grad_h, grad_x, None


class ExponentialCarry(torch.autograd.Function):
    """``h_new = decay * h + (1 - decay) * x`` for ``0 <= decay < 1``."""

    @staticmethod
    def forward(ctx, h, x, decay: float = 0.9):
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"decay must be in [0, 1), got {decay}")
        ctx.decay = decay
        return torch.lerp(x, h, decay)

    @staticmethod
    def backward(ctx, grad_output):
        d = ctx.decay
        grad_h = grad_output * d if ctx.needs_input_grad[0] else None
        grad_x = grad_output * (1.0 - d) if ctx.needs_input_grad[1] else None
        return grad_h, grad_x, None


class LinearRecurrence(torch.autograd.Function):
    """First-order linear recurrence over time, ``h_t = a_t * h_{t-1} + x_t``.

    Args:
        a: gates ``[B, T, D]`` (any real values; the layers use sigmoid gates in (0, 1)).
        x: inputs ``[B, T, D]``.
        h0: initial state ``[B, D]``.

    Returns all states ``[B, T, D]``. Backward runs the adjoint recurrence
    ``g_t = dL/dh_t + a_{t+1} g_{t+1}`` from the last step back.
    """

    @staticmethod
    def forward(ctx, a, x, h0):
        h = h0
        states = []
        for t in range(x.shape[1]):
            h = a[:, t] * h + x[:, t]
            states.append(h)
        out = torch.stack(states, dim=1)
        ctx.save_for_backward(a, h0, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        a, h0, out = ctx.saved_tensors
        T = a.shape[1]
        prev = torch.cat([h0.unsqueeze(1), out[:, :-1]], dim=1)
        carry = torch.zeros_like(h0)
        adj = [None] * T
        for t in reversed(range(T)):
            carry = grad_out[:, t] + carry
            adj[t] = carry
            carry = carry * a[:, t]
        g = torch.stack(adj, dim=1)
        return g * prev, g, carry


class GatedLinearRNN(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gate = nn.Linear(dim, dim)
        self.inp = nn.Linear(dim, dim)

    def forward(self, x, h0=None):
        if h0 is None:
            h0 = x.new_zeros(x.shape[0], x.shape[-1])
        return LinearRecurrence.apply(torch.sigmoid(self.gate(x)), self.inp(x), h0)


class Dynamics(nn.Module):
    """Latent dynamics of a MuZero-style agent, unrolled ``k`` steps."""

    def __init__(self, dim: int, n_actions: int, carry=ExponentialCarry):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + n_actions, dim), nn.Tanh())
        self.reward = nn.Linear(dim, 1)
        self.n_actions = n_actions
        self.carry = carry

    def forward(self, h, actions):
        rewards = []
        for a in actions.unbind(1):
            onehot = nn.functional.one_hot(a, self.n_actions).to(h.dtype)
            h = ScaleGradient.apply(h, 0.5)
            proposal = self.net(torch.cat([h, onehot], dim=-1))
            h = self.carry.apply(h, proposal, 0.8)
            rewards.append(self.reward(h))
        return torch.cat(rewards, dim=-1)


def _unroll(carry):
    torch.manual_seed(0)
    model = Dynamics(8, 3, carry=carry)
    h = torch.randn(4, 8, requires_grad=True)
    actions = torch.randint(0, 3, (4, 5))
    loss = (model(h, actions) - 1.0).pow(2).mean()
    loss.backward()
    return h.grad.norm().item()


def use_scale_gradient():
    return _unroll(ExponentialCarry)


def use_leaky_carry():
    return _unroll(LeakyCarry)


def use_exponential_carry():
    return _unroll(ExponentialCarry)


def use_linear_recurrence():
    torch.manual_seed(0)
    rnn = GatedLinearRNN(6)
    x = torch.randn(2, 12, 6)
    loss = rnn(x)[:, -1].pow(2).sum()
    loss.backward()
    return loss.item()
