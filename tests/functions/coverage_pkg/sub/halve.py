"""A custom op in a subpackage: found with the package's Functions."""

from __future__ import annotations

from typing import Any

import torch


@torch.library.custom_op("gradverify_coverage::halve", mutates_args=())
def halve(x: torch.Tensor) -> torch.Tensor:
    """y = x / 2."""
    return x / 2


@halve.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _halve_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    return grad / 2


halve.register_autograd(_halve_backward)
