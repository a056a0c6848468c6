"""Differentiable mass-spring simulation: integrator steps, spring and contact energies.

Positions and velocities are ``[N, 3]`` (last dim 3); springs are given by an integer
edge list ``[E, 2]``.
"""

from __future__ import annotations

import torch
from torch import nn


class EulerStep(torch.autograd.Function):
    """One semi-implicit (symplectic) Euler step.

    ``v' = v + dt * f / mass``, ``x' = x + dt * v'``.

    x, v, f: ``[N, 3]``; dt > 0; mass > 0. Returns ``(x', v')``. Either output may be
    unused downstream (a loss on the final positions only), so grads are not materialised
    and a missing one is treated as zero.
    """

    @staticmethod
    def forward(ctx, x, v, f, dt: float, mass: float):
        ctx.set_materialize_grads(False)
        ctx.dt, ctx.mass = dt, mass
        v_new = v + dt * f / mass
        return x + dt * v_new, v_new

    @staticmethod
    def backward(ctx, grad_x, grad_v):
        if grad_x is None and grad_v is None:
            return None, None, None, None, None
        dt = ctx.dt
        if grad_x is None:
            gv = grad_v
        elif grad_v is None:
            gv = dt * grad_x
        else:
            gv = grad_v + dt * grad_x
        return grad_x, gv, gv * (dt / ctx.mass), None, None


class IntegratorStep(torch.autograd.Function):
    """Symplectic Euler: v1 = v + dt f / m, x1 = x + dt v1. Returns (x1, v1)."""

    @staticmethod
    def forward(ctx, x, v, f, dt: float, mass: float):
        ctx.set_materialize_grads(False)
        ctx.dt, ctx.mass = dt, mass
        v1 = v + (dt / mass) * f
        x1 = x + dt * v1
        return x1, v1

    @staticmethod
    def backward(ctx, grad_x1, grad_v1):
        dt, m = ctx.dt, ctx.mass
        if grad_v1 is None:
            return grad_x1, None, None, None, None
        if grad_x1 is not None:
            grad_v1 = grad_v1 + dt * grad_x1
        return grad_x1, grad_v1, grad_v1 * dt / m, None, None


def _edge_vectors(x, edges):
    return x[edges[:, 0]] - x[edges[:, 1]]


class SpringEnergy(torch.autograd.Function):
    """Total elastic energy ``0.5 * k * sum_e (|x_i - x_j| - rest_e)^2``.

    Args:
        x: ``[N, 3]`` positions.
        edges: ``[E, 2]`` int64 node indices in ``[0, N)``; no spring may have zero length.
        rest: ``[E]`` rest lengths.
        k: stiffness.

    The backward pass is itself differentiable (used for Newton steps via
    Hessian-vector products).
    """

    @staticmethod
    def forward(ctx, x, edges, rest, k: float = 1.0):
        ctx.save_for_backward(x, edges, rest)
        ctx.k = k
        length = torch.linalg.vector_norm(_edge_vectors(x, edges), dim=-1)
        return 0.5 * k * (length - rest).pow(2).sum()

    @staticmethod
    def backward(ctx, grad):
        x, edges, rest = ctx.saved_tensors
        d = _edge_vectors(x, edges)
        length = torch.linalg.vector_norm(d, dim=-1)
        stretch = grad * ctx.k * (length - rest)
        force = (stretch / length).unsqueeze(-1) * d
        grad_x = (
            torch.zeros_like(x).index_add(0, edges[:, 0], force).index_add(0, edges[:, 1], -force)
        )
        return grad_x, None, -stretch, None


class PairSpringEnergy(torch.autograd.Function):
    """Elastic energy of a spring network (scalar). x [N, 3], edges [E, 2] long, rest [E]."""

    @staticmethod
    def forward(ctx, x, edges, rest, k: float = 1.0):
        ctx.save_for_backward(x, edges, rest)
        ctx.k = k
        d = x.index_select(0, edges[:, 0]) - x.index_select(0, edges[:, 1])
        return 0.5 * k * ((d.norm(dim=-1) - rest) ** 2).sum()

    @staticmethod
    def backward(ctx, grad_energy):
        x, edges, rest = ctx.saved_tensors
        g = grad_energy.item() * ctx.k
        d = x.index_select(0, edges[:, 0]) - x.index_select(0, edges[:, 1])
        length = d.norm(dim=-1)
        t = g * (length - rest)
        f = d * (t / length)[:, None]
        grad_x = torch.zeros_like(x)
        grad_x = grad_x.index_add(0, edges[:, 0], f).index_add(0, edges[:, 1], -f)
        return grad_x, None, -t, None


