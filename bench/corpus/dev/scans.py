"""Prefix scans and first-order linear recurrences with hand-written backward passes.

These back the sequence layers of the package (gated linear RNNs, discounted returns for the
RL losses, running statistics). The scans are written as explicit loops over time: the
sequences here are short and the loops keep memory at O(T) instead of O(T^2).
"""

import torch
from torch import nn


def _reverse_cumsum(t, dim):
    return t.flip(dim).cumsum(dim).flip(dim)


def _exclusive_cumsum(t, dim, reverse=False):
    n = t.size(dim)
    zero = torch.zeros_like(t.narrow(dim, 0, 1))
    if reverse:
        inc = _reverse_cumsum(t, dim)
        return torch.cat([inc.narrow(dim, 1, n - 1), zero], dim)
    inc = t.cumsum(dim)
    return torch.cat([zero, inc.narrow(dim, 0, n - 1)], dim)


# ---------------------------------------------------------------------------------------------
# cumulative products


class CumProd(torch.autograd.Function):
    """Cumulative product along ``dim``.

    The backward reuses the forward output: d out_j / d x_i = out_j / x_i for j >= i, so the
    gradient is a reverse cumulative sum of ``grad * out`` divided by ``x``.
    """

    @staticmethod
    def forward(ctx, x, dim: int = -1):
        out = torch.cumprod(x, dim)
        ctx.dim = dim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, out = ctx.saved_tensors
        return _reverse_cumsum(grad_out * out, ctx.dim) / x, None


class PrefixProduct(torch.autograd.Function):
    """Cumulative product along ``dim``, exact when ``x`` contains zeros.

    Row ``i`` of the backward recomputes the prefix products with ``x_i`` replaced by one,
    which costs O(T^2) memory along ``dim``: fine for the short horizons it is used on.
    """

    @staticmethod
    def forward(ctx, x, dim: int = -1):
        ctx.dim = dim
        ctx.save_for_backward(x)
        return torch.cumprod(x, dim)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        xt = x.movedim(ctx.dim, -1)
        g = grad_out.movedim(ctx.dim, -1)
        n = xt.size(-1)
        eye = torch.eye(n, dtype=torch.bool, device=x.device)
        # rows[..., i, j] = prod_{k <= j, k != i} x_k
        rows = torch.where(eye, torch.ones_like(xt).unsqueeze(-2), xt.unsqueeze(-2)).cumprod(-1)
        upper = torch.ones(n, n, dtype=torch.bool, device=x.device).triu()
        grad = (rows * upper * g.unsqueeze(-2)).sum(-1)
        return grad.movedim(-1, ctx.dim), None


# ---------------------------------------------------------------------------------------------
# exclusive scans


class ExclusiveCumsum(torch.autograd.Function):
    """Exclusive prefix sum: ``out[t] = sum_{s < t} x[s]`` (``sum_{s > t}`` with ``reverse``)."""

    @staticmethod
    def forward(ctx, x, dim: int = -1, reverse: bool = False):
        ctx.dim, ctx.reverse = dim, reverse
        return _exclusive_cumsum(x, dim, reverse)

    @staticmethod
    def backward(ctx, grad_out):
        # the adjoint of an exclusive scan is the exclusive scan in the other direction
        return _exclusive_cumsum(grad_out, ctx.dim, not ctx.reverse), None, None


class ShiftedCumsum(torch.autograd.Function):
    """Exclusive cumulative sum computed as an inclusive cumsum shifted by one step."""

    @staticmethod
    def forward(ctx, x, dim: int = -1):
        n = x.size(dim)
        ctx.dim = dim
        inc = x.cumsum(dim)
        return torch.cat([torch.zeros_like(inc.narrow(dim, 0, 1)), inc.narrow(dim, 0, n - 1)], dim)

    @staticmethod
    def backward(ctx, grad_out):
        dim = ctx.dim
        n = grad_out.size(dim)
        rc = _reverse_cumsum(grad_out, dim)
        zero = torch.zeros_like(rc.narrow(dim, 0, 1))
        return torch.cat([zero, rc.narrow(dim, 0, n - 1)], dim), None


