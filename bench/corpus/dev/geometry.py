"""Rotations and simple geometric primitives with analytic gradients.

Layout conventions: axis-angle vectors are [..., 3]; quaternions are [..., 4] scalar-first
(w, x, y, z) unless a docstring says otherwise; points are [..., 3] (or [..., 2] in 2-D).
"""

import torch
from torch import nn

_SMALL_ANGLE = 1e-4


def hat(v):
    """[..., 3] -> [..., 3, 3] skew-symmetric cross-product matrix."""
    x, y, z = v.unbind(-1)
    o = torch.zeros_like(x)
    return torch.stack([o, -z, y, z, o, -x, -y, x, o], -1).view((*v.shape[:-1], 3, 3))


def _vee_skew(m):
    # vee(M - M^T): the axial vector of twice the skew part of M
    return torch.stack(
        [m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]], -1
    )


def _rodrigues_coeffs(theta2, derivatives=False):
    """a = sin(t)/t, b = (1 - cos t)/t^2 and, optionally, a'(t)/t and b'(t)/t, t = sqrt(theta2).

    Below ``_SMALL_ANGLE`` the closed forms lose all precision; use their Taylor series.
    """
    small = theta2 < _SMALL_ANGLE**2
    t = torch.where(small, torch.ones_like(theta2), theta2).sqrt()
    s, c = torch.sin(t), torch.cos(t)
    a = torch.where(small, 1.0 - theta2 / 6.0, s / t)
    b = torch.where(small, 0.5 - theta2 / 24.0, (1.0 - c) / t**2)
    if not derivatives:
        return a, b
    da = torch.where(small, -1.0 / 3.0 + theta2 / 30.0, (t * c - s) / t**3)
    db = torch.where(small, -1.0 / 12.0 + theta2 / 180.0, (t * s - 2.0 * (1.0 - c)) / t**4)
    return a, b, da, db


class SO3Exp(torch.autograd.Function):
    """Exponential map so(3) -> SO(3) (Rodrigues' formula).

    omega: [..., 3] axis-angle vectors. Returns [..., 3, 3] rotation matrices.
    """

    @staticmethod
    def forward(ctx, omega):
        K = hat(omega)
        a, b = _rodrigues_coeffs((omega * omega).sum(-1))
        eye = torch.eye(3, dtype=omega.dtype, device=omega.device)
        ctx.save_for_backward(omega)
        return eye + a[..., None, None] * K + b[..., None, None] * (K @ K)

    @staticmethod
    def backward(ctx, grad_R):
        (omega,) = ctx.saved_tensors
        K = hat(omega)
        K2 = K @ K
        a, b, da, db = _rodrigues_coeffs((omega * omega).sum(-1), derivatives=True)
        # dR/dw_k = a E_k + b (E_k K + K E_k) + da w_k K + db w_k K^2,  E_k = hat(e_k)
        Kt = K.mT
        term_a = _vee_skew(grad_R)
        term_b = _vee_skew(grad_R @ Kt + Kt @ grad_R)
        radial = da * (grad_R * K).sum((-1, -2)) + db * (grad_R * K2).sum((-1, -2))
        return a[..., None] * term_a + b[..., None] * term_b + radial[..., None] * omega


def _so3_jac_coeffs(theta2):
    # coefficients of the derivative of exp(hat(w)) w.r.t. w
    near_zero = theta2 < _SMALL_ANGLE**2
    theta = torch.sqrt(torch.where(near_zero, torch.ones_like(theta2), theta2))
    sin, cos = torch.sin(theta), torch.cos(theta)
    a = torch.where(near_zero, 1.0 - theta2 / 6.0, sin / theta)
    b = torch.where(near_zero, 1.0 / 6.0 - theta2 / 120.0, (1.0 - cos) / theta2)
    c = torch.where(near_zero, -1.0 / 3.0 + theta2 / 30.0, (theta * cos - sin) / theta**3)
    d = torch.where(
        near_zero, -1.0 / 12.0 + theta2 / 180.0, (theta * sin - 2.0 + 2.0 * cos) / theta2**2
    )
    return a, b, c, d


