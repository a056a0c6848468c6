"""Gather / scatter / segment reductions for the graph and bag-of-embeddings layers.

Conventions: ``segment_ids`` / ``index`` are int64 tensors; segment reductions take the
number of segments explicitly (``num_segments``) so that empty trailing segments keep their
row, and every id must be in ``[0, num_segments)``. Nothing is checked on the hot path
beyond what is cheap.
"""

import torch
from torch import nn


def _segment_sum(data, segment_ids, num_segments):
    out = data.new_zeros((num_segments, *data.shape[1:]))
    return out.index_add(0, segment_ids, data)


def _segment_counts(segment_ids, num_segments, dtype):
    return torch.bincount(segment_ids, minlength=num_segments).to(dtype)


class SegmentSum(torch.autograd.Function):
    """Sum (or mean) the rows of ``data`` [N, ...] that share a segment id.

    Args:
        data: [N, ...] float tensor.
        segment_ids: [N] int64, each in ``[0, num_segments)``.
        num_segments: number of output rows.
        reduce: ``"sum"`` or ``"mean"`` (empty segments give zeros).
    """

    @staticmethod
    def forward(ctx, data, segment_ids, num_segments: int, reduce: str = "sum"):
        if reduce not in ("sum", "mean"):
            raise ValueError(f"unknown reduce {reduce!r}")
        out = _segment_sum(data, segment_ids, num_segments)
        ctx.reduce = reduce
        if reduce == "mean":
            counts = _segment_counts(segment_ids, num_segments, data.dtype).clamp_min(1)
            counts = counts.view((-1,) + (1,) * (data.dim() - 1))
            out = out / counts
            ctx.save_for_backward(segment_ids, counts)
        else:
            ctx.save_for_backward(segment_ids)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        if ctx.reduce == "mean":
            segment_ids, counts = ctx.saved_tensors
            grad_out = grad_out / counts
        else:
            (segment_ids,) = ctx.saved_tensors
        return grad_out.index_select(0, segment_ids), None, None, None


class GatherRows(torch.autograd.Function):
    """``src[index]`` along dim 0; ``index`` may repeat rows."""

    @staticmethod
    def forward(ctx, src, index):
        ctx.save_for_backward(index)
        ctx.num_rows = src.size(0)
        return src.index_select(0, index)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        grad_src = grad_out.new_zeros((ctx.num_rows, *grad_out.shape[1:]))
        return grad_src.index_add(0, index, grad_out), None


class RowGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, src, index):
        ctx.save_for_backward(index)
        ctx.src_shape = src.shape
        return src[index]

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        grad_src = grad_out.new_zeros(ctx.src_shape)
        grad_src[index] = grad_out
        return grad_src, None


# ---------------------------------------------------------------------------------------------
# embedding bags


def _bag_of(offsets, n):
    positions = torch.arange(n, device=offsets.device)
    return torch.searchsorted(offsets, positions, right=True) - 1


class EmbeddingBagFunction(torch.autograd.Function):
    """Sum / mean of embedding rows per bag, like ``F.embedding_bag`` with 1-D ``indices``.

    Bag ``b`` holds ``indices[offsets[b]:offsets[b + 1]]``; ``offsets`` starts at 0 and is
    non-decreasing. ``per_sample_weights`` ([len(indices)]) scales each looked-up row; with
    ``mode="mean"`` the weighted sum is divided by the bag size.
    """

    @staticmethod
    def forward(ctx, weight, indices, offsets, per_sample_weights=None, mode: str = "sum"):
        bag = _bag_of(offsets, indices.numel())
        rows = weight.index_select(0, indices)
        if per_sample_weights is not None:
            rows = rows * per_sample_weights.unsqueeze(-1)
        n_bags = offsets.numel()
        out = _segment_sum(rows, bag, n_bags)
        scale = torch.ones(n_bags, dtype=weight.dtype, device=weight.device)
        if mode == "mean":
            scale = 1.0 / _segment_counts(bag, n_bags, weight.dtype).clamp_min(1)
            out = out * scale.unsqueeze(-1)
        ctx.save_for_backward(weight, indices, bag, scale, per_sample_weights)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        weight, indices, bag, scale, psw = ctx.saved_tensors
        g = (grad_out * scale.unsqueeze(-1)).index_select(0, bag)  # [n_indices, D]
        grad_weight = grad_psw = None
        if ctx.needs_input_grad[0]:
            g_rows = g if psw is None else g * psw.unsqueeze(-1)
            grad_weight = torch.zeros_like(weight).index_add(0, indices, g_rows)
        if ctx.needs_input_grad[3]:
            grad_psw = (g * weight.index_select(0, indices)).sum(-1)
        return grad_weight, None, None, grad_psw, None