# ---------------------------------------------------------------------------------------------
# linear recurrences  h_t = a_t * h_{t-1} + x_t,  h_{-1} = 0


def _linear_scan(a, x):
    h = torch.zeros_like(x[:, 0])
    hs = []
    for t in range(x.size(1)):
        h = a[:, t] * h + x[:, t]
        hs.append(h)
    return torch.stack(hs, 1)


def _linear_scan_reverse(a, g):
    # dh_t = g_t + a_{t+1} * dh_{t+1}
    T = g.size(1)
    carry = torch.zeros_like(g[:, 0])
    out = [None] * T
    for t in range(T - 1, -1, -1):
        if t + 1 < T:
            carry = a[:, t + 1] * carry
        carry = carry + g[:, t]
        out[t] = carry
    return torch.stack(out, 1)


class LinearRecurrence(torch.autograd.Function):
    """Diagonal linear recurrence ``h_t = a_t * h_{t-1} + x_t`` over dim 1.

    Args:
        a: [B, T, D] decay gates (usually sigmoid outputs).
        x: [B, T, D] inputs.

    Returns:
        h: [B, T, D] all hidden states.
    """

    @staticmethod
    def forward(ctx, a, x):
        h = _linear_scan(a, x)
        ctx.save_for_backward(a, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        a, h = ctx.saved_tensors
        dh = _linear_scan_reverse(a, grad_h)
        h_prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], 1)
        return dh * h_prev, dh


class FusedLinearScan(torch.autograd.Function):
    """Same recurrence as :class:`LinearRecurrence`; keeps the shifted states from forward so
    the backward does not have to build them again."""

    @staticmethod
    def forward(ctx, a, x):
        h = _linear_scan(a, x)
        ctx.h_prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], 1)
        ctx.save_for_backward(a)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        (a,) = ctx.saved_tensors
        dh = _linear_scan_reverse(a, grad_h)
        return dh * ctx.h_prev, dh


class TruncatedLinearRecurrence(torch.autograd.Function):
    """``h_t = a_t * h_{t-1} + x_t`` trained with truncated backpropagation through time.

    The forward pass is the exact recurrence over the whole sequence. The backward pass is
    deliberately *not* the exact gradient: the sequence is cut into chunks of ``bptt_steps``
    and no gradient crosses a chunk boundary, exactly as if the hidden state were detached
    every ``bptt_steps`` steps (TBPTT). This bounds the cost of long rollouts and the
    variance of the gradient; use :class:`LinearRecurrence` when you need the true gradient.
    """

    @staticmethod
    def forward(ctx, a, x, bptt_steps: int = 16):
        h = _linear_scan(a, x)
        ctx.bptt_steps = bptt_steps
        ctx.save_for_backward(a, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        a, h = ctx.saved_tensors
        k = ctx.bptt_steps
        T = grad_h.size(1)
        carry = torch.zeros_like(grad_h[:, 0])
        dh = [None] * T
        for t in range(T - 1, -1, -1):
            if t + 1 < T and (t + 1) % k != 0:
                carry = a[:, t + 1] * carry
            else:
                carry = torch.zeros_like(carry)
            carry = carry + grad_h[:, t]
            dh[t] = carry
        dh = torch.stack(dh, 1)
        h_prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], 1)
        return dh * h_prev, dh, None


# ---------------------------------------------------------------------------------------------
# discounted returns  G_t = r_t + gamma * G_{t+1}


