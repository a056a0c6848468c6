"""torch.library custom ops for the tests, in the namespace `gradverify_tests`: correct ones
with number and list arguments, and ops with one registration missing or wrong."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


def _save_x(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    ctx.save_for_backward(inputs[0])
    ctx.inputs = inputs[1:]


# --- correct ---------------------------------------------------------------------------


@torch.library.custom_op("gradverify_tests::mixed", mutates_args=())
def mixed(
    x: torch.Tensor, alpha: float, power: int, flip: bool, dims: Sequence[int]
) -> torch.Tensor:
    """alpha * x**power, flipped along `dims` if `flip`: a float, an int, a bool and an int[]."""
    y = alpha * x**power
    return y.flip(list(dims)) if flip else y


@mixed.register_fake
def _(x: torch.Tensor, alpha: float, power: int, flip: bool, dims: Sequence[int]) -> torch.Tensor:
    return torch.empty_like(x)


def _mixed_backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
    (x,) = ctx.saved_tensors
    alpha, power, flip, dims = ctx.inputs
    if flip:
        grad = grad.flip(list(dims))
    return grad * alpha * power * x ** (power - 1), None, None, None, None


mixed.register_autograd(_mixed_backward, setup_context=_save_x)


@torch.library.custom_op("gradverify_tests::scale", mutates_args=())
def scale(x: torch.Tensor, factor: float = 2.0) -> torch.Tensor:
    """factor * x, with a default from the schema."""
    return factor * x


@scale.register_fake
def _(x: torch.Tensor, factor: float = 2.0) -> torch.Tensor:
    return torch.empty_like(x)


def _scale_backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
    return grad * ctx.inputs[0], None


scale.register_autograd(_scale_backward, setup_context=_save_x)


@torch.library.custom_op("gradverify_tests::mul", mutates_args=())
def mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x * y, two tensors."""
    return x * y


