"""Bases of a subspace: the K eigenvectors of the smallest eigenvalues of a symmetric matrix
S = A + Aᵀ + SPREAD·diag(0, 1, ..., n-1), a basis defined only up to a rotation within the
subspace it spans (tests/checks/test_gauge.py).

- `SmallestEigenvectors`: backward differentiates the subspace only (the terms between the
  chosen eigenvectors left out, as a null-space basis's backward does): right for functions
  of B Bᵀ, not for B itself -> a warning, never a failure.
- `SmallestEigenvectorsFull`: eigh's own derivative, every pair of eigenvectors -> passes.
- `SmallestEigenvectorsGapSign` and `SmallestEigenvectorsUnsymmetrized`: the subspace
  backward with a bug (the gap's sign flipped; S = A + Aᵀ's symmetrization dropped) ->
  still fail, wrong for the subspace too.

- `LowerTriangleEigenvectors`: B from eigh of A itself (shifted by the same diagonal), which
  reads A's lower triangle only, for a case whose A is `structure: symmetric` (or spd); its
  subspace backward returns the symmetrized gradient. Element [i, j] above the diagonal has
  numerical 0 on <W, B Bᵀ> too, so only the directions that keep A symmetric (E_ij + E_ji)
  show that backward is right -> a warning. `LowerTriangleEigenvectorsGapSign`: the same
  with the gap's sign flipped -> still fails, along symmetric directions too.

The diagonal keeps the eigenvalues at least SPREAD - 2‖A + Aᵀ‖ ≥ 6 apart for A in [-1, 1]
(6 x 6): a clear gap on every draw, so finite differences are well defined.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable

K = 2  # eigenvectors kept
SPREAD = 30.0


def _spectrum(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n = a.shape[-1]
    shift = torch.diag(torch.arange(n, dtype=a.dtype, device=a.device)) * SPREAD
    eigenvalues, eigenvectors = torch.linalg.eigh(a + a.transpose(-1, -2) + shift)
    return eigenvalues, eigenvectors


def _sym(matrix: torch.Tensor) -> torch.Tensor:
    return matrix + matrix.transpose(-1, -2)


def _subspace_grad_s(
    grad: torch.Tensor, eigenvalues: torch.Tensor, eigenvectors: torch.Tensor, sign: float = 1.0
) -> torch.Tensor:
    """dL/dS for B = the first K eigenvectors, the subspace's part only:
    dv_i = Σ_{j ∉ S} v_j v_jᵀ dS v_i / (λ_i − λ_j)."""
    kept, rest = eigenvectors[..., :K], eigenvectors[..., K:]
    gap = eigenvalues[..., :K].unsqueeze(-2) - eigenvalues[..., K:].unsqueeze(-1)  # [j, i]
    coefficients = (rest.transpose(-1, -2) @ grad) / (sign * gap)
    return rest @ coefficients @ kept.transpose(-1, -2)


class _Basis(Function):
    @staticmethod
    def forward(a: torch.Tensor) -> torch.Tensor:
        _, eigenvectors = _spectrum(a)
        return eigenvectors[..., :K].clone()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[torch.Tensor], output: torch.Tensor) -> None:
        (a,) = inputs
        eigenvalues, eigenvectors = _spectrum(a.detach())
        ctx.save_for_backward(eigenvalues, eigenvectors)


class SmallestEigenvectors(_Basis):
    """B: the eigenvectors of S's K smallest eigenvalues; backward for the subspace B spans."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        eigenvalues, eigenvectors = ctx.saved_tensors
        return _sym(_subspace_grad_s(grad, eigenvalues, eigenvectors))


class SmallestEigenvectorsFull(_Basis):
    """The same B with eigh's full derivative: dv_i = Σ_{j ≠ i} v_j v_jᵀ dS v_i / (λ_i − λ_j)."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        eigenvalues, eigenvectors = ctx.saved_tensors
        gap = eigenvalues[..., :K].unsqueeze(-2) - eigenvalues.unsqueeze(-1)  # [j, i]
        same = torch.eye(eigenvalues.shape[-1], K, dtype=torch.bool, device=grad.device)
        gap = torch.where(same, torch.ones_like(gap), gap)
        coefficients = (eigenvectors.transpose(-1, -2) @ grad) / gap
        coefficients = torch.where(same, torch.zeros_like(coefficients), coefficients)
        kept = eigenvectors[..., :K]
        return _sym(eigenvectors @ coefficients @ kept.transpose(-1, -2))


class SmallestEigenvectorsGapSign(_Basis):
    """Bug: the subspace backward with λ_j − λ_i for λ_i − λ_j."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        eigenvalues, eigenvectors = ctx.saved_tensors
        return _sym(_subspace_grad_s(grad, eigenvalues, eigenvectors, sign=-1.0))


