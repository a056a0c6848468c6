"""A backward that accumulates with index_add_, which CUDA does with atomic adds: the order
of the adds, and so the last bits of each sum, change from run to run. For bench/gpu.py.

`EmbeddingRows` is correct; `EmbeddingRowsLosesRepeats` assigns where it must accumulate, so
a row picked several times keeps the gradient of one pick, not their sum.
"""

from __future__ import annotations

from typing import Any

import torch


class EmbeddingRows(torch.autograd.Function):
    """The rows of a table [V, D] at index [N] (repeats allowed): an embedding lookup."""

    @staticmethod
    def forward(ctx: Any, table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(index)
        ctx.rows = table.shape[0]
        return table.index_select(0, index)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (index,) = ctx.saved_tensors
        grad_table = grad_output.new_zeros((ctx.rows, *grad_output.shape[1:]))
        return grad_table.index_add_(0, index, grad_output), None


class EmbeddingRowsLosesRepeats(EmbeddingRows):
    """Bug: `grad_table[index] = grad_output` keeps one of a repeated row's gradients."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (index,) = ctx.saved_tensors
        grad_table = grad_output.new_zeros((ctx.rows, *grad_output.shape[1:]))
        grad_table[index] = grad_output
        return grad_table, None
