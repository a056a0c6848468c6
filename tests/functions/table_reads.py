"""Functions that read a table at an index and pair the rows read with another tensor of
the index's length (a linear interpolation, a scaled lookup), and segment means: each buggy
one beside its correct twin (issue 23, tests/inference/test_indices.py and
tests/checks/test_grouped_hints.py). No docstring gives a shape: inference reads them from
the code alone."""

from __future__ import annotations

from typing import Any

import torch


class Interp1d(torch.autograd.Function):
    """Linear interpolation in a 1-D table between idx and idx + 1 at frac."""

    @staticmethod
    def forward(ctx: Any, table: torch.Tensor, idx: torch.Tensor, frac: torch.Tensor) -> Any:
        upper = (idx + 1).clamp(max=table.shape[0] - 1)
        ctx.save_for_backward(table, idx, upper, frac)
        return table[idx] * (1 - frac) + table[upper] * frac

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None, torch.Tensor]:
        table, idx, upper, frac = ctx.saved_tensors
        grad_table = torch.zeros_like(table)
        grad_table.index_add_(0, idx, g * (1 - frac))
        grad_table.index_add_(0, upper, g * frac)
        return grad_table, None, g * (table[upper] - table[idx])


class Interp1dLosesRepeats(Interp1d):
    """Interp1d whose backward adds through an indexed assignment: `t[idx] += v` keeps one
    of the contributions of a repeated index."""

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None, torch.Tensor]:
        table, idx, upper, frac = ctx.saved_tensors
        grad_table = torch.zeros_like(table)
        grad_table[idx] += g * (1 - frac)
        grad_table[upper] += g * frac
        return grad_table, None, g * (table[upper] - table[idx])


class ScaledLookup(torch.autograd.Function):
    """The entries of a table at idx (index_select), each times its own weight."""

    @staticmethod
    def forward(ctx: Any, table: torch.Tensor, idx: torch.Tensor, weight: torch.Tensor) -> Any:
        ctx.save_for_backward(table, idx, weight)
        return table.index_select(0, idx) * weight

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None, torch.Tensor]:
        table, idx, weight = ctx.saved_tensors
        grad_table = torch.zeros_like(table).index_add_(0, idx, g * weight)
        return grad_table, None, g * table.index_select(0, idx)


class ScaledLookupLosesRepeats(ScaledLookup):
    """ScaledLookup whose backward assigns where it must accumulate."""

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None, torch.Tensor]:
        table, idx, weight = ctx.saved_tensors
        grad_table = torch.zeros_like(table)
        grad_table[idx] = g * weight
        return grad_table, None, g * table.index_select(0, idx)


class SegmentMean(torch.autograd.Function):
    """The mean of the rows of values in each of num_segments segments."""

    @staticmethod
    def forward(
        ctx: Any, values: torch.Tensor, segment_ids: torch.Tensor, num_segments: int
    ) -> torch.Tensor:
        out = values.new_zeros((num_segments, values.shape[1]))
        out.index_add_(0, segment_ids, values)
        counts = torch.bincount(segment_ids, minlength=num_segments).clamp(min=1)
        ctx.save_for_backward(segment_ids, counts)
        return out / counts.unsqueeze(1).to(values.dtype)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        segment_ids, counts = ctx.saved_tensors
        return g[segment_ids] / counts[segment_ids].unsqueeze(1).to(g.dtype), None, None


class SegmentMeanNoCount(SegmentMean):
    """SegmentMean whose backward forgets to divide by each segment's count."""

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        segment_ids, _ = ctx.saved_tensors
        return g[segment_ids], None, None


class RowScaleWrong(torch.autograd.Function):
    """x times the per-row weight w[:, None]; backward's gradient of x is off by a factor
    that differs from row to row (w², not w): no missing count, but a wrong factor."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x * w[:, None]

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return g * (w * w)[:, None], (g * x).sum(1)


class ScaleByScalar(torch.autograd.Function):
    """x times a 0-d s: forward raises for s of any other shape (the 0-d repair's reason
    must name what forward raised with)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, s)
        return x * s.reshape(())

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, s = ctx.saved_tensors
        return g * s, (g * x).sum()


class SegmentMeanTimesValues(SegmentMean):
    """SegmentMean whose backward multiplies by the values: off by a factor that differs
    within each segment, no missing count."""

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        segment_ids, counts = ctx.saved_tensors
        scale = torch.arange(1, segment_ids.numel() + 1, dtype=g.dtype, device=g.device)
        per_row = counts[segment_ids].unsqueeze(1).to(g.dtype) / scale.unsqueeze(1)
        return g[segment_ids] / per_row, None, None


class LookupTimesScalar(torch.autograd.Function):
    """The entries of a table at idx times one 0-d scale: no vector to pair idx with."""

    @staticmethod
    def forward(ctx: Any, table: torch.Tensor, idx: torch.Tensor, scale: torch.Tensor) -> Any:
        ctx.save_for_backward(table, idx, scale)
        return table[idx] * scale

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None, torch.Tensor]:
        table, idx, scale = ctx.saved_tensors
        grad_table = torch.zeros_like(table).index_add_(0, idx, g * scale)
        return grad_table, None, (g * table[idx]).sum()


class GatherTimesWeight(ScaledLookup):
    """ScaledLookup read with gather (a method) and torch.take (a function)."""

    @staticmethod
    def forward(ctx: Any, table: torch.Tensor, idx: torch.Tensor, weight: torch.Tensor) -> Any:
        ctx.save_for_backward(table, idx, weight)
        return (table.gather(0, idx) + torch.take(table, idx)) * weight / 2
