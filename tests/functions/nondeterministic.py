"""Backward passes that differ from run to run, as atomic adds on a GPU make them, emulated
on the CPU (tests/device/test_nondeterminism.py).

`RowsAtomicNoise` is correct: each sum is off by a few units in its last place, differently
each run, as `index_add_` on CUDA sums in whatever order the threads arrive.
`RowsRacyWrites` assigns where it must accumulate, in another order each run (as racing
threads would): a row picked several times keeps one pick's gradient, a different one each run.
"""

from __future__ import annotations

from typing import Any

import torch

# The relative size of the emulated reordering error: a few float64 units in the last place.
ROUNDING = 1e-15


class RowsAtomicNoise(torch.autograd.Function):
    """The rows of a table [V, D] at index [N] (repeats allowed), with a backward that
    accumulates them correctly but rounds differently each run."""

    @staticmethod
    def forward(ctx: Any, table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(index)
        ctx.rows = table.shape[0]
        return table.index_select(0, index)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (index,) = ctx.saved_tensors
        grad_table = grad_output.new_zeros((ctx.rows, *grad_output.shape[1:]))
        grad_table.index_add_(0, index, grad_output)
        order = 1 + ROUNDING * torch.randn_like(grad_table)  # the order the adds came in
        return grad_table * order, None


class RowsRacyWrites(RowsAtomicNoise):
    """Bug: `grad_table[index] = grad_output`, its writes racing: the last one to land wins."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (index,) = ctx.saved_tensors
        grad_table = grad_output.new_zeros((ctx.rows, *grad_output.shape[1:]))
        landing = torch.randperm(index.numel(), device=index.device)
        grad_table[index[landing]] = grad_output[landing]
        return grad_table, None