class DiscountedReturn(torch.autograd.Function):
    """Discounted return-to-go along the last dim of ``rewards`` ([B, T]).

    ``gamma`` is a Python float in (0, 1].
    """

    @staticmethod
    def forward(ctx, rewards, gamma: float = 0.99):
        ctx.gamma = gamma
        ret = torch.zeros_like(rewards[..., 0])
        out = []
        for t in range(rewards.size(-1) - 1, -1, -1):
            ret = rewards[..., t] + gamma * ret
            out.append(ret)
        return torch.stack(out[::-1], -1)

    @staticmethod
    def backward(ctx, grad_out):
        # adjoint of the reverse scan is the forward scan c_t = g_t + gamma * c_{t-1}
        c = torch.zeros_like(grad_out[..., 0])
        grads = []
        for t in range(grad_out.size(-1)):
            c = grad_out[..., t] + ctx.gamma * c
            grads.append(c)
        return torch.stack(grads, -1), None


_BACKWARD_WINDOW = 8


class DiscountedCumsum(torch.autograd.Function):
    """Discounted cumulative sum (return-to-go) of ``rewards`` [B, T] with factor ``gamma``.

    The backward is a causal convolution of the incoming gradient with the discount kernel
    ``gamma ** k``, which vectorises over time instead of looping.
    """

    @staticmethod
    def forward(ctx, rewards, gamma: float = 0.99):
        ctx.gamma = gamma
        ret = torch.zeros_like(rewards[..., 0])
        out = []
        for t in range(rewards.size(-1) - 1, -1, -1):
            ret = rewards[..., t] + gamma * ret
            out.append(ret)
        return torch.stack(out[::-1], -1)

    @staticmethod
    def backward(ctx, grad_out):
        T = grad_out.size(-1)
        window = min(T, _BACKWARD_WINDOW)
        grad = grad_out.clone()
        for k in range(1, window):
            shifted = torch.nn.functional.pad(grad_out[..., : T - k], (k, 0))
            grad = grad + ctx.gamma**k * shifted
        return grad, None


# ---------------------------------------------------------------------------------------------
# exponential moving average


class ExponentialMovingAverage(torch.autograd.Function):
    """EMA over the last dim: ``y_0 = x_0``, ``y_t = decay * y_{t-1} + (1 - decay) * x_t``.

    Returns all smoothed values and, separately, the last one (the running statistic that is
    carried to the next chunk). ``decay`` must lie in (0, 1). Either output may be unused.
    """

    @staticmethod
    def forward(ctx, x, decay: float = 0.9):
        if not 0.0 < decay < 1.0:
            raise ValueError(f"decay must be in (0, 1), got {decay}")
        ctx.decay = decay
        ctx.set_materialize_grads(False)
        y = x[..., 0]
        ys = [y]
        for t in range(1, x.size(-1)):
            y = decay * y + (1.0 - decay) * x[..., t]
            ys.append(y)
        smoothed = torch.stack(ys, -1)
        ctx.shape = x.shape
        return smoothed, smoothed[..., -1].clone()

    @staticmethod
    def backward(ctx, grad_smoothed, grad_last):
        if grad_smoothed is None and grad_last is None:
            return None, None
        decay = ctx.decay
        T = ctx.shape[-1]
        g = grad_smoothed if grad_smoothed is not None else grad_last.new_zeros(ctx.shape)
        if grad_last is not None:
            g = g + torch.nn.functional.pad(grad_last.unsqueeze(-1), (T - 1, 0))
        carry = torch.zeros_like(g[..., 0])
        out = [None] * T
        for t in range(T - 1, -1, -1):
            carry = decay * carry + g[..., t]
            out[t] = carry if t == 0 else (1.0 - decay) * carry
        return torch.stack(out, -1), None


# ---------------------------------------------------------------------------------------------
# modules and functional wrappers


def cumprod(x, dim=-1, exact_zeros=False):
    return PrefixProduct.apply(x, dim) if exact_zeros else CumProd.apply(x, dim)


def exclusive_cumsum(x, dim=-1, reverse=False):
    if reverse:
        return ExclusiveCumsum.apply(x, dim, True)
    return ShiftedCumsum.apply(x, dim)


def discounted_return(rewards, gamma=0.99, fast=False):
    fn = DiscountedCumsum if fast else DiscountedReturn
    return fn.apply(rewards, gamma)


