"""Rotations for the pose-refinement module: so(3) exponential map and unit quaternions.

Conventions: axis-angle vectors ``omega`` have last dim 3; quaternions are ``(w, x, y, z)``
with last dim 4.
"""

from __future__ import annotations

import torch
from torch import nn

_SMALL_ANGLE = 1e-3


def hat(w: torch.Tensor) -> torch.Tensor:
    """[..., 3] -> [..., 3, 3] skew-symmetric matrix with hat(a) @ b == cross(a, b)."""
    x, y, z = w.unbind(-1)
    o = torch.zeros_like(x)
    return torch.stack(
        [torch.stack([o, -z, y], -1), torch.stack([z, o, -x], -1), torch.stack([-y, x, o], -1)],
        -2,
    )


def vee_skew(m: torch.Tensor) -> torch.Tensor:
    """<M, hat(e_j)> for j = 0, 1, 2: twice the axial vector of M's skew part."""
    return torch.stack(
        [m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]],
        -1,
    )


def _coeffs(theta):
    """A = sin t / t, B = (1 - cos t) / t^2 and their derivatives divided by t.

    Below ``_SMALL_ANGLE`` the closed forms lose all precision, so their Taylor series are
    used instead (the where-with-a-safe-argument keeps the unused branch finite).
    """
    small = theta < _SMALL_ANGLE
    t = torch.where(small, torch.ones_like(theta), theta)
    t2 = theta * theta
    s, c = torch.sin(t), torch.cos(t)
    a = torch.where(small, 1 - t2 / 6, s / t)
    b = torch.where(small, 0.5 - t2 / 24, (1 - c) / t**2)
    da = torch.where(small, -1 / 3 + t2 / 30, (t * c - s) / t**3)
    db = torch.where(small, -1 / 12 + t2 / 180, (t * s - 2 * (1 - c)) / t**4)
    return a, b, da, db


def _exp(omega, a, b):
    K = hat(omega)
    eye = torch.eye(3, dtype=omega.dtype, device=omega.device)
    return eye + a[..., None, None] * K + b[..., None, None] * (K @ K)


def _exp_vjp(omega, grad, a, b, da, db):
    K = hat(omega)
    gk = (grad * K).sum((-2, -1))
    gkk = (grad * (K @ K)).sum((-2, -1))
    return (
        a[..., None] * vee_skew(grad)
        + b[..., None] * (vee_skew(grad @ K.mT) + vee_skew(K.mT @ grad))
        + (da * gk + db * gkk)[..., None] * omega
    )


class RodriguesRotation(torch.autograd.Function):
    """Exponential map so(3) -> SO(3) (Rodrigues' formula).

    Args:
        omega: ``[..., 3]`` axis-angle vectors (any real values; angles near 0 use a
            series expansion).

    Returns:
        ``[..., 3, 3]`` rotation matrices.
    """

    @staticmethod
    def forward(ctx, omega):
        theta = torch.linalg.vector_norm(omega, dim=-1)
        a, b, _, _ = _coeffs(theta)
        ctx.save_for_backward(omega)
        return _exp(omega, a, b)

    @staticmethod
    def backward(ctx, grad):
        (omega,) = ctx.saved_tensors
        theta = torch.linalg.vector_norm(omega, dim=-1)
        return _exp_vjp(omega, grad, *_coeffs(theta))


def _exp_jacobian_series(theta):
    t2 = theta * theta
    return 1 - t2 / 6, 1 / 6 - t2 / 120, -1 / 3 + t2 / 30, -1 / 12 + t2 / 180


class SO3Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, omega):
        theta = torch.linalg.vector_norm(omega, dim=-1)
        small = theta < _SMALL_ANGLE
        t = torch.where(small, torch.ones_like(theta), theta)
        a = torch.where(small, 1 - theta**2 / 6, torch.sin(t) / t)
        b = torch.where(small, 0.5 - theta**2 / 24, (1 - torch.cos(t)) / t**2)
        ctx.save_for_backward(omega)
        return _exp(omega, a, b)

    @staticmethod
    def backward(ctx, grad):
        (omega,) = ctx.saved_tensors
        theta = torch.linalg.vector_norm(omega, dim=-1)
        small = theta < _SMALL_ANGLE
        if bool(small.all()):
            coeffs = _exp_jacobian_series(theta)
        else:
            t = torch.where(small, torch.ones_like(theta), theta)
            series = _exp_jacobian_series(theta)
            exact = _coeffs(t)
            coeffs = [torch.where(small, s, e) for s, e in zip(series, exact, strict=True)]
        return _exp_vjp(omega, grad, *coeffs)


