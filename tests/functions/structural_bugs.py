"""Functions whose backward (or forward) breaks the autograd contract, one bug class each.

Some of these torch rejects itself (wrong count, wrong shape, a gradient for a literal);
others it accepts silently (dtype is cast back, inputs and grad_output may be mutated).
"""

from __future__ import annotations

from typing import Any

import torch

from gradverify.examples.activations import ReLU
from tests.functions.correct import Square


class TooFewGradients(torch.autograd.Function):
    """x * alpha whose backward returns one gradient for two forward arguments.

    torch raises "returned an incorrect number of gradients (expected 2, got 1)".
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, alpha: float) -> torch.Tensor:
        ctx.alpha = alpha
        return x * alpha

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output * ctx.alpha


class WrongGradShape(torch.autograd.Function):
    """x * 2 whose backward returns the gradient flattened.

    Use an input with at least 2 dims: a [2, 3] input gets a [6] gradient, which torch
    rejects. (An extra leading dim of 1 would not do: torch silently sums it away.)
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return (grad_output * 2).flatten()


class LinearTransposedWeightGrad(torch.autograd.Function):
    """x @ weight.T whose backward computes weight's gradient as x.T @ grad: [in, out] for an
    [out, in] weight, the transpose of what belongs."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        return x @ weight.t()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, weight = ctx.saved_tensors
        return grad_output @ weight, x.t() @ grad_output


class WrongGradDtype(torch.autograd.Function):
    """x**2 whose backward returns float32 for a float64 input.

    torch casts the gradient back to float64 without a word, so only a direct call to
    backward shows the dtype; through autograd the values just lose precision.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return (grad_output * 2 * x).float()


class NaNGradient(torch.autograd.Function):
    """x**2 whose gradient is NaN at flat element 2 (the input needs 3 elements or more)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        grad_input = (grad_output * 2 * x).flatten()
        grad_input[2] = float("nan")
        return grad_input.view(x.shape)


class NaNForward(torch.autograd.Function):
    """x**2 whose output is inf at flat element 1 for any finite input; backward is right."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        output = (x * x).flatten()
        output[1] = float("inf")
        return output.view(x.shape)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x


class InplaceGradOutput(torch.autograd.Function):
    """x * 2 whose backward doubles grad_output in place and returns it.

    The returned values are right; the bug is that the caller's grad_output is changed.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output.mul_(2)


class InplaceInput(torch.autograd.Function):
    """x * 2 computed by doubling the input in place (without mark_dirty) and copying it.

    Output and gradient are right for the original x, but the caller's x is doubled; torch
    does not object, it only bumps x._version.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2)
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output * 2


class NondeterministicBackward(torch.autograd.Function):
    """x**2 whose gradient carries uniform noise up to 1e-3, different on every call."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        grad_input = grad_output * 2 * x
        return grad_input + torch.rand_like(grad_input) * 1e-3


class ExtraTrailingNone(torch.autograd.Function):
    """x**2 returning (grad, None) for a one-argument forward.

    Not a bug: torch accepts extra trailing Nones, so this must count as correct.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x, None


class GradientForLiteral(torch.autograd.Function):
    """x * alpha whose backward returns a tensor gradient for the float literal alpha.

    torch raises "returned a gradient different than None at position 2, but the
    corresponding forward input was not a Variable".
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, alpha: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return x * alpha

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        (x,) = ctx.saved_tensors
        return grad_output * ctx.alpha, (grad_output * x).sum()


class BackwardNotWritten(torch.autograd.Function):
    """2 * x whose backward raises: a crash of the user's code, named where it raised."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        raise ValueError("not written yet")  # RAISES HERE


class FourierKeepsComplexGradient(torch.autograd.Function):
    """The DFT of a real x; backward returns the complex ifft for the real x, forgetting
    `.real` (autograd raises on a complex gradient of a real input)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return torch.fft.fft(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return torch.fft.ifft(grad_output) * grad_output.shape[-1]


class SigmoidScalesSavedOutputInPlace(torch.autograd.Function):
    """sigmoid(x) saved as forward's output; backward turns it into y * (1 - y) in place,
    changing the output the caller holds (autograd then refuses the saved tensor)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        y.mul_(1 - y)
        return grad_output * y


class SquareSquaresGradOutput(Square):
    """x^2 whose backward multiplies by grad_output twice: right wherever grad_output is 1."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return 2 * x * grad_output * grad_output


class ReLUAbsGradOutput(ReLU):
    """relu(x) whose backward passes |grad_output|: right wherever grad_output is positive."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output.abs() * (x > 0).to(grad_output.dtype)
