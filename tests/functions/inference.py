"""Functions for the inference rules (issue 16): for each rule a buggy Function whose bug
shows only on inputs that rule infers, and a correct twin where the rule must not fire (or
must fire without calling it wrong)."""

from __future__ import annotations

from typing import Any, Optional

import torch

# --- dim: every valid value of an argument forward uses as a dim -----------------------


class SoftmaxSumLast(torch.autograd.Function):
    """softmax over `dim` whose backward hard-codes sum(-1): right only when dim is the last."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        y = torch.softmax(x, dim)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (y,) = ctx.saved_tensors
        return y * (grad - (grad * y).sum(-1, keepdim=True)), None


class Softmax(torch.autograd.Function):
    """softmax over `dim`, backward summing over the same dim."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        y = torch.softmax(x, dim)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (y,) = ctx.saved_tensors
        return y * (grad - (grad * y).sum(ctx.dim, keepdim=True)), None


# --- a number whose default hides a bug --------------------------------------------------


class ScaledLeakyReLUDropsScale(torch.autograd.Function):
    """scale * leaky_relu(x): backward forgets `scale`, invisible at its default 1.0."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, slope: float = 0.01, scale: float = 1.0) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.slope = slope
        return scale * torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (x,) = ctx.saved_tensors
        return grad * torch.where(x > 0, 1.0, ctx.slope), None, None


class ScaledLeakyReLU(torch.autograd.Function):
    """scale * leaky_relu(x), backward right for every scale."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, slope: float = 0.01, scale: float = 1.0) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.slope, ctx.scale = slope, scale
        return scale * torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (x,) = ctx.saved_tensors
        return grad * ctx.scale * torch.where(x > 0, 1.0, ctx.slope), None, None


class ShiftDropsOffset(torch.autograd.Function):
    """(x + offset)^2: backward forgets `offset`, invisible at its default 0.0."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, offset: float = 0.0) -> torch.Tensor:
        ctx.save_for_backward(x)
        return (x + offset) ** 2

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        return grad * 2 * x, None


# --- broadcasting --------------------------------------------------------------------------


class AddBiasUnreduced(torch.autograd.Function):
    """x + bias; backward returns the gradient of bias unreduced, [3, 4] for a [4] bias."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return x + bias

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return grad, grad


class AddBias(torch.autograd.Function):
    """x + bias, bias broadcast over the leading dims and its gradient reduced to its shape."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        ctx.bias_shape = bias.shape
        return x + bias

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return grad, grad.sum_to_size(ctx.bias_shape)


class MulSameShape(torch.autograd.Function):
    """x * y for equal shapes only: forward refuses to broadcast, so no case may broadcast."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if x.shape != y.shape:
            raise ValueError("x and y must have the same shape")
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = ctx.saved_tensors
        return grad * y, grad * x


# --- complex -----------------------------------------------------------------------------


class ConjMulForgotConj(torch.autograd.Function):
    """z * w.conj(); the gradient of w lacks a conjugate: wrong only on complex inputs."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z, w)
        return z * w.conj()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z, w = ctx.saved_tensors
        return grad * w, grad * z.conj()


class ConjMul(torch.autograd.Function):
    """z * w.conj(), right on complex inputs: grad_z = grad * w, grad_w = (grad * z.conj()).conj()."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z, w)
        return z * w.conj()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z, w = ctx.saved_tensors
        return grad * w, grad.conj() * z


# --- integer index tensors -----------------------------------------------------------------


class EmbeddingAssigns(torch.autograd.Function):
    """weight[indices]; backward assigns where it must accumulate, so repeated indices lose
    gradient."""

    @staticmethod
    def forward(ctx: Any, indices: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(indices)
        ctx.rows = weight.shape[0]
        return weight[indices]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor]:
        (indices,) = ctx.saved_tensors
        grad_weight = grad.new_zeros((ctx.rows, *grad.shape[1:]))
        grad_weight[indices] = grad
        return None, grad_weight


class Embedding(torch.autograd.Function):
    """weight[indices]; backward accumulates with index_add."""

    @staticmethod
    def forward(ctx: Any, indices: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(indices)
        ctx.rows = weight.shape[0]
        return weight[indices]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor]:
        (indices,) = ctx.saved_tensors
        grad_weight = grad.new_zeros((ctx.rows, *grad.shape[1:]))
        return None, grad_weight.index_add(0, indices, grad)


class NLLLoss(torch.autograd.Function):
    """Mean negative log-likelihood of float logits [N, C] at an int64 target [N]."""

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(logits, target)
        return -torch.log_softmax(logits, -1).gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        logits, target = ctx.saved_tensors
        log_p = torch.log_softmax(logits, -1)
        one_hot = torch.zeros_like(log_p).scatter_(1, target[:, None], 1.0)
        return grad * (log_p.exp() - one_hot) / log_p.shape[0], None


