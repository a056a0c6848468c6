"""Functions that lose precision in a float64 case (float32 inside), and correct kinked ones.

A forward or backward that silently computes in float32 is wrong in a float64 case: its
mismatches are float32 rounding spread over every element, not non-differentiable points.
"""

from __future__ import annotations

from typing import Any

import torch


class SinForwardInFloat32(torch.autograd.Function):
    """sin(x) whose forward computes in float32; backward is the exact cos(x)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.float().sin().to(x.dtype)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * x.cos()


class SinBackwardInFloat32(torch.autograd.Function):
    """sin(x), exact in forward; backward computes cos(x) in float32."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return (grad_output.float() * x.float().cos()).to(grad_output.dtype)


class Sin(torch.autograd.Function):
    """sin(x), exact in both directions: correct, and without a kink."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * x.cos()


class Clamp(torch.autograd.Function):
    """x.clamp(-1, 1), with slope 1 inside and 0 outside (0 at the bounds): correct, kinked."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp(-1.0, 1.0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * ((x > -1.0) & (x < 1.0)).to(grad_output.dtype)


class Step(torch.autograd.Function):
    """A step function (x > 0) whose backward is 0 everywhere: the straight derivative.

    At 0 it jumps by 1: the one-sided slopes are both 0 while the central difference there is
    1/(2·eps). Correct away from 0 (where the derivative is 0).
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(grad_output)


class SinForwardInFloat32WithJvp(SinForwardInFloat32):
    """SinForwardInFloat32 with an exact jvp: forward-mode is right, forward's values are not."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.float().sin().to(x.dtype)

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return x_tangent * x.cos()


class ClampWithJvp(Clamp):
    """Clamp with its jvp: correct, kinked at ±1."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.clamp(-1.0, 1.0)

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return x_tangent * ((x > -1.0) & (x < 1.0)).to(x_tangent.dtype)
