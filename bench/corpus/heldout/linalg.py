"""Dense linear-algebra blocks for the Gaussian-process head.

Matrices are small (n <= 64) and batched over leading dims. The solves go through a
Cholesky factor; the symmetric input is symmetrised first so that round-off in a kernel
matrix (K + K^T not exactly 2K) cannot make the factorisation fail.
"""

from __future__ import annotations

import torch
from torch import nn


def _sym(a: torch.Tensor) -> torch.Tensor:
    return 0.5 * (a + a.mT)


class CholeskySolve(torch.autograd.Function):
    """Solve ``A x = b`` for symmetric positive-definite ``A``.

    Args:
        A: ``[..., n, n]``, symmetric positive definite (it is symmetrised before the
            factorisation, so the gradient is symmetric too).
        b: ``[..., n, k]`` right-hand sides, same batch shape as ``A``.

    Returns:
        ``x`` of shape ``[..., n, k]``.

    The factor is recomputed in backward instead of being stored, which keeps the
    backward differentiable (we use it for Hessian-vector products of the marginal
    likelihood).
    """

    @staticmethod
    def forward(ctx, A, b):
        L = torch.linalg.cholesky(_sym(A))
        x = torch.cholesky_solve(b, L)
        ctx.save_for_backward(A, x)
        return x

    @staticmethod
    def backward(ctx, grad_x):
        A, x = ctx.saved_tensors
        L = torch.linalg.cholesky(_sym(A))
        u = torch.cholesky_solve(grad_x, L)
        grad_A = -_sym(u @ x.mT) if ctx.needs_input_grad[0] else None
        grad_b = u if ctx.needs_input_grad[1] else None
        return grad_A, grad_b


class PosDefSolve(torch.autograd.Function):
    """x = A^{-1} b with A SPD ([..., n, n]) and b [..., n, k]. Keeps the factor from the
    forward pass so backward costs two triangular solves and no factorisation."""

    @staticmethod
    def forward(ctx, A, b):
        L = torch.linalg.cholesky(_sym(A))
        x = torch.cholesky_solve(b, L)
        ctx.save_for_backward(L, x)
        return x

    @staticmethod
    def backward(ctx, grad_x):
        L, x = ctx.saved_tensors
        u = torch.cholesky_solve(grad_x, L)
        return -_sym(u @ x.mT), u


class TriangularDet(torch.autograd.Function):
    """Determinant of a lower-triangular matrix: the product of its diagonal.

    ``L``: ``[..., n, n]`` lower triangular (entries above the diagonal are ignored).
    Singular factors (a zero on the diagonal) are allowed; the gradient of each diagonal
    entry is the product of the others, computed with exclusive cumulative products so
    that no division happens.
    """

    @staticmethod
    def forward(ctx, L):
        ctx.save_for_backward(L)
        return torch.diagonal(L, dim1=-2, dim2=-1).prod(-1)

    @staticmethod
    def backward(ctx, grad):
        (L,) = ctx.saved_tensors
        d = torch.diagonal(L, dim1=-2, dim2=-1)
        ones = torch.ones_like(d[..., :1])
        before = torch.cumprod(torch.cat([ones, d[..., :-1]], dim=-1), dim=-1)
        after = torch.cumprod(torch.cat([ones, d.flip(-1)[..., :-1]], dim=-1), dim=-1).flip(-1)
        return torch.diag_embed(grad.unsqueeze(-1) * before * after)


class TrilDet(torch.autograd.Function):
    @staticmethod
    def forward(ctx, L):
        det = torch.diagonal(L, dim1=-2, dim2=-1).prod(-1)
        ctx.save_for_backward(L, det)
        return det

    @staticmethod
    def backward(ctx, grad):
        L, det = ctx.saved_tensors
        d = torch.diagonal(L, dim1=-2, dim2=-1)
        # d det / d L_ii = det / L_ii
        return torch.diag_embed((grad * det).unsqueeze(-1) / d)


class GPPosterior(nn.Module):
    """Posterior mean of a GP with an RBF kernel: k(X*, X) (K + s^2 I)^{-1} y."""

    def __init__(self, lengthscale: float = 1.0, noise: float = 0.1, cached_factor: bool = False):
        super().__init__()
        self.log_ls = nn.Parameter(torch.tensor(float(lengthscale)).log())
        self.log_noise = nn.Parameter(torch.tensor(float(noise)).log())
        self.solve = PosDefSolve.apply if cached_factor else CholeskySolve.apply

    def kernel(self, a, b):
        d2 = torch.cdist(a, b).pow(2)
        return torch.exp(-0.5 * d2 / self.log_ls.exp() ** 2)

    def forward(self, X, y, Xs):
        K = self.kernel(X, X) + self.log_noise.exp() ** 2 * torch.eye(X.shape[0], dtype=X.dtype)
        alpha = self.solve(K, y.unsqueeze(-1))
        return (self.kernel(Xs, X) @ alpha).squeeze(-1)


def tril_logabsdet_volume(L: torch.Tensor, fast: bool = False) -> torch.Tensor:
    """|det L| of a batch of flow Jacobian factors."""
    det = TrilDet.apply(L) if fast else TriangularDet.apply(L)
    return det.abs()


def _gp_data():
    X = torch.linspace(-2, 2, 12, dtype=torch.float64).unsqueeze(-1)
    y = torch.sin(2 * X.squeeze(-1)) + 0.05 * torch.randn(12, dtype=torch.float64)
    Xs = torch.linspace(-2.5, 2.5, 7, dtype=torch.float64).unsqueeze(-1)
    return X, y, Xs


def use_cholesky_solve():
    torch.manual_seed(0)
    X, y, Xs = _gp_data()
    gp = GPPosterior().double()
    loss = (gp(X, y, Xs) - torch.sin(2 * Xs.squeeze(-1))).pow(2).mean()
    loss.backward()
    return loss.item()


def use_pos_def_solve():
    torch.manual_seed(0)
    X, y, Xs = _gp_data()
    gp = GPPosterior(cached_factor=True).double()
    loss = (gp(X, y, Xs) - torch.sin(2 * Xs.squeeze(-1))).pow(2).mean()
    loss.backward()
    return loss.item()


def _factors():
    L = torch.randn(8, 4, 4, dtype=torch.float64).tril()
    L.diagonal(dim1=-2, dim2=-1).copy_(torch.rand(8, 4, dtype=torch.float64) + 0.5)
    L[3, 2, 2] = 0.0  # a rank-deficient factor from a collapsed coupling layer
    return L.requires_grad_()


def use_triangular_det():
    torch.manual_seed(0)
    L = _factors()
    vol = tril_logabsdet_volume(L)
    vol.sum().backward()
    return L.grad


def use_tril_det():
    torch.manual_seed(0)
    L = _factors()
    vol = tril_logabsdet_volume(L, fast=True)
    vol.sum().backward()
    return L.grad
