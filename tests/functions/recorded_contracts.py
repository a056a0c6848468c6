"""Functions whose contract a recorded run shows only in its values or its arguments
(tests/record/test_record_inputs.py): one that takes a callable, one that expects a
symmetric positive definite matrix, one that expects rows on the probability simplex, each
with a buggy twin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.autograd.function import once_differentiable


def softsign(x: torch.Tensor) -> torch.Tensor:
    """A module-level activation, passed to MapElementwise by name."""
    return x / (1 + x.abs())


class MapElementwise(torch.autograd.Function):
    """y = fn(x) elementwise, for a differentiable callable `fn`; backward asks autograd
    for fn's derivative (once differentiable)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
        ctx.fn = fn
        ctx.save_for_backward(x)
        return fn(x)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            leaf = x.detach().requires_grad_()
            (gradient,) = torch.autograd.grad(ctx.fn(leaf), leaf, grad)
        return gradient, None


class MapElementwiseAsIdentity(MapElementwise):
    """Bug: backward passes the gradient through as if fn were the identity (named for
    that, not StraightThrough: a name saying so declares a surrogate on purpose)."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None


def _symmetric(matrix: torch.Tensor) -> torch.Tensor:
    return (matrix + matrix.mT) / 2


class SPDSolve(torch.autograd.Function):
    """x = A⁻¹ b through a Cholesky factor (once differentiable).

    A: (N, N) symmetric positive definite
    b: (N, M) right-hand sides
    """

    @staticmethod
    def forward(ctx: Any, A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        factor = torch.linalg.cholesky(_symmetric(A))
        x = torch.cholesky_solve(b, factor)
        ctx.save_for_backward(factor, x)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        factor, x = ctx.saved_tensors
        gradient_b = torch.cholesky_solve(grad, factor)
        return _symmetric(-gradient_b @ x.mT), gradient_b


class SPDSolveTransposed(SPDSolve):
    """Bug: the gradient of A is taken as b̄ xᵀ, its sign lost."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        factor, x = ctx.saved_tensors
        gradient_b = torch.cholesky_solve(grad, factor)
        return _symmetric(gradient_b @ x.mT), gradient_b


class Renormalize(torch.autograd.Function):
    """y = p / sum(p) along the last dim, for rows `p` on the probability simplex. Backward
    uses that the rows sum to 1 (Jᵀg = g - <g, p>): right on the simplex, where forward
    is called, wrong off it."""

    @staticmethod
    def forward(ctx: Any, p: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(p)
        return p / p.sum(-1, keepdim=True)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (p,) = ctx.saved_tensors
        return grad - (grad * p).sum(-1, keepdim=True)


class RenormalizeDropsMean(Renormalize):
    """Bug: backward forgets the <g, p> term."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad.clone()
