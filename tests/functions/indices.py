"""Functions for index tensors inference must fit (issue 23): a segment sum whose ids pair
with its values and whose count covers them, and a gather whose backward loses repeated
indices. Each buggy one has a correct twin that must pass."""

from __future__ import annotations

from typing import Any

import torch


class SegmentSum(torch.autograd.Function):
    """The sum of the rows of `values` in each of `num_segments` segments: row i goes to
    segment segment_ids[i]."""

    @staticmethod
    def forward(
        ctx: Any, values: torch.Tensor, segment_ids: torch.Tensor, num_segments: int
    ) -> torch.Tensor:
        ctx.save_for_backward(segment_ids)
        out = values.new_zeros((num_segments, *values.shape[1:]))
        return out.index_add_(0, segment_ids, values)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (segment_ids,) = ctx.saved_tensors
        return grad[segment_ids], None, None


class SegmentSumFirstRow(SegmentSum):
    """SegmentSum whose backward gives every row the gradient of segment 0."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (segment_ids,) = ctx.saved_tensors
        return grad[torch.zeros_like(segment_ids)], None, None


class Gather(torch.autograd.Function):
    """The rows of a table w [V, D] at idx; backward accumulates with index_add."""

    @staticmethod
    def forward(ctx: Any, w: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(idx)
        ctx.rows = w.shape[0]
        return torch.nn.functional.embedding(idx, w)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None]:
        (idx,) = ctx.saved_tensors
        gw = g.new_zeros((ctx.rows, *g.shape[1:]))
        return gw.index_add(0, idx, g), None


class GatherLosesRepeats(Gather):
    """Gather whose backward assigns where it must accumulate: a repeated index keeps one
    gradient of its rows, not their sum."""

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None]:
        (idx,) = ctx.saved_tensors
        gw = g.new_zeros((ctx.rows, *g.shape[1:]))
        gw[idx] = g
        return gw, None


class SegmentSumIndexPut(torch.autograd.Function):
    """SegmentSum written with index_put_ and accumulate=True."""

    @staticmethod
    def forward(
        ctx: Any, values: torch.Tensor, segment_ids: torch.Tensor, num_segments: int
    ) -> torch.Tensor:
        ctx.save_for_backward(segment_ids)
        out = torch.zeros((num_segments, *values.shape[1:]), dtype=values.dtype)
        return out.index_put_((segment_ids,), values, accumulate=True)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (segment_ids,) = ctx.saved_tensors
        return grad[segment_ids], None, None
