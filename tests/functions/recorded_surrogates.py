"""Functions whose backward is on purpose not the derivative, declared only by the code around
the backward (the class name, the docstring of the class that calls it), and an exact
Function beside them whose caller says nothing of the kind: what `gradverify record` writes
for each (tests/record/test_record_surrogate.py)."""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd import Function


class SignSTE(Function):
    """sign(x) for binarised weights; backward lets the gradient by where |x| <= 1."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * (x.abs() <= 1).to(grad.dtype)


class KroneckerFactoredLinear(Function):
    """x @ weight.T, whose weight gradient is preconditioned by the layer's two Kronecker
    factors (the inputs' and the output gradients' second moments, damped)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, damping: float) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        ctx.damping = damping
        return x @ weight.t()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        x, weight = ctx.saved_tensors
        rows = x.shape[0]
        inputs = x.t() @ x / rows + ctx.damping * torch.eye(
            x.shape[1], dtype=x.dtype, device=x.device
        )
        outputs = grad.t() @ grad / rows + ctx.damping * torch.eye(
            grad.shape[1], dtype=x.dtype, device=x.device
        )
        preconditioned = torch.linalg.solve(outputs, grad.t() @ x) @ torch.linalg.inv(inputs)
        return grad @ weight, preconditioned, None


class NaturalGradientLinear:
    """A bias-free linear layer for natural gradient descent (K-FAC): its weight's gradient
    is the Kronecker-factored natural gradient, so a plain SGD step is a natural one."""

    def __init__(self, weight: torch.Tensor, damping: float = 1e-2) -> None:
        self.weight = weight
        self.damping = damping

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return KroneckerFactoredLinear.apply(x, self.weight, self.damping)


class SoftSign(Function):
    """x / (1 + |x|), with its exact derivative 1 / (1 + |x|)^2."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x / (1 + x.abs())

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad / (1 + x.abs()) ** 2


class SoftSignLayer:
    """A layer trained by plain gradient descent: its gradient is the true one."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return SoftSign.apply(x)


class RoundToGrid(Function):
    """x rounded to a grid of step 0.25, for a quantised network; backward hands the
    gradient on as it came."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return torch.round(x * 4) / 4

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad


class DoubleForgotFactor(Function):
    """2 x, whose backward forgets the factor 2: grad_output handed on as it came to an input
    forward's output moves with is a bug, not an estimator."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return 2 * x

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad
