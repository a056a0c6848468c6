"""Implicit layers: the output is defined by an equation, and backward differentiates the
equation (implicit function theorem) instead of the iterations that solved it."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def _tanh_fixed_point(x: torch.Tensor, weight: torch.Tensor, iters: int, tol: float):
    z = torch.zeros_like(x)
    for _ in range(iters):
        z_next = torch.tanh(z @ weight.mT + x)
        if (z_next - z).abs().max() < tol:
            return z_next
        z = z_next
    return z


class DEQFixedPoint(torch.autograd.Function):
    """Deep equilibrium layer z* = tanh(W z* + x), solved by fixed-point iteration.

    Args:
        x: input injection, [B, N].
        weight: W, [N, N], with spectral norm below 1 so the iteration contracts.
        iters: maximum number of iterations.

    Backward solves the adjoint system (I - J)^T u = grad, J = diag(1 - z*^2) W, once per
    row, rather than backpropagating through the iterations.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, iters: int = 200):
        with torch.no_grad():
            z = _tanh_fixed_point(x, weight, iters, tol=1e-13)
        ctx.save_for_backward(z, weight)
        return z

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        z, weight = ctx.saved_tensors
        d = 1 - z * z  # [B, N]
        eye = torch.eye(z.shape[-1], dtype=z.dtype, device=z.device)
        jac = d.unsqueeze(-1) * weight  # [B, N, N]
        u = torch.linalg.solve((eye - jac).mT, grad_output.unsqueeze(-1)).squeeze(-1)
        v = d * u
        grad_x = v
        grad_w = v.mT @ z
        return grad_x, grad_w, None


class ImplicitTanhLayer(torch.autograd.Function):
    # z = tanh(z W^T + x), x: [B, N], weight: [N, N] contractive (||W||_2 < 1)
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, iters: int = 200):
        with torch.no_grad():
            z = _tanh_fixed_point(x, weight, iters, tol=1e-13)
        ctx.save_for_backward(z, weight)
        return z

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        z, weight = ctx.saved_tensors
        n = z.shape[-1]
        d = 1 - z.pow(2)
        a = torch.eye(n, dtype=z.dtype) - d[:, :, None] * weight[None]
        u = torch.linalg.solve(a, grad_output[:, :, None])[:, :, 0]
        grad_x = d * u
        return grad_x, grad_x.T @ z, None


class CubicRoot(torch.autograd.Function):
    """Solve y**3 + a*y = x elementwise for y by Newton's method.

    ``a`` must be positive so the cubic is strictly increasing and the root is unique.
    Broadcasts ``x`` against ``a``.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, a: torch.Tensor, iters: int = 50) -> torch.Tensor:
        xb, ab = torch.broadcast_tensors(x, a)
        y = xb / (ab + xb.abs().pow(2 / 3))
        for _ in range(iters):
            y = y - (y**3 + ab * y - xb) / (3 * y * y + ab)
        ctx.save_for_backward(y, a)
        ctx.x_shape = x.shape
        return y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        y, a = ctx.saved_tensors
        # F(y; x, a) = y^3 + a y - x = 0  =>  dy = (dx - y da) / F_y
        g = grad_output / (3 * y * y + a)
        return g.sum_to_size(ctx.x_shape), (-g * y).sum_to_size(a.shape), None


class NewtonCubicSolve(torch.autograd.Function):
    """Real root of y**3 + a*y - x = 0 (a > 0), Newton iterations from y0 = x / (1 + a).

    The derivative of the residual at the root, computed in the last Newton step, is kept
    for backward so backward does no extra work.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, a: torch.Tensor, iters: int = 50) -> torch.Tensor:
        xb, ab = torch.broadcast_tensors(x, a)
        y = xb / (1 + ab)
        for _ in range(iters):
            fy = 3 * y * y + ab
            y = y - (y**3 + ab * y - xb) / fy
        fy = 3 * y * y + ab
        ctx.save_for_backward(y, fy)
        ctx.shapes = (x.shape, a.shape)
        return y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        y, fy = ctx.saved_tensors
        x_shape, a_shape = ctx.shapes
        g = grad_output / fy
        return g.sum_to_size(x_shape), (-g * y).sum_to_size(a_shape), None


