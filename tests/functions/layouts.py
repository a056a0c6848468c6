"""Functions for the `layouts` check and for grad_outputs left undefined.

Each is right for the declared layout (contiguous, every argument requiring grad) and,
for the buggy ones, wrong or crashing in another layout.
"""

from __future__ import annotations

from typing import Any

import torch


class RowMajorKernel(torch.autograd.Function):
    """y = 2x, computed as a C++/CUDA kernel would: reading the raw memory as row-major.

    `as_strided` with row-major strides ignores x's own strides, so a non-contiguous x
    gives its elements in the wrong places (here a transposed layout).
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        strides = [1] * x.dim()
        for dim in range(x.dim() - 2, -1, -1):
            strides[dim] = strides[dim + 1] * x.shape[dim + 1]
        return x.as_strided(x.shape, strides, x.storage_offset()) * 2

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output * 2


class UnassignedWhenNotNeeded(torch.autograd.Function):
    """y = x * w whose backward leaves grad_w unassigned when w needs no gradient.

    Bug: with w's requires_grad off, backward raises UnboundLocalError.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        grad_x = grad_output * w
        if ctx.needs_input_grad[1]:
            grad_w = grad_output * x
        return grad_x, grad_w  # grad_w is unbound when w needs no gradient


class WrongFastPath(torch.autograd.Function):
    """y = x * w whose "fast path" for a frozen w forgets to multiply x's gradient by w.

    Bug: with w's requires_grad off, the gradient of x is grad_output instead of grad_output * w.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(
        ctx: Any, grad_output: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        x, w = ctx.saved_tensors
        if not ctx.needs_input_grad[1]:
            return grad_output, None
        return grad_output * w, grad_output * x


class IgnoresNeedsInputGrad(torch.autograd.Function):
    """y = x * w whose backward computes both gradients whatever ctx.needs_input_grad says.

    Correct, only wasteful: a frozen w still gets a gradient computed, then dropped.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return grad_output * w, grad_output * x


class RandomMask(torch.autograd.Function):
    """y = x * mask * 2 with a random mask, as dropout: correct, and random in every layout.

    `torch.rand_like` keeps x's strides, so a non-contiguous x puts the same random numbers
    at other elements: the outputs differ from the declared layout's, without any bug.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        mask = (torch.rand_like(x) > 0.5).to(x.dtype)
        ctx.save_for_backward(mask)
        return x * mask * 2

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (mask,) = ctx.saved_tensors
        return grad_output * mask * 2


class UnmaterializedCrashes(torch.autograd.Function):
    """(2x, 3x) with ctx.set_materialize_grads(False), whose backward assumes both grads.

    Bug: when only one output is used, the other grad_output is None and backward raises.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx: Any, grad_a: torch.Tensor, grad_b: torch.Tensor) -> torch.Tensor:
        return grad_a * 2 + grad_b * 3


class UnmaterializedHandlesNone(torch.autograd.Function):
    """(2x, 3x) with ctx.set_materialize_grads(False), whose backward skips None grads."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(
        ctx: Any, grad_a: torch.Tensor | None, grad_b: torch.Tensor | None
    ) -> torch.Tensor | None:
        grad_x = None
        if grad_a is not None:
            grad_x = grad_a * 2
        if grad_b is not None:
            grad_x = grad_b * 3 if grad_x is None else grad_x + grad_b * 3
        return grad_x


class StridedPathRoundsDifferently(torch.autograd.Function):
    """y = x.sum(-1), with a generic path for non-contiguous x that adds element by element.

    Correct: as kernels with a fast path for contiguous memory do, the two paths round
    differently, which shows in a low-precision dtype (a few units of bfloat16's precision).
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.input_shape = x.shape
        if x.is_contiguous():
            return x.sum(-1)
        total = x[..., 0].clone()
        for index in range(1, x.shape[-1]):
            total = total + x[..., index]  # rounded to x's dtype at every step
        return total

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output.unsqueeze(-1).expand(ctx.input_shape)
