"""Forms of Function that need care to be checked at all: in place (ctx.mark_dirty),
surrogates whose gradient has the wrong shape, and stochastic gradient estimators.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd.function import once_differentiable


# In place: forward writes into its input and says so with ctx.mark_dirty.
class ExpInPlace(torch.autograd.Function):
    """exp(x) computed in x's own memory; the output is saved after it was written."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        x.exp_()
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return grad_output * y


class ExpInPlaceWrongBackward(torch.autograd.Function):
    """ExpInPlace whose backward forgets the factor exp(x) where x > 0.5 (a seeded bug)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.positive = x > 0.5
        x.exp_()
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return torch.where(ctx.positive, grad_output, grad_output * y)


class ExpInPlaceUnmarked(torch.autograd.Function):
    """exp(x) written into x without ctx.mark_dirty: the caller's tensor changes unannounced."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = x.exp_()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return grad_output * y


class ScaledAddInPlace(torch.autograd.Function):
    """x += alpha * y * y in x's memory: x is dirty, y is only read."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
        ctx.save_for_backward(y)
        ctx.alpha = alpha
        x.add_(alpha * y * y)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, ...]:
        (y,) = ctx.saved_tensors
        grad_x = grad_output if ctx.needs_input_grad[0] else None
        grad_y = grad_output * 2 * ctx.alpha * y if ctx.needs_input_grad[1] else None
        return grad_x, grad_y, None


class ExpInPlaceNewStyle(torch.autograd.Function):
    """exp(x) in x's memory, new style: setup_context marks inputs[0] dirty."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.exp_()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        (x,) = inputs
        ctx.mark_dirty(x)
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return grad_output * y


# Surrogates with an intended gradient (`expected_gradient`), one of them the wrong shape.
class RoundStraightThrough(torch.autograd.Function):
    """round(x) whose backward passes grad_output through unchanged (straight-through)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.round()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output


class RoundStraightThroughUnsqueezed(torch.autograd.Function):
    """RoundStraightThrough whose gradient has an extra leading dimension of 1: autograd sums
    it back to the argument's shape, so the values it delivers look right."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.round()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output.unsqueeze(0)


def straight_through(x: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
    """The intended gradient of a straight-through estimator: grad_output itself."""
    return grad_output


# Stochastic gradient estimators (`gradient: approximate` with `samples`).
NOISE = 0.1  # standard deviation of the estimators' zero-mean noise


class NoisySin(torch.autograd.Function):
    """sin(x) whose backward is a Monte-Carlo estimate of cos(x): unbiased, noisy."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        noise = torch.randn_like(x) * NOISE  # torch's RNG: another draw every run
        return grad_output * (x.cos() + noise)


class BiasedNoisySin(torch.autograd.Function):
    """NoisySin whose estimate is 20% too large on average (a biased estimator)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        noise = torch.randn_like(x) * NOISE
        return grad_output * (1.2 * x.cos() + noise)


# Tensors kept as ctx attributes: fine for a mask or a detached intermediate (GV101 silent),
# not for an input or output of forward or a view of one (GV101).
class ReLUMaskOnCtx(torch.autograd.Function):
    """ReLU keeping its bool mask on ctx, as the guides do."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.mask = x > 0
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output * ctx.mask


class TanhDetachedIntermediateOnCtx(torch.autograd.Function):
    """2·tanh(x), keeping the intermediate tanh(x), detached, on ctx (so once differentiable)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = x.tanh()
        ctx.y = y.detach()
        return 2 * y

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output * 2 * (1 - ctx.y * ctx.y)


class MaskOnCtxNewStyle(torch.autograd.Function):
    """ReLU in the new style: setup_context keeps the mask on ctx."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.clamp(min=0)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        ctx.mask = inputs[0] > 0

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output * ctx.mask


class ExpOutputOnCtx(torch.autograd.Function):
    """exp(x) keeping its output on ctx: a reference cycle output -> node -> ctx -> output."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = x.exp()
        ctx.y = y  # pitfall: GV101
        return y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output * ctx.y


class ExpDetachedOutputOnCtx(torch.autograd.Function):
    """exp(x) keeping its output, detached, on ctx: no cycle, but an in-place change of the
    output before backward goes unnoticed."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = x.exp()
        ctx.y = y.detach()  # pitfall: GV101
        return y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output * ctx.y


class RowOfInputOnCtx(torch.autograd.Function):
    """x * x[0] (rows scaled by the first row), keeping the input, detached, on ctx: it
    shares the input's memory."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.x = x.detach()  # pitfall: GV101
        return x * x[0]

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        x = ctx.x
        grad = grad_output * x[0]
        grad[0] += (grad_output * x).sum(dim=0)
        return grad


# In-place changes in forward to a tensor already given to save_for_backward (GV106): torch
# notices none of them, and backward silently computes with the changed values.
class ExpSavedThenShifted(torch.autograd.Function):
    """2·exp(x) whose saved exp(x) is shifted by 1 after it was saved: backward is off by 2."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = x.exp()
        ctx.save_for_backward(y)
        output = y * 2
        y.add_(1)  # pitfall: GV106
        return output

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return grad_output * 2 * y


class SquareSavedThenDirty(torch.autograd.Function):
    """x*x in x's memory, saving x before the write: backward sees x² where it needs x."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        x.mul_(x)  # pitfall: GV106
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x


class ExpSavedThenScaledUnderNoGrad(torch.autograd.Function):
    """ExpSavedThenShifted's bug written through a view, under no_grad."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = x.exp()
        ctx.save_for_backward(y)
        output = y * 2
        flat = y.view(-1)
        with torch.no_grad():
            flat[0] = 0.0  # pitfall: GV106
        return output

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return grad_output * 2 * y


class ExpSavedOutputThenShiftedNewStyle(torch.autograd.Function):
    """exp(x), new style: setup_context saves the output, then shifts it in place."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.exp()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        ctx.save_for_backward(output)
        output.data.add_(1)  # pitfall: GV106

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return grad_output * y


class ExpShiftedBeforeSaving(torch.autograd.Function):
    """2·exp(x) + 2 written in place into an intermediate before it is saved; a clone of the
    saved tensor is changed after: both are fine."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = x.exp()
        y.add_(1)
        ctx.save_for_backward(y)
        doubled = y.clone()
        doubled.mul_(2)
        return doubled

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return grad_output * 2 * (y - 1)
