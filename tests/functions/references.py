"""Functions and plain-PyTorch references for the `reference` check.

`bias_gelu` is the reference of every BiasGelu here: y = gelu(x + bias), tanh approximation.
The half-precision Functions build on the bundled gradverify.examples.fused.
"""

from __future__ import annotations

from typing import Any

import torch

from gradverify.examples.fused import GELU_CUBIC, SQRT_2_OVER_PI, FusedBiasGelu, gelu_tanh

Grads = tuple[torch.Tensor | None, torch.Tensor | None]


def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The reference: plain PyTorch, differentiated by autograd."""
    return torch.nn.functional.gelu(x + bias, approximate="tanh")


def bias_gelu_twice(x: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A reference that returns two outputs where the Functions return one."""
    y = bias_gelu(x, bias)
    return y, y


def detached_reference(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """A reference that autograd cannot differentiate with respect to x."""
    return bias_gelu(x.detach(), bias)


def exp(x: torch.Tensor) -> torch.Tensor:
    """A reference that overflows in float16 for x > 11.1, as plain PyTorch does."""
    return torch.exp(x)


def exp_nan_below_zero(x: torch.Tensor) -> torch.Tensor:
    """exp(x) that returns NaN for negative x: wrong where the reference is finite."""
    return torch.where(x >= 0, torch.exp(x), torch.full_like(x, float("nan")))


def raising_reference(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """A reference that cannot run."""
    raise ValueError("reference not implemented for this shape")


def _bias_gradient(grad_z: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return grad_z.reshape(-1, bias.numel()).sum(0)


class BiasGelu(torch.autograd.Function):
    """Correct in any floating dtype, computing in the dtype of its inputs."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, bias)
        return gelu_tanh(x + bias)[0]

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Grads:
        x, bias = ctx.saved_tensors
        grad_z = grad_output * gelu_tanh(x + bias)[1]
        return grad_z, _bias_gradient(grad_z, bias)


class BiasGeluWrongCubic(torch.autograd.Function):
    """Forward has a typo in the cubic constant (0.0447 → 0.4715); backward is right."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, bias)
        z = x + bias
        return 0.5 * z * (1 + torch.tanh(SQRT_2_OVER_PI * (z + 0.4715 * z**3)))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Grads:
        x, bias = ctx.saved_tensors
        grad_z = grad_output * gelu_tanh(x + bias)[1]
        return grad_z, _bias_gradient(grad_z, bias)


class BiasGeluMeanBias(torch.autograd.Function):
    """The bias gradient averages over the rows where it must sum them; the rest is right."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, bias)
        return gelu_tanh(x + bias)[0]

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Grads:
        x, bias = ctx.saved_tensors
        grad_z = grad_output * gelu_tanh(x + bias)[1]
        return grad_z, grad_z.reshape(-1, bias.numel()).mean(0)


class BiasGeluBackwardRaises(torch.autograd.Function):
    """Forward is right; backward raises."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return gelu_tanh(x + bias)[0]

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Grads:
        raise RuntimeError("backward kernel not built for this device")


class FusedBiasGeluWrongDerivative(FusedBiasGelu):
    """Half-precision only; the derivative of the tanh argument forgets the 3 of 3·0.044715·z².

    Forward is right. The float64 checks cannot run on it: only the reference sees the bug.
    """

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Grads:
        x, bias = ctx.saved_tensors
        z = x.float() + bias.float()
        t = torch.tanh(SQRT_2_OVER_PI * (z + GELU_CUBIC * z**3))
        d_inner = SQRT_2_OVER_PI * (1 + GELU_CUBIC * z * z)  # bug: 3 * GELU_CUBIC
        grad_z = grad_output.float() * (0.5 * (1 + t) + 0.5 * z * (1 - t * t) * d_inner)
        return grad_z.to(x.dtype), _bias_gradient(grad_z, bias).to(bias.dtype)


class FusedBiasGeluHalfAccumulation(FusedBiasGelu):
    """Half-precision only; the bias gradient is accumulated row by row in float16.

    Every partial sum is rounded to float16, so over many rows the rounding errors pile up
    far beyond the reference, whose reduction accumulates in float32.
    """

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Grads:
        x, bias = ctx.saved_tensors
        _, derivative = gelu_tanh(x.float() + bias.float())
        grad_x = (grad_output.float() * derivative).to(x.dtype)
        grad_bias = torch.zeros_like(bias)
        for row in grad_x.reshape(-1, bias.numel()):
            grad_bias = grad_bias + row  # bug: a float16 running sum
        return grad_x, grad_bias
