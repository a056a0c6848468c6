"""Legacy Functions: forward and backward written as instance methods, as before torch 1.3.
torch refuses to run them as written (`LegacyScale(2.0)(x)` raises), so each is a failure
that says so, never "forward rejected every shape"."""

from __future__ import annotations

import functools
from typing import Any

import torch


class LegacyScale(torch.autograd.Function):
    """y = scale * x, the scale kept on the instance."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> Any:
        return x * self.scale

    def backward(self, grad_output: torch.Tensor) -> Any:
        return grad_output * self.scale


class LegacySquare(torch.autograd.Function):
    """y = x ** 2 with no state: torch would run it through `apply`, its callers' `()` not."""

    def forward(self, x: torch.Tensor) -> Any:
        self.save_for_backward(x)
        return x * x

    def backward(self, grad_output: torch.Tensor) -> Any:
        (x,) = self.saved_tensors
        return 2 * x * grad_output


def _passed_through(function: Any) -> Any:
    """A decorator as `torch.amp.custom_fwd` is, applied over the staticmethod."""

    @functools.wraps(function)
    def wrapper(*arguments: Any, **keywords: Any) -> Any:
        return function(*arguments, **keywords)

    return wrapper


class DecoratedDouble(torch.autograd.Function):
    """y = 2 x, new style: its forward a staticmethod under a decorator, so a plain function
    on the class, yet no legacy Function."""

    @_passed_through
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return 2 * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return 2 * grad_output
