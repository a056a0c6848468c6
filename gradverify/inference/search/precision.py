"""Inference for kernels: the dtype and device forward accepts, when it refuses float64 on CPU.

A Triton or CUDA kernel's launcher raises for float64 (`supports float16/bfloat16/float32,
got torch.float64`) or for a CPU tensor (`assert x.is_cuda`). When every guess fails so, the
search runs again with its float tensors on CUDA first (where there is one), then in
float32, float16 and bfloat16, and the inputs it finds carry that dtype and device into the
spec. Every trial run goes through `probe.probe`, which casts its arguments with `cast`
while a `working` dtype is set.

Importing this module never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gradverify.inference.choice import TENSOR, Choice, Inference

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

KERNEL_DTYPES = ("float32", "float16", "bfloat16")
NEEDS_CUDA = "needs CUDA (this machine has none)"
# Words in forward's complaint that say it is about the dtype or the device, not the shape.
REFUSALS = ("float64", "double", "dtype", "cuda", "float32", "float16", "bfloat16", "half")

_working: ContextVar[tuple[str, str] | None] = ContextVar("working", default=None)


@contextmanager
def working(device: str, dtype: str) -> Iterator[None]:
    """Trial runs with float64 tensors moved to `device` and cast to `dtype`."""
    token = _working.set((device, dtype))
    try:
        yield
    finally:
        _working.reset(token)


def cast(arguments: Sequence[Any]) -> tuple[Any, ...]:
    """The float64 tensors of `arguments` on the working device, in the working dtype."""
    chosen = _working.get()
    if chosen is None:
        return tuple(arguments)
    import torch

    device, dtype = chosen[0], getattr(torch, chosen[1])
    return tuple(
        a.detach().to(device, dtype).requires_grad_(a.requires_grad)
        if isinstance(a, torch.Tensor) and a.dtype == torch.float64
        else a
        for a in arguments
    )


def candidates() -> list[tuple[str, str]]:
    """(device, dtype) to try, CUDA first where there is one."""
    import torch

    tried = [("cpu", dtype) for dtype in KERNEL_DTYPES]
    if torch.cuda.is_available():
        tried = [("cuda", "float64")] + [("cuda", dtype) for dtype in KERNEL_DTYPES] + tried
    return tried


def in_kernel_precision(
    target: Target, base: Inference, again: Callable[[], Inference], runs: Callable[..., bool]
) -> Inference:
    """`base` (every guess rejected) inferred again on another device or dtype, where
    forward's complaint is about them and forward runs there; else `base`, told that it
    needs CUDA where forward asked for it and this machine has none.

    `again` infers from scratch; `runs(target, choices)` is whether forward runs on them."""
    if _working.get() is not None or base.rejection is None:
        return base
    complaint = base.rejection.lower()
    if not any(word in complaint for word in REFUSALS):
        return base
    for device, dtype in candidates():
        with working(device, dtype):
            if not runs(target, base.choices):
                continue
            found = again()
        if found.rejection is None:
            return written(found, device, dtype, base.rejection)
    if "cuda" in complaint and ("cuda", "float32") not in candidates():
        return replace(base, rejection=f"{NEEDS_CUDA}: {base.rejection}")
    return base


def written(inference: Inference, device: str, dtype: str, complaint: str) -> Inference:
    """The inference with its float64 tensors in `dtype` on `device`, saying why."""
    refused = "CPU" if device != "cpu" else "float64"
    chose = f"{device} {dtype}" if device != "cpu" else dtype
    reason = f"forward refuses {refused} ({complaint.split(':')[0]}), so {chose}"

    def moved(choices: Sequence[Choice]) -> tuple[Choice, ...]:
        return tuple(
            replace(c, dtype=dtype, device=device, reason=f"{c.reason}; {reason}".lstrip("; "))
            if c.kind == TENSOR and c.dtype == "float64"
            else c
            for c in choices
        )

    extra = tuple((label, moved(choices)) for label, choices in inference.extra)
    return replace(inference, choices=moved(inference.choices), extra=extra)
