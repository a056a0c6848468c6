"""Functions for the `compile` check: correct ones of every form, ones that differ under
torch.compile, and a custom op of our own (namespace `gradverify_compiled`)."""

from __future__ import annotations

from typing import Any

import torch


class FastPathUnderCompile(torch.autograd.Function):
    """y = sin(x) * w; backward takes a "fused" path under torch.compile that doubles the
    gradient of x: right in eager, wrong compiled."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.w = w
        return torch.sin(x) * w

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        grad = grad_output * torch.cos(x) * ctx.w
        if torch.compiler.is_compiling():
            grad = grad * 2  # the seeded bug: only the traced backward has it
        return grad, None


class ZeroesARowUnderCompile(torch.autograd.Function):
    """y = 2x; compiled, row 1 of the output comes out zero."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = 2 * x
        if torch.compiler.is_compiling():
            y = torch.cat([y[:1], torch.zeros_like(y[1:2]), y[2:]])
        return y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return 2 * grad_output


class WithCount(torch.autograd.Function):
    """(x * k, x.shape[0]): a literal argument and a non-tensor output."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, k: float) -> tuple[torch.Tensor, int]:
        ctx.k = k
        ctx.mark_non_differentiable()
        return x * k, x.shape[0]

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor, _count: Any) -> tuple[torch.Tensor, None]:
        return grad_output * ctx.k, None


class RaisesInForward(torch.autograd.Function):
    """Crashes in eager already: a failure of the user's code, not of torch.compile."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("forward is not written yet")

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output


def scaled_tanh(x: torch.Tensor, k: float) -> torch.Tensor:
    """A plain function: autograd differentiates it, torch.compile traces it."""
    return torch.tanh(x) * k


@torch.library.custom_op("gradverify_compiled::cube", mutates_args=())
def cube(x: torch.Tensor) -> torch.Tensor:
    """x**3, a custom op with its fake and autograd registered: compiles whole."""
    return x**3


@cube.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _cube_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    ctx.save_for_backward(inputs[0])


def _cube_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    (x,) = ctx.saved_tensors
    return grad * 3 * x**2


cube.register_autograd(_cube_backward, setup_context=_cube_context)


@torch.library.custom_op("gradverify_compiled::row_total", mutates_args=())
def row_total(x: torch.Tensor) -> torch.Tensor:
    """The sum of each row; its fake returns x's shape, not the rows': eager runs, tracing
    does not."""
    return x.sum(-1)


@row_total.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)  # the seeded bug: should be x.new_empty(x.shape[:-1])


def _row_total_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    ctx.shape = inputs[0].shape


def _row_total_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    return grad.unsqueeze(-1).expand(ctx.shape)


row_total.register_autograd(_row_total_backward, setup_context=_row_total_context)
