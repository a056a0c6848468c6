"""Functions whose mismatches have a recognisable cause, or look as if they had one.

Each hint of the report has a Function here where it must appear and one where it must not:
shape bugs (expand vs sum back), surrogate gradients declared nowhere, constant factors,
masks vs noise, placeholder jvps, nondeterminism. The structural ones (a sign per output, a
hard-coded axis, repeated indices) are in tests/functions/structure_hints.py.
"""

from __future__ import annotations

from typing import Any

import torch

# --- gradient shapes: expand, or sum back -------------------------------------------------


class SumForgotExpand(torch.autograd.Function):
    """y = x.sum(); bug: backward returns the 0-d grad_output, not grad_output.expand_as(x)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.sum()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output


class RowSumForgotExpand(torch.autograd.Function):
    """y = x.sum(0) for x [3, 4]; bug: backward returns the [4] grad_output unexpanded."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.sum(0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output


class ColumnSumForgotExpand(torch.autograd.Function):
    """y = x.sum(1) for x [3, 4]; bug: backward returns the [3] grad_output unexpanded."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.sum(1)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output


class BiasAddForgotSum(torch.autograd.Function):
    """y = x + b, x [3, 4], b [4]; backward does not sum b's gradient over the broadcast rows,
    which autograd then does (a warning: the gradient autograd delivers is right)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return x + b

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return grad_output, grad_output


# --- surrogate gradients in `exact` mode --------------------------------------------------


class GradientReversal(torch.autograd.Function):
    """Identity forward, -grad backward: a domain-adaptation gradient-reversal layer."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return -grad_output


class ScaledGradientReversal(torch.autograd.Function):
    """Identity forward, -0.5·grad backward: gradient reversal with λ = 0.5."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return -0.5 * grad_output


class GradientClipping(torch.autograd.Function):
    """Identity forward, backward clamps the incoming gradient to [-0.5, 0.5]."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output.clamp(-0.5, 0.5)


class ScaledGradientClipping(torch.autograd.Function):
    """y = 3x, backward clamps the gradient to [-1, 1]: every gradient entry is capped."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return 3 * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return (3 * grad_output).clamp(-1.0, 1.0)


class SquareClippedGradient(torch.autograd.Function):
    """y = x**2, backward clamps the gradient 2x·grad to [-1, 1]: capped only where |2x| > 1."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return (2 * x * grad_output).clamp(-1.0, 1.0)


class SquareClippedGradOutput(torch.autograd.Function):
    """y = x**2, backward clamps the incoming grad_output to [-0.5, 0.5] before the chain rule."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output.clamp(-0.5, 0.5) * 2 * x


class SumMeanInsteadOfSum(torch.autograd.Function):
    """y = x.sum(-1); bug: backward divides by the size of the reduced dimension (a mean's)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.size = x.shape[-1]
        return x.sum(-1)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output.unsqueeze(-1).expand(*grad_output.shape, ctx.size) / ctx.size


class SquareHalved(torch.autograd.Function):
    """y = x**2; bug: backward forgets the factor 2 (returns grad * x)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * x


# --- masks vs noise -----------------------------------------------------------------------


class NoisySin(torch.autograd.Function):
    """y = sin(x); backward adds Monte-Carlo-like noise of standard deviation `noise` to cos(x)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, noise: float, seed: int) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.noise, ctx.seed = noise, seed
        return x.sin()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (x,) = ctx.saved_tensors
        # A fixed seed keeps two backward runs equal: the noise is in the estimate, not the run.
        generator = torch.Generator().manual_seed(ctx.seed)
        noise = ctx.noise * torch.randn(x.shape, generator=generator, dtype=x.dtype)
        return grad_output * (x.cos() + noise), None, None


class LeakyReLUWrongAboveOne(torch.autograd.Function):
    """y = x where x > 0, 0.1x elsewhere; bug: backward uses slope 0.1 also above x > 1."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.where(x > 0, x, 0.1 * x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        slope = torch.where((x > 0) & (x <= 1), 1.0, 0.1).to(grad_output.dtype)
        return grad_output * slope


# --- placeholder jvps ---------------------------------------------------------------------


class _Square(torch.autograd.Function):
    """y = x**2 with a correct backward; the jvps below are placeholders."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x


class JvpRaisesNotImplemented(_Square):
    """A jvp left as `raise NotImplementedError`."""

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class JvpPass(_Square):
    """A jvp whose body is `pass`: it returns None."""

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:  # type: ignore[empty-body]
        pass


class JvpIntegerTangent(_Square):
    """Bug: jvp rounds the tangent to an integer tensor (torch fails with an internal assert)."""

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        return x_tangent.round().long()


class JvpReadsMissingAttribute(_Square):
    """jvp reads ctx.scale, which forward never set."""

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        return ctx.scale * x_tangent


# --- nondeterminism -----------------------------------------------------------------------


class RandomBackward(torch.autograd.Function):
    """y = 2x; backward adds unseeded noise, so two runs differ."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return 2 * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return 2 * grad_output + 0.1 * torch.randn_like(grad_output)