class SO3ExpMap(torch.autograd.Function):
    @staticmethod
    def forward(ctx, omega):
        theta2 = (omega * omega).sum(-1, keepdim=True).unsqueeze(-1)
        near_zero = theta2 < _SMALL_ANGLE**2
        theta = torch.sqrt(torch.where(near_zero, torch.ones_like(theta2), theta2))
        a = torch.where(near_zero, 1.0 - theta2 / 6.0, torch.sin(theta) / theta)
        b = torch.where(near_zero, 0.5 - theta2 / 24.0, (1.0 - torch.cos(theta)) / theta2)
        K = hat(omega)
        ctx.save_for_backward(omega)
        return torch.eye(3, dtype=omega.dtype, device=omega.device) + a * K + b * K @ K

    @staticmethod
    def backward(ctx, grad_R):
        (omega,) = ctx.saved_tensors
        a, b, c, d = _so3_jac_coeffs((omega * omega).sum(-1))
        K = hat(omega)
        GKt = grad_R @ K.mT
        KtG = K.mT @ grad_R
        grad = a.unsqueeze(-1) * _vee_skew(grad_R) + b.unsqueeze(-1) * _vee_skew(GKt + KtG)
        radial = c * (grad_R * K).sum((-2, -1)) + d * (grad_R * (K @ K)).sum((-2, -1))
        return grad + radial.unsqueeze(-1) * omega


# ---------------------------------------------------------------------------------------------
# quaternions (w, x, y, z)


class QuaternionNormalize(torch.autograd.Function):
    """q / |q| over the last dim (size 4)."""

    @staticmethod
    def forward(ctx, q, eps: float = 1e-12):
        if q.size(-1) != 4:
            raise ValueError(f"expected quaternions [..., 4], got {tuple(q.shape)}")
        ctx.eps = eps
        ctx.save_for_backward(q)
        return q / q.norm(dim=-1, keepdim=True).clamp_min(eps)

    @staticmethod
    def backward(ctx, grad_out):
        (q,) = ctx.saved_tensors
        n = q.norm(dim=-1, keepdim=True).clamp_min(ctx.eps)
        y = q / n
        return (grad_out - y * (grad_out * y).sum(-1, keepdim=True)) / n, None


class UnitQuaternion(torch.autograd.Function):
    """Project [..., 4] onto the unit quaternions; the norm is computed once, in forward."""

    @staticmethod
    def forward(ctx, q):
        inv_norm = q.square().sum(-1, keepdim=True).rsqrt()
        y = q * inv_norm
        ctx.inv_norm = inv_norm
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        radial = (grad_out * y).sum(-1, keepdim=True)
        return (grad_out - radial * y) * ctx.inv_norm


class QuaternionToMatrix(torch.autograd.Function):
    """Rotation matrix of a (not necessarily unit) quaternion (w, x, y, z), [..., 4] -> [..., 3, 3].

    Uses s = 2 / |q|^2, so the result is a rotation for any non-zero q.
    """

    @staticmethod
    def forward(ctx, q):
        w, x, y, z = q.unbind(-1)
        s = 2.0 / (q * q).sum(-1)
        M = torch.stack(
            [
                -(y * y + z * z), x * y - z * w, x * z + y * w,
                x * y + z * w, -(x * x + z * z), y * z - x * w,
                x * z - y * w, y * z + x * w, -(x * x + y * y),
            ],
            -1,
        ).view((*q.shape[:-1], 3, 3))  # fmt: skip
        ctx.save_for_backward(q)
        return torch.eye(3, dtype=q.dtype, device=q.device) + s[..., None, None] * M

    @staticmethod
    def backward(ctx, G):
        (q,) = ctx.saved_tensors
        w, x, y, z = q.unbind(-1)
        s = 2.0 / (q * q).sum(-1)
        g = [[G[..., i, j] for j in range(3)] for i in range(3)]
        gw = -z * g[0][1] + y * g[0][2] + z * g[1][0] - x * g[1][2] - y * g[2][0] + x * g[2][1]
        gx = (
            y * g[0][1] + z * g[0][2] + y * g[1][0] - 2 * x * g[1][1]
            - w * g[1][2] + z * g[2][0] + w * g[2][1] - 2 * x * g[2][2]
        )  # fmt: skip
        gy = (
            -2 * y * g[0][0] + x * g[0][1] + w * g[0][2] + x * g[1][0]
            + z * g[1][2] - w * g[2][0] + z * g[2][1] - 2 * y * g[2][2]
        )  # fmt: skip
        gz = (
            -2 * z * g[0][0] - w * g[0][1] + x * g[0][2] + w * g[1][0]
            - 2 * z * g[1][1] + y * g[1][2] + x * g[2][0] + y * g[2][1]
        )  # fmt: skip
        grad_M = torch.stack([gw, gx, gy, gz], -1)
        # <M, G>: the part of G along M, through ds/dq = -s^2 q
        m_dot_g = (
            -(y * y + z * z) * g[0][0] + (x * y - z * w) * g[0][1] + (x * z + y * w) * g[0][2]
            + (x * y + z * w) * g[1][0] - (x * x + z * z) * g[1][1] + (y * z - x * w) * g[1][2]
            + (x * z - y * w) * g[2][0] + (y * z + x * w) * g[2][1] - (x * x + y * y) * g[2][2]
        )  # fmt: skip
        return s[..., None] * grad_M - (s * s * m_dot_g)[..., None] * q


