"""torch.library custom ops, correct and seeded-buggy: each docstring names its bug.

Importing this module registers the ops in the namespace `gradverify_examples`, so a spec
names them either as the CustomOpDef objects (`gradverify.examples.custom_ops:mysin`) or by
their qualified names after this module
(`gradverify.examples.custom_ops:gradverify_examples::mysin`).
"""

from __future__ import annotations

from typing import Any

import torch

# --- correct --------------------------------------------------------------------------


@torch.library.custom_op("gradverify_examples::mysin", mutates_args=())
def mysin(x: torch.Tensor) -> torch.Tensor:
    """sin(x), with its backward and fake registered: correct."""
    return torch.sin(x)


@mysin.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _mysin_setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    (x,) = inputs
    ctx.save_for_backward(x)


def _mysin_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    (x,) = ctx.saved_tensors
    return grad * x.cos()


mysin.register_autograd(_mysin_backward, setup_context=_mysin_setup_context)


@torch.library.custom_op("gradverify_examples::scaled_pow", mutates_args=())
def scaled_pow(x: torch.Tensor, scale: float, power: int) -> torch.Tensor:
    """scale * x**power, its number arguments taken from the schema: correct."""
    return scale * x**power


@scaled_pow.register_fake
def _(x: torch.Tensor, scale: float, power: int) -> torch.Tensor:
    return torch.empty_like(x)


def _scaled_pow_setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    x, scale, power = inputs
    ctx.save_for_backward(x)
    ctx.scale, ctx.power = scale, power


def _scaled_pow_backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
    (x,) = ctx.saved_tensors
    return grad * ctx.scale * ctx.power * x ** (ctx.power - 1), None, None


scaled_pow.register_autograd(_scaled_pow_backward, setup_context=_scaled_pow_setup_context)


# --- seeded bugs ----------------------------------------------------------------------


@torch.library.custom_op("gradverify_examples::mysin_wrong_backward", mutates_args=())
def mysin_wrong_backward(x: torch.Tensor) -> torch.Tensor:
    """sin(x) whose registered backward differentiates it wrongly.

    Bug: the backward returns grad * sin(x) instead of grad * cos(x).
    """
    return torch.sin(x)


@mysin_wrong_backward.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _wrong_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    (x,) = ctx.saved_tensors
    return grad * x.sin()


mysin_wrong_backward.register_autograd(_wrong_backward, setup_context=_mysin_setup_context)


@torch.library.custom_op("gradverify_examples::row_sum_wrong_fake", mutates_args=())
def row_sum_wrong_fake(x: torch.Tensor) -> torch.Tensor:
    """The sum of each row of x, [N, M] -> [N], whose fake implementation has another shape.

    Bug: register_fake returns a tensor shaped like x ([N, M]) instead of [N], so under
    torch.compile (which traces with fake tensors) the op's output has the wrong shape.
    The real op and its backward are right.
    """
    return x.sum(dim=-1)


@row_sum_wrong_fake.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _row_sum_setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    (x,) = inputs
    ctx.input_shape = x.shape


def _row_sum_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    return grad.unsqueeze(-1).expand(ctx.input_shape).clone()


row_sum_wrong_fake.register_autograd(_row_sum_backward, setup_context=_row_sum_setup_context)
