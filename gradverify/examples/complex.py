"""Functions of complex arguments: a correct product and modulus, and a product whose backward
forgets a conjugate.

torch's gradient for a complex z is the conjugate Wirtinger derivative: for a real loss L of
z = x + iy, backward returns ∂L/∂x + i·∂L/∂y. For a holomorphic f that is
grad_output * f'(z).conj(), so the gradient of z in z * w is grad_output * w.conj().
"""

from __future__ import annotations

from typing import Any

import torch


class ComplexMul(torch.autograd.Function):
    """z * w for complex z and w, with the conjugates backward needs."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z, w)
        return z * w

    @staticmethod
    def backward(
        ctx: Any, grad_output: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        z, w = ctx.saved_tensors
        grad_z = grad_output * w.conj() if ctx.needs_input_grad[0] else None
        grad_w = grad_output * z.conj() if ctx.needs_input_grad[1] else None
        return grad_z, grad_w


class ComplexAbs(torch.autograd.Function):
    """|z| of a complex z: a real output of a complex argument, not holomorphic.

    The gradient of |z| is z / |z| (∂|z|/∂x + i·∂|z|/∂y); at z = 0, a kink, 0 is a valid
    subgradient, as torch.abs gives.
    """

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z)
        return z.abs()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (z,) = ctx.saved_tensors
        modulus = z.abs()
        direction = torch.where(modulus > 0, z / modulus.clamp_min(1e-300), torch.zeros_like(z))
        return grad_output * direction


class ComplexMulForgotConj(torch.autograd.Function):
    """z * w whose backward forgets the conjugate in the gradient of z.

    Bug: grad_z = grad_output * w instead of grad_output * w.conj(). Central differences
    through the real and imaginary parts of z tell: the derivatives across parts (of the real
    part of the product with respect to the imaginary part of z, and the other way round) have
    the opposite sign. The gradient of w (argument 1) is right.
    """

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z, w)
        return z * w

    @staticmethod
    def backward(
        ctx: Any, grad_output: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        z, w = ctx.saved_tensors
        grad_z = grad_output * w if ctx.needs_input_grad[0] else None
        grad_w = grad_output * z.conj() if ctx.needs_input_grad[1] else None
        return grad_z, grad_w