# --- a positive domain ---------------------------------------------------------------------


class SafeLogForgotReciprocal(torch.autograd.Function):
    """log(x), NaN on x <= 0 (forward checks nothing); backward returns grad, not grad / x."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.log(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad


class Log(torch.autograd.Function):
    """log(x), right on its domain x > 0."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.log(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad / x


# --- rank 4 (NCHW) -------------------------------------------------------------------------


class ChannelScale(torch.autograd.Function):
    """x * w[None, :, None, None] for NCHW x and one weight per channel; right."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4:
            raise ValueError(f"expected an NCHW input, got {x.dim()}-D")
        ctx.save_for_backward(x, w)
        return x * w[None, :, None, None]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return grad * w[None, :, None, None], (grad * x).sum((0, 2, 3))


class ChannelScaleForgotSum(torch.autograd.Function):
    """x * w[None, :, None, None] for NCHW x; the gradient of w sums over N only, shape [C, H, W]."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4:
            raise ValueError(f"expected an NCHW input, got {x.dim()}-D")
        ctx.save_for_backward(x, w)
        return x * w[None, :, None, None]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return grad * w[None, :, None, None], (grad * x).sum(0)


# --- rank: a bug that shows only past rank 1 -----------------------------------------------


class LogSumExpFlat(torch.autograd.Function):
    """logsumexp over the last dim; backward takes the softmax over all of x, flattened:
    right for 1-D x only."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.logsumexp(x, -1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad[..., None] * torch.softmax(x.flatten(), 0).view_as(x)


class FixedShape(torch.autograd.Function):
    """x of one shape only, which no inferred shape is: inference gives up, naming x."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, scale: float = 0.5) -> torch.Tensor:
        if x.shape != (5, 7):
            raise ValueError(f"x must be [5, 7], got {list(x.shape)}")
        return x * scale

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad * 0.5, None


class MaskedFillForgotMask(torch.autograd.Function):
    """x with the masked elements set to 0; backward passes the gradient of every element,
    masked or not."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(mask)
        return x.masked_fill(mask, 0.0)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None


class MaskedFill(torch.autograd.Function):
    """x with the masked elements set to 0; backward zeroes their gradient too."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(mask)
        return x.masked_fill(mask, 0.0)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (mask,) = ctx.saved_tensors
        return grad.masked_fill(mask, 0.0), None


# --- values past [-1, 1] -----------------------------------------------------------------------


class HardSigmoid(torch.autograd.Function):
    """torch's hardsigmoid, backward right on both sides of its branch points at -3 and 3."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.nn.functional.hardsigmoid(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * ((x > -3) & (x < 3)).to(grad.dtype) / 6


class HardSigmoidForgotUpperMask(HardSigmoid):
    """torch's hardsigmoid; backward masks x > -3 but forgets x < 3, wrong only past 3."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * (x > -3).to(grad.dtype) / 6


class ReLU6ForgotUpperMask(torch.autograd.Function):
    """torch's relu6 (no literal 6 in the source); backward forgets the cap at 6."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.nn.functional.relu6(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * (x > 0).to(grad.dtype)


class ClampForgotMask(torch.autograd.Function):
    """x clamped to [min, max]; backward passes every element's gradient, clamped or not."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, min: float, max: float) -> torch.Tensor:
        return x.clamp(min, max)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        return grad, None, None


class LeakyReLUHardCodesSlope(torch.autograd.Function):
    """leaky_relu(x, slope); backward hard-codes the default slope 0.01 instead of ctx's."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, slope: float = 0.01) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.nn.functional.leaky_relu(x, slope)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        return torch.where(x > 0, grad, 0.01 * grad), None


class PowerHardCodesDegree(torch.autograd.Function):
    """x ** degree; backward hard-codes the default degree 3."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, degree: int = 3) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x**degree

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        return grad * 3 * x**2, None


class Shapes(torch.autograd.Function):
    """Compares row sums of 64 with 0: 64 and the dim are sizes, not values of x, and the
    factor 2 is no branch point (read, never run)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        rows = x.view(-1, 64)
        return 2 * rows * (rows.sum(1, keepdim=True)[..., 0] > 0)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad


class LinearTanh(torch.autograd.Function):
    """tanh(x @ weight.T + bias), bias None by default; every gradient right."""

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        z = x @ weight.t()
        y = torch.tanh(z if bias is None else z + bias)
        ctx.save_for_backward(x, weight, y)
        ctx.has_bias = bias is not None
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight, y = ctx.saved_tensors
        dz = grad * (1 - y * y)
        return dz @ weight, dz.t() @ x, dz.sum(0) if ctx.has_bias else None


class LinearTanhForgotTanhForBias(LinearTanh):
    """LinearTanh whose bias gradient forgets tanh'."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight, y = ctx.saved_tensors
        dz = grad * (1 - y * y)
        return dz @ weight, dz.t() @ x, grad.sum(0) if ctx.has_bias else None


