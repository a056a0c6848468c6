"""Fused activation functions with hand-written backward passes.

The Functions here are the autograd kernels behind the activation modules of the model zoo;
the modules at the bottom of the file are what the models use.
"""

import math

import torch
from torch import nn

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_COEFF = 0.044715


def _tanh_gelu_inner(x):
    return _SQRT_2_OVER_PI * (x + _GELU_COEFF * x * x * x)


class GELUTanhFunction(torch.autograd.Function):
    """GELU with the tanh approximation (as in GPT-2 / BERT).

    y = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
    """

    @staticmethod
    def forward(ctx, x):
        t = torch.tanh(_tanh_gelu_inner(x))
        # keep tanh around: the backward needs it and it is the expensive part
        ctx.save_for_backward(x, t)
        return 0.5 * x * (1.0 + t)

    @staticmethod
    def backward(ctx, grad_output):
        x, t = ctx.saved_tensors
        dinner = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_COEFF * x * x)
        dy = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * dinner
        return grad_output * dy


class FusedTanhGELU(torch.autograd.Function):
    """Tanh-approximate GELU that stores only its input and recomputes tanh in backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1.0 + torch.tanh(_tanh_gelu_inner(x)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = torch.tanh(_tanh_gelu_inner(x))
        dinner = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_COEFF * x * x)
        return grad_output * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * dinner)


class SwiGLU(torch.autograd.Function):
    """silu(gate) * up, the gated unit of LLaMA-style MLPs.

    Args:
        gate: [..., H] pre-activation of the gate projection.
        up: [..., H] the up projection, same shape as ``gate``.
    """

    @staticmethod
    def forward(ctx, gate, up):
        ctx.save_for_backward(gate, up)
        return torch.nn.functional.silu(gate) * up

    @staticmethod
    def backward(ctx, grad_output):
        gate, up = ctx.saved_tensors
        sig = torch.sigmoid(gate)
        grad_gate = grad_up = None
        if ctx.needs_input_grad[0]:
            grad_gate = grad_output * up * sig * (1.0 + gate * (1.0 - sig))
        if ctx.needs_input_grad[1]:
            grad_up = grad_output * gate * sig
        return grad_gate, grad_up


class SiLUAndMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate, up):
        sig = torch.sigmoid(gate)
        ctx.save_for_backward(gate, up)
        return gate * sig * up

    @staticmethod
    def backward(ctx, grad_output):
        gate, up = ctx.saved_tensors
        sig = torch.sigmoid(gate)
        silu = gate * sig
        dsilu = sig * (1.0 + gate) * (1.0 - sig)
        return grad_output * up * dsilu, grad_output * silu


class ScaledELU(torch.autograd.Function):
    """ELU with a configurable negative saturation.

    y = x for x > 0, alpha * (exp(x) - 1) otherwise. ``alpha`` must be positive.
    """

    @staticmethod
    def forward(ctx, x, alpha: float = 1.0):
        if alpha <= 0:
            raise ValueError(f"alpha must be > 0, got {alpha}")
        y = torch.where(x > 0, x, alpha * torch.expm1(x))
        ctx.alpha = alpha
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        # for x <= 0, dy/dx = alpha * exp(x) = y + alpha
        return torch.where(y > 0, grad_output, grad_output * (y + ctx.alpha)), None


class ELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha: float = 1.0):
        assert alpha > 0, "alpha must be positive"
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return torch.where(x > 0, x, alpha * (torch.exp(x) - 1.0))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        grad = torch.where(x > 0, grad_output, grad_output * torch.exp(x))
        return grad, None


class Mish(torch.autograd.Function):
    """Mish: x * tanh(softplus(x)) (Misra, 2019).

    Memory-light: only the input is kept, everything else is recomputed in backward.
    """

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.tanh(torch.nn.functional.softplus(x))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        tsp = torch.tanh(torch.nn.functional.softplus(x))
        return grad_output * (tsp + x * torch.sigmoid(x) * (1.0 - tsp * tsp))


class ChannelPReLU(torch.autograd.Function):
    """Parametric ReLU with one learnable slope per channel.

    x: [N, C, *] input, channels on dim 1.
    weight: [C] negative slopes.
    """

    @staticmethod
    def forward(ctx, x, weight):
        w = weight.view(1, -1, *([1] * (x.dim() - 2)))
        ctx.save_for_backward(x, weight)
        return torch.where(x >= 0, x, w * x)

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        w = weight.view(1, -1, *([1] * (x.dim() - 2)))
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.where(x >= 0, grad_output, w * grad_output)
        if ctx.needs_input_grad[1]:
            dims = [d for d in range(x.dim()) if d != 1]
            grad_w = (grad_output * torch.where(x >= 0, torch.zeros_like(x), x)).sum(dims)
        return grad_x, grad_w


class StraightThroughClamp(torch.autograd.Function):
    """Clamp to [min_val, max_val] with a straight-through gradient.

    The backward pass ignores the clamp and passes the incoming gradient through unchanged
    (straight-through estimator), so that saturated activations keep receiving a learning
    signal during quantisation-aware training.
    """

    @staticmethod
    def forward(ctx, x, min_val: float = -1.0, max_val: float = 1.0):
        return x.clamp(min_val, max_val)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None, None


class HardTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, min_val: float = -1.0, max_val: float = 1.0):
        ctx.min_val, ctx.max_val = min_val, max_val
        return torch.clamp(x, min=min_val, max=max_val)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.clone(), None, None


# ---------------------------------------------------------------------------------------
# modules


class GELU(nn.Module):
    def __init__(self, recompute: bool = True):
        super().__init__()
        self.recompute = recompute

    def forward(self, x):
        fn = FusedTanhGELU if self.recompute else GELUTanhFunction
        return fn.apply(x)


class GatedMLP(nn.Module):
    def __init__(self, dim: int, hidden: int, fused: bool = False):
        super().__init__()
        self.gate_up = nn.Linear(dim, 2 * hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)
        self.fused = fused

    def forward(self, x):
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        fn = SiLUAndMul if self.fused else SwiGLU
        return self.down(fn.apply(gate, up))


class PReLU(nn.Module):
    def __init__(self, channels: int, init: float = 0.25):
        super().__init__()
        self.weight = nn.Parameter(torch.full((channels,), init))

    def forward(self, x):
        return ChannelPReLU.apply(x, self.weight)


def elu(x, alpha: float = 1.0, fast: bool = False):
    return ELUFunction.apply(x, alpha) if fast else ScaledELU.apply(x, alpha)


def hardtanh(x, min_val: float = -1.0, max_val: float = 1.0):
    return HardTanh.apply(x, min_val, max_val)


def ste_clamp(x, min_val: float = -1.0, max_val: float = 1.0):
    return StraightThroughClamp.apply(x, min_val, max_val)


# ---------------------------------------------------------------------------------------
# usage


def _train_step(module, x, target):
    opt = torch.optim.SGD(module.parameters(), lr=1e-2)
    loss = torch.nn.functional.mse_loss(module(x), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def _mlp(act):
    return nn.Sequential(nn.Linear(16, 32), act, nn.Linear(32, 16))


class _Lambda(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def use_gelu_tanh_function():
    torch.manual_seed(0)
    _train_step(_mlp(GELU(recompute=False)), torch.randn(8, 16), torch.randn(8, 16))


def use_fused_tanh_gelu():
    torch.manual_seed(0)
    _train_step(_mlp(GELU(recompute=True)), torch.randn(8, 16), torch.randn(8, 16))


def use_swiglu():
    torch.manual_seed(0)
    _train_step(GatedMLP(16, 24), torch.randn(4, 5, 16), torch.randn(4, 5, 16))


def use_silu_and_mul():
    torch.manual_seed(0)
    _train_step(GatedMLP(16, 24, fused=True), torch.randn(4, 5, 16), torch.randn(4, 5, 16))


def use_scaled_elu():
    torch.manual_seed(0)
    act = _Lambda(lambda x: elu(x, alpha=1.67))
    _train_step(_mlp(act), torch.randn(8, 16), torch.randn(8, 16))


def use_elu_function():
    torch.manual_seed(0)
    act = _Lambda(lambda x: elu(x, alpha=1.67, fast=True))
    _train_step(_mlp(act), torch.randn(8, 16), torch.randn(8, 16))


def use_mish():
    torch.manual_seed(0)
    _train_step(_mlp(_Lambda(Mish.apply)), torch.randn(8, 16), torch.randn(8, 16))


def use_channel_prelu():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv1d(3, 6, 3, padding=1), PReLU(6), nn.Conv1d(6, 3, 1))
    _train_step(net, torch.randn(2, 3, 20), torch.randn(2, 3, 20))


def use_straight_through_clamp():
    torch.manual_seed(0)
    net = _mlp(_Lambda(lambda x: ste_clamp(x, -2.0, 2.0)))
    _train_step(net, torch.randn(8, 16), torch.randn(8, 16))


def use_hard_tanh():
    torch.manual_seed(0)
    _train_step(_mlp(_Lambda(hardtanh)), torch.randn(8, 16), torch.randn(8, 16))