class TangentQuaternion(torch.autograd.Function):
    """Marks a unit quaternion ``q`` (``[..., 4]``, ``|q| = 1``) as a point on S^3.

    The forward pass returns ``q`` unchanged. The backward pass returns the *Riemannian*
    gradient: the Euclidean gradient projected onto the tangent space of S^3 at ``q``,
    ``g - <g, q> q``. This is the convention our manifold optimiser expects (it retracts
    ``q - lr * grad`` back onto the sphere); it is deliberately not the derivative of the
    identity.
    """

    @staticmethod
    def forward(ctx, q):
        ctx.save_for_backward(q)
        return q.clone()

    @staticmethod
    def backward(ctx, grad):
        (q,) = ctx.saved_tensors
        return grad - (grad * q).sum(-1, keepdim=True) * q


class NormalizeQuaternion(torch.autograd.Function):
    """Project quaternions ``[..., 4]`` onto the unit sphere."""

    @staticmethod
    def forward(ctx, q):
        u = q / torch.linalg.vector_norm(q, dim=-1, keepdim=True)
        ctx.save_for_backward(u)
        return u

    @staticmethod
    def backward(ctx, grad):
        (u,) = ctx.saved_tensors
        return grad - (grad * u).sum(-1, keepdim=True) * u


def quat_to_matrix(q: torch.Tensor) -> torch.Tensor:
    w, x, y, z = q.unbind(-1)
    return torch.stack(
        [
            torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            torch.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            torch.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


class PoseRefiner(nn.Module):
    """Refines per-frame rotations by a small so(3) update: R = exp(delta) R0."""

    def __init__(self, frames: int, exact_series: bool = True):
        super().__init__()
        self.delta = nn.Parameter(torch.zeros(frames, 3))
        self.exp = RodriguesRotation.apply if exact_series else SO3Exp.apply

    def forward(self, R0):
        return self.exp(self.delta) @ R0


def _target_rotations(n, dtype=torch.float64):
    return RodriguesRotation.apply(0.3 * torch.randn(n, 3, dtype=dtype))


def use_rodrigues_rotation():
    torch.manual_seed(0)
    R0 = _target_rotations(6)
    target = _target_rotations(6)
    model = PoseRefiner(6).double()
    with torch.no_grad():
        model.delta.normal_(std=1e-4)
    loss = (model(R0) - target).pow(2).sum()
    loss.backward()
    return model.delta.grad


def use_so3_exp():
    torch.manual_seed(0)
    R0 = _target_rotations(6)
    target = _target_rotations(6)
    model = PoseRefiner(6, exact_series=False).double()
    with torch.no_grad():
        model.delta.normal_(std=1e-4)
    loss = (model(R0) - target).pow(2).sum()
    loss.backward()
    return model.delta.grad


def use_tangent_quaternion():
    torch.manual_seed(0)
    q = torch.randn(5, 4, dtype=torch.float64)
    q = (q / q.norm(dim=-1, keepdim=True)).requires_grad_()
    target = _target_rotations(5)
    for _ in range(3):
        R = quat_to_matrix(TangentQuaternion.apply(q))
        loss = (R - target).pow(2).sum()
        (grad,) = torch.autograd.grad(loss, q)
        with torch.no_grad():
            q -= 0.05 * grad
            q /= q.norm(dim=-1, keepdim=True)
    return q


def use_normalize_quaternion():
    torch.manual_seed(0)
    raw = nn.Parameter(torch.randn(5, 4, dtype=torch.float64))
    target = _target_rotations(5)
    R = quat_to_matrix(NormalizeQuaternion.apply(raw))
    loss = (R - target).pow(2).sum()
    loss.backward()
    return raw.grad
