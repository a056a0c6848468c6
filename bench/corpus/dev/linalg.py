"""Linear-algebra primitives with explicit backward passes (Gaussian-process and
second-order-optimiser code paths).

All functions are batched over leading dimensions. Where a matrix must be symmetric positive
definite the argument says so; those functions read only what a Cholesky / eigh reads.
"""

import torch
from torch import nn


def _sym(m):
    return 0.5 * (m + m.mT)


class CholeskySolve(torch.autograd.Function):
    """Solve ``A X = B`` for a symmetric positive-definite ``A``.

    Args:
        A: [..., n, n] SPD matrix (only its lower triangle is read).
        B: [..., n, k] right-hand sides.
    """

    @staticmethod
    def forward(ctx, A, B):
        L = torch.linalg.cholesky(A)
        X = torch.cholesky_solve(B, L)
        ctx.save_for_backward(A, X)
        return X

    @staticmethod
    def backward(ctx, grad_X):
        A, X = ctx.saved_tensors
        # re-factorise rather than keep L alive between forward and backward
        L = torch.linalg.cholesky(A)
        grad_B = torch.cholesky_solve(grad_X, L)
        grad_A = None
        if ctx.needs_input_grad[0]:
            grad_A = -_sym(grad_B @ X.mT)
        return grad_A, grad_B


class TriangularSolve(torch.autograd.Function):
    """``X = L^{-1} B`` for a triangular ``L`` [..., n, n] (lower unless ``upper``)."""

    @staticmethod
    def forward(ctx, L, B, upper: bool = False):
        X = torch.linalg.solve_triangular(L, B, upper=upper)
        ctx.upper = upper
        ctx.save_for_backward(L, X)
        return X

    @staticmethod
    def backward(ctx, grad_X):
        L, X = ctx.saved_tensors
        grad_B = torch.linalg.solve_triangular(L.mT, grad_X, upper=not ctx.upper)
        grad_L = -grad_B @ X.mT
        grad_L = grad_L.triu() if ctx.upper else grad_L.tril()
        return grad_L, grad_B, None


class TrsmFunction(torch.autograd.Function):
    # lower-triangular solve (BLAS trsm, left side, no transpose)
    @staticmethod
    def forward(ctx, L, B):
        X = torch.linalg.solve_triangular(L, B, upper=False)
        ctx.save_for_backward(L, X)
        return X

    @staticmethod
    def backward(ctx, grad_X):
        L, X = ctx.saved_tensors
        grad_B = torch.linalg.solve_triangular(L.mT, grad_X, upper=True)
        grad_L = -torch.tril(X @ grad_B.mT)
        return grad_L, grad_B


class LogDetSPD(torch.autograd.Function):
    """log det A for SPD ``A`` [..., n, n] via Cholesky: 2 * sum(log(diag(L)))."""

    @staticmethod
    def forward(ctx, A):
        L = torch.linalg.cholesky(A)
        ctx.save_for_backward(A)
        return 2.0 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    @staticmethod
    def backward(ctx, grad_out):
        (A,) = ctx.saved_tensors
        A_inv = torch.cholesky_inverse(torch.linalg.cholesky(A))
        return grad_out[..., None, None] * A_inv


class CholeskyLogDet(torch.autograd.Function):
    """log det of an SPD matrix. The inverse needed by the backward is formed from the
    Cholesky factor while it is at hand in forward."""

    @staticmethod
    def forward(ctx, A):
        L = torch.linalg.cholesky(A)
        ctx.A_inv = torch.cholesky_inverse(L)
        return 2.0 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out[..., None, None] * ctx.A_inv


class SymEigvals(torch.autograd.Function):
    """Eigenvalues (ascending) of a symmetric matrix.

    The gradient ``V diag(g) V^T`` is defined for any symmetric input; its derivative (needed
    for Hessian-vector products) requires distinct eigenvalues.
    """

    @staticmethod
    def forward(ctx, A):
        evals = torch.linalg.eigvalsh(A)
        ctx.save_for_backward(A)
        return evals

    @staticmethod
    def backward(ctx, grad_evals):
        (A,) = ctx.saved_tensors
        _, V = torch.linalg.eigh(A)
        return (V * grad_evals.unsqueeze(-2)) @ V.mT


class BatchedInverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, A):
        A_inv = torch.linalg.inv(A)
        ctx.save_for_backward(A_inv)
        return A_inv

    @staticmethod
    def backward(ctx, grad_out):
        (A_inv,) = ctx.saved_tensors
        return -A_inv.mT @ grad_out @ A_inv.mT


class LeastSquares(torch.autograd.Function):
    """Least-squares solution of ``A x = b``: argmin ||A x - b||.

    A: [..., m, n] with m >= n and full column rank; b: [..., m, k].
    """

    @staticmethod
    def forward(ctx, A, b):
        Q, R = torch.linalg.qr(A)
        x = torch.linalg.solve_triangular(R, Q.mT @ b, upper=True)
        ctx.save_for_backward(A, b, x)
        return x

    @staticmethod
    def backward(ctx, grad_x):
        A, b, x = ctx.saved_tensors
        z = torch.linalg.solve(A.mT @ A, grad_x)
        Az = A @ z
        residual = b - A @ x
        grad_A = residual @ z.mT - Az @ x.mT
        return grad_A, Az


