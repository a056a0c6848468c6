"""Functions with an order between two parameters (`lo < hi`) that their code states, for
tests/inference/test_order.py and tests/record/test_record_order.py: a clamp with learnable
per-channel bounds is right only while lo < hi, so inputs that break the order are outside
its contract (below hi and above lo at once, x gets both gradients and neither)."""

from __future__ import annotations

from typing import Any

import torch


def _bound_gradients(grad: torch.Tensor, below: torch.Tensor, above: torch.Tensor) -> tuple:
    inside = ~(below | above)
    leading = tuple(range(grad.dim() - 1))
    to_low = (grad * below).sum(dim=leading) if leading else grad * below
    to_high = (grad * above).sum(dim=leading) if leading else grad * above
    return grad * inside, to_low, to_high


class BoundedClamp(torch.autograd.Function):
    """Clamp each channel of x between learnable bounds.

    Args:
        x: (N, C) tensor.
        lo: (C) lower bounds, lo < hi.
        hi: (C) upper bounds.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, lo, hi)
        return torch.where(x < lo, lo, torch.where(x > hi, hi, x))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        x, lo, hi = ctx.saved_tensors
        return _bound_gradients(grad, x < lo, x > hi)


class BoundedClampLowGetsAbove(BoundedClamp):
    """The same clamp, whose backward sends the gradient above hi to lo as well."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        x, lo, hi = ctx.saved_tensors
        to_x, _, to_high = _bound_gradients(grad, x < lo, x > hi)
        _, to_low, _ = _bound_gradients(grad, (x < lo) | (x > hi), x > hi)
        return to_x, to_low, to_high


class AssertedClamp(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, values: torch.Tensor, low: torch.Tensor, high: torch.Tensor
    ) -> torch.Tensor:
        assert (low < high).all(), "low must lie below high"
        ctx.save_for_backward(values, low, high)
        return torch.minimum(torch.maximum(values, low), high)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        values, low, high = ctx.saved_tensors
        return _bound_gradients(grad, values < low, values > high)


class RaisingClamp(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, min_val: torch.Tensor, max_val: torch.Tensor
    ) -> torch.Tensor:
        if (min_val >= max_val).any():
            raise ValueError("min_val must be less than max_val")
        ctx.save_for_backward(x, min_val, max_val)
        return torch.minimum(torch.maximum(x, min_val), max_val)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        x, min_val, max_val = ctx.saved_tensors
        return _bound_gradients(grad, x < min_val, x > max_val)


class WordedWindow(torch.autograd.Function):
    """A soft window: sigmoid(x - lower) * sigmoid(upper - x), and the lower edge must be
    less than the upper one: lower must be less than upper. Where x < lower the window
    is nearly shut."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, lower: float, upper: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.lower, ctx.upper = lower, upper
        return torch.sigmoid(x - lower) * torch.sigmoid(upper - x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        (x,) = ctx.saved_tensors
        rise, fall = torch.sigmoid(x - ctx.lower), torch.sigmoid(ctx.upper - x)
        slope = rise * (1 - rise) * fall - rise * fall * (1 - fall)
        return grad * slope, None, None


class ClampNumbers(torch.autograd.Function):
    """x clamped to [lo, hi], given as numbers; lo <= hi."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return torch.minimum(torch.maximum(x, torch.full_like(x, lo)), torch.full_like(x, hi))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        (x,) = ctx.saved_tensors
        return grad * ((x >= ctx.lo) & (x <= ctx.hi)), None, None


class RescaleBetween(torch.autograd.Function):
    """(x - lo) / (hi - lo), clamped to [0, 1]: x rescaled between two numbers, lo < hi.

    Its backward passes the gradient where lo < x < hi: right only in that order."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return ((x - lo) / (hi - lo)).clamp(0.0, 1.0)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        (x,) = ctx.saved_tensors
        inside = (x > ctx.lo) & (x < ctx.hi)
        return grad * inside / (ctx.hi - ctx.lo), None, None


class ChainDocumented(torch.autograd.Function):
    """The part of x that lies inside the window, zero elsewhere: lo <= x <= hi keeps x."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
        inside = (x >= lo) & (x <= hi)
        ctx.save_for_backward(inside)
        return x * inside

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        (inside,) = ctx.saved_tensors
        return grad * inside, None, None


class DifferenceChecked(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
        assert (hi - lo > 0).all()
        if lo.ge(hi).any():
            raise ValueError("empty window")
        ctx.save_for_backward(x, lo, hi)
        return torch.minimum(torch.maximum(x, lo), hi)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        x, lo, hi = ctx.saved_tensors
        return _bound_gradients(grad, x < lo, x > hi)


class ConditionOnly(torch.autograd.Function):
    """Adds a to b; where a < b the result is b's side of the pair (a region, not a rule)."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        return grad, grad