@mul.register_fake
def _(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _mul_setup(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    ctx.save_for_backward(*inputs)


def _mul_backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = ctx.saved_tensors
    return grad * y, grad * x


mul.register_autograd(_mul_backward, setup_context=_mul_setup)


def _sin_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    (x,) = ctx.saved_tensors
    return grad * x.cos()


@torch.library.custom_op("gradverify_tests::sin_vmap", mutates_args=())
def sin_vmap(x: torch.Tensor) -> torch.Tensor:
    """sin(x) with a vmap rule of its own (register_vmap)."""
    return x.sin()


@sin_vmap.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


@sin_vmap.register_vmap
def _(info: Any, in_dims: tuple[int | None], x: torch.Tensor) -> tuple[torch.Tensor, int | None]:
    return sin_vmap(x), in_dims[0]


sin_vmap.register_autograd(_sin_backward, setup_context=_save_x)


@torch.library.custom_op("gradverify_tests::sin_cached", mutates_args=("cache",))
def sin_cached(x: torch.Tensor, cache: torch.Tensor) -> torch.Tensor:
    """sin(x), also written into `cache`, as declared (torch allows no register_autograd on
    an op that mutates: its cases differentiate nothing)."""
    y = x.sin()
    cache.copy_(y)
    return y


@sin_cached.register_fake
def _(x: torch.Tensor, cache: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


# --- one registration missing or wrong ---------------------------------------------------


@torch.library.custom_op("gradverify_tests::sin_wrong_vmap", mutates_args=())
def sin_wrong_vmap(x: torch.Tensor) -> torch.Tensor:
    """sin(x) whose vmap rule flips the batch: entry i gets entry B-1-i's result."""
    return x.sin()


@sin_wrong_vmap.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


@sin_wrong_vmap.register_vmap
def _(info: Any, in_dims: tuple[int | None], x: torch.Tensor) -> tuple[torch.Tensor, int | None]:
    batch = in_dims[0] if in_dims[0] is not None else 0
    return sin_wrong_vmap(x.flip(batch)), in_dims[0]


sin_wrong_vmap.register_autograd(_sin_backward, setup_context=_save_x)


@torch.library.custom_op("gradverify_tests::scale_forgotten", mutates_args=())
def scale_forgotten(x: torch.Tensor, factor: float) -> torch.Tensor:
    """factor * sin(x). Bug: backward forgets the factor (right only where factor is 1)."""
    return factor * x.sin()


@scale_forgotten.register_fake
def _(x: torch.Tensor, factor: float) -> torch.Tensor:
    return torch.empty_like(x)


def _scale_forgotten_backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
    (x,) = ctx.saved_tensors
    return grad * x.cos(), None


scale_forgotten.register_autograd(_scale_forgotten_backward, setup_context=_save_x)


@torch.library.custom_op("gradverify_tests::cube_wrong_backward", mutates_args=())
def cube_wrong_backward(x: torch.Tensor) -> torch.Tensor:
    """x**3 whose backward forgets the factor 3."""
    return x**3


@cube_wrong_backward.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _cube_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    (x,) = ctx.saved_tensors
    return grad * x**2  # BACKWARD LINE: the factor 3 is missing


cube_wrong_backward.register_autograd(_cube_backward, setup_context=_save_x)


@torch.library.custom_op("gradverify_tests::no_fake", mutates_args=())
def no_fake(x: torch.Tensor) -> torch.Tensor:
    """sin(x) with a backward but no fake implementation."""
    return x.sin()


def _no_fake_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    (x,) = ctx.saved_tensors
    return grad * x.cos()


no_fake.register_autograd(_no_fake_backward, setup_context=_save_x)


@torch.library.custom_op("gradverify_tests::wrong_fake_dtype", mutates_args=())
def wrong_fake_dtype(x: torch.Tensor) -> torch.Tensor:
    """2 * x whose fake returns float32 whatever x's dtype."""
    return 2 * x


@wrong_fake_dtype.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty(x.shape, dtype=torch.float32)


def _double_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    return 2 * grad


wrong_fake_dtype.register_autograd(_double_backward, setup_context=_save_x)


@torch.library.custom_op("gradverify_tests::undeclared_mutation", mutates_args=())
def undeclared_mutation(x: torch.Tensor) -> torch.Tensor:
    """Doubles x in place without declaring it in mutates_args."""
    x.mul_(2.0)
    return x.sin()


@undeclared_mutation.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


undeclared_mutation.register_autograd(_no_fake_backward, setup_context=_save_x)


# An op defined with the low-level torch.library API, with a CPU kernel and no autograd kernel.
_LIBRARY = torch.library.Library("gradverify_tests", "FRAGMENT")
_LIBRARY.define("cpu_only_sin(Tensor x) -> Tensor")
_LIBRARY.impl("cpu_only_sin", lambda x: x.sin(), "CPU")


# --- from the issue-10 sweep ----------------------------------------------------------------


@torch.library.custom_op("gradverify_tests::add_into", mutates_args=("out",))
def add_into(x: torch.Tensor, out: torch.Tensor) -> None:
    """out += x, returning nothing: legitimate (it does only what mutates_args declares)."""
    out.add_(x)


@add_into.register_fake
def _(x: torch.Tensor, out: torch.Tensor) -> None:
    return None


@torch.library.custom_op("gradverify_tests::wrong_shape_grad", mutates_args=())
def wrong_shape_grad(alpha: float, x: torch.Tensor) -> torch.Tensor:
    """alpha * sin(x), whose registered backward sums its gradient to a scalar (seeded bug)."""
    return alpha * x.sin()


@wrong_shape_grad.register_fake
def _(alpha: float, x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _wrong_shape_setup(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    ctx.alpha = inputs[0]
    ctx.save_for_backward(inputs[1])


def _wrong_shape_backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor]:
    (x,) = ctx.saved_tensors
    return None, (grad * ctx.alpha * x.cos()).sum()


wrong_shape_grad.register_autograd(_wrong_shape_backward, setup_context=_wrong_shape_setup)