class GatedLinearRNN(nn.Module):
    """A minimal gated linear RNN layer (LRU / GLA style) on top of the scans above."""

    def __init__(self, d_in, d_hidden, fused=False, bptt_steps=None):
        super().__init__()
        self.gate = nn.Linear(d_in, d_hidden)
        self.inp = nn.Linear(d_in, d_hidden)
        self.out = nn.Linear(d_hidden, d_in)
        self.fused = fused
        self.bptt_steps = bptt_steps

    def forward(self, u):
        a = torch.sigmoid(self.gate(u))
        x = self.inp(u)
        if self.bptt_steps is not None:
            h = TruncatedLinearRecurrence.apply(a, x, self.bptt_steps)
        elif self.fused:
            h = FusedLinearScan.apply(a, x)
        else:
            h = LinearRecurrence.apply(a, x)
        return self.out(h)


class ValueHead(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, obs):
        return self.net(obs).squeeze(-1)


class RunningFeatureStats(nn.Module):
    """Smooths features over time with an EMA and projects the smoothed sequence."""

    def __init__(self, d, decay=0.9):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.decay = decay

    def forward(self, x):
        # x: [B, T, D] -> EMA over T
        smoothed, last = ExponentialMovingAverage.apply(x.transpose(1, 2), self.decay)
        return self.proj(smoothed.transpose(1, 2)), last


# ---------------------------------------------------------------------------------------------
# usage


def _rnn_step(model):
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    u = torch.randn(4, 12, 8)
    loss = (model(u) - u).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def _survival_loss(fn, **kw):
    # per-step hazards -> survival probabilities; pieces of the hazard can be exactly zero
    logits = nn.Parameter(torch.randn(3, 10))
    hazard = torch.relu(torch.tanh(logits))
    survival = fn(1.0 - hazard, **kw)
    loss = -(survival.clamp_min(1e-6).log()).mean()
    loss.backward()
    return logits.grad


def use_cum_prod():
    torch.manual_seed(0)
    _survival_loss(cumprod)


def use_prefix_product():
    torch.manual_seed(0)
    _survival_loss(cumprod, exact_zeros=True)


def use_exclusive_cumsum():
    torch.manual_seed(0)
    # token positions from a padding mask, counted from the right
    lengths = torch.rand(4, 9, requires_grad=True)
    offsets = exclusive_cumsum(lengths, dim=1, reverse=True)
    offsets.sum().backward()


def use_shifted_cumsum():
    torch.manual_seed(0)
    # start offset of every span from the span lengths
    lengths = nn.Parameter(torch.rand(4, 9))
    starts = exclusive_cumsum(lengths, dim=1)
    (starts * torch.randn(4, 9)).sum().backward()


def use_linear_recurrence():
    torch.manual_seed(0)
    _rnn_step(GatedLinearRNN(8, 16))


def use_fused_linear_scan():
    torch.manual_seed(0)
    _rnn_step(GatedLinearRNN(8, 16, fused=True))


def use_truncated_linear_recurrence():
    torch.manual_seed(0)
    _rnn_step(GatedLinearRNN(8, 16, bptt_steps=4))


def _actor_critic_step(fast):
    head = ValueHead(6)
    obs = torch.randn(2, 20, 6)
    rewards = torch.randn(2, 20, requires_grad=True)
    returns = discounted_return(rewards, 0.97, fast=fast)
    loss = (head(obs) - returns).pow(2).mean()
    loss.backward()


def use_discounted_return():
    torch.manual_seed(0)
    _actor_critic_step(fast=False)


def use_discounted_cumsum():
    torch.manual_seed(0)
    _actor_critic_step(fast=True)


def use_exponential_moving_average():
    torch.manual_seed(0)
    model = RunningFeatureStats(5, decay=0.8)
    x = torch.randn(3, 7, 5)
    y, last = model(x)
    (y.pow(2).mean() + last.abs().mean()).backward()
    # the carried statistic alone
    x2 = torch.randn(3, 5, 7, requires_grad=True)
    _, last = ExponentialMovingAverage.apply(x2, 0.5)
    last.sum().backward()
