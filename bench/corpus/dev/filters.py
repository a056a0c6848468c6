"""1-D and 2-D filtering ops for the audio/vision front-ends.

All 1-D ops take signals as [..., L] or [N, C, L] and filter along the last dimension.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


class FIRFilter(torch.autograd.Function):
    """Zero-phase FIR filtering with a fixed linear-phase kernel.

    Args:
        x: [N, C, L] signal.
        taps: [K] filter taps, K odd and symmetric (``taps == taps.flip(0)``), e.g. a
            windowed-sinc low-pass from ``lowpass_taps``. Registered as a buffer, no grad.
    Returns:
        [N, C, L], "same" padding.
    """

    @staticmethod
    def forward(ctx, x, taps):
        n, c, length = x.shape
        k = taps.numel()
        w = taps.view(1, 1, k)
        y = F.conv1d(x.reshape(n * c, 1, length), w, padding=k // 2)
        ctx.save_for_backward(taps)
        return y.view(n, c, length)

    @staticmethod
    def backward(ctx, grad_output):
        (taps,) = ctx.saved_tensors
        n, c, length = grad_output.shape
        k = taps.numel()
        # symmetric taps: the correlation is its own adjoint
        g = F.conv1d(grad_output.reshape(n * c, 1, length), taps.view(1, 1, k), padding=k // 2)
        return g.view(n, c, length), None


def lowpass_taps(num_taps: int, cutoff: float, dtype=torch.float32):
    n = torch.arange(num_taps, dtype=torch.float64) - (num_taps - 1) / 2
    h = (
        2
        * cutoff
        * torch.sinc(2 * cutoff * n)
        * torch.hann_window(num_taps, periodic=False, dtype=torch.float64)
    )
    return (h / h.sum()).to(dtype)


class DWConv1d(torch.autograd.Function):
    """Depthwise 1-D convolution: x [N, C, L], weight [C, 1, K], bias [C] or None."""

    @staticmethod
    def forward(ctx, x, weight, bias=None, padding: int = 0):
        ctx.save_for_backward(x, weight)
        ctx.padding = padding
        ctx.has_bias = bias is not None
        return F.conv1d(x, weight, bias, padding=padding, groups=x.shape[1])

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        groups = x.shape[1]
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.nn.grad.conv1d_input(
                x.shape, weight, grad_output, padding=ctx.padding, groups=groups
            )
        if ctx.needs_input_grad[1]:
            grad_w = torch.nn.grad.conv1d_weight(
                x, weight.shape, grad_output, padding=ctx.padding, groups=groups
            )
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_b = grad_output.sum(dim=(0, 2))
        return grad_x, grad_w, grad_b, None


class DepthwiseConv1dFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, padding: int = 0):
        channels = weight.shape[0]
        ctx.save_for_backward(x, weight)
        ctx.padding = padding
        return F.conv1d(x, weight, bias, padding=padding, groups=channels)

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        channels = weight.shape[0]
        p = ctx.padding
        grad_x = F.conv_transpose1d(grad_output, weight, padding=p, groups=channels)
        grad_w = torch.nn.grad.conv1d_weight(
            x, weight.shape, grad_output, padding=p, groups=channels
        )
        grad_b = grad_output.reshape(channels, -1).sum(1)
        return grad_x, grad_w, grad_b, None


class MovingAverage(torch.autograd.Function):
    """Mean over each length-``window`` window along the last dim ("valid": L - window + 1)."""

    @staticmethod
    def forward(ctx, x, window: int):
        if not 1 <= window <= x.shape[-1]:
            raise ValueError(f"window must be in [1, {x.shape[-1]}], got {window}")
        ctx.window = window
        c = F.pad(x.cumsum(-1), (1, 0))
        return (c[..., window:] - c[..., :-window]) / window

    @staticmethod
    def backward(ctx, grad_output):
        w = ctx.window
        # each input sample contributes to the `w` outputs whose windows cover it
        gp = F.pad(grad_output, (w - 1, w - 1))
        c = F.pad(gp.cumsum(-1), (1, 0))
        return (c[..., w:] - c[..., :-w]) / w, None


class CumsumMovingAverage(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, window: int):
        assert 0 < window <= x.size(-1)
        ctx.window = window
        c = F.pad(torch.cumsum(x, dim=-1), (1, 0))
        return (c[..., window:] - c[..., :-window]) / window

    @staticmethod
    def backward(ctx, grad_output):
        w = ctx.window
        c = torch.cumsum(F.pad(grad_output, (w - 1, w - 1)), dim=-1)
        return (c[..., w - 1 :] - c[..., : c.shape[-1] - w + 1]) / w, None


def _dsinc(t):
    """Derivative of the normalised sinc, sin(pi t) / (pi t), with a series near 0."""
    small = t.abs() < 1e-2
    ts = torch.where(small, torch.ones_like(t), t)
    pt = math.pi * ts
    exact = (pt * torch.cos(pt) - torch.sin(pt)) / (math.pi * ts * ts)
    series = -(math.pi**2) * t / 3.0 + math.pi**4 * t**3 / 30.0
    return torch.where(small, series, exact)


class FractionalDelay(torch.autograd.Function):
    """Delay a signal by a learnable fractional number of samples.

    Windowed-sinc interpolation with ``2 * half_width + 1`` taps.

    x: [N, L]; delay: 0-d tensor, |delay| < 1; half_width: int >= 1.
    """

    @staticmethod
    def forward(ctx, x, delay, half_width: int = 4):
        n = torch.arange(-half_width, half_width + 1, dtype=x.dtype, device=x.device)
        win = torch.hann_window(2 * half_width + 3, periodic=False, dtype=x.dtype, device=x.device)[
            1:-1
        ]
        h = torch.sinc(n - delay) * win
        ctx.save_for_backward(x, delay)
        ctx.half_width = half_width
        return F.conv1d(x.unsqueeze(1), h.view(1, 1, -1), padding=half_width).squeeze(1)

    @staticmethod
    def backward(ctx, grad_output):
        x, delay = ctx.saved_tensors
        k = ctx.half_width
        n = torch.arange(-k, k + 1, dtype=x.dtype, device=x.device)
        win = torch.hann_window(2 * k + 3, periodic=False, dtype=x.dtype, device=x.device)[1:-1]
        h = (torch.sinc(n - delay) * win).view(1, 1, -1)
        g = grad_output.unsqueeze(1)
        grad_x = F.conv_transpose1d(g, h, padding=k).squeeze(1)
        grad_h = torch.nn.grad.conv1d_weight(x.unsqueeze(1), h.shape, g, padding=k).view(-1)
        grad_delay = -(grad_h * _dsinc(n - delay) * win).sum()
        return grad_x, grad_delay, None


class FractionalDelayFilter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, delay, half_width: int = 4):
        taps = torch.arange(-half_width, half_width + 1, dtype=x.dtype, device=x.device) - delay
        window = torch.hann_window(
            2 * half_width + 3, periodic=False, dtype=x.dtype, device=x.device
        )[1:-1]
        kernel = (torch.sinc(taps) * window).view(1, 1, -1)
        ctx.save_for_backward(x, delay, window)
        ctx.half_width = half_width
        return F.conv1d(x[:, None], kernel, padding=half_width)[:, 0]

    @staticmethod
    def backward(ctx, grad_output):
        x, delay, window = ctx.saved_tensors
        hw = ctx.half_width
        t = torch.arange(-hw, hw + 1, dtype=x.dtype, device=x.device) - delay
        kernel = (torch.sinc(t) * window).view(1, 1, -1)
        near = t.abs() < 1e-2
        t_safe = torch.where(near, torch.ones_like(t), t)
        dsinc = torch.where(
            near,
            -t / 3.0 + t**3 / 30.0,
            (torch.cos(math.pi * t_safe) - torch.sinc(t_safe)) / t_safe,
        )
        grad_x = F.conv_transpose1d(grad_output[:, None], kernel, padding=hw)[:, 0]
        grad_kernel = torch.nn.grad.conv1d_weight(
            x[:, None], kernel.shape, grad_output[:, None], padding=hw
        )
        grad_delay = -(grad_kernel.flatten() * dsinc * window).sum()
        return grad_x, grad_delay, None


class TotalVariation(torch.autograd.Function):
    """Smoothed (Charbonnier) anisotropic total variation of each image.

    x: [N, H, W]; eps > 0 smooths |d| as sqrt(d**2 + eps**2). Returns [N].
    """

    @staticmethod
    def forward(ctx, x, eps: float = 1e-3):
        dh = x[:, :, 1:] - x[:, :, :-1]
        dv = x[:, 1:, :] - x[:, :-1, :]
        ctx.save_for_backward(x)
        ctx.eps = eps
        e2 = eps * eps
        return torch.sqrt(dh * dh + e2).sum((1, 2)) + torch.sqrt(dv * dv + e2).sum((1, 2))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        e2 = ctx.eps**2
        g = grad_output[:, None, None]
        dh = x[:, :, 1:] - x[:, :, :-1]
        dv = x[:, 1:, :] - x[:, :-1, :]
        gh = g * dh / torch.sqrt(dh * dh + e2)
        gv = g * dv / torch.sqrt(dv * dv + e2)
        grad = (
            F.pad(gh, (1, 0))
            - F.pad(gh, (0, 1))
            + F.pad(gv, (0, 0, 1, 0))
            - F.pad(gv, (0, 0, 0, 1))
        )
        return grad, None


class UnfoldPatches(torch.autograd.Function):
    """Extract (possibly overlapping) square patches: [N, C, H, W] -> [N, L, C * p * p]."""

    @staticmethod
    def forward(ctx, x, patch_size: int, stride: int):
        ctx.input_hw = x.shape[-2:]
        ctx.patch_size, ctx.stride = patch_size, stride
        return F.unfold(x, patch_size, stride=stride).transpose(1, 2)

    @staticmethod
    def backward(ctx, grad_output):
        grad = F.fold(grad_output.transpose(1, 2), ctx.input_hw, ctx.patch_size, stride=ctx.stride)
        return grad, None, None


class GradMultiply(torch.autograd.Function):
    """Identity in forward; multiplies the gradient by ``scale`` in backward.

    Used to slow down learning of the convolutional feature encoder relative to the rest of
    the model (as in wav2vec 2.0). This is deliberately not the gradient of the forward.
    """

    @staticmethod
    def forward(ctx, x, scale: float):
        ctx.scale = scale
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


class FeatureScale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale: float):
        ctx.scale = scale
        return x * scale

    @staticmethod
    def backward(ctx, grad):
        return grad, None


# ---------------------------------------------------------------------------------------


class DepthwiseConv1d(nn.Module):
    def __init__(self, channels: int, kernel_size: int, padding: int = 0, impl: str = "dw"):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(channels, 1, kernel_size) / math.sqrt(kernel_size))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.padding, self.impl = padding, impl

    def forward(self, x):
        fn = DWConv1d if self.impl == "dw" else DepthwiseConv1dFunction
        return fn.apply(x, self.weight, self.bias, self.padding)


class ConvFeatureEncoder(nn.Module):
    """A small wav2vec-style encoder: strided conv, depthwise conv, feature scaling."""

    def __init__(self, dim: int = 8, grad_mult: float = 0.1, impl: str = "dw"):
        super().__init__()
        self.conv = nn.Conv1d(1, dim, 5, stride=2)
        self.dw = DepthwiseConv1d(dim, 3, padding=1, impl=impl)
        self.grad_mult = grad_mult

    def forward(self, wav, scale_features: bool = False):
        h = self.dw(torch.relu(self.conv(wav.unsqueeze(1))))
        if scale_features:
            return FeatureScale.apply(h, self.grad_mult)
        return GradMultiply.apply(h, self.grad_mult) if self.grad_mult != 1.0 else h


# ---------------------------------------------------------------------------------------
# usage


def use_fir_filter():
    torch.manual_seed(0)
    taps = lowpass_taps(9, 0.2)
    x = torch.randn(2, 3, 32, requires_grad=True)
    FIRFilter.apply(x, taps).pow(2).mean().backward()


def use_dw_conv1d():
    torch.manual_seed(0)
    enc = ConvFeatureEncoder(grad_mult=1.0)
    enc(torch.randn(3, 40)).pow(2).mean().backward()


def use_depthwise_conv1d_function():
    torch.manual_seed(0)
    enc = ConvFeatureEncoder(grad_mult=1.0, impl="legacy")
    enc(torch.randn(3, 40)).pow(2).mean().backward()


def use_moving_average():
    torch.manual_seed(0)
    x = torch.randn(4, 50, requires_grad=True)
    MovingAverage.apply(x, 5).pow(2).mean().backward()


def use_cumsum_moving_average():
    torch.manual_seed(0)
    x = torch.randn(4, 50, requires_grad=True)
    CumsumMovingAverage.apply(x, 5).pow(2).mean().backward()


def _fit_delay(fn):
    x = torch.randn(2, 64)
    target = torch.roll(x, 1, dims=-1)
    delay = nn.Parameter(torch.tensor(0.3))
    opt = torch.optim.SGD([delay], lr=1e-2)
    for _ in range(3):
        loss = (fn.apply(x, delay, 4) - target)[:, 8:-8].pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def use_fractional_delay():
    torch.manual_seed(0)
    _fit_delay(FractionalDelay)


def use_fractional_delay_filter():
    torch.manual_seed(0)
    _fit_delay(FractionalDelayFilter)


def use_total_variation():
    torch.manual_seed(0)
    img = torch.rand(2, 16, 16)
    x = img.clone().requires_grad_()
    loss = (x - img).pow(2).sum() + 0.1 * TotalVariation.apply(x, 1e-3).sum()
    loss.backward()


def use_unfold_patches():
    torch.manual_seed(0)
    embed = nn.Linear(3 * 4 * 4, 8)
    x = torch.randn(2, 3, 10, 10, requires_grad=True)
    embed(UnfoldPatches.apply(x, 4, 2)).mean().backward()


def use_grad_multiply():
    torch.manual_seed(0)
    enc = ConvFeatureEncoder(grad_mult=0.1)
    enc(torch.randn(3, 40)).pow(2).mean().backward()


def use_feature_scale():
    torch.manual_seed(0)
    enc = ConvFeatureEncoder(grad_mult=0.5)
    enc(torch.randn(3, 40), scale_features=True).pow(2).mean().backward()
