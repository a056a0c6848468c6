"""Large elementwise Functions for randomized mode: a correct Sigmoid and one wrong element.

Every forward call is counted in `FORWARD_CALLS` so that tests can assert how many forward
evaluations localization needed.
"""

from __future__ import annotations

from typing import Any

import torch

# The flat index whose gradient SigmoidWrongAtOneElement gets wrong (x2): element [123, 457]
# of a [1000, 1000] input.
WRONG_INDEX = 123_457

FORWARD_CALLS = {"count": 0}


def reset_forward_calls() -> None:
    FORWARD_CALLS["count"] = 0


class Sigmoid(torch.autograd.Function):
    """y = 1 / (1 + exp(-x)), elementwise: correct."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        FORWARD_CALLS["count"] += 1
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return grad_output * y * (1 - y)


class SigmoidWrongAtOneElement(torch.autograd.Function):
    """Sigmoid whose gradient is doubled at the one flat index WRONG_INDEX (modulo its size)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        FORWARD_CALLS["count"] += 1
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        grad = grad_output * y * (1 - y)
        flat = grad.reshape(-1).clone()
        index = WRONG_INDEX % flat.numel()
        flat[index] = flat[index] * 2
        return flat.reshape(grad.shape)


class ScaledSum(torch.autograd.Function):
    """y = sum(w * x) with x [n] and w [n]: a scalar output; correct, to both arguments."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        FORWARD_CALLS["count"] += 1
        ctx.save_for_backward(x, w)
        return (w * x).sum()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return grad_output * w, grad_output * x


# ScaleLeakingGradient also sends the gradient of output element LEAK_FROM to input element
# LEAK_TO (flat indices): a wrong entry off the diagonal, in row LEAK_FROM, column LEAK_TO.
LEAK_FROM, LEAK_TO = 5_000, 9_000


class ScaleLeakingGradient(torch.autograd.Function):
    """y = 3x elementwise, whose backward leaks one gradient element to another input."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        FORWARD_CALLS["count"] += 1
        return 3 * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        flat = (3 * grad_output).reshape(-1).clone()
        flat[LEAK_TO] = flat[LEAK_TO] + grad_output.reshape(-1)[LEAK_FROM]
        return flat.reshape(grad_output.shape)
