"""Functions whose contract the code states in words or in forward's error: an integer
index by its docstring (`segment_ids: [N] int64, each in [0, num_segments)`), a count that
ends an index range, and an index forward asks for by the error it raises on floats."""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd import Function


def _scatter_sum(data: torch.Tensor, ids: torch.Tensor, count: int) -> torch.Tensor:
    return data.new_zeros((count, *data.shape[1:])).index_add(0, ids, data)


class SegmentTotal(Function):
    """Sum the rows of ``data`` that share a segment id.

    Args:
        data: [N, D] float tensor.
        segment_ids: [N] int64, each in ``[0, num_segments)``.
        num_segments: number of output rows.
    """

    @staticmethod
    def forward(ctx: Any, data: torch.Tensor, segment_ids: torch.Tensor, num_segments: int) -> Any:
        ctx.save_for_backward(segment_ids)
        return _scatter_sum(data, segment_ids, num_segments)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        (segment_ids,) = ctx.saved_tensors
        return grad.index_select(0, segment_ids), None, None


class SegmentTotalHalved(SegmentTotal):
    """The same sum; backward halves the gradient (a seeded bug)."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        (segment_ids,) = ctx.saved_tensors
        return grad.index_select(0, segment_ids) / 2, None, None


class ScatterRows(Function):
    @staticmethod
    def forward(ctx: Any, src: torch.Tensor, index: torch.Tensor) -> Any:
        out = src.new_zeros(src.shape)
        spread = index.view(-1, *([1] * (src.dim() - 1))).expand_as(src)
        ctx.save_for_backward(spread)
        return out.scatter_add(0, spread, src)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        (spread,) = ctx.saved_tensors
        return grad.gather(0, spread), None


class PairModulus(Function):
    """|z| of complex numbers stored as (real, imaginary) pairs along the last axis: forward
    reads x[..., 0] and x[..., 1], so the axis is two wide."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> Any:
        output = (x[..., 0] * x[..., 0] + x[..., 1] * x[..., 1]).sqrt()
        ctx.save_for_backward(x, output)
        return output

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        x, output = ctx.saved_tensors
        return x * (grad / output).unsqueeze(-1)
