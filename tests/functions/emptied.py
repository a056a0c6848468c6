"""Functions that slice with literals, meant for sizes above them: on a guessed size at or
below the literal a part comes out empty and the Function computes something degenerate
(tests/inference/test_emptied.py). Zero-config must choose a size on which no slice
empties: the correct twin passes there, the buggy twin fails."""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd import Function

HEAD = 4  # the head is the first HEAD elements of the last dim, the tail the rest


class HeadScaledByTail(Function):
    """y = head * sum(tail), head = x[..., :4], tail = x[..., 4:]: on a last dim of 4 the
    tail is empty, y is 0 and so is every gradient."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        head, tail = x[..., :HEAD], x[..., HEAD:]
        ctx.save_for_backward(x)  # the input, so that backward's graph reaches it
        return head * tail.sum(-1, keepdim=True)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        head, tail = x[..., :HEAD], x[..., HEAD:]
        grad_head = grad * tail.sum(-1, keepdim=True)
        grad_tail = (grad * head).sum(-1, keepdim=True).expand_as(tail)
        return torch.cat([grad_head, grad_tail], dim=-1)


class HeadScaledByTailMeanTail(HeadScaledByTail):
    """The tail's gradient averages over the head where it sums: right only for a head of
    one element, and unseen where the tail is empty."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        head, tail = x[..., :HEAD], x[..., HEAD:]
        grad_head = grad * tail.sum(-1, keepdim=True)
        grad_tail = (grad * head).mean(-1, keepdim=True).expand_as(tail)
        return torch.cat([grad_head, grad_tail], dim=-1)


class SplitProduct(Function):
    """y = prod of the two pieces' sums, the pieces by `tensor_split` at 4 (no `[]` here):
    on a last dim of 4 the second piece is empty."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        first, second = torch.tensor_split(x, [HEAD], dim=-1)
        ctx.save_for_backward(x)
        return first.sum(-1) * second.sum(-1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        first, second = torch.tensor_split(x, [HEAD], dim=-1)
        grad_first = (grad * second.sum(-1)).unsqueeze(-1).expand_as(first)
        grad_second = (grad * first.sum(-1)).unsqueeze(-1).expand_as(second)
        return torch.cat([grad_first, grad_second], dim=-1)


class FirstScalesRest(Function):
    """y = x[..., :1] * x[..., 1:]: nothing empties on any guessed size of 2 or more, so
    the guess stays what it was."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x[..., :1] * x[..., 1:]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        first, rest = x[..., :1], x[..., 1:]
        return torch.cat([(grad * rest).sum(-1, keepdim=True), grad * first], dim=-1)


class BeyondEveryGuess(Function):
    """y = x * (1 + sum(x[..., 50:])): the slice is empty on every size inference guesses,
    so the first guess is kept as it was."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * (1 + x[..., 50:].sum(-1, keepdim=True))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        scale = 1 + x[..., 50:].sum(-1, keepdim=True)
        tail = torch.zeros_like(x)
        tail[..., 50:] = (grad * x).sum(-1, keepdim=True)
        return grad * scale + tail


class HeadScaledByTailPeak(Function):
    """y = head * max(tail), head = x[..., :5], tail = x[..., 5:]: forward raises on an
    empty tail, which every layout and rank inference tries has (no last dim above 5)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x[..., :5] * x[..., 5:].amax(-1, keepdim=True)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        head, tail = x[..., :5], x[..., 5:]
        peak, where = tail.max(-1, keepdim=True)
        at_peak = torch.zeros_like(tail).scatter(-1, where, 1.0)
        return torch.cat([grad * peak, at_peak * (grad * head).sum(-1, keepdim=True)], dim=-1)