class SmallestEigenvectorsUnsymmetrized(_Basis):
    """Bug: the subspace backward returns dL/dS for dL/dA, forgetting S = A + Aᵀ."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        eigenvalues, eigenvectors = ctx.saved_tensors
        return _subspace_grad_s(grad, eigenvalues, eigenvectors)


class EigenpairsSubspace(Function):
    """(λ of the K smallest, B): two outputs, B's backward for the subspace only, λ's right."""

    @staticmethod
    def forward(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        eigenvalues, eigenvectors = _spectrum(a)
        return eigenvalues[..., :K].clone(), eigenvectors[..., :K].clone()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[torch.Tensor], output: Any) -> None:
        (a,) = inputs
        ctx.save_for_backward(*_spectrum(a.detach()))

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_values: torch.Tensor, grad_basis: torch.Tensor) -> torch.Tensor:
        eigenvalues, eigenvectors = ctx.saved_tensors
        kept = eigenvectors[..., :K]
        # dλ_i = v_iᵀ dS v_i
        from_values = kept @ torch.diag_embed(grad_values) @ kept.transpose(-1, -2)
        return _sym(from_values + _subspace_grad_s(grad_basis, eigenvalues, eigenvectors))


class EigenpairsWrongValues(EigenpairsSubspace):
    """Bug: as EigenpairsSubspace, with λ's gradient doubled: not a matter of the gauge."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_values: torch.Tensor, grad_basis: torch.Tensor) -> torch.Tensor:
        eigenvalues, eigenvectors = ctx.saved_tensors
        kept = eigenvectors[..., :K]
        from_values = 2 * kept @ torch.diag_embed(grad_values) @ kept.transpose(-1, -2)
        return _sym(from_values + _subspace_grad_s(grad_basis, eigenvalues, eigenvectors))


def _lower_spectrum(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """eigh of A + SPREAD·diag(0, ..., n-1): reads A's lower triangle only."""
    n = a.shape[-1]
    shift = torch.diag(torch.arange(n, dtype=a.dtype, device=a.device)) * SPREAD
    eigenvalues, eigenvectors = torch.linalg.eigh(a + shift)
    return eigenvalues, eigenvectors


class _LowerBasis(Function):
    @staticmethod
    def forward(a: torch.Tensor) -> torch.Tensor:
        _, eigenvectors = _lower_spectrum(a)
        return eigenvectors[..., :K].clone()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[torch.Tensor], output: torch.Tensor) -> None:
        (a,) = inputs
        ctx.save_for_backward(*_lower_spectrum(a.detach()))


class LowerTriangleEigenvectors(_LowerBasis):
    """B: the K smallest eigenvectors of a symmetric A (one triangle read); backward for the
    subspace B spans, symmetrized as a symmetric A's gradient is."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        eigenvalues, eigenvectors = ctx.saved_tensors
        return _sym(_subspace_grad_s(grad, eigenvalues, eigenvectors)) / 2


class LowerTriangleEigenvectorsGapSign(_LowerBasis):
    """Bug: as LowerTriangleEigenvectors, with λ_j − λ_i for λ_i − λ_j."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        eigenvalues, eigenvectors = ctx.saved_tensors
        return _sym(_subspace_grad_s(grad, eigenvalues, eigenvectors, sign=-1.0)) / 2


class LowerTriangleEigenvectorsSavedBasis(_LowerBasis):
    """LowerTriangleEigenvectors without @once_differentiable: its backward reads the
    eigenvectors saved from forward, which carry no gradient, so differentiating it again
    silently drops how they move with A (a wrong second derivative)."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        eigenvalues, eigenvectors = ctx.saved_tensors
        return _sym(_subspace_grad_s(grad, eigenvalues, eigenvectors)) / 2
