"""Functions for reports that claim no more than the evidence (issue 23): backward branches a
case never runs, a NaN second derivative from sqrt inside torch.where, references whose own
gradient is wrong, a complex reference that differs, and a second derivative wrong on every
case."""

from __future__ import annotations

from typing import Any

import torch

# --- backward branches --------------------------------------------------------------------


class SignedSquare(torch.autograd.Function):
    """x·|x|, whose backward takes a shortcut when every element has one sign. A case with
    elements of both signs runs only the general branch."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x.abs()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        if bool((x > 0).all()):
            return grad * 2 * x
        elif bool((x < 0).all()):
            return grad * -2 * x
        return grad * 2 * x.abs()


def signed_square(x: torch.Tensor) -> torch.Tensor:
    return x * x.abs()


@torch.library.custom_op("gradverify_claims::signed_square", mutates_args=())
def signed_square_op(x: torch.Tensor) -> torch.Tensor:
    """SignedSquare as a custom op, whose registered backward has the same branches."""
    return x * x.abs()


@signed_square_op.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _signed_square_setup(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    ctx.save_for_backward(inputs[0])


def _signed_square_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    (x,) = ctx.saved_tensors
    if bool((x > 0).all()):
        return grad * 2 * x
    return grad * 2 * x.abs()


signed_square_op.register_autograd(_signed_square_backward, setup_context=_signed_square_setup)


# --- a NaN second derivative: sqrt inside torch.where -------------------------------------


class SqrtRelu(torch.autograd.Function):
    """sqrt(max(x, 0)) for x > 0, else 0; backward right, but its sqrt of the unused branch
    is differentiated in double backward: NaN second derivatives where x <= 0."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.where(x > 0, torch.sqrt(x.clamp_min(0)), torch.zeros_like(x))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * torch.where(x > 0, 0.5 / torch.sqrt(x), torch.zeros_like(x))


class SqrtReluSafe(SqrtRelu):
    """SqrtRelu with the double-where trick: the sqrt sees 1 where it is not used."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        safe = torch.where(x > 0, x, torch.ones_like(x))
        return grad * torch.where(x > 0, 0.5 / torch.sqrt(safe), torch.zeros_like(x))


class ReluPow(torch.autograd.Function):
    """max(x, 0)^1.5, whose backward takes `** 0.5` of x times its mask: the first derivative
    is right, the second NaN where x < 0 (the mask's 0 times the power's infinite slope)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp_min(0) ** 1.5

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * 1.5 * (x * (x > 0)) ** 0.5


# --- references whose own gradient is wrong ----------------------------------------------


class Cube(torch.autograd.Function):
    """x³, correct."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


class CubeWrong(Cube):
    """x³ with backward 2x² instead of 3x²."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * 2 * x * x


class Det(torch.autograd.Function):
    """det(A) of a square matrix, its gradient the cofactor matrix: right at a singular
    matrix too, where torch.linalg.det's own gradient is 0 (a reference wrong there)."""

    @staticmethod
    def forward(ctx: Any, matrix: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(matrix)
        return torch.linalg.det(matrix)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (matrix,) = ctx.saved_tensors
        size = matrix.shape[-1]
        cofactors = torch.zeros_like(matrix)
        for row in range(size):
            for column in range(size):
                rows = [r for r in range(size) if r != row]
                columns = [c for c in range(size) if c != column]
                minor = matrix[rows][:, columns]
                cofactors[row, column] = (-1) ** (row + column) * torch.linalg.det(minor)
        return grad * cofactors


def cube_detached(x: torch.Tensor) -> torch.Tensor:
    """x³ whose autograd gradient is x² (two factors detached): the reference is wrong."""
    return x * x.detach() * x.detach()


def cube(x: torch.Tensor) -> torch.Tensor:
    return x**3


# --- a complex Function against its reference ---------------------------------------------


class ComplexRotate(torch.autograd.Function):
    """z·(1+2j) for complex z, with the wrong constant in forward: (1-2j)."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        return z * (1 - 2j)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * (1 + 2j)


def complex_rotate(z: torch.Tensor) -> torch.Tensor:
    return z * (1 + 2j)


# --- a second derivative wrong in every case ----------------------------------------------


class SquareDetached(torch.autograd.Function):
    """x², whose backward detaches x: right first derivative, zero second derivative."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * 2 * x.detach()


# Fifteen Functions of one kind, for a run the size of a package's (report/repeats.py).
SQUARES_DETACHED = tuple(
    type(f"SquareDetached{number}", (SquareDetached,), {"__module__": __name__})
    for number in range(15)
)
for _square in SQUARES_DETACHED:
    globals()[_square.__name__] = _square