def _quat_rotate(w, v, p):
    # p + 2 w (v x p) + 2 v x (v x p); a rotation when |(w, v)| = 1
    t = 2.0 * torch.cross(v, p, dim=-1)
    return p + w * t + torch.cross(v, t, dim=-1)


class QuaternionRotate(torch.autograd.Function):
    """Rotate points ``p`` [..., 3] by unit quaternions ``q`` [..., 4] (w, x, y, z).

    The gradient with respect to ``q`` is the plain Euclidean gradient of the formula
    ``p + 2w (v x p) + 2 v x (v x p)``; renormalise ``q`` after each update.
    """

    @staticmethod
    def forward(ctx, q, p):
        ctx.save_for_backward(q, p)
        return _quat_rotate(q[..., :1], q[..., 1:], p)

    @staticmethod
    def backward(ctx, g):
        q, p = ctx.saved_tensors
        w, v = q[..., :1], q[..., 1:]
        grad_q = grad_p = None
        if ctx.needs_input_grad[0]:
            gw = 2.0 * (g * torch.cross(v, p, dim=-1)).sum(-1, keepdim=True)
            gv = (
                2.0 * w * torch.cross(p, g, dim=-1)
                + 2.0 * (v * p).sum(-1, keepdim=True) * g
                + 2.0 * (g * v).sum(-1, keepdim=True) * p
                - 4.0 * (g * p).sum(-1, keepdim=True) * v
            )
            grad_q = torch.cat([gw, gv], -1).sum_to_size(q.shape)
        if ctx.needs_input_grad[1]:
            # R^T g is the rotation by the conjugate quaternion
            grad_p = _quat_rotate(w, -v, g).sum_to_size(p.shape)
        return grad_q, grad_p


class QuatRotatePoints(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, points):
        rotated = _quat_rotate(q[..., :1], q[..., 1:], points)
        ctx.save_for_backward(q, rotated)
        return rotated

    @staticmethod
    def backward(ctx, grad_out):
        q, rotated = ctx.saved_tensors
        w, v = q[..., :1], q[..., 1:]
        grad_v = torch.cross(rotated, grad_out, dim=-1)
        grad_q = torch.cat([torch.zeros_like(w), grad_v], -1)
        grad_points = _quat_rotate(w, -v, grad_out)
        return grad_q, grad_points


# ---------------------------------------------------------------------------------------------
# 2-D and primitives