class FusedEmbeddingBag(torch.autograd.Function):
    """Embedding bag over (indices, offsets); per-sample weights apply in ``sum`` mode."""

    @staticmethod
    def forward(ctx, weight, indices, offsets, per_sample_weights=None, mode: str = "sum"):
        bag = _bag_of(offsets, indices.numel())
        n_bags = offsets.numel()
        rows = weight[indices]
        if mode == "sum":
            if per_sample_weights is not None:
                rows = rows * per_sample_weights[:, None]
            out = _segment_sum(rows, bag, n_bags)
            inv_count = None
        else:
            inv_count = 1.0 / _segment_counts(bag, n_bags, weight.dtype).clamp_min(1)
            out = _segment_sum(rows, bag, n_bags) * inv_count[:, None]
        ctx.mode = mode
        ctx.save_for_backward(weight, indices, bag, inv_count, per_sample_weights)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        weight, indices, bag, inv_count, psw = ctx.saved_tensors
        if ctx.mode == "mean":
            grad_out = grad_out * inv_count[:, None]
        g = grad_out[bag]
        grad_weight = grad_psw = None
        if ctx.needs_input_grad[0]:
            g_rows = g * psw[:, None] if (psw is not None and ctx.mode == "sum") else g
            grad_weight = torch.zeros_like(weight).index_add_(0, indices, g_rows)
        if ctx.needs_input_grad[3]:
            grad_psw = (g * weight[indices]).sum(-1)
        return grad_weight, None, None, grad_psw, None


# ---------------------------------------------------------------------------------------------
# scatter max and sorted segments


class ScatterMax(torch.autograd.Function):
    """Segment-wise max of ``src`` [N, D] into ``num_segments`` rows (empty rows are 0).

    Ties share the gradient equally between the tied elements (the convention of
    ``torch.amax``); ``index`` values must lie in ``[0, num_segments)``.
    """

    @staticmethod
    def forward(ctx, src, index, num_segments: int):
        out = src.new_zeros((num_segments, *src.shape[1:]))
        idx = index.view(-1, *([1] * (src.dim() - 1))).expand_as(src)
        out = out.scatter_reduce(0, idx, src, reduce="amax", include_self=False)
        ctx.save_for_backward(src, index, out)
        ctx.num_segments = num_segments
        return out

    @staticmethod
    def backward(ctx, grad_out):
        src, index, out = ctx.saved_tensors
        is_max = (src == out.index_select(0, index)).to(src.dtype)
        n_max = _segment_sum(is_max, index, ctx.num_segments).clamp_min(1)
        grad_src = is_max * (grad_out / n_max).index_select(0, index)
        return grad_src, None, None


class SortedSegmentSum(torch.autograd.Function):
    """Segment sum for *sorted* ids (as produced by CSR batching).

    ``sorted_ids`` must be non-decreasing and below ``num_segments``; the forward takes
    differences of a running sum at the segment boundaries, the backward repeats each output
    gradient over its (contiguous) segment.
    """

    @staticmethod
    def forward(ctx, data, sorted_ids, num_segments: int):
        counts = torch.bincount(sorted_ids, minlength=num_segments)
        ends = counts.cumsum(0)
        csum = torch.cat([data.new_zeros((1, *data.shape[1:])), data.cumsum(0)], 0)
        out = csum[ends] - csum[ends - counts]
        ctx.save_for_backward(counts)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        (counts,) = ctx.saved_tensors
        return torch.repeat_interleave(grad_out, counts, dim=0), None, None


# ---------------------------------------------------------------------------------------------
# softmax over segments (attention over the incoming edges of each node)


