"""Index-based ops: gathers at fractional positions (reading rows of a table, a memory or
a feature sequence by linear interpolation between the two nearest rows) and segment
reductions over sorted segment ids."""

from __future__ import annotations

import torch
from torch import nn


def _neighbours(pos: torch.Tensor, n: int):
    left = pos.detach().floor().long().clamp(0, n - 2)
    w = pos - left.to(pos.dtype)
    return left, w


class GatherLerp(torch.autograd.Function):
    """Reads ``values`` at fractional row positions by linear interpolation.

    ``out[m] = (1 - w) * values[i] + w * values[i + 1]`` with ``i = floor(pos[m])``,
    ``w = pos[m] - i``.

    Args:
        values: ``[N, D]``, N >= 2.
        pos: ``[M]`` floating positions in ``[0, N - 1]``.

    Note:
        ``pos`` is treated as a constant: no gradient is returned for it, even when it
        requires grad. The read positions come from a schedule, and letting the loss move
        them made training unstable; use :class:`InterpolatedGather` for learned positions.
    """

    @staticmethod
    def forward(ctx, values, pos):
        left, w = _neighbours(pos, values.shape[0])
        ctx.save_for_backward(left, w)
        ctx.n = values.shape[0]
        w = w.unsqueeze(-1)
        return (1 - w) * values[left] + w * values[left + 1]

    @staticmethod
    def backward(ctx, grad_output):
        left, w = ctx.saved_tensors
        w = w.unsqueeze(-1)
        grad_values = grad_output.new_zeros(ctx.n, grad_output.shape[-1])
        grad_values.index_add_(0, left, (1 - w) * grad_output)
        grad_values.index_add_(0, left + 1, w * grad_output)
        return grad_values, None


class FractionalGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values, pos):
        n = values.shape[0]
        i0 = pos.floor().long().clamp(0, n - 2)
        frac = (pos - i0).unsqueeze(-1)
        ctx.save_for_backward(i0, frac)
        ctx.n = n
        return values[i0] + frac * (values[i0 + 1] - values[i0])

    @staticmethod
    def backward(ctx, grad_output):
        i0, frac = ctx.saved_tensors
        gv = torch.zeros(ctx.n, grad_output.shape[1], dtype=grad_output.dtype)
        gv = gv.index_add(0, i0, grad_output * (1 - frac))
        gv = gv.index_add(0, i0 + 1, grad_output * frac)
        return gv, None


class InterpolatedGather(torch.autograd.Function):
    """Linear-interpolation gather, differentiable in both the table and the positions.

    values: ``[N, D]`` with N >= 2; pos: ``[M]`` in ``[0, N - 1]``. The derivative in
    ``pos`` is the slope of the segment ``values[i + 1] - values[i]``; it jumps at
    integer positions.
    """

    @staticmethod
    def forward(ctx, values, pos):
        left, w = _neighbours(pos, values.shape[0])
        ctx.save_for_backward(values, pos, left)
        return torch.lerp(values[left], values[left + 1], w.unsqueeze(-1))

    @staticmethod
    def backward(ctx, grad_output):
        values, pos, left = ctx.saved_tensors
        grad_values = grad_pos = None
        if ctx.needs_input_grad[0]:
            wc = (pos - left.to(pos.dtype)).unsqueeze(-1)
            grad_values = torch.zeros_like(values)
            grad_values = grad_values.index_add(0, left, (1 - wc) * grad_output)
            grad_values = grad_values.index_add(0, left + 1, wc * grad_output)
        if ctx.needs_input_grad[1]:
            slope = values[left + 1] - values[left]
            grad_pos = (grad_output * slope).sum(-1)
        return grad_values, grad_pos


