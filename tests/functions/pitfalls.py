"""Functions with the pitfalls `lint` knows (one rule each), and correct ones written oddly.

The offending line of each pitfall carries a `# pitfall: GVxxx` marker; tests find the
expected line numbers by searching for it, so editing this file does not break them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch.autograd.function import once_differentiable


class CtxTensorAttribute(torch.autograd.Function):
    """x**2 that keeps x on ctx instead of saving it (GV101); values are right."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, alpha: float) -> torch.Tensor:
        ctx.alpha = alpha  # a float on ctx is fine
        ctx.input_shape = x.shape  # so is a shape
        ctx.x = x  # pitfall: GV101
        return x * x * alpha

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad_output * 2 * ctx.x * ctx.alpha, None


class SetupContextCtxTensor(torch.autograd.Function):
    """x**2 in the new style, keeping x on ctx in setup_context (GV101)."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x * x

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        (x,) = inputs
        ctx.x = x  # pitfall: GV101

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output * 2 * ctx.x


class DataInBackward(torch.autograd.Function):
    """x**2 whose backward reads x through .data (GV102): first order right, second order 0."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x.data  # pitfall: GV102


class ReLUNoClone(torch.autograd.Function):
    """The classic ReLU backward without the clone: grad_output is zeroed in place (GV103)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        grad_input = grad_output  # an alias, not a copy
        grad_input[x < 0] = 0  # pitfall: GV103
        return grad_input


class InplaceSavedTensor(torch.autograd.Function):
    """x**2 whose backward doubles the saved x in place (GV103): the caller's x changes."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        x = ctx.saved_tensors[0]
        x.mul_(2)  # pitfall: GV103
        return grad_output * x


class VarargsInplace(torch.autograd.Function):
    """x * 3 whose backward, written with *grads, scales the first grad_output in place (GV103)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 3

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> torch.Tensor:
        grad = grads[0]
        grad *= 3  # pitfall: GV103
        return grad


class ExtraGradient(torch.autograd.Function):
    """x**2 whose backward returns a second, non-None value for a one-argument forward (GV104)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x, grad_output * x  # pitfall: GV104


class SavesLiteral(torch.autograd.Function):
    """x * alpha saving the float alpha with save_for_backward (GV105): forward crashes."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, alpha: float) -> torch.Tensor:
        ctx.save_for_backward(x, alpha)  # pitfall: GV105
        return x * alpha

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        _, alpha = ctx.saved_tensors
        return grad_output * alpha, None


class SavesConstant(torch.autograd.Function):
    """x * 2 saving the constant 2.0 next to x (GV105): forward crashes."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        ctx.save_for_backward(inputs[0], 2.0)  # pitfall: GV105

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output * 2


def _logged(method: Callable[..., Any]) -> Callable[..., Any]:
    """A decorator of the kind users stack on forward and backward."""

    @functools.wraps(method)
    def wrapper(*args: Any) -> Any:
        return method(*args)

    return wrapper


class OddlyWrittenCorrect(torch.autograd.Function):
    """(x * w)**2 written with every syntax lint must read without a false alarm."""

    @staticmethod
    @_logged
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, reduce: bool = False) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        ctx.reduce = reduce
        ctx.data = "not a tensor"  # an attribute of ctx named `data` is not `.data`
        product = x * w
        product *= product  # in place on a new tensor of forward's own: fine
        return product

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        x, w = ctx.saved_tensors
        grad = grads[0].clone()  # a copy: writing into it leaves grad_output alone
        grad.mul_(2)
        grad[grad.isnan()] = 0

        def scaled(g: torch.Tensor, by: torch.Tensor) -> torch.Tensor:
            g = g * by  # a nested function's names are its own
            g.mul_(1)
            return g

        product = x * w
        match [product]:
            case [p]:
                product = p
        grad_x = scaled(grad * product, w)
        grad_w = (lambda g: g * product * x)(grad)
        grads = grad_x, grad_w, None
        return grads


class OnlyTwoForThreeParameters(torch.autograd.Function):
    """x * w with an optional scale that is never passed: returns 2 values for 3 parameters.

    Fine for calls with two arguments; a call passing `scale` would crash (GV104, a warning).
    """

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, w: torch.Tensor, scale: float | None = None
    ) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return grad_output * w, grad_output * x  # pitfall: GV104


def square(x: torch.Tensor) -> torch.Tensor:
    """A plain function, not a Function: nothing to lint."""
    return x * x


# Made by exec, so inspect finds no source: only the run-time rules apply to it.
_NO_SOURCE = """
class NoSourceCtxTensor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2
"""
_namespace: dict[str, Any] = {"torch": torch}
exec(_NO_SOURCE, _namespace)
NoSourceCtxTensor = _namespace["NoSourceCtxTensor"]
