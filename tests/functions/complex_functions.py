"""Functions of complex arguments or with complex outputs, correct and with seeded bugs.

torch's gradient for complex z = x + iy is ∂L/∂x + i·∂L/∂y (the conjugate Wirtinger
derivative): for a holomorphic f, backward returns grad_output * f'(z).conj().
"""

from __future__ import annotations

from typing import Any

import torch


class MulForgotConj(torch.autograd.Function):
    """z * w whose gradient of z lacks the conjugate (grad * w, not grad * w.conj());
    the gradient of w is right. The case of issue 10."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z, w)
        return z * w

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z, w = ctx.saved_tensors
        return grad * w, grad * z.conj()


class MulNegated(torch.autograd.Function):
    """z * w whose gradient of z has the opposite sign everywhere: not a conjugation bug."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z, w)
        return z * w

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z, w = ctx.saved_tensors
        return -grad * w.conj(), grad * z.conj()


class MulDetached(torch.autograd.Function):
    """z * w with a right first derivative and a wrong second: w.conj() is detached in the
    gradient of z, so d(grad_z)/dw is silently 0."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z, w)
        return z * w

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z, w = ctx.saved_tensors
        return grad * w.conj().detach(), grad * z.conj()


class Abs(torch.autograd.Function):
    """|z|: complex in, real out, not holomorphic; gradient z / |z| (0 at 0, a subgradient)."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z)
        return z.abs()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (z,) = ctx.saved_tensors
        modulus = z.abs()
        return grad * torch.where(modulus > 0, z / modulus.clamp_min(1e-300), 0)


class AbsConjugated(torch.autograd.Function):
    """|z| whose gradient is conjugated: grad * z.conj() / |z| instead of grad * z / |z|."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z)
        return z.abs()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (z,) = ctx.saved_tensors
        return grad * z.conj() / z.abs()


class AbsHalved(torch.autograd.Function):
    """|z| whose gradient is halved: a wrong factor, no conjugation bug."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z)
        return z.abs()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (z,) = ctx.saved_tensors
        return grad * z / z.abs() / 2


class Real(torch.autograd.Function):
    """z.real: its gradient is grad + 0j (the imaginary part of z does not matter)."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        return z.real.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return torch.complex(grad, torch.zeros_like(grad))


class RealAsImaginary(torch.autograd.Function):
    """z.real whose backward returns grad * 1j: the gradient of the imaginary part's."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        return z.real.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 1j


class Conj(torch.autograd.Function):
    """conj(z): complex in and out, not holomorphic; its gradient is grad.conj()."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        return z.conj().clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad.conj()


class ConjPassedThrough(torch.autograd.Function):
    """conj(z) whose backward returns grad unchanged: the imaginary part's derivative has the
    wrong sign, within one part (no conjugation pattern across parts)."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        return z.conj().clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad.clone()


class ScaleToComplex(torch.autograd.Function):
    """Real x times a complex constant c: a complex output of a real argument. The gradient
    of x is Re(grad * c.conj())."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(c)
        return x * c

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (c,) = ctx.saved_tensors
        return (grad * c.conj()).real, None


class ScaleToComplexForgotConj(torch.autograd.Function):
    """Real x times a complex constant c whose backward forgets the conjugate: Re(grad * c)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(c)
        return x * c

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (c,) = ctx.saved_tensors
        return (grad * c).real, None


class AbsRealGradient(torch.autograd.Function):
    """|z| whose backward returns a real gradient, (grad * z / |z|).real: the derivative with
    respect to the imaginary part of z is lost."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z)
        return z.abs()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (z,) = ctx.saved_tensors
        return (grad * z / z.abs()).real


class PolarUnreducedAngle(torch.autograd.Function):
    """r * exp(i theta), real r and theta, a complex output; the gradient of a broadcast
    theta is returned unreduced (autograd sums it), its values right."""

    @staticmethod
    def forward(ctx: Any, r: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        y = r * torch.exp(1j * theta)
        ctx.save_for_backward(r, theta)
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        r, theta = ctx.saved_tensors
        turn = torch.exp(1j * theta)
        return (grad * turn.conj()).real, (grad * (-1j) * (r * turn).conj()).real


class PolarUnreducedAngleNegated(torch.autograd.Function):
    """PolarUnreducedAngle whose unreduced gradient of theta has the wrong sign."""

    @staticmethod
    def forward(ctx: Any, r: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(r, theta)
        return r * torch.exp(1j * theta)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        r, theta = ctx.saved_tensors
        turn = torch.exp(1j * theta)
        return (grad * turn.conj()).real, -(grad * (-1j) * (r * turn).conj()).real
