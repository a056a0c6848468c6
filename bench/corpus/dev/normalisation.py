"""Normalisation layers and reductions with custom autograd kernels."""

import torch
from torch import nn


class RMSNormFn(torch.autograd.Function):
    """Root-mean-square norm over the last dimension.

    Args:
        x: [..., D] input.
        weight: [D] gain.
        eps: added to the mean square.
    Returns:
        [..., D]: ``x / sqrt(mean(x**2, -1) + eps) * weight``.
    """

    @staticmethod
    def forward(ctx, x, weight, eps: float = 1e-6):
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight)
        ctx.eps = eps
        return x * rstd * weight

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + ctx.eps)
        xhat = x * rstd
        grad_w = (grad_output * xhat).reshape(-1, x.shape[-1]).sum(0)
        gxhat = grad_output * weight
        grad_x = rstd * (gxhat - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        return grad_x, grad_w, None


class FastRMSNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps: float = 1e-6):
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, rstd)
        return x * rstd * weight

    @staticmethod
    def backward(ctx, grad_output):
        x, weight, rstd = ctx.saved_tensors
        xhat = x * rstd
        gxhat = grad_output * weight
        grad_x = rstd * (gxhat - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        grad_w = (grad_output * xhat).flatten(0, -2).sum(0) if x.dim() > 1 else grad_output * xhat
        return grad_x, grad_w, None


class LayerNormFunction(torch.autograd.Function):
    """LayerNorm over the last dim with elementwise affine; stores only x, weight."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps: float = 1e-5):
        mu = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        ctx.save_for_backward(x, weight)
        ctx.eps = eps
        return (x - mu) * torch.rsqrt(var + eps) * weight + bias

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        mu = x.mean(-1, keepdim=True)
        rstd = torch.rsqrt(x.var(-1, keepdim=True) + ctx.eps)
        xhat = (x - mu) * rstd
        g = grad_output * weight
        grad_x = rstd * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
        lead = tuple(range(x.dim() - 1))
        return grad_x, (grad_output * xhat).sum(lead), grad_output.sum(lead), None


class FusedLayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps: float = 1e-5):
        ctx.save_for_backward(x, weight)
        ctx.eps = eps
        return _layer_norm_stats(x, eps)[0] * weight + bias

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        xhat, rstd = _layer_norm_stats(x, ctx.eps)
        g = grad_output * weight
        grad_x = rstd * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
        lead = tuple(range(x.dim() - 1))
        return grad_x, (grad_output * xhat).sum(lead), grad_output.sum(lead), None


def _layer_norm_stats(x, eps):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    rstd = torch.rsqrt(var + eps)
    return (x - mu) * rstd, rstd


class SoftmaxWithNormalizer(torch.autograd.Function):
    """Softmax along ``dim`` that also returns the log-normaliser (logsumexp).

    Either output may be unused; grads that do not arrive are not materialised.
    """

    @staticmethod
    def forward(ctx, x, dim: int = -1):
        lse = torch.logsumexp(x, dim)
        probs = torch.exp(x - lse.unsqueeze(dim))
        ctx.set_materialize_grads(False)
        ctx.dim = dim
        ctx.save_for_backward(probs)
        return probs, lse

    @staticmethod
    def backward(ctx, grad_probs, grad_lse):
        (probs,) = ctx.saved_tensors
        dim = ctx.dim
        grad_x = None
        if grad_probs is not None:
            grad_x = probs * (grad_probs - (grad_probs * probs).sum(dim, keepdim=True))
        if grad_lse is not None:
            term = probs * grad_lse.unsqueeze(dim)
            grad_x = term if grad_x is None else grad_x + term
        return grad_x, None


class SoftmaxLSE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim: int = -1):
        ctx.set_materialize_grads(False)
        m = x.amax(dim, keepdim=True)
        e = torch.exp(x - m)
        s = e.sum(dim, keepdim=True)
        probs = e / s
        ctx.save_for_backward(probs)
        ctx.dim = dim
        return probs, (m + s.log()).squeeze(dim)

    @staticmethod
    def backward(ctx, grad_probs, grad_lse):
        if grad_probs is None:
            return None, None
        (probs,) = ctx.saved_tensors
        dim = ctx.dim
        grad_x = probs * (grad_probs - (grad_probs * probs).sum(dim, keepdim=True))
        if grad_lse is not None:
            grad_x = grad_x + probs * grad_lse.unsqueeze(dim)
        return grad_x, None


class SoftmaxTemperature(torch.autograd.Function):
    """softmax(x / temperature) along ``dim``; temperature > 0."""

    @staticmethod
    def forward(ctx, x, temperature: float = 1.0, dim: int = -1):
        if temperature <= 0:
            raise ValueError("temperature must be positive")
        p = torch.softmax(x / temperature, dim)
        ctx.save_for_backward(p)
        ctx.temperature, ctx.dim = temperature, dim
        return p

    @staticmethod
    def backward(ctx, grad_output):
        (p,) = ctx.saved_tensors
        s = (grad_output * p).sum(ctx.dim, keepdim=True)
        return p * (grad_output - s) / ctx.temperature, None, None


class VectorNorm(torch.autograd.Function):
    """Euclidean norm along ``dim``.

    The gradient at an all-zero vector is taken to be zero (the minimum-norm subgradient),
    so padded rows of zeros do not produce NaNs.
    """

    @staticmethod
    def forward(ctx, x, dim: int = -1, keepdim: bool = False):
        ctx.save_for_backward(x)
        ctx.dim, ctx.keepdim = dim, keepdim
        return torch.linalg.vector_norm(x, dim=dim, keepdim=keepdim)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        n = x.pow(2).sum(ctx.dim, keepdim=True).sqrt()
        if not ctx.keepdim:
            grad_output = grad_output.unsqueeze(ctx.dim)
        safe = torch.where(n > 0, n, torch.ones_like(n))
        unit = torch.where(n > 0, x / safe, torch.zeros_like(x))
        return grad_output * unit, None, None


class WeightedMean(torch.autograd.Function):
    """Weighted mean of ``x`` along ``dim``.

    x:      any shape
    weight: 1-D, ``x.shape[dim]`` positive weights (need not sum to one)
    """

    @staticmethod
    def forward(ctx, x, weight, dim: int = 0):
        assert weight.dim() == 1 and weight.shape[0] == x.shape[dim]
        xm = x.movedim(dim, -1)
        total = weight.sum()
        out = (xm * weight).sum(-1) / total
        ctx.save_for_backward(x, weight, out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx, grad_output):
        x, weight, out = ctx.saved_tensors
        total = weight.sum()
        g = grad_output.unsqueeze(-1)
        grad_x = (g * weight / total).movedim(-1, ctx.dim)
        xm = x.movedim(ctx.dim, -1)
        grad_w = (g * (xm - out.unsqueeze(-1))).reshape(-1, weight.shape[0]).sum(0) / total
        return grad_x, grad_w, None


class GroupNormFunction(torch.autograd.Function):
    """Group normalisation, argument order as ``torch.nn.functional.group_norm``.

    x: [N, C, *]; ``C`` divisible by ``num_groups``; weight, bias: [C].
    """

    @staticmethod
    def forward(ctx, x, num_groups: int, weight, bias, eps: float = 1e-5):
        c = x.shape[1]
        if c % num_groups:
            raise ValueError(f"{c} channels not divisible into {num_groups} groups")
        xhat, _ = _group_stats(x, num_groups, eps)
        ctx.save_for_backward(x, weight)
        ctx.num_groups, ctx.eps = num_groups, eps
        shape = (1, c) + (1,) * (x.dim() - 2)
        return xhat * weight.view(shape) + bias.view(shape)

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        n, c = x.shape[:2]
        shape = (1, c) + (1,) * (x.dim() - 2)
        xhat, rstd = _group_stats(x, ctx.num_groups, ctx.eps)
        dims = [0, *range(2, x.dim())]
        grad_w = (grad_output * xhat).sum(dims)
        grad_b = grad_output.sum(dims)
        g = (grad_output * weight.view(shape)).reshape(n, ctx.num_groups, -1)
        xh = xhat.reshape(n, ctx.num_groups, -1)
        gx = rstd * (g - g.mean(-1, keepdim=True) - xh * (g * xh).mean(-1, keepdim=True))
        return gx.reshape(x.shape), None, grad_w, grad_b, None


def _group_stats(x, num_groups, eps):
    xg = x.reshape(x.shape[0], num_groups, -1)
    mu = xg.mean(-1, keepdim=True)
    rstd = torch.rsqrt((xg - mu).pow(2).mean(-1, keepdim=True) + eps)
    return ((xg - mu) * rstd).reshape(x.shape), rstd


# ---------------------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6, fused: bool = False):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps
        self.fused = fused

    def forward(self, x):
        fn = FastRMSNormFn if self.fused else RMSNormFn
        return fn.apply(x, self.weight, self.eps)


class LayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5, fused: bool = True):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps, self.fused = eps, fused

    def forward(self, x):
        fn = FusedLayerNorm if self.fused else LayerNormFunction
        return fn.apply(x, self.weight, self.bias, self.eps)


class GroupNorm(nn.GroupNorm):
    def forward(self, x):
        return GroupNormFunction.apply(x, self.num_groups, self.weight, self.bias, self.eps)


def cross_entropy_from_lse(logits, target, fn=SoftmaxWithNormalizer):
    """Cross-entropy via the log-normaliser; also returns the probabilities for metrics."""
    probs, lse = fn.apply(logits, -1)
    nll = lse - logits.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    return nll.mean(), probs.detach()


# ---------------------------------------------------------------------------------------
# usage


def _step(params, loss):
    opt = torch.optim.SGD(params, lr=1e-2)
    opt.zero_grad()
    loss.backward()
    opt.step()


def _block(norm):
    return nn.Sequential(nn.Linear(12, 12), norm, nn.GELU(), nn.Linear(12, 4))


def use_rms_norm_fn():
    torch.manual_seed(0)
    net = _block(RMSNorm(12))
    _step(net.parameters(), net(torch.randn(3, 5, 12)).pow(2).mean())


def use_fast_rms_norm_fn():
    torch.manual_seed(0)
    net = _block(RMSNorm(12, fused=True))
    _step(net.parameters(), net(torch.randn(3, 5, 12)).pow(2).mean())


def use_layer_norm_function():
    torch.manual_seed(0)
    net = _block(LayerNorm(12, fused=False))
    _step(net.parameters(), net(torch.randn(3, 5, 12)).pow(2).mean())


def use_fused_layer_norm():
    torch.manual_seed(0)
    net = _block(LayerNorm(12))
    _step(net.parameters(), net(torch.randn(3, 5, 12)).pow(2).mean())


def use_softmax_with_normalizer():
    torch.manual_seed(0)
    head = nn.Linear(8, 10)
    loss, _ = cross_entropy_from_lse(head(torch.randn(6, 8)), torch.randint(0, 10, (6,)))
    _step(head.parameters(), loss)


def use_softmax_lse():
    torch.manual_seed(0)
    head = nn.Linear(8, 10)
    x, t = torch.randn(6, 8), torch.randint(0, 10, (6,))
    probs, lse = SoftmaxLSE.apply(head(x), -1)
    loss = -(probs.gather(-1, t.unsqueeze(-1)) + 1e-9).log().mean() + 1e-4 * lse.pow(2).mean()
    _step(head.parameters(), loss)


def use_softmax_temperature():
    torch.manual_seed(0)
    student = nn.Linear(8, 10)
    x = torch.randn(6, 8)
    teacher = torch.softmax(torch.randn(6, 10) / 2.0, -1)
    p = SoftmaxTemperature.apply(student(x), 2.0, -1)
    loss = torch.nn.functional.kl_div(p.log(), teacher, reduction="batchmean")
    _step(student.parameters(), loss)


def use_vector_norm():
    torch.manual_seed(0)
    emb = nn.Embedding(10, 6, padding_idx=0)
    ids = torch.tensor([[1, 2, 0], [3, 0, 0]])
    norms = VectorNorm.apply(emb(ids), -1)
    _step(emb.parameters(), (norms - 1.0).pow(2).mean())


def use_weighted_mean():
    torch.manual_seed(0)
    proj = nn.Linear(6, 6)
    logits = nn.Parameter(torch.zeros(5))
    h = proj(torch.randn(5, 3, 6))
    pooled = WeightedMean.apply(h, torch.nn.functional.softplus(logits) + 0.1, 0)
    _step([*proj.parameters(), logits], pooled.pow(2).sum())


def use_group_norm_function():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), GroupNorm(4, 8), nn.SiLU())
    _step(net.parameters(), net(torch.randn(2, 3, 6, 6)).mean())
