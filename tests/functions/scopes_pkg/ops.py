"""A Function nested in a class body (found, and loaded as `ops:Kernels.Square`), one that
derives from a nested base, and one built inside a function (found, never importable)."""

from __future__ import annotations

from typing import Any

import torch


class Kernels:
    """A namespace class, as packages group their Functions."""

    class Square(torch.autograd.Function):
        """y = x ** 2."""

        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
            (x,) = ctx.saved_tensors
            return 2 * x * grad_output

    class _Tripling(torch.autograd.Function):
        """A base with backward only: a mixin, not a Function to check."""

        @staticmethod
        def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
            return 3 * grad_output

    class Triple(_Tripling):
        """y = 3 x, its backward inherited from the nested base."""

        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            return 3 * x


def make_scale(factor: float) -> type[torch.autograd.Function]:
    """A Function class made per call: nothing at the module's top level names it."""
    from torch.autograd import Function

    class Scale(Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            return factor * x

        @staticmethod
        def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
            return factor * grad_output

    return Scale