class SegmentProd(torch.autograd.Function):
    """Product of the rows of each segment.

    Args:
        values: ``[N, D]``, any real values (zeros included: gates after a ReLU).
        segment_ids: int64 ``[N]``, sorted, in ``[0, num_segments)``.
        num_segments: number of output rows; an empty segment gives a row of ones.

    Returns ``[num_segments, D]``. The gradient of a row is the product of the *other*
    rows of its segment, computed with prefix/suffix products so that zeros are exact.
    """

    @staticmethod
    def forward(ctx, values, segment_ids, num_segments: int):
        out = values.new_ones(num_segments, values.shape[1])
        out = out.index_reduce(0, segment_ids, values, "prod")
        ctx.save_for_backward(values, segment_ids)
        ctx.num_segments = num_segments
        return out

    @staticmethod
    def backward(ctx, grad_output):
        values, segment_ids = ctx.saved_tensors
        rows, parts = [], []
        for s in range(ctx.num_segments):
            idx = (segment_ids == s).nonzero().squeeze(1)
            if idx.numel() == 0:
                continue
            v = values[idx]
            one = torch.ones_like(v[:1])
            prefix = torch.cat([one, v[:-1]]).cumprod(0)
            suffix = torch.cat([v[1:], one]).flip(0).cumprod(0).flip(0)
            rows.append(idx)
            parts.append(grad_output[s] * prefix * suffix)
        grad = torch.zeros_like(values)
        if rows:
            grad = grad.index_copy(0, torch.cat(rows), torch.cat(parts))
        return grad, None, None


class SortedSegmentProd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values, segment_ids, num_segments: int):
        out = torch.ones(num_segments, values.shape[1], dtype=values.dtype, device=values.device)
        out.index_reduce_(0, segment_ids, values, "prod")
        ctx.save_for_backward(values, segment_ids, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        values, segment_ids, out = ctx.saved_tensors
        # d prod / d v_i = prod / v_i
        return (grad_output * out)[segment_ids] / values, None, None


def segment_prod(values, segment_ids, num_segments, sorted_ids: bool = False):
    fn = SortedSegmentProd if sorted_ids else SegmentProd
    return fn.apply(values, segment_ids, num_segments)


class ResampleSequence(nn.Module):
    """Time-stretches a ``[N, D]`` feature sequence to ``M`` rows."""

    def __init__(self, gather=InterpolatedGather, learn_offsets: bool = False, m: int = 16):
        super().__init__()
        self.gather = gather
        self.offsets = nn.Parameter(torch.zeros(m)) if learn_offsets else None
        self.m = m

    def forward(self, feats):
        n = feats.shape[0]
        pos = torch.linspace(0.0, n - 1.0, self.m, dtype=feats.dtype)
        if self.offsets is not None:
            pos = (pos + 0.3 * torch.tanh(self.offsets)).clamp(0.0, n - 1.0)
        return self.gather.apply(feats, pos)


@torch.no_grad()
def _sgd_step(params, lr: float):
    for p in params:
        if p.grad is not None:
            p.add_(p.grad, alpha=-lr)
            p.grad = None


def _step(gather, learn_offsets):
    torch.manual_seed(0)
    enc = nn.Linear(4, 8)
    stretch = ResampleSequence(gather, learn_offsets=learn_offsets, m=20)
    params = list(enc.parameters()) + list(stretch.parameters())
    feats = enc(torch.randn(11, 4))
    loss = stretch(feats).pow(2).mean()
    loss.backward()
    _sgd_step(params, 1e-2)
    return loss.item()


def use_gather_lerp():
    return _step(GatherLerp, learn_offsets=False)


def use_fractional_gather():
    return _step(FractionalGather, learn_offsets=True)


def use_interpolated_gather():
    return _step(InterpolatedGather, learn_offsets=True)


def _pool_step(sorted_ids):
    torch.manual_seed(0)
    gate = nn.Sequential(nn.Linear(5, 3), nn.ReLU())
    x = torch.randn(9, 5)
    graph_of_node = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2])
    keep = 1.0 - segment_prod(1.0 - torch.sigmoid(gate(x)), graph_of_node, 3, sorted_ids)
    loss = (keep - 0.5).pow(2).sum()
    loss.backward()
    return gate[0].weight.grad.norm().item()


def use_segment_prod():
    return _pool_step(sorted_ids=False)


def use_sorted_segment_prod():
    return _pool_step(sorted_ids=True)