class AddThenScale(torch.autograd.Function):
    """(x + residual) * weight, weight per feature (its gradient summed to its shape), the
    residual never broadcast: a broadcast residual beside a full-size weight is no case of it."""

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor
    ) -> torch.Tensor:
        ctx.save_for_backward(x, residual, weight)
        return (x + residual) * weight

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x, residual, weight = ctx.saved_tensors
        h = x + residual
        dh = grad * weight
        dw = (grad * h).reshape(-1, h.shape[-1]).sum(0)
        return dh, dh, dw


class MeanUnsqueezesLast(torch.autograd.Function):
    """x.mean(dim); backward unsqueezes the last dim whatever dim is: it raises for dim=0."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        ctx.shape, ctx.dim = x.shape, dim
        return x.mean(dim)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        size = ctx.shape[ctx.dim]
        return grad.unsqueeze(-1).expand(ctx.shape) / size, None


class MeanKeepdimForgetsDivision(torch.autograd.Function):
    """x.mean(-1, keepdim); backward divides by the size only without keepdim."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, keepdim: bool = False) -> torch.Tensor:
        ctx.shape, ctx.keepdim = x.shape, keepdim
        return x.mean(-1, keepdim=keepdim)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        if ctx.keepdim:
            return grad.expand(ctx.shape), None
        return grad.unsqueeze(-1).expand(ctx.shape) / ctx.shape[-1], None


class RMSNormForgotEps(torch.autograd.Function):
    """x / sqrt(mean(x^2) + eps) over the last dim; backward drops eps from the reciprocal
    root, invisible at its default of 1e-5 (a relative error of about 1e-5)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True))
        return r * (grad - x * r * r * (grad * x).mean(-1, keepdim=True)), None


class ClipToLevels(torch.autograd.Function):
    """x clipped to [-qn, qp], the two levels numbers: torch.clamp takes two numbers or two
    tensors, never one of each, so trying them as numbers one at a time never runs."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, qn: Any, qp: Any) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.qn, ctx.qp = qn, qp
        return torch.clamp(x, -qn, qp)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (x,) = ctx.saved_tensors
        return grad * ((x >= -ctx.qn) & (x <= ctx.qp)).to(grad.dtype), None, None


class SoftThreshold(torch.autograd.Function):
    """x where x > threshold, else 0; backward right on both sides of the threshold."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, threshold: float = 20.0) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.threshold = threshold
        return torch.where(x > threshold, x, torch.zeros_like(x))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        return grad * (x > ctx.threshold).to(grad.dtype), None


class WeightedByList(torch.autograd.Function):
    """x times the sum of a list of weights, annotated `list[float]`: a list, never a tensor."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weights: list[float]) -> torch.Tensor:
        ctx.total = float(sum(weights))
        return x * ctx.total

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad * ctx.total, None


