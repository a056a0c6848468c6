"""Implicit layers: the output is defined by an equation, and backward solves a linear
system instead of differentiating through the solver's iterations."""

from __future__ import annotations

import torch
from torch import nn


def _fixed_point(x, W, max_iter, tol):
    z = torch.zeros_like(x)
    for _ in range(max_iter):
        z_next = torch.tanh(z @ W.mT + x)
        if (z_next - z).abs().max() < tol:
            return z_next
        z = z_next
    return z


class DEQFixedPoint(torch.autograd.Function):
    """Equilibrium of ``z = tanh(W z + x)`` (a one-layer deep equilibrium model).

    Args:
        x: ``[B, n]`` input injection.
        W: ``[n, n]`` weight; must be a contraction (spectral norm < 1) so that the
            fixed point exists, is unique, and the plain iteration converges.
        max_iter, tol: iteration budget and stopping tolerance of the forward solver.

    Backward uses the implicit function theorem: with ``s = 1 - z**2`` and
    ``J = diag(s) W``, the adjoint ``v`` solves ``(I - J)^T v = grad``.
    """

    @staticmethod
    def forward(ctx, x, W, max_iter: int = 500, tol: float = 1e-14):
        z = _fixed_point(x, W, max_iter, tol)
        ctx.save_for_backward(W, z)
        return z

    @staticmethod
    def backward(ctx, grad):
        W, z = ctx.saved_tensors
        s = 1 - z * z
        n = W.shape[-1]
        eye = torch.eye(n, dtype=W.dtype, device=W.device)
        # (I - diag(s) W)^T = I - W^T diag(s), one system per batch row
        system = eye - W.mT.unsqueeze(0) * s.unsqueeze(-2)
        v = torch.linalg.solve(system, grad.unsqueeze(-1)).squeeze(-1)
        w = s * v
        return w, w.mT @ z, None, None


class TanhEquilibrium(torch.autograd.Function):
    """Solves z = tanh(z W^T + x) for z. x: [B, n], W: [n, n] with ||W|| < 1."""

    @staticmethod
    def forward(ctx, x, W, max_iter: int = 500, tol: float = 1e-14):
        with torch.no_grad():
            z = _fixed_point(x, W, max_iter, tol)
        ctx.save_for_backward(W, z)
        return z

    @staticmethod
    def backward(ctx, grad):
        W, z = ctx.saved_tensors
        d = 1 - z.pow(2)
        eye = torch.eye(W.shape[0], dtype=W.dtype, device=W.device)
        jac = d.unsqueeze(-1) * W  # d z_next / d z
        v = torch.linalg.solve(eye - jac, grad.unsqueeze(-1)).squeeze(-1)
        grad_x = d * v
        grad_W = grad_x.mT @ z
        return grad_x, grad_W, None, None


class RidgeSolve(torch.autograd.Function):
    """Closed-form ridge regression w = (X^T X + lam I)^{-1} X^T y.

    X: [m, d], y: [m], lam: scalar tensor > 0.
    """

    @staticmethod
    def forward(ctx, X, y, lam):
        d = X.shape[-1]
        A = X.mT @ X + lam * torch.eye(d, dtype=X.dtype, device=X.device)
        w = torch.linalg.solve(A, X.mT @ y)
        ctx.save_for_backward(X, y, lam, w)
        return w

    @staticmethod
    def backward(ctx, grad):
        X, y, lam, w = ctx.saved_tensors
        d = X.shape[-1]
        A = X.mT @ X + lam * torch.eye(d, dtype=X.dtype, device=X.device)
        u = torch.linalg.solve(A, grad)
        grad_X = torch.outer(y, u) - torch.outer(X @ w, u) - torch.outer(X @ u, w)
        grad_y = X @ u
        return grad_X, grad_y, None


class DEQBlock(nn.Module):
    def __init__(self, n: int, implicit_solver=DEQFixedPoint):
        super().__init__()
        self.inj = nn.Linear(n, n)
        self.W = nn.Parameter(torch.randn(n, n) * 0.3 / n**0.5)
        self.solver = implicit_solver

    def forward(self, h):
        return self.solver.apply(self.inj(h), self.W)


def _deq_step(solver):
    torch.manual_seed(0)
    block = DEQBlock(6, solver).double()
    h = torch.randn(10, 6, dtype=torch.float64)
    loss = block(h).pow(2).sum()
    loss.backward()
    return block.W.grad


def use_deq_fixed_point():
    return _deq_step(DEQFixedPoint)


def use_tanh_equilibrium():
    return _deq_step(TanhEquilibrium)


def use_ridge_solve():
    """Tune the ridge penalty on a validation split (hyperparameter gradient)."""
    torch.manual_seed(0)
    X = torch.randn(40, 5, dtype=torch.float64)
    w_true = torch.randn(5, dtype=torch.float64)
    y = X @ w_true + 0.3 * torch.randn(40, dtype=torch.float64)
    log_lam = nn.Parameter(torch.tensor(0.0, dtype=torch.float64))
    w = RidgeSolve.apply(X[:30], y[:30], log_lam.exp())
    val = (X[30:] @ w - y[30:]).pow(2).mean()
    val.backward()
    return log_lam.grad
