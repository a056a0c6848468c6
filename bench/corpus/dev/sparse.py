"""Sparse-dense products for graph layers and pruned networks.

Sparse matrices are kept in COO form as an ``edge_index`` ([2, nnz] int64, row then column)
and a ``values`` vector, so the values can carry a gradient (learned edge weights,
attention coefficients) without going through torch.sparse.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class SpMM(torch.autograd.Function):
    """out = S @ dense, S the [num_rows, n] COO matrix given by (edge_index, values).

    Args:
        edge_index: [2, nnz] int64, rows in [0, num_rows), columns in [0, n); duplicates add.
        values: [nnz].
        dense: [n, k].
        num_rows: number of rows of S.
    """

    @staticmethod
    def forward(
        ctx: Any,
        edge_index: torch.Tensor,
        values: torch.Tensor,
        dense: torch.Tensor,
        num_rows: int,
    ) -> torch.Tensor:
        row, col = edge_index
        msg = values.unsqueeze(-1) * dense.index_select(0, col)
        out = dense.new_zeros(num_rows, dense.shape[1]).index_add_(0, row, msg)
        ctx.save_for_backward(edge_index, values, dense)
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor):
        edge_index, values, dense = ctx.saved_tensors
        row, col = edge_index
        g_rows = grad_out.index_select(0, row)
        grad_values = grad_dense = None
        if ctx.needs_input_grad[1]:
            grad_values = (g_rows * dense.index_select(0, col)).sum(-1)
        if ctx.needs_input_grad[2]:
            grad_dense = torch.zeros_like(dense).index_add_(0, col, values.unsqueeze(-1) * g_rows)
        return None, grad_values, grad_dense, None


class GraphPropagate(torch.autograd.Function):
    """Message passing h' = A h over a graph with N nodes and learned edge weights.

    edge_index [2, E] (source, target) int64 in [0, N); edge_weight [E]; h [N, F].
    Messages flow from source to target: h'[t] = sum over edges (s, t) of w * h[s].
    """

    @staticmethod
    def forward(ctx: Any, edge_index: torch.Tensor, edge_weight: torch.Tensor, h: torch.Tensor):
        src, dst = edge_index[0], edge_index[1]
        out = torch.zeros_like(h)
        out.index_add_(0, dst, edge_weight[:, None] * h[src])
        ctx.save_for_backward(edge_index, edge_weight, h)
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor):
        edge_index, edge_weight, h = ctx.saved_tensors
        src, dst = edge_index[0], edge_index[1]
        grad_w = (grad_out[dst] * h[src]).sum(1)
        # transpose propagation: gradient flows back along the edges
        grad_h = torch.zeros_like(h)
        grad_h.index_add_(0, dst, edge_weight[:, None] * grad_out[src])
        return None, grad_w, grad_h


class MaskedLinear(torch.autograd.Function):
    """y = x @ (W * mask)^T + b for pruned layers; ``mask`` is a bool tensor shaped like W.

    Pruned weights (mask False) get a zero gradient so they stay pruned under any optimiser
    (momentum or weight decay included).
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, mask: torch.Tensor, bias=None):
        ctx.save_for_backward(x, weight, mask)
        ctx.has_bias = bias is not None
        out = x @ (weight * mask).T
        return out + bias if bias is not None else out

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor):
        x, weight, mask = ctx.saved_tensors
        grad_x = grad_out @ (weight * mask)
        grad_w = (grad_out.T @ x) * mask
        grad_b = grad_out.sum(0) if ctx.has_bias else None
        return grad_x, grad_w, None, grad_b


class SparseMaskedMatmul(torch.autograd.Function):
    # (a @ b) restricted to the pattern of mask, the output stored dense with zeros elsewhere
    # a: [M, K], b: [K, N], mask: [M, N] bool
    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor, mask: torch.Tensor):
        ctx.save_for_backward(a, b, mask)
        return torch.where(mask, a @ b, 0.0)

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor):
        a, b, mask = ctx.saved_tensors
        g = grad_out * mask
        return g @ b.T, a.T @ grad_out, None