class Rotate2D(torch.autograd.Function):
    """Rotate 2-D points [..., 2] counter-clockwise by ``angle`` (radians).

    ``angle`` broadcasts against ``points.shape[:-1]`` (a scalar tensor rotates everything).
    """

    @staticmethod
    def forward(ctx, points, angle):
        assert points.size(-1) == 2, "points must have last dim 2"
        c, s = torch.cos(angle)[..., None], torch.sin(angle)[..., None]
        px, py = points[..., :1], points[..., 1:]
        out = torch.cat([c * px - s * py, s * px + c * py], -1)
        ctx.save_for_backward(points, angle, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        points, angle, out = ctx.saved_tensors
        c, s = torch.cos(angle)[..., None], torch.sin(angle)[..., None]
        gx, gy = grad_out[..., :1], grad_out[..., 1:]
        grad_points = torch.cat([c * gx + s * gy, -s * gx + c * gy], -1)
        # d out / d angle = (-out_y, out_x)
        grad_angle = (gy * out[..., :1] - gx * out[..., 1:]).squeeze(-1)
        return grad_points.sum_to_size(points.shape), grad_angle.sum_to_size(angle.shape)


class PointToPlaneDistance(torch.autograd.Function):
    """Signed distance of points [..., 3] to the plane ``n . x + offset = 0``.

    ``normal`` is [3] and need not be unit length (it must not be zero); ``offset`` is a
    0-d tensor.
    """

    @staticmethod
    def forward(ctx, points, normal, offset):
        inv_norm = normal.norm().reciprocal()
        dist = ((points * normal).sum(-1) + offset) * inv_norm
        ctx.save_for_backward(points, normal, dist)
        return dist

    @staticmethod
    def backward(ctx, grad_dist):
        points, normal, dist = ctx.saved_tensors
        inv_norm = normal.norm().reciprocal()
        unit = normal * inv_norm
        grad_points = grad_dist[..., None] * unit
        grad_normal = (
            (grad_dist[..., None] * (points - dist[..., None] * unit)).reshape(-1, 3).sum(0)
        )
        grad_offset = grad_dist.sum() * inv_norm
        return grad_points, grad_normal * inv_norm, grad_offset


class BoxSDF(torch.autograd.Function):
    """Signed distance from points [..., 3] to an origin-centred box.

    half_extents: [3], all > 0. Negative inside, positive outside (Quilez' formula).
    """

    @staticmethod
    def forward(ctx, points, half_extents):
        if not bool((half_extents > 0).all()):
            raise ValueError("half_extents must be positive")
        q = points.abs() - half_extents
        outside = q.clamp_min(0).norm(dim=-1)
        inside = q.max(-1).values.clamp_max(0)
        ctx.save_for_backward(points, half_extents)
        return outside + inside

    @staticmethod
    def backward(ctx, grad_out):
        points, half_extents = ctx.saved_tensors
        q = points.abs() - half_extents
        pos = q.clamp_min(0)
        n = pos.norm(dim=-1, keepdim=True)
        unit = torch.where(
            n > 0, pos / torch.where(n > 0, n, torch.ones_like(n)), torch.zeros_like(pos)
        )
        qmax, arg = q.max(-1, keepdim=True)
        face = torch.zeros_like(q).scatter(-1, arg, 1.0) * (qmax < 0)
        grad_q = grad_out[..., None] * (unit + face)
        return grad_q * points.sign(), (-grad_q).sum_to_size(half_extents.shape)


# ---------------------------------------------------------------------------------------------


class SO3Act(torch.autograd.Function):
    """Act with SO(3) elements on points, LieTorch-style.

    Args:
        q: [..., 4] unit quaternions stored as (x, y, z, w) (the LieTorch layout).
        p: [..., 3] points.

    Gradient convention: the gradient with respect to ``q`` is NOT the Euclidean gradient of
    the quaternion coefficients. It is returned in the tangent space of SO(3) (the Lie
    algebra, left perturbation ``q <- Exp(xi) * q``): ``grad_q[..., :3] = dL/dxi`` and
    ``grad_q[..., 3] = 0``. Update ``q`` with :func:`retract`, not with a plain optimiser
    step on the coefficients.
    """

    @staticmethod
    def forward(ctx, q, p):
        out = _quat_rotate(q[..., 3:], q[..., :3], p)
        ctx.save_for_backward(q, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, out = ctx.saved_tensors
        # d(Exp(xi) R p)/d xi at 0 = -[R p]_x  =>  dL/dxi = (R p) x g
        tangent = torch.cross(out, grad_out, dim=-1)
        grad_q = torch.cat([tangent, torch.zeros_like(q[..., 3:])], -1)
        grad_p = _quat_rotate(q[..., 3:], -q[..., :3], grad_out)
        return grad_q, grad_p


def retract(q_xyzw, xi):
    """q <- Exp(xi) * q for (x, y, z, w) quaternions."""
    theta = xi.norm(dim=-1, keepdim=True)
    half = 0.5 * theta
    scale = torch.where(
        theta > 1e-8, torch.sin(half) / theta.clamp_min(1e-8), 0.5 - theta * theta / 48
    )
    dv, dw = xi * scale, torch.cos(half)
    v, w = q_xyzw[..., :3], q_xyzw[..., 3:]
    new_w = dw * w - (dv * v).sum(-1, keepdim=True)
    new_v = dw * v + w * dv + torch.cross(dv, v, dim=-1)
    return torch.cat([new_v, new_w], -1)


# ---------------------------------------------------------------------------------------------
# modules


class PoseRefiner(nn.Module):
    """Refines a rigid pose (axis-angle + translation) to align two point sets."""

    def __init__(self, exp=SO3Exp):
        super().__init__()
        self.omega = nn.Parameter(torch.zeros(3))
        self.t = nn.Parameter(torch.zeros(3))
        self.exp = exp

    def forward(self, points):
        R = self.exp.apply(self.omega)
        return points @ R.mT + self.t


def _fit(module, loss_fn, steps=3, lr=0.05):
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    for _ in range(steps):
        loss = loss_fn()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss


def _target_cloud():
    p = torch.randn(32, 3)
    R = SO3Exp.apply(torch.tensor([0.1, -0.2, 0.05]))
    return p, p @ R.mT + torch.tensor([0.0, 0.1, 0.0])


def use_so3_exp():
    torch.manual_seed(0)
    src, dst = _target_cloud()
    ref = PoseRefiner()
    _fit(ref, lambda: (ref(src) - dst).pow(2).mean())


def use_so3_exp_map():
    torch.manual_seed(0)
    src, dst = _target_cloud()
    ref = PoseRefiner(exp=SO3ExpMap)
    _fit(ref, lambda: (ref(src) - dst).pow(2).mean())


def use_quaternion_normalize():
    torch.manual_seed(0)
    head = nn.Linear(8, 4)
    feats = torch.randn(5, 8)
    q = QuaternionNormalize.apply(head(feats))
    R = QuaternionToMatrix.apply(q)
    (R - torch.eye(3)).pow(2).sum().backward()


def use_unit_quaternion():
    torch.manual_seed(0)
    # a rotation head regressing quaternions, trained against target rotations
    head = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    feats, target = torch.randn(6, 8), QuaternionNormalize.apply(torch.randn(6, 4))
    q = UnitQuaternion.apply(head(feats))
    (1.0 - (q * target).sum(-1).abs()).mean().backward()


def use_quaternion_to_matrix():
    torch.manual_seed(0)
    q = nn.Parameter(torch.randn(6, 4))
    R = QuaternionToMatrix.apply(q)
    pts = torch.randn(6, 10, 3)
    (pts @ R.mT).square().mean().backward()


def use_quaternion_rotate():
    torch.manual_seed(0)
    q = nn.Parameter(torch.tensor([[1.0, 0.0, 0.0, 0.0]]).repeat(4, 1))
    pts = torch.randn(4, 3)
    target = torch.randn(4, 3)
    loss = (QuaternionRotate.apply(q, pts) - target).pow(2).sum()
    loss.backward()
    with torch.no_grad():
        q -= 0.1 * q.grad
        q /= q.norm(dim=-1, keepdim=True)


def use_quat_rotate_points():
    torch.manual_seed(0)
    q = nn.Parameter(QuaternionNormalize.apply(torch.randn(4, 4)).detach())
    pts = torch.randn(4, 3, requires_grad=True)
    QuatRotatePoints.apply(q, pts).sum().backward()


def use_so3_act():
    torch.manual_seed(0)
    q = torch.tensor([[0.0, 0.0, 0.0, 1.0]]).repeat(8, 1).requires_grad_()
    pts = torch.randn(8, 3)
    target = torch.randn(8, 3)
    for _ in range(3):
        loss = (SO3Act.apply(q, pts) - target).pow(2).sum()
        (g,) = torch.autograd.grad(loss, q)
        with torch.no_grad():
            q = retract(q, -0.05 * g[..., :3])
        q.requires_grad_()


def use_rotate2d():
    torch.manual_seed(0)
    angle = nn.Parameter(torch.tensor(0.3))
    pts = torch.randn(20, 2)
    target = torch.randn(20, 2)
    _fit(nn.ParameterList([angle]), lambda: (Rotate2D.apply(pts, angle) - target).pow(2).mean())


def use_point_to_plane_distance():
    torch.manual_seed(0)
    normal = nn.Parameter(torch.tensor([0.1, 0.2, 1.0]))
    offset = nn.Parameter(torch.tensor(0.0))
    pts = torch.randn(50, 3) * torch.tensor([1.0, 1.0, 0.05])
    loss = PointToPlaneDistance.apply(pts, normal, offset).abs().mean()
    loss.backward()


def use_box_sdf():
    torch.manual_seed(0)
    half = nn.Parameter(torch.tensor([0.5, 0.8, 0.3]))
    surface = torch.randn(64, 3)
    surface = surface / surface.norm(dim=-1, keepdim=True)
    _fit(nn.ParameterList([half]), lambda: BoxSDF.apply(surface, half).pow(2).mean(), lr=0.01)
