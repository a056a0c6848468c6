"""Functions that take their process down: a verifier must survive them and say what happened."""

from __future__ import annotations

import ctypes
import os
import time
from typing import Any

import torch


class SegfaultInBackward(torch.autograd.Function):
    """Correct forward; backward dereferences a null pointer (as a broken C++ kernel might)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        ctypes.string_at(0)  # SIGSEGV
        return grad_output * 2


class LoopsForeverInForward(torch.autograd.Function):
    """forward never returns."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        while True:
            time.sleep(0.05)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output


class ExitsInForward(torch.autograd.Function):
    """forward calls os._exit, as a library that aborts might."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        os._exit(7)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output


@torch.library.custom_op("gradverify_tests::exits_in_backward", mutates_args=())
def exits_in_backward(x: torch.Tensor) -> torch.Tensor:
    """A custom op (which gets `compile` by default) whose backward calls os._exit."""
    return x * 2


@exits_in_backward.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _exit_in_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    os._exit(7)


exits_in_backward.register_autograd(_exit_in_backward)
