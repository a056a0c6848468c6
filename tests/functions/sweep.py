"""Functions from the issue-10 sweep (new forms as people write them): each docstring says
what it exercised."""

from __future__ import annotations

from typing import Any

import torch


def returns_none(x: torch.Tensor) -> None:
    """A plain function that returns nothing: settle's kink probe once raised on it (exit 3)."""
    return None


class ReluWithMask(torch.autograd.Function):
    """relu(x) and its mask (a bool output, non-differentiable): correct. torch's gradcheck
    once raised on the bool output ("Subtraction ... with two bool tensors")."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mask = x > 0
        return x * mask, mask

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        _, mask = output
        ctx.mark_non_differentiable(mask)
        ctx.save_for_backward(mask)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor, _grad_mask: Any) -> torch.Tensor:
        (mask,) = ctx.saved_tensors
        return grad * mask


class ReluWithMaskDoubled(ReluWithMask):
    """Seeded bug: backward doubles the gradient."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor, _grad_mask: Any) -> torch.Tensor:
        (mask,) = ctx.saved_tensors
        return 2 * grad * mask


class WeightedSquares(torch.autograd.Function):
    """sum(w * x * x), a scalar: correct."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (w * x * x).sum()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return 2 * grad * w * x, grad * x * x


class WeightedSquaresIgnoresGrad(WeightedSquares):
    """Seeded bug: the gradient of w forgets grad_output (right for a grad_output of 1 only,
    so the one-hot finite differences cannot see it)."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return 2 * grad * w * x, x * x


class SinBackwardWithoutGrad(torch.autograd.Function):
    """Seeded bug: backward runs under torch.no_grad(), so double backward sees a constant."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        with torch.no_grad():
            return grad * x.cos()


class ComplexLinear(torch.autograd.Function):
    """x @ w.mT for complex x and w, written for torch.func: correct (conjugates in backward)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x @ w.mT

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return grad @ w.conj(), grad.mT @ x.conj()


class ComplexLinearForgotConj(ComplexLinear):
    """Seeded bug: the gradient of x lacks the conjugate of w."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return grad @ w, grad.mT @ x.conj()


class SquaredModulus(torch.autograd.Function):
    """sum |z|², a real loss of a complex argument, for torch.func: correct."""

    generate_vmap_rule = True

    @staticmethod
    def forward(z: torch.Tensor) -> torch.Tensor:
        return (z.real**2 + z.imag**2).sum()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (z,) = ctx.saved_tensors
        return 2 * grad * z


class ScaleAndFactor(torch.autograd.Function):
    """(x * alpha, alpha): a number beside the result, for torch.func: correct. torch.vmap
    needs out_dims None for the number; the vmap check once failed it."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor, alpha: float) -> tuple[torch.Tensor, float]:
        return x * alpha, alpha

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.alpha = inputs[1]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor, _grad_alpha: Any) -> tuple[torch.Tensor, None]:
        return grad * ctx.alpha, None


class ScaleAndFactorWrongGrad(ScaleAndFactor):
    """Seeded bug: backward forgets alpha."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor, _grad_alpha: Any) -> tuple[torch.Tensor, None]:
        return grad, None


class AddSharesGrad(torch.autograd.Function):
    """x + y, whose backward returns grad_output itself for both: correct, and no work is
    wasted when one argument needs no gradient (layouts once warned it was)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        pass

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return grad, grad


class AddSharesComputedGrad(torch.autograd.Function):
    """2 * (x + y), whose backward computes one gradient and returns it for both: correct,
    and the second costs nothing."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return 2 * (x + y)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        pass

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        doubled = 2 * grad
        return doubled, doubled