def _segment_softmax(scores, segment_ids, num_segments):
    idx = segment_ids.view(-1, *([1] * (scores.dim() - 1))).expand_as(scores)
    smax = scores.new_full((num_segments, *scores.shape[1:]), float("-inf"))
    smax = smax.scatter_reduce(0, idx, scores, reduce="amax", include_self=True)
    e = torch.exp(scores - smax.index_select(0, segment_ids))
    denom = _segment_sum(e, segment_ids, num_segments)
    return e / denom.index_select(0, segment_ids)


class SegmentSoftmax(torch.autograd.Function):
    """Softmax of ``scores`` [E, H] over the entries that share a segment id, per head."""

    @staticmethod
    def forward(ctx, scores, segment_ids, num_segments: int):
        y = _segment_softmax(scores, segment_ids, num_segments)
        ctx.num_segments = num_segments
        ctx.save_for_backward(y, segment_ids)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        y, segment_ids = ctx.saved_tensors
        gy = grad_out * y
        dot = _segment_sum(gy, segment_ids, ctx.num_segments).index_select(0, segment_ids)
        return gy - y * dot, None, None


class EdgeSoftmax(torch.autograd.Function):
    """Attention weights over the incoming edges of every destination node (GAT style).

    scores: [E, H] per-edge, per-head logits; dst: [E] destination node of each edge.
    """

    @staticmethod
    def forward(ctx, scores, dst, num_nodes: int):
        y = _segment_softmax(scores, dst, num_nodes)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return y * (grad_out - (grad_out * y).sum(-1, keepdim=True)), None, None


# ---------------------------------------------------------------------------------------------


class PooledReplaceGrad(torch.autograd.Function):
    """Segment-sum ``hard`` in the forward pass, but send the gradient to ``soft``.

    Used to pool vector-quantised node codes per graph: the forward value is the pooled
    *quantised* codes (``hard``), while the backward treats the pooling as if it had been
    applied to the encoder outputs (``soft``), like VQGAN's ``ReplaceGrad``. ``soft`` is not
    used by the forward pass on purpose; ``hard`` receives no gradient.
    """

    @staticmethod
    def forward(ctx, hard, soft, segment_ids, num_segments: int):
        ctx.save_for_backward(segment_ids)
        return _segment_sum(hard, segment_ids, num_segments)

    @staticmethod
    def backward(ctx, grad_out):
        (segment_ids,) = ctx.saved_tensors
        return None, grad_out.index_select(0, segment_ids), None, None


# ---------------------------------------------------------------------------------------------
# modules


def segment_mean(data, segment_ids, num_segments):
    return SegmentSum.apply(data, segment_ids, num_segments, "mean")


class GraphReadout(nn.Module):
    """Per-graph readout of node features: ``sum``, ``mean``, ``max`` or ``sorted`` (CSR)."""

    def __init__(self, d_in, d_out, reduce="mean"):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out)
        self.reduce = reduce

    def forward(self, x, batch, num_graphs):
        h = self.lin(x)
        if self.reduce == "max":
            return ScatterMax.apply(h, batch, num_graphs)
        if self.reduce == "sorted":
            return SortedSegmentSum.apply(h, batch, num_graphs)
        return SegmentSum.apply(h, batch, num_graphs, self.reduce)


class GATLayer(nn.Module):
    def __init__(self, d, heads=2, edge_softmax=False):
        super().__init__()
        self.heads = heads
        self.proj = nn.Linear(d, d * heads)
        self.att_src = nn.Parameter(torch.randn(heads, d) * 0.1)
        self.att_dst = nn.Parameter(torch.randn(heads, d) * 0.1)
        self.softmax = EdgeSoftmax if edge_softmax else SegmentSoftmax
        self.gather = GatherRows

    def forward(self, x, src, dst):
        n = x.size(0)
        h = self.proj(x).view(n, self.heads, -1)
        h_src = self.gather.apply(h, src)
        h_dst = self.gather.apply(h, dst)
        logits = nn.functional.leaky_relu(
            (h_src * self.att_src).sum(-1) + (h_dst * self.att_dst).sum(-1), 0.2
        )
        alpha = self.softmax.apply(logits, dst, n)
        msg = alpha.unsqueeze(-1) * h_src
        return SegmentSum.apply(msg, dst, n).mean(1)


