"""Functions whose code says what their inputs must be (a callable, an SPD matrix, a
(B, N, 9) tensor, a batch of square matrices, a symmetric matrix), each correct twin with a
buggy one: zero-config must learn the contract from the code, pass the correct twin and
fail the buggy one (tests/inference/test_contract.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable

if TYPE_CHECKING:  # read as text by gradverify: jaxtyping need not be installed
    from jaxtyping import Float


class ApplyFn(Function):
    """y = fn(x): the gradient through the function given, by autograd inside backward."""

    @staticmethod
    def forward(ctx: Any, fn: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.fn = fn
        ctx.save_for_backward(x)
        return fn(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor]:
        (x,) = ctx.saved_tensors
        with torch.enable_grad():  # a graph of the gradient too, for second order
            leaf = x if x.requires_grad else x.detach().requires_grad_()
            (gradient,) = torch.autograd.grad(ctx.fn(leaf), leaf, grad, create_graph=True)
        return None, gradient


class ApplyFnForgotChain(ApplyFn):
    """backward passes grad_output through, as if fn were the identity."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor]:
        return None, grad


class ScaledDynamics(Function):
    """y = 2 y0; backward also calls `dynamics` (a tensor there raises TypeError: a guess
    outside the contract, never a finding), though forward never does."""

    @staticmethod
    def forward(ctx: Any, dynamics: Any, y0: torch.Tensor) -> torch.Tensor:
        ctx.dynamics = dynamics
        ctx.save_for_backward(y0)
        return 2 * y0

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor]:
        (y0,) = ctx.saved_tensors
        ctx.dynamics(y0)  # a solver would integrate it; the answer does not depend on it
        return None, 2 * grad


