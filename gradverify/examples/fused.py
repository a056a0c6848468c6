"""A fused bias + GELU for half precision, written the way custom kernels are: float16 or
bfloat16 only, float32 inside, one rounding at the end.

GELU is the tanh approximation of GPT-2 and BERT:

    gelu(z) = 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3)))

`FusedBiasGelu` refuses float32 and float64 inputs, so the float64 numerical checks
(`finite_difference`, `gradcheck`) cannot run on it. The `reference` check compares it with
`bias_gelu_reference`, plain PyTorch differentiated by autograd, under the low-precision
rule (see specs/reference.yaml).
"""

from __future__ import annotations

import math
from typing import Any

import torch

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715
HALF_DTYPES = (torch.float16, torch.bfloat16)


def gelu_tanh(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """GELU (tanh approximation) and its derivative, in z's dtype."""
    t = torch.tanh(SQRT_2_OVER_PI * (z + GELU_CUBIC * z**3))
    value = 0.5 * z * (1 + t)
    d_inner = SQRT_2_OVER_PI * (1 + 3 * GELU_CUBIC * z * z)
    derivative = 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * d_inner
    return value, derivative


class FusedBiasGelu(torch.autograd.Function):
    """y = gelu(x + bias): x [..., C] and bias [C], both float16 or both bfloat16.

    Forward and backward compute in float32 and round once; the bias gradient is summed in
    float32 over every leading dimension of x before it is rounded.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        if x.dtype not in HALF_DTYPES or bias.dtype != x.dtype:
            raise TypeError(
                f"FusedBiasGelu supports float16 or bfloat16 only (x {x.dtype}, bias {bias.dtype})"
            )
        ctx.save_for_backward(x, bias)
        value, _ = gelu_tanh(x.float() + bias.float())
        return value.to(x.dtype)

    @staticmethod
    def backward(
        ctx: Any, grad_output: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        x, bias = ctx.saved_tensors
        _, derivative = gelu_tanh(x.float() + bias.float())
        grad_z = grad_output.float() * derivative
        grad_x = grad_z.to(x.dtype) if ctx.needs_input_grad[0] else None
        grad_bias = None
        if ctx.needs_input_grad[1]:
            grad_bias = grad_z.reshape(-1, bias.numel()).sum(0).to(bias.dtype)
        return grad_x, grad_bias


def bias_gelu_reference(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The same forward in plain PyTorch; autograd gives its gradients."""
    return torch.nn.functional.gelu(x + bias, approximate="tanh")