class BagEncoder(nn.Module):
    """Bag-of-features encoder (recommendation style) with optional per-item weights."""

    def __init__(self, num_items, d, mode="sum", fused=False):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_items, d) * 0.1)
        self.mode = mode
        self.fn = FusedEmbeddingBag if fused else EmbeddingBagFunction

    def forward(self, indices, offsets, per_sample_weights=None):
        return self.fn.apply(self.weight, indices, offsets, per_sample_weights, self.mode)


class VQGraphPool(nn.Module):
    def __init__(self, d, codebook_size=16):
        super().__init__()
        self.enc = nn.Linear(d, d)
        self.codebook = nn.Parameter(torch.randn(codebook_size, d))

    def forward(self, x, batch, num_graphs):
        z = self.enc(x)
        codes = torch.cdist(z, self.codebook).argmin(-1)
        z_q = self.codebook[codes]
        return PooledReplaceGrad.apply(z_q, z, batch, num_graphs)


# ---------------------------------------------------------------------------------------------
# usage


def _toy_graph():
    # two graphs, 7 nodes, nodes sorted by graph id
    x = torch.randn(7, 6)
    batch = torch.tensor([0, 0, 0, 1, 1, 1, 1])
    src = torch.tensor([0, 1, 2, 0, 3, 4, 5, 6, 6, 4])
    dst = torch.tensor([1, 2, 0, 2, 4, 5, 6, 3, 5, 3])
    return x, batch, src, dst


def _train(module, loss_fn):
    opt = torch.optim.SGD(module.parameters(), lr=0.1)
    loss = loss_fn()
    opt.zero_grad()
    loss.backward()
    opt.step()


def use_segment_sum():
    torch.manual_seed(0)
    x, batch, _, _ = _toy_graph()
    readout = GraphReadout(6, 4, reduce="mean")
    _train(readout, lambda: readout(x, batch, 3).pow(2).sum())  # graph 2 is empty


def use_gather_rows():
    torch.manual_seed(0)
    x, _, src, dst = _toy_graph()
    layer = GATLayer(6)
    _train(layer, lambda: layer(x, src, dst).pow(2).mean())


def use_row_gather():
    torch.manual_seed(0)
    table = nn.Parameter(torch.randn(5, 3))
    tokens = torch.tensor([[0, 2, 2, 4], [1, 0, 3, 3]])
    out = RowGather.apply(table, tokens.flatten()).view(2, 4, 3)
    out.sum(1).pow(2).sum().backward()


def use_embedding_bag_function():
    torch.manual_seed(0)
    enc = BagEncoder(10, 4, mode="mean")
    indices = torch.tensor([1, 3, 3, 7, 0, 9, 2])
    offsets = torch.tensor([0, 3, 5])
    psw = torch.rand(7, requires_grad=True)
    _train(enc, lambda: enc(indices, offsets, psw).pow(2).sum())


def use_fused_embedding_bag():
    torch.manual_seed(0)
    enc = BagEncoder(10, 4, mode="mean", fused=True)
    indices = torch.tensor([1, 3, 3, 7, 0, 9, 2])
    offsets = torch.tensor([0, 3, 5])
    psw = torch.rand(7, requires_grad=True)
    _train(enc, lambda: enc(indices, offsets, psw).pow(2).sum())


def use_scatter_max():
    torch.manual_seed(0)
    x, batch, _, _ = _toy_graph()
    readout = GraphReadout(6, 4, reduce="max")
    _train(readout, lambda: readout(x, batch, 2).sum())


def use_sorted_segment_sum():
    torch.manual_seed(0)
    x, batch, _, _ = _toy_graph()
    readout = GraphReadout(6, 4, reduce="sorted")
    _train(readout, lambda: readout(x, batch, 2).pow(2).sum())


def use_segment_softmax():
    torch.manual_seed(0)
    x, _, src, dst = _toy_graph()
    layer = GATLayer(6, heads=2)
    _train(layer, lambda: layer(x, src, dst).pow(2).mean())


def use_edge_softmax():
    torch.manual_seed(0)
    x, _, src, dst = _toy_graph()
    layer = GATLayer(6, heads=2, edge_softmax=True)
    _train(layer, lambda: layer(x, src, dst).pow(2).mean())


def use_pooled_replace_grad():
    torch.manual_seed(0)
    x, batch, _, _ = _toy_graph()
    pool = VQGraphPool(6)
    _train(pool, lambda: pool(x, batch, 2).pow(2).sum())