def _kkt(Q: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    zeros = A.new_zeros(A.shape[0], A.shape[0])
    return torch.cat([torch.cat([Q, A.T], 1), torch.cat([A, zeros], 1)], 0)


class EqualityQP(torch.autograd.Function):
    """argmin_z 1/2 z^T Q z + p^T z  subject to  A z = b, in closed form from the KKT system.

    Q: [n, n] symmetric positive definite; p: [n]; A: [m, n] of full row rank (m < n); b: [m].
    Returns z [n]. Meant for the tiny problems of a differentiable-optimisation head
    (n of a few dozen at most): the KKT matrix is formed densely.
    """

    @staticmethod
    def forward(ctx: Any, Q: torch.Tensor, p: torch.Tensor, A: torch.Tensor, b: torch.Tensor):
        sol = torch.linalg.solve(_kkt(Q, A), torch.cat([-p, b]))
        ctx.save_for_backward(Q, p, A, b)
        return sol[: Q.shape[0]]

    @staticmethod
    def backward(ctx: Any, grad_z: torch.Tensor):
        # Recomputed rather than saved: the solve is cheap at these sizes.
        Q, p, A, b = ctx.saved_tensors
        n = Q.shape[0]
        kkt = _kkt(Q, A)
        sol = torch.linalg.solve(kkt, torch.cat([-p, b]))
        rhs = torch.cat([grad_z, grad_z.new_zeros(A.shape[0])])
        d = torch.linalg.solve(kkt.T, rhs)
        dz, dnu = d[:n], d[n:]
        z, nu = sol[:n], sol[n:]
        grad_Q = -torch.outer(dz, z)
        grad_p = -dz
        grad_A = -(torch.outer(dnu, z) + torch.outer(nu, dz))
        grad_b = dnu
        return grad_Q, grad_p, grad_A, grad_b


# --------------------------------------------------------------------------------------
# Modules


class DEQBlock(nn.Module):
    def __init__(self, dim: int, implementation: str = "deq") -> None:
        super().__init__()
        self.inject = nn.Linear(dim, dim)
        w = torch.randn(dim, dim) / dim**0.5
        self.weight = nn.Parameter(0.5 * w / torch.linalg.matrix_norm(w, 2))
        self.fn = DEQFixedPoint if implementation == "deq" else ImplicitTanhLayer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn.apply(self.inject(x), self.weight, 100)


class ProjectionHead(nn.Module):
    """Predicts a cost vector and projects it onto {z : sum(z) = 1}, with a learned metric."""

    def __init__(self, dim: int, n: int) -> None:
        super().__init__()
        self.cost = nn.Linear(dim, n)
        self.metric = nn.Parameter(torch.eye(n) + 0.1 * torch.randn(n, n))
        self.n = n

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        Q = self.metric @ self.metric.T + 0.1 * torch.eye(self.n)
        A = torch.ones(1, self.n)
        b = torch.ones(1)
        return torch.stack([EqualityQP.apply(Q, c, A, b) for c in self.cost(x)])


# --------------------------------------------------------------------------------------
# Usage


def use_deq_fixed_point() -> None:
    torch.manual_seed(0)
    block = DEQBlock(8, "deq")
    x = torch.randn(4, 8)
    block(x).pow(2).sum().backward()
    assert block.weight.grad is not None


def use_implicit_tanh_layer() -> None:
    torch.manual_seed(0)
    block = DEQBlock(8, "tanh")
    x = torch.randn(4, 8)
    block(x).pow(2).sum().backward()
    assert block.weight.grad is not None


def use_cubic_root() -> None:
    torch.manual_seed(0)
    x = torch.randn(16, requires_grad=True)
    a = torch.full((16,), 0.5, requires_grad=True)
    CubicRoot.apply(x * 4, a).sum().backward()
    assert a.grad is not None


def use_newton_cubic_solve() -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 5, requires_grad=True)
    a = torch.rand(5).add(0.5).requires_grad_()
    y = NewtonCubicSolve.apply(x, a)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    (g.pow(2).sum() + y.pow(2).sum()).backward()  # gradient penalty
    assert a.grad is not None


def use_equality_qp() -> None:
    torch.manual_seed(0)
    head = ProjectionHead(6, 4)
    x = torch.randn(3, 6)
    z = head(x)
    (z - torch.tensor([0.7, 0.1, 0.1, 0.1])).pow(2).sum().backward()
    assert head.metric.grad is not None