class NormalEquationsSolve(torch.autograd.Function):
    """Least squares through the normal equations (A^T A) x = A^T b (fast for tall A)."""

    @staticmethod
    def forward(ctx, A, b):
        x = torch.linalg.solve(A.mT @ A, A.mT @ b)
        ctx.save_for_backward(A, x)
        return x

    @staticmethod
    def backward(ctx, grad_x):
        A, x = ctx.saved_tensors
        z = torch.linalg.solve(A.mT @ A, grad_x)
        Az = A @ z
        return -Az @ x.mT, Az


class MatrixSqrtSPD(torch.autograd.Function):
    """Principal square root of an SPD matrix through its eigendecomposition.

    Input must be symmetric positive definite ([..., n, n]); the backward solves the
    Sylvester equation S X + X S = G in the eigenbasis.
    """

    @staticmethod
    def forward(ctx, A):
        evals, V = torch.linalg.eigh(A)
        ctx.save_for_backward(A)
        return (V * evals.sqrt().unsqueeze(-2)) @ V.mT

    @staticmethod
    def backward(ctx, grad_out):
        (A,) = ctx.saved_tensors
        evals, V = torch.linalg.eigh(A)
        s = evals.sqrt()
        denom = s.unsqueeze(-1) + s.unsqueeze(-2)
        return V @ ((V.mT @ grad_out @ V) / denom) @ V.mT


# ---------------------------------------------------------------------------------------------
# a small GP regression model and a whitening layer


def _rbf(x1, x2, lengthscale, variance):
    d2 = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).pow(2).sum(-1)
    return variance * torch.exp(-0.5 * d2 / lengthscale**2)


class ExactGP(nn.Module):
    def __init__(self, logdet_fn=LogDetSPD, solve_fn=CholeskySolve):
        super().__init__()
        self.log_ls = nn.Parameter(torch.tensor(0.0))
        self.log_var = nn.Parameter(torch.tensor(0.0))
        self.log_noise = nn.Parameter(torch.tensor(-2.0))
        self.logdet_fn = logdet_fn
        self.solve_fn = solve_fn

    def neg_mll(self, x, y):
        K = _rbf(x, x, self.log_ls.exp(), self.log_var.exp())
        K = K + self.log_noise.exp() * torch.eye(x.size(0), dtype=x.dtype)
        alpha = self.solve_fn.apply(K, y.unsqueeze(-1))
        return 0.5 * (y.unsqueeze(-1) * alpha).sum() + 0.5 * self.logdet_fn.apply(K)


class ZCAWhitening(nn.Module):
    def __init__(self, eps=1e-3):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        xc = x - x.mean(0)
        cov = xc.mT @ xc / (x.size(0) - 1) + self.eps * torch.eye(x.size(1), dtype=x.dtype)
        root = MatrixSqrtSPD.apply(cov)
        return torch.linalg.solve(root, xc.mT).mT


def _gp_step(**kw):
    gp = ExactGP(**kw)
    x = torch.linspace(0, 1, 12).unsqueeze(-1)
    y = torch.sin(6 * x).squeeze(-1) + 0.1 * torch.randn(12)
    loss = gp.neg_mll(x, y)
    loss.backward()
    return loss


def use_cholesky_solve():
    torch.manual_seed(0)
    _gp_step()


def use_log_det_spd():
    torch.manual_seed(0)
    _gp_step()


def use_cholesky_log_det():
    torch.manual_seed(0)
    _gp_step(logdet_fn=CholeskyLogDet)


def _tri_step(fn, *extra):
    # solve with a learned Cholesky-style factor (positive diagonal)
    raw = nn.Parameter(torch.randn(4, 4) * 0.3)
    L = torch.tril(raw, -1) + torch.diag(nn.functional.softplus(raw.diagonal()) + 0.5)
    b = torch.randn(2, 4, 3)
    x = fn.apply(L.expand(2, 4, 4), b, *extra)
    x.pow(2).sum().backward()


def use_triangular_solve():
    torch.manual_seed(0)
    _tri_step(TriangularSolve, False)


def use_trsm_function():
    torch.manual_seed(0)
    _tri_step(TrsmFunction)


def use_sym_eigvals():
    torch.manual_seed(0)
    # spectral regulariser on a Hessian estimate
    w = nn.Parameter(torch.randn(5, 5))
    H = w @ w.mT + torch.diag(torch.arange(5.0))
    loss = SymEigvals.apply(H).max() - SymEigvals.apply(H).min()
    loss.backward()


def use_batched_inverse():
    torch.manual_seed(0)
    # Kalman gain style update, one small system per batch element
    S = nn.Parameter(torch.randn(6, 3, 3) * 0.2 + 2 * torch.eye(3))
    P = torch.randn(6, 4, 3)
    gain = P @ BatchedInverse.apply(S)
    gain.pow(2).mean().backward()


def _lstsq_step(fn):
    feats = nn.Parameter(torch.randn(20, 4))
    targets = torch.randn(20, 2)
    coef = fn.apply(feats, targets)
    residual = feats @ coef - targets
    (residual.pow(2).mean() + 0.1 * coef.pow(2).sum()).backward()


def use_least_squares():
    torch.manual_seed(0)
    _lstsq_step(LeastSquares)


def use_normal_equations_solve():
    torch.manual_seed(0)
    _lstsq_step(NormalEquationsSolve)


def use_matrix_sqrt_spd():
    torch.manual_seed(0)
    layer = ZCAWhitening()
    x = nn.Parameter(torch.randn(16, 4))
    layer(x).pow(3).mean().backward()
