"""Complex-valued building blocks for complex-valued networks (MRI reconstruction, radar,
audio in the STFT domain).

Gradients follow PyTorch's convention for complex tensors: backward receives and returns the
conjugate Wirtinger derivative dL/dRe + i dL/dIm of the real loss L, so a holomorphic
f(z) has the gradient grad_output * conj(f'(z)).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class ComplexMul(torch.autograd.Function):
    """Elementwise z * w of two complex tensors (broadcasting not supported)."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z, w)
        return z * w

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        z, w = ctx.saved_tensors
        grad_z = grad_output * w.conj() if ctx.needs_input_grad[0] else None
        grad_w = grad_output * z.conj() if ctx.needs_input_grad[1] else None
        return grad_z, grad_w


class AbsSquared(torch.autograd.Function):
    """|z|^2 = re^2 + im^2 without the square root of ``abs``; real output."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z)
        return z.real.square() + z.imag.square()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (z,) = ctx.saved_tensors
        return 2 * grad_output * z


class PhaseRotation(torch.autograd.Function):
    """z * exp(i * theta): rotate complex ``z`` by the real angles ``theta`` (same shape)."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        out = z * torch.polar(torch.ones_like(theta), theta)
        ctx.save_for_backward(z, theta)
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        z, theta = ctx.saved_tensors
        phase = torch.polar(torch.ones_like(theta), theta)
        grad_z = grad_output * phase.conj()
        # d out / d theta = i * out; for a real theta the gradient is Re(conj(g) * i * out)
        grad_theta = (grad_output.conj() * 1j * z * phase).real
        return grad_z, grad_theta


class PhaseShift(torch.autograd.Function):
    # out = z * e^{i theta}; theta real, broadcastable to z (e.g. one angle per channel)
    @staticmethod
    def forward(ctx: Any, z: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        out = z * torch.exp(1j * theta)
        ctx.save_for_backward(out, theta)
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        out, theta = ctx.saved_tensors
        grad_z = grad_output * torch.exp(-1j * theta)
        grad_theta = (grad_output.conj() * out).imag
        return grad_z, grad_theta.sum_to_size(theta.shape)


class ComplexLinear(torch.autograd.Function):
    """y = x @ W^T + b for complex x [B, in], W [out, in], b [out] (or None)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None):
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        y = x @ weight.T
        return y + bias if bias is not None else y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        x, weight = ctx.saved_tensors
        grad_x = grad_output @ weight.conj()
        grad_w = grad_output.T @ x.conj()
        grad_b = grad_output.sum(0) if ctx.has_bias else None
        return grad_x, grad_w, grad_b


class CLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor):
        # x: [..., in] complex, weight: [out, in] complex, bias: [out] complex
        ctx.save_for_backward(x, weight)
        return torch.addmm(bias, x.reshape(-1, x.shape[-1]), weight.t()).reshape(
            *x.shape[:-1], weight.shape[0]
        )

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor):
        x, weight = ctx.saved_tensors
        g = grad_output.reshape(-1, weight.shape[0])
        x2 = x.reshape(-1, x.shape[-1])
        grad_x = (g @ weight.conj()).reshape(x.shape)
        grad_w = g.t() @ x2
        grad_b = g.sum(0)
        return grad_x, grad_w, grad_b


# --------------------------------------------------------------------------------------
# Modules


class ComplexDense(nn.Module):
    def __init__(self, in_features: int, out_features: int, fused: bool = False) -> None:
        super().__init__()
        scale = (2 * in_features) ** -0.5
        self.weight = nn.Parameter(torch.randn(out_features, in_features, dtype=torch.cfloat))
        self.weight.data.mul_(scale)
        self.bias = nn.Parameter(torch.zeros(out_features, dtype=torch.cfloat))
        self.fused = fused

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fused:
            return CLinearFunction.apply(x, self.weight, self.bias)
        return ComplexLinear.apply(x, self.weight, self.bias)


class PhaseShifter(nn.Module):
    """Learned per-channel phase shift, as in a beamformer."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.theta = nn.Parameter(torch.zeros(channels))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return PhaseRotation.apply(z, self.theta.expand(z.shape))


def power(z: torch.Tensor) -> torch.Tensor:
    return AbsSquared.apply(z)


# --------------------------------------------------------------------------------------
# Usage


def _sgd_step(params, lr: float) -> None:
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p -= lr * p.grad


def _signal(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.cfloat)


def use_complex_mul() -> None:
    torch.manual_seed(0)
    spectrum = _signal(4, 33)
    filt = nn.Parameter(_signal(4, 33))
    out = ComplexMul.apply(spectrum, filt)
    power(out).mean().backward()
    assert filt.grad is not None


def use_abs_squared() -> None:
    torch.manual_seed(0)
    z = _signal(8, 16).requires_grad_()
    target = torch.rand(8, 16)
    (power(z) - target).pow(2).mean().backward()
    assert z.grad is not None


def use_phase_rotation() -> None:
    torch.manual_seed(0)
    shifter = PhaseShifter(4)
    z = _signal(10, 4)
    target = _signal(10, 4)
    power(shifter(z) - target).sum().backward()
    assert shifter.theta.grad is not None


def use_phase_shift() -> None:
    torch.manual_seed(0)
    theta = nn.Parameter(torch.zeros(4))
    z, target = _signal(10, 4), _signal(10, 4)
    power(PhaseShift.apply(z, theta) - target).sum().backward()
    assert theta.grad is not None


def use_complex_linear() -> None:
    torch.manual_seed(0)
    layer = ComplexDense(8, 4)
    x, y = _signal(16, 8), _signal(16, 4)
    power(layer(x) - y).mean().backward()
    _sgd_step(layer.parameters(), 1e-2)


def use_c_linear_function() -> None:
    torch.manual_seed(0)
    layer = ComplexDense(8, 4, fused=True)
    x, y = _signal(2, 16, 8), _signal(2, 16, 4)
    power(layer(x) - y).mean().backward()
    _sgd_step(layer.parameters(), 1e-2)