class SampledMatmul(torch.autograd.Function):
    """SDDMM: the entries of a @ b at the nonzeros of ``mask`` only, scattered into a dense
    [M, N] output (zeros elsewhere). Does O(nnz * K) work instead of O(M * N * K).

    a: [M, K]; b: [K, N]; mask: [M, N] bool, constant.
    """

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor, mask: torch.Tensor):
        rows, cols = mask.nonzero(as_tuple=True)
        vals = (a[rows] * b[:, cols].T).sum(-1)
        out = a.new_zeros(mask.shape).index_put_((rows, cols), vals)
        ctx.save_for_backward(a, b, rows, cols)
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor):
        a, b, rows, cols = ctx.saved_tensors
        g = grad_out[rows, cols].unsqueeze(-1)  # [nnz, 1]
        grad_a = torch.zeros_like(a).index_add_(0, rows, g * b[:, cols].T)
        grad_b = torch.zeros_like(b).index_add_(1, cols, (g * a[rows]).T)
        return grad_a, grad_b, None


# --------------------------------------------------------------------------------------
# Modules


class GCNLayer(nn.Module):
    def __init__(self, in_features: int, out_features: int, propagate: str = "spmm") -> None:
        super().__init__()
        self.lin = nn.Linear(in_features, out_features)
        self.propagate = propagate

    def forward(self, h: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor):
        h = self.lin(h)
        if self.propagate == "spmm":
            return SpMM.apply(edge_index, edge_weight, h, h.shape[0])
        return GraphPropagate.apply(edge_index, edge_weight, h)


class PrunedLinear(nn.Linear):
    def __init__(self, in_features: int, out_features: int, sparsity: float = 0.5) -> None:
        super().__init__(in_features, out_features)
        self.register_buffer("mask", torch.rand_like(self.weight) >= sparsity)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return MaskedLinear.apply(x, self.weight, self.mask, self.bias)


def _random_graph(nodes: int, edges: int) -> tuple[torch.Tensor, torch.Tensor]:
    edge_index = torch.randint(0, nodes, (2, edges))
    return edge_index, torch.rand(edges)


# --------------------------------------------------------------------------------------
# Usage


def _sgd_step(params, lr: float) -> None:
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p -= lr * p.grad


def use_sp_mm() -> None:
    torch.manual_seed(0)
    edge_index, w = _random_graph(10, 30)
    w.requires_grad_()
    layer = GCNLayer(6, 4, "spmm")
    layer(torch.randn(10, 6), edge_index, w).relu().sum().backward()
    assert w.grad is not None


def use_graph_propagate() -> None:
    torch.manual_seed(0)
    edge_index, w = _random_graph(10, 30)
    w.requires_grad_()
    layer = GCNLayer(6, 4, "propagate")
    layer(torch.randn(10, 6), edge_index, w).relu().sum().backward()
    assert w.grad is not None


def use_masked_linear() -> None:
    torch.manual_seed(0)
    layer = PrunedLinear(12, 6, sparsity=0.7)
    x, y = torch.randn(8, 12), torch.randn(8, 6)
    nn.functional.mse_loss(layer(x), y).backward()
    _sgd_step(layer.parameters(), 0.1)


def use_sparse_masked_matmul() -> None:
    torch.manual_seed(0)
    q = torch.randn(8, 4, requires_grad=True)
    k = torch.randn(4, 8, requires_grad=True)
    local = (torch.arange(8)[:, None] - torch.arange(8)[None]).abs() <= 2
    scores = SparseMaskedMatmul.apply(q, k, local)
    scores.masked_fill(~local, float("-inf")).softmax(-1).pow(2).sum().backward()
    assert k.grad is not None


def use_sampled_matmul() -> None:
    torch.manual_seed(0)
    x = torch.randn(12, 5, requires_grad=True)
    edge_mask = torch.rand(12, 12) < 0.3
    logits = SampledMatmul.apply(x, x.T, edge_mask)
    torch.sigmoid(logits[edge_mask]).log().neg().mean().backward()
    assert x.grad is not None
