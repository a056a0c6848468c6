"""Front-end ops for learnable audio filter banks: the sinc kernel behind SincNet-style
band-pass layers, and framing of a waveform into (overlapping) analysis windows."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

_PI = math.pi
_SMALL = 1e-2


def _sinc_value(x, small):
    px = _PI * torch.where(small, torch.ones_like(x), x)
    z2 = (_PI * x) ** 2
    series = 1.0 - z2 / 6.0 + z2 * z2 / 120.0
    return torch.where(small, series, torch.sin(px) / px)


class SincFunction(torch.autograd.Function):
    """Normalised sinc, ``sin(pi x) / (pi x)`` with ``sinc(0) = 1``.

    Near zero (``|x| < 1e-2``) both the value and the derivative use their Taylor series;
    elsewhere the closed forms. The backward is built from differentiable ops so it can be
    differentiated again.
    """

    @staticmethod
    def forward(ctx, x):
        small = x.abs() < _SMALL
        ctx.save_for_backward(x)
        return _sinc_value(x, small)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        small = x.abs() < _SMALL
        pxs = _PI * torch.where(small, torch.ones_like(x), x)
        closed = _PI * (torch.cos(pxs) - torch.sin(pxs) / pxs) / pxs
        z2 = (_PI * x) ** 2
        series = -(_PI**2) * x / 3.0 * (1.0 - z2 / 10.0)
        return grad_output * torch.where(small, series, closed)


class SincKernel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        near0 = t.abs() < _SMALL
        return _sinc_value(t, near0)

    @staticmethod
    def backward(ctx, grad):
        (t,) = ctx.saved_tensors
        near0 = t.abs() < _SMALL
        safe = torch.where(near0, torch.ones_like(t), t)
        pt = _PI * safe
        d = (pt * torch.cos(pt) - torch.sin(pt)) / (_PI * safe * safe)
        # d/dt [1 - (pi t)^2 / 6 + ...]
        d_small = -(_PI**2) * t / 6.0
        return grad * torch.where(near0, d_small, d)


class SincBandPass(nn.Module):
    """Band-pass FIR filters with learnable low cut-off and bandwidth (SincNet)."""

    def __init__(self, n_filters: int, kernel_size: int, sample_rate: int, sinc=SincFunction):
        super().__init__()
        self.sinc = sinc
        hz = torch.linspace(30.0, sample_rate / 2 - 200.0, n_filters + 1)
        self.low_hz = nn.Parameter(hz[:-1].clone())
        self.band_hz = nn.Parameter(hz.diff())
        self.sample_rate = sample_rate
        n = (kernel_size - 1) / 2
        self.register_buffer("t", torch.arange(-n, n + 1) / sample_rate)
        self.register_buffer("window", torch.hamming_window(kernel_size, periodic=False))

    def kernels(self):
        low = self.low_hz.abs() + 30.0
        high = low + self.band_hz.abs()

        def lp(f):
            return 2 * f[:, None] * self.sinc.apply(2 * f[:, None] * self.t[None, :])

        k = (lp(high) - lp(low)) * self.window
        return k / k.abs().amax(dim=1, keepdim=True)

    def forward(self, wav):
        return F.conv1d(wav, self.kernels()[:, None, :], padding=self.t.numel() // 2)


def _frame_index(n: int, frame_length: int, hop: int, device=None):
    n_frames = 1 + (n - frame_length) // hop
    start = torch.arange(n_frames, device=device)[:, None] * hop
    return start + torch.arange(frame_length, device=device)[None, :]


class FrameSignal(torch.autograd.Function):
    """Split ``x[..., time]`` into frames and their energies.

    Args:
        x: waveform ``[..., time]``, ``time >= frame_length``.
        frame_length, hop: positive ints; frames may overlap (``hop < frame_length``).

    Returns:
        frames ``[..., n_frames, frame_length]`` (a copy) and energy
        ``[..., n_frames]`` (sum of squares per frame). Either may be unused: backward
        receives ``None`` for an output that took no part in the loss.
    """

    @staticmethod
    def forward(ctx, x, frame_length: int, hop: int):
        ctx.set_materialize_grads(False)
        idx = _frame_index(x.shape[-1], frame_length, hop, x.device)
        frames = x[..., idx]
        ctx.save_for_backward(x, idx)
        return frames, frames.pow(2).sum(dim=-1)

    @staticmethod
    def backward(ctx, grad_frames, grad_energy):
        if grad_frames is None and grad_energy is None:
            return None, None, None
        x, idx = ctx.saved_tensors
        frames = x[..., idx]
        g = torch.zeros_like(frames) if grad_frames is None else grad_frames
        if grad_energy is not None:
            g = g + 2.0 * frames * grad_energy.unsqueeze(-1)
        grad_x = torch.zeros_like(x)
        grad_x = grad_x.index_add(-1, idx.reshape(-1), g.flatten(-2))
        return grad_x, None, None


class EnergyFrames(torch.autograd.Function):
    """Framing + per-frame energy in one pass (used by the VAD front end)."""

    @staticmethod
    def forward(ctx, x, frame_length: int, hop: int):
        ctx.set_materialize_grads(False)
        idx = _frame_index(x.shape[-1], frame_length, hop, x.device)
        frames = x[..., idx]
        ctx.save_for_backward(frames, idx)
        ctx.n = x.shape[-1]
        return frames, (frames * frames).sum(-1)

    @staticmethod
    def backward(ctx, grad_frames, grad_energy):
        if grad_frames is None:
            # nothing to overlap-add
            return None, None, None
        frames, idx = ctx.saved_tensors
        g = grad_frames
        if grad_energy is not None:
            g = g + 2.0 * frames * grad_energy[..., None]
        out = g.new_zeros(*g.shape[:-2], ctx.n)
        return out.index_add(-1, idx.flatten(), g.flatten(-2)), None, None


def use_sinc_function():
    torch.manual_seed(0)
    layer = SincBandPass(n_filters=4, kernel_size=31, sample_rate=8000)
    wav = torch.randn(2, 1, 400)
    loss = layer(wav).pow(2).mean()
    loss.backward()
    return layer.low_hz.grad.norm().item()


def use_sinc_kernel():
    torch.manual_seed(0)
    layer = SincBandPass(n_filters=4, kernel_size=31, sample_rate=8000, sinc=SincKernel)
    wav = torch.randn(2, 1, 400)
    loss = layer(wav).pow(2).mean()
    loss.backward()
    return layer.low_hz.grad.norm().item()


def use_frame_signal():
    torch.manual_seed(0)
    wav = torch.randn(2, 160, requires_grad=True)
    window = torch.hann_window(32, periodic=True)
    frames, energy = FrameSignal.apply(wav, 32, 16)
    spec = torch.fft.rfft(frames * window).abs().pow(2)
    loss = spec.log1p().mean() + 1e-3 * energy.mean()
    loss.backward()
    return wav.grad.norm().item()


def use_energy_frames():
    torch.manual_seed(0)
    wav = torch.randn(2, 160, requires_grad=True)
    gain = torch.nn.Parameter(torch.ones(1))
    _, energy = EnergyFrames.apply(wav * gain, 32, 16)
    # voice-activity score from log energy only
    loss = torch.sigmoid(torch.log(energy + 1e-6) - 2.0).mean()
    loss.backward()
    return gain.grad
