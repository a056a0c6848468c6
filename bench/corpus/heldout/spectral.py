"""Spectral-domain layers: FFT long convolutions and complex phase modulation.

Complex gradients follow PyTorch's convention (the gradient of a real loss with respect
to a complex tensor is the conjugate Wirtinger derivative, times 2).
"""

from __future__ import annotations

import torch
from torch import nn


class FFTConv1d(torch.autograd.Function):
    """Depthwise circular convolution along the last dim, via the real FFT.

    Args:
        x: ``[B, C, N]`` real signal.
        k: ``[C, N]`` real filter, one per channel (as in Hyena / S4 long convolutions).

    Returns:
        ``[B, C, N]``: ``y[b, c] = x[b, c] (*) k[c]`` with circular wrap-around.

    The adjoint of a circular convolution is a circular correlation, so backward
    multiplies by the *conjugate* spectra.
    """

    @staticmethod
    def forward(ctx, x, k):
        n = x.shape[-1]
        ctx.save_for_backward(x, k)
        return torch.fft.irfft(torch.fft.rfft(x) * torch.fft.rfft(k), n=n)

    @staticmethod
    def backward(ctx, grad):
        x, k = ctx.saved_tensors
        n = x.shape[-1]
        G = torch.fft.rfft(grad)
        grad_x = grad_k = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.fft.irfft(G * torch.fft.rfft(k).conj(), n=n)
        if ctx.needs_input_grad[1]:
            grad_k = torch.fft.irfft(G * torch.fft.rfft(x).conj(), n=n).sum(0)
        return grad_x, grad_k


class PhaseRotate(torch.autograd.Function):
    """y = z * exp(i * theta).

    z: complex ``[..., N]``; theta: real ``[N]`` phase per frequency bin (broadcast over
    the leading dims of z).
    """

    @staticmethod
    def forward(ctx, z, theta):
        rot = torch.polar(torch.ones_like(theta), theta)
        y = z * rot
        ctx.save_for_backward(theta, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        theta, y = ctx.saved_tensors
        rot = torch.polar(torch.ones_like(theta), theta)
        grad_z = grad * rot.conj()
        grad_theta = (grad.conj() * y * 1j).real
        grad_theta = grad_theta.reshape(-1, theta.shape[-1]).sum(0)
        return grad_z, grad_theta


class PhaseShift(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, theta):
        ctx.save_for_backward(z, theta)
        return z * torch.exp(1j * theta)

    @staticmethod
    def backward(ctx, grad):
        z, theta = ctx.saved_tensors
        rot = torch.exp(1j * theta)
        grad_theta = -(grad.conj() * z * rot).imag
        return grad * rot, grad_theta.reshape(-1, theta.shape[-1]).sum(0)


class SpectralFilter(nn.Module):
    """Learned all-pass phase filter followed by a long convolution."""

    def __init__(self, channels: int, length: int, shift_impl=PhaseRotate):
        super().__init__()
        self.theta = nn.Parameter(torch.zeros(length // 2 + 1))
        self.k = nn.Parameter(torch.randn(channels, length) / length)
        self.shift = shift_impl

    def forward(self, x):
        n = x.shape[-1]
        X = torch.fft.rfft(x)
        x = torch.fft.irfft(self.shift.apply(X, self.theta), n=n)
        return FFTConv1d.apply(x, self.k)


def _filter_step(shift_impl):
    torch.manual_seed(0)
    f = SpectralFilter(3, 16, shift_impl).double()
    with torch.no_grad():
        f.theta.uniform_(-1, 1)
    x = torch.randn(4, 3, 16, dtype=torch.float64)
    target = torch.roll(x, 2, dims=-1)
    loss = (f(x) - target).pow(2).mean()
    loss.backward()
    return f.theta.grad


def use_fft_conv1d():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 32, dtype=torch.float64)
    k = nn.Parameter(torch.randn(4, 32, dtype=torch.float64) / 32)
    y = FFTConv1d.apply(x, k)
    y.square().mean().backward()
    return k.grad


def use_phase_rotate():
    return _filter_step(PhaseRotate)


def use_phase_shift():
    return _filter_step(PhaseShift)