class SPDSolve(Function):
    """x = A⁻¹ b for a symmetric positive definite A, through its Cholesky factor (forward
    uses the symmetric part of A, so that its gradient is defined for every A)."""

    @staticmethod
    def forward(ctx: Any, A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        symmetric = (A + A.mT) / 2
        factor = torch.linalg.cholesky(symmetric)
        x = torch.cholesky_solve(b.unsqueeze(-1), factor).squeeze(-1)
        ctx.save_for_backward(factor, x)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        factor, x = ctx.saved_tensors
        u = torch.cholesky_solve(grad.unsqueeze(-1), factor).squeeze(-1)
        outer = -u.unsqueeze(-1) * x.unsqueeze(-2)
        return (outer + outer.mT) / 2, u


class SPDSolveWrongSign(SPDSolve):
    """A's gradient with the sign of d(A⁻¹) = -A⁻¹ dA A⁻¹ forgotten."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        factor, x = ctx.saved_tensors
        u = torch.cholesky_solve(grad.unsqueeze(-1), factor).squeeze(-1)
        outer = u.unsqueeze(-1) * x.unsqueeze(-2)
        return (outer + outer.mT) / 2, u


class CholeskyLogDet(Function):
    """log det A of an SPD matrix, from its Cholesky factor (which reads A's lower triangle)."""

    @staticmethod
    def forward(ctx: Any, A: torch.Tensor) -> torch.Tensor:
        factor = torch.linalg.cholesky(A)
        ctx.save_for_backward(factor)
        return 2 * factor.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (factor,) = ctx.saved_tensors
        return grad[..., None, None] * torch.cholesky_inverse(factor)  # A⁻¹, symmetric


class CholeskyLogDetHalved(CholeskyLogDet):
    """A⁻¹ / 2 where A⁻¹ belongs."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (factor,) = ctx.saved_tensors
        return grad[..., None, None] * torch.cholesky_inverse(factor) / 2


def _gram_backward(ctx: Any, grad: torch.Tensor, forgot_transpose: bool) -> torch.Tensor:
    (m,) = ctx.saved_tensors
    g = grad.reshape(*grad.shape[:-1], 3, 3)
    dm = g @ m if forgot_transpose else (g + g.mT) @ m
    return dm.reshape(*dm.shape[:-2], 9)


class FlatGram(Function):
    """m m^T of each flattened 3x3 matrix.

    Args:
        x: (B, N, 9) row-major 3x3 matrices.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        m = x.reshape(*x.shape[:-1], 3, 3)
        ctx.save_for_backward(m)
        return (m @ m.mT).reshape(x.shape)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return _gram_backward(ctx, grad, forgot_transpose=False)


class FlatGramForgotTranspose(FlatGram):
    """backward forgets the m^T term: g m where (g + g^T) m belongs."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return _gram_backward(ctx, grad, forgot_transpose=True)


class AssertedFlatGram(Function):
    """FlatGram whose shape is told by an assert, not a docstring."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 3 and x.shape[-1] == 9
        m = x.reshape(*x.shape[:-1], 3, 3)
        ctx.save_for_backward(m)
        return (m @ m.mT).reshape(x.shape)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return _gram_backward(ctx, grad, forgot_transpose=False)


class AssertedFlatGramForgotTranspose(AssertedFlatGram):
    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return _gram_backward(ctx, grad, forgot_transpose=True)


class BatchTraceOfSquare(Function):
    """trace(m m) of each matrix of a batch (B, n, n); nothing but einsum says so."""

    @staticmethod
    def forward(ctx: Any, m: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(m)
        return torch.einsum("bij,bji->b", m, m)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (m,) = ctx.saved_tensors
        return 2 * grad[:, None, None] * m.mT


class BatchTraceOfSquareForgotTranspose(BatchTraceOfSquare):
    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (m,) = ctx.saved_tensors
        return 2 * grad[:, None, None] * m


class SymmetricQuadForm(Function):
    """y = xᵀ A x.

    Args:
        A: a symmetric (n, n) matrix.
        x: (n,) vector.
    """

    @staticmethod
    def forward(ctx: Any, A: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(A, x)
        return x @ A @ x

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        A, x = ctx.saved_tensors
        # 2 A x is (A + Aᵀ) x for the symmetric A the docstring asks for
        return grad * torch.outer(x, x), grad * 2 * (A @ x)


class SymmetricQuadFormForgotTwo(SymmetricQuadForm):
    """x's gradient A x, where 2 A x belongs: wrong on symmetric inputs too."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        A, x = ctx.saved_tensors
        return grad * torch.outer(x, x), grad * (A @ x)


class ScaleInto(Function):
    """3 x, computed into a fresh buffer shaped as `out`: a template, not a value."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        result = torch.empty_like(out)
        result.copy_(3 * x)  # x must have out's shape
        return result

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return 3 * grad, None


class ShiftOrPass(Function):
    """x + 1 where a tensor shift is positive (no gradient to it); a number is passed through as it
    is, a sentinel of the caller's: no tensor comes out, so a number is outside the
    contract, never a finding."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, shift: Any) -> Any:
        if not isinstance(shift, torch.Tensor):
            return shift
        return x + (shift > 0).to(x.dtype)  # a step in shift: no gradient to it

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None


class ScaledDynamicsCalled(ScaledDynamics):
    """ScaledDynamics as the module calls it (`evolve` below): with a function."""


class BroadcastTo(Function):
    """x expanded to a size the module's own call site gives (`tile_rows` below)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, target_size: Any) -> torch.Tensor:
        ctx.rank = x.dim()
        return x.expand(target_size)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad.sum(tuple(range(grad.dim() - ctx.rank))), None


class BroadcastToForgotSum(BroadcastTo):
    """The first row's gradient, where the sum over the rows belongs."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad[(0,) * (grad.dim() - ctx.rank)], None


def decay(y: torch.Tensor) -> torch.Tensor:
    return -0.5 * y


def evolve(y0: torch.Tensor) -> torch.Tensor:
    return ScaledDynamicsCalled.apply(decay, y0)


def tile_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return BroadcastTo.apply(x, (3, 4)), BroadcastToForgotSum.apply(x, (3, 4))


class WeightedSum(Function):
    """sum over N of weights * points, for each batch: shapes only in jaxtyping annotations."""

    @staticmethod
    def forward(
        ctx: Any,
        points: Float[torch.Tensor, "B N 3"],  # noqa: F722 (jaxtyping's dims)
        weights: Float[torch.Tensor, "B N"],  # noqa: F722
    ) -> torch.Tensor:
        ctx.save_for_backward(points, weights)
        return (weights[..., None] * points).sum(-2)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        points, weights = ctx.saved_tensors
        return weights[..., None] * grad[:, None, :], (points * grad[:, None, :]).sum(-1)


class TriangularSolve(Function):
    """x = L⁻¹ b for a lower-triangular L (by its name), through solve_triangular."""

    @staticmethod
    def forward(ctx: Any, L: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        x = torch.linalg.solve_triangular(L, b.unsqueeze(-1), upper=False).squeeze(-1)
        ctx.save_for_backward(L, x)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        L, x = ctx.saved_tensors
        u = torch.linalg.solve_triangular(L.mT, grad.unsqueeze(-1), upper=True).squeeze(-1)
        return (-u.unsqueeze(-1) * x.unsqueeze(-2)).tril(), u


class UpperSolve(TriangularSolve):
    """A bug twin: TriangularSolve's backward (lower) for an upper factor `R`, which nothing
    but the op's upper=True says is upper."""

    @staticmethod
    def forward(ctx: Any, R: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        x = torch.linalg.solve_triangular(R, b.unsqueeze(-1), upper=True).squeeze(-1)
        ctx.save_for_backward(R, x)
        return x


class SmallestEigenvalue(Function):
    """The smallest eigenvalue of a symmetric matrix (forward applies eigh)."""

    @staticmethod
    def forward(ctx: Any, S: torch.Tensor) -> torch.Tensor:
        values, vectors = torch.linalg.eigh(S)
        ctx.save_for_backward(vectors[..., :, 0])
        return values[..., 0]

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (vector,) = ctx.saved_tensors
        return grad[..., None, None] * vector[..., :, None] * vector[..., None, :]


class SmallestEigenvalueDoubled(SmallestEigenvalue):
    """2 v vᵀ where v vᵀ belongs: wrong along symmetric directions too."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (vector,) = ctx.saved_tensors
        return 2 * grad[..., None, None] * vector[..., :, None] * vector[..., None, :]


class SafeLog(Function):
    """log(x + eps).

    Args:
        x: positive values.
        eps: a small positive number.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, eps: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.eps = eps
        return torch.log(x + eps)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        return grad / (x + ctx.eps), None


class AddCoarseLevel(Function):
    """fine + the coarse level repeated 2×2, as a pyramid adds its levels.

    Args:
        fine: [B, C, H, W] the finer level.
        coarse: [B, C, H/2, W/2] the coarser level, half as high and wide.
    """

    @staticmethod
    def forward(ctx: Any, fine: torch.Tensor, coarse: torch.Tensor) -> torch.Tensor:
        return fine + coarse.repeat_interleave(2, -2).repeat_interleave(2, -1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        height, width = grad.shape[-2] // 2, grad.shape[-1] // 2
        blocks = grad.reshape(*grad.shape[:-2], height, 2, width, 2)
        return grad, blocks.sum((-3, -1))


class AddCoarseLevelAveraged(AddCoarseLevel):
    """The coarse level's gradient averaged over each 2×2 block where it is their sum."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        height, width = grad.shape[-2] // 2, grad.shape[-1] // 2
        blocks = grad.reshape(*grad.shape[:-2], height, 2, width, 2)
        return grad, blocks.mean((-3, -1))
