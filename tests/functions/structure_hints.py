"""Functions whose mismatch shows in the Jacobian's structure, and their look-alikes.

A sign flipped on one output of two, a backward that reduces over the last axis whatever
forward's `dim`, assignment where repeated indices must accumulate, a broadcast gradient left
for autograd to sum: each next to a correct Function or a different bug that must not get
the same hint (tests/checks/test_structure_hints.py).
"""

from __future__ import annotations

from typing import Any

import torch

# --- a sign per output ----------------------------------------------------------------------


class SinSquare(torch.autograd.Function):
    """(sin x, x²), correct."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.save_for_backward(x)
        return x.sin(), x * x

    @staticmethod
    def backward(ctx: Any, grad_sin: torch.Tensor, grad_square: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_sin * x.cos() + grad_square * 2 * x


class SinSquareFlipped(SinSquare):
    """Bug: the x² output's term is subtracted (output 1's sign flipped, output 0 right)."""

    @staticmethod
    def backward(ctx: Any, grad_sin: torch.Tensor, grad_square: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_sin * x.cos() - grad_square * 2 * x


class SinSquareDoubled(SinSquare):
    """Bug: the x² output's term is doubled (4x, not 2x): wrong, but no sign."""

    @staticmethod
    def backward(ctx: Any, grad_sin: torch.Tensor, grad_square: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_sin * x.cos() + grad_square * 4 * x


# --- a hard-coded axis ----------------------------------------------------------------------


class Softmax(torch.autograd.Function):
    """softmax(x, dim), correct for every dim."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int) -> torch.Tensor:
        y = torch.softmax(x, dim)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (y,) = ctx.saved_tensors
        return y * (grad_output - (grad_output * y).sum(ctx.dim, keepdim=True)), None


class SoftmaxLastDimBackward(Softmax):
    """Bug: backward reduces over the last dim whatever `dim` is (right for dim=-1 only)."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (y,) = ctx.saved_tensors
        return y * (grad_output - (grad_output * y).sum(-1, keepdim=True)), None


class SoftmaxForgotReduction(Softmax):
    """Bug: backward forgets the reduced term (returns y * grad): wrong, but on no axis."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (y,) = ctx.saved_tensors
        return y * grad_output, None


# --- repeated indices -----------------------------------------------------------------------


class Embedding(torch.autograd.Function):
    """weight[idx], correct: backward accumulates rows with index_add_."""

    @staticmethod
    def forward(ctx: Any, weight: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(idx)
        ctx.rows = weight.shape[0]
        return weight[idx]

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (idx,) = ctx.saved_tensors
        grad = grad_output.new_zeros(ctx.rows, *grad_output.shape[1:])
        return grad.index_add_(0, idx, grad_output), None


class EmbeddingAssigns(Embedding):
    """Bug: `grad[idx] = grad_output`: with repeated idx one row's contribution survives."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (idx,) = ctx.saved_tensors
        grad = grad_output.new_zeros(ctx.rows, *grad_output.shape[1:])
        grad[idx] = grad_output
        return grad, None


class EmbeddingMasksRow(Embedding):
    """Bug: backward zeroes row 0's gradient (a padding mask where there is no padding)."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (idx,) = ctx.saved_tensors
        grad = grad_output.new_zeros(ctx.rows, *grad_output.shape[1:])
        grad.index_add_(0, idx, grad_output)
        grad[0] = 0
        return grad, None


class BiasAddKeepsFirstRow(torch.autograd.Function):
    """y = x + b, x [3, 4], b [4]; bug: b's gradient is grad_output's first row, not the sum
    of its rows: one contribution kept of several, as with assignment, but no index."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return x + b

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return grad_output, grad_output[0]


# --- a broadcast gradient left to autograd -----------------------------------------------------


class BiasAddUnreduced(torch.autograd.Function):
    """y = x + b, b broadcast; backward returns b's gradient unreduced ([3, 4] for [4]), which
    autograd sums. In the functorch style (setup_context, vmap rule) so that torch.func runs."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return x + b

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        pass

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return grad_output, grad_output


class BiasAddUnreducedDoubled(torch.autograd.Function):
    """Bug: b's gradient unreduced and doubled: autograd's sum of it is wrong too."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return x + b

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return grad_output, 2 * grad_output