class Angle(torch.autograd.Function):
    """The angle of a complex z, atan2(imag, real): forward takes complex numbers only."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z)
        return torch.atan2(z.imag, z.real)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (z,) = ctx.saved_tensors
        # d angle = Im(dz / z): the conjugate Wirtinger gradient is grad * i / conj(z)
        return grad * 1j / z.conj()


class FourierOfReal(torch.autograd.Function):
    """The DFT of a real x, a complex output; backward takes the real part for the real x
    (a sign of a complex output, not of complex inputs, which forward is not written for)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return torch.fft.fft(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return (torch.fft.ifft(grad) * grad.shape[-1]).real


class WeightedByUnannotatedList(torch.autograd.Function):
    """x times the sum of `weights`, a list without an annotation: backward's None for it,
    and forward taking a list but no number, say so."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weights: Any) -> torch.Tensor:
        ctx.total = float(sum(weights))
        return x * ctx.total

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad * ctx.total, None


HUBER_CUT = 3.0  # a module constant forward compares with


class HuberPastCutForgotten(torch.autograd.Function):
    """x^2 / (2c) up to the module's constant c = HUBER_CUT, then x - c/2; backward gives
    x / c everywhere, wrong only past the cut."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.where(x > HUBER_CUT, x - HUBER_CUT / 2, x * x / (2 * HUBER_CUT))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * x / HUBER_CUT


class SquaredErrorSumsAsMean(torch.autograd.Function):
    """(input - target)^2 reduced by `reduction` ('mean' by default, or 'sum'); backward
    divides by the count whatever the reduction."""

    @staticmethod
    def forward(
        ctx: Any, input: torch.Tensor, target: torch.Tensor, reduction: str = "mean"
    ) -> torch.Tensor:
        ctx.save_for_backward(input, target)
        squared = (input - target) ** 2
        return squared.sum() if reduction == "sum" else squared.mean()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        input, target = ctx.saved_tensors
        d = 2 * (input - target) * grad / input.numel()
        return d, -d, None


class CircularConvolution(torch.autograd.Function):
    """Circular convolution of real signals through the FFT: forward takes `.real` of an
    intermediate, no sign that x or k are complex."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, k)
        return torch.fft.ifft(torch.fft.fft(x) * torch.fft.fft(k)).real

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, k = ctx.saved_tensors
        g = torch.fft.fft(grad)
        dx = torch.fft.ifft(g * torch.fft.fft(k).conj()).real
        dk = torch.fft.ifft(g * torch.fft.fft(x).conj()).real
        return dx, dk


class KLTermOfLogVariance(torch.autograd.Function):
    """The VAE's KL term, -0.5 * sum(1 + lv - mu^2 - exp(lv)) with lv clamped to [-30, 20]:
    right, but past about 10 its outputs reach exp(20), where central differences measure
    float64 rounding."""

    @staticmethod
    def forward(ctx: Any, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        if mu.shape != logvar.shape:
            raise ValueError("mu and logvar must have one shape")
        ctx.save_for_backward(mu, logvar)
        lv = logvar.clamp(-30.0, 20.0)
        return -0.5 * torch.sum(1 + lv - mu.pow(2) - lv.exp())

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = ctx.saved_tensors
        inside = ((logvar >= -30.0) & (logvar <= 20.0)).to(logvar.dtype)
        lv = logvar.clamp(-30.0, 20.0)
        return grad * mu, grad * -0.5 * (1 - lv.exp()) * inside


class DropoutWhenTraining(torch.autograd.Function):
    """x * mask / (1 - p) with a random mask when training (False by default), x otherwise:
    right for the mask it draws, but random, so no finite difference can check it."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, training: bool = False) -> torch.Tensor:
        if not training:
            ctx.save_for_backward(torch.ones_like(x))
            return x.clone()
        mask = (torch.rand_like(x) > 0.5).to(x.dtype) * 2
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (mask,) = ctx.saved_tensors
        return grad * mask, None


class ScaleShiftOptionalWeight(torch.autograd.Function):
    """x * weight + bias, each Optional[torch.Tensor] None by default; backward forgets to
    scale x's gradient by the weight."""

    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        weight: Optional[torch.Tensor] = None,  # noqa: UP045 (the spelling under test)
    ) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        return x if weight is None else x * weight

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        x, weight = ctx.saved_tensors
        return grad, None if weight is None else grad * x


class MaskedSumIgnoresMask(torch.autograd.Function):
    """The sum of x where mask (None by default: everywhere); backward ignores the mask."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        ctx.shape = x.shape
        return x.sum() if mask is None else (x * mask).sum()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad.expand(ctx.shape), None


class LinearBatchUsesLastRow(torch.autograd.Function):
    """x @ weight.T for any leading dims; with a batch dim, weight's gradient uses the last
    batch entry only."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        return x @ weight.t()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, weight = ctx.saved_tensors
        if grad.dim() == 3:
            return grad @ weight, grad[-1].t() @ x[-1]
        return grad @ weight, grad.t() @ x


class ScaleThenBiasScalesBias(torch.autograd.Function):
    """x * scale + bias (scale 1.0, bias None by default); backward scales bias's gradient
    too: wrong only with a bias given and a scale other than 1, never one alone."""

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, scale: float = 1.0, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        ctx.scale, ctx.has_bias = scale, bias is not None
        return x * scale if bias is None else x * scale + bias

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        return grad * ctx.scale, None, grad * ctx.scale if ctx.has_bias else None


class MeanKeepdimDividesByLast(torch.autograd.Function):
    """x.mean(dim, keepdim); with keepdim, backward divides by the last dim's size, not by
    dim's: wrong only for keepdim=True at a dim other than the last."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int = -1, keepdim: bool = False) -> torch.Tensor:
        ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
        return x.mean(dim, keepdim=keepdim)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        if ctx.keepdim:
            return grad.expand(ctx.shape) / ctx.shape[-1], None, None
        return grad.unsqueeze(ctx.dim).expand(ctx.shape) / ctx.shape[ctx.dim], None, None


# --- the probe draws what the case is checked on ---------------------------------------

SEEN_BY_SQRT_SHIFTED: list[torch.Tensor] = []


class SqrtShifted(torch.autograd.Function):
    """sqrt(x + 0.5): NaN below -0.5, so whether a guess in [-1, 1] fits depends on the
    values drawn. Every x forward is called with is kept in SEEN_BY_SQRT_SHIFTED."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        SEEN_BY_SQRT_SHIFTED.append(x.detach().clone())
        y = torch.sqrt(x + 0.5)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return grad / (2 * y)
