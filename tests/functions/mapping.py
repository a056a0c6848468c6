"""Functions for tests of how gradverify maps what it finds back to the user's code.

Argument positions when literals come first, exceptions raised by the user's forward or
backward, and a forward that rejects the inputs a zero-config run infers.
"""

from __future__ import annotations

from typing import Any

import torch


class ScaleLiteralFirst(torch.autograd.Function):
    """alpha * x with the float literal first, whose gradient of x forgets alpha.

    Bug in argument 1 (x). torch.autograd.gradcheck numbers only inputs that require grad,
    so it calls x "input 0"; gradverify must report argument 1.
    """

    @staticmethod
    def forward(ctx: Any, alpha: float, x: torch.Tensor) -> torch.Tensor:
        ctx.alpha = alpha
        return alpha * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[None, torch.Tensor]:
        return None, grad_output


class AxpyLiteralFirst(torch.autograd.Function):
    """alpha * x + y with the float literal first, whose gradient of y has the wrong sign.

    x (argument 1) is right, y (argument 2) is wrong: torch's "input 1" is argument 2.
    """

    @staticmethod
    def forward(ctx: Any, alpha: float, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        ctx.alpha = alpha
        return alpha * x + y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[None, torch.Tensor, torch.Tensor]:
        return None, grad_output * ctx.alpha, -grad_output


class ForwardRaises(torch.autograd.Function):
    """A forward that always raises, as user code under development does."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("forward exploded on purpose")

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output


class BackwardRaises(torch.autograd.Function):
    """x**2 whose backward always raises."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        raise ZeroDivisionError("backward exploded on purpose")


class StrictMatMul(torch.autograd.Function):
    """a @ b through torch.mm, which rejects anything but 2-D matrices (e.g. [4] and [4])."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        return torch.mm(a, b)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = ctx.saved_tensors
        return grad_output.mm(b.t()), a.t().mm(grad_output)


class FixedSizeMatMul(torch.autograd.Function):
    """a @ b for a 4x6 a and a 6x5 b only, as a fixed-size kernel is: the whole shapes are
    compared as tuples, which no inference rule reads, so every guess is rejected."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if tuple(a.shape) != (4, 6) or tuple(b.shape) != (6, 5):
            raise ValueError(f"a must be 4x6 and b 6x5, got {tuple(a.shape)}, {tuple(b.shape)}")
        ctx.save_for_backward(a, b)
        return a.mm(b)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = ctx.saved_tensors
        return grad_output.mm(b.t()), a.t().mm(grad_output)


class DetachedGradOutputSquare(torch.autograd.Function):
    """x**2 whose backward detaches grad_output: first order right, and so is d/dx of the
    gradient, but its derivative by grad_output comes out 0 (torch's gradgradcheck input 1,
    which is grad_output 0, not an argument)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output.detach() * 2 * x
