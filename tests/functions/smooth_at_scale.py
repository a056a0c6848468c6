"""Smooth elementwise Functions for inputs up to 10⁷ elements: GELU (tanh approximation),
softplus and sigmoid, each written classic (ctx in forward) and setup_context style.

Their backwards are differentiable torch ops, so gradgradcheck differentiates them. All are
correct except `GeluWrongSecondDerivative`, whose first derivative is right but whose second
is not (backward detaches a factor it saved, silently).
"""

from __future__ import annotations

import math
from typing import Any

import torch

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
CUBIC = 0.044715


def _gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1 + torch.tanh(SQRT_2_OVER_PI * (x + CUBIC * x**3)))


def _gelu_derivative(x: torch.Tensor) -> torch.Tensor:
    t = torch.tanh(SQRT_2_OVER_PI * (x + CUBIC * x**3))
    inner = SQRT_2_OVER_PI * (1 + 3 * CUBIC * x * x)
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * inner


def _sigmoid_derivative(x: torch.Tensor) -> torch.Tensor:
    s = torch.sigmoid(x)
    return s * (1 - s)


class Gelu(torch.autograd.Function):
    """GELU, tanh approximation, ctx in forward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return _gelu(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * _gelu_derivative(x)


class GeluSetupContext(torch.autograd.Function):
    """GELU, tanh approximation, setup_context style."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return _gelu(x)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * _gelu_derivative(x)


class GeluWrongSecondDerivative(GeluSetupContext):
    """GELU whose backward detaches its input: right first derivative, wrong second."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * _gelu_derivative(x.detach())


class Softplus(torch.autograd.Function):
    """log(1 + exp(x)), ctx in forward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)


class SoftplusSetupContext(torch.autograd.Function):
    """log(1 + exp(x)), setup_context style."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.softplus(x)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)


class Sigmoid(torch.autograd.Function):
    """1 / (1 + exp(-x)), ctx in forward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.sigmoid(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * _sigmoid_derivative(x)


class SigmoidSetupContext(torch.autograd.Function):
    """1 / (1 + exp(-x)), setup_context style."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * _sigmoid_derivative(x)


CALLS = {"forward": 0, "backward": 0}


def reset_calls() -> None:
    CALLS.update(forward=0, backward=0)


class CountedGelu(GeluSetupContext):
    """GeluSetupContext counting its forward and backward calls in `CALLS` (tests pin how
    many evaluations a check needs)."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        CALLS["forward"] += 1
        return _gelu(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        CALLS["backward"] += 1
        (x,) = ctx.saved_tensors
        return grad_output * _gelu_derivative(x)