class GroundContact(torch.autograd.Function):
    """Penalty energy for points below a plane: ``0.5 * k * sum relu(offset - x . n)^2``.

    x: ``[N, 3]``; normal: ``[3]`` unit normal of the plane; offset: plane height along
    ``normal``; stiffness: ``k > 0``.

    The plane is scene geometry: its normal is treated as a constant and receives no
    gradient (``None``), even when a tensor that requires grad is passed.
    """

    @staticmethod
    def forward(ctx, x, normal, offset: float = 0.0, stiffness: float = 1e3):
        ctx.save_for_backward(x, normal)
        ctx.offset, ctx.k = offset, stiffness
        return 0.5 * stiffness * torch.relu(offset - x @ normal).pow(2).sum()

    @staticmethod
    def backward(ctx, grad):
        x, normal = ctx.saved_tensors
        depth = torch.relu(ctx.offset - x @ normal)
        grad_x = -(grad * ctx.k * depth).unsqueeze(-1) * normal
        return grad_x, None, None, None


def _grid_cloth(n: int = 4, dtype=torch.float64):
    ii, jj = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
    x = torch.stack([ii.flatten() * 0.5, jj.flatten() * 0.5, torch.full((n * n,), 0.3)], -1)
    idx = torch.arange(n * n).view(n, n)
    edges = torch.cat(
        [
            torch.stack([idx[:, :-1].flatten(), idx[:, 1:].flatten()], -1),
            torch.stack([idx[:-1, :].flatten(), idx[1:, :].flatten()], -1),
        ]
    )
    return x.to(dtype), edges


class ClothSim(nn.Module):
    def __init__(self, n: int = 4, steps: int = 5, dt: float = 0.02, integrator=EulerStep):
        super().__init__()
        x0, self.edges = _grid_cloth(n)
        self.register_buffer("x0", x0)
        self.rest = nn.Parameter(torch.full((self.edges.shape[0],), 0.45, dtype=torch.float64))
        self.steps, self.dt, self.integrator = steps, dt, integrator
        self.normal = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)

    def forward(self, v0):
        x, v = self.x0, v0
        gravity = torch.tensor([0.0, 0.0, -9.8], dtype=torch.float64)
        for _ in range(self.steps):
            xg = x.detach().requires_grad_() if not x.requires_grad else x
            energy = SpringEnergy.apply(xg, self.edges, self.rest, 50.0) + GroundContact.apply(
                xg, self.normal
            )
            (de_dx,) = torch.autograd.grad(energy, xg, create_graph=True)
            x, v = self.integrator.apply(x, v, gravity - de_dx, self.dt, 1.0)
        return x


def use_euler_step():
    torch.manual_seed(0)
    sim = ClothSim()
    v0 = (0.1 * torch.randn(16, 3, dtype=torch.float64)).requires_grad_()
    x = sim(v0)
    x[:, 2].mean().backward()
    return v0.grad


def use_integrator_step():
    torch.manual_seed(0)
    sim = ClothSim(integrator=IntegratorStep)
    v0 = (0.1 * torch.randn(16, 3, dtype=torch.float64)).requires_grad_()
    x = sim(v0)
    x[:, 2].mean().backward()
    return v0.grad


def use_spring_energy():
    torch.manual_seed(0)
    x, edges = _grid_cloth(4)
    x = (x + 0.05 * torch.randn_like(x)).requires_grad_()
    rest = nn.Parameter(torch.full((edges.shape[0],), 0.45, dtype=torch.float64))
    energy = SpringEnergy.apply(x, edges, rest, 50.0)
    (g,) = torch.autograd.grad(energy, x, create_graph=True)
    hvp = torch.autograd.grad(g, x, torch.randn_like(x))[0]
    energy.backward()
    return hvp, rest.grad


def use_pair_spring_energy():
    """Boltzmann weight of a perturbed cloth and its curvature along a direction."""
    torch.manual_seed(0)
    x, edges = _grid_cloth(4)
    x = (x + 0.05 * torch.randn_like(x)).requires_grad_()
    rest = torch.full((edges.shape[0],), 0.45, dtype=torch.float64)
    weight = torch.exp(-PairSpringEnergy.apply(x, edges, rest, 50.0))
    (g,) = torch.autograd.grad(weight, x, create_graph=True)
    return torch.autograd.grad(g, x, torch.randn_like(x))[0]


def use_ground_contact():
    torch.manual_seed(0)
    x = (torch.randn(16, 3, dtype=torch.float64) * 0.2).requires_grad_()
    normal = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    energy = GroundContact.apply(x, normal, 0.0, 1e3)
    energy.backward()
    return x.grad
