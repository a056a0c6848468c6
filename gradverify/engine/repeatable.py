"""One case's run, as repeatable on a GPU as on the CPU.

- The global RNGs are seeded per case, CUDA's included, and the caller's states come back
  afterwards: `torch.manual_seed` seeds every CUDA device too, but `fork_rng(devices=[])`
  would leave their states changed for the caller (the pytest plugin, `verify()`).
- TF32 is off while the checks run: a float32 matmul or convolution in TF32 keeps 10 bits
  of mantissa, so a correct float32 kernel would differ from its float64 reference by far
  more than float32 rounding, and the verdict would depend on the card.

CUDA is asked about only when it is already initialised or a case names it: the fork server
imports this module and must never initialise CUDA (its forked workers could not use it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import torch

from gradverify.spec.models import Case, TensorInput

# Where torch has the per-backend precision switches (2.9 and later), they are the ones to
# use: reading the legacy `allow_tf32` after the new API set them raises.
_PRECISION_SWITCHES = (
    ("cuda", "matmul"),
    ("cudnn", "conv"),
    ("cudnn", "rnn"),
)


def cuda_devices(case: Case) -> list[int]:
    """The CUDA devices whose RNG the case may use: those its inputs name, and every one
    where CUDA is already initialised in this process (the user's own code may draw there)."""
    named = {
        _index(item.device)
        for item in case.inputs
        if isinstance(item, TensorInput) and item.device.split(":", 1)[0] == "cuda"
    }
    if not named and not torch.cuda.is_initialized():
        return []
    if not torch.cuda.is_available():
        return []  # the case is skipped (DeviceUnavailable): nothing to save
    present = range(torch.cuda.device_count())
    if torch.cuda.is_initialized():
        named |= set(present)
    # a device beyond the machine's is a usage error (NoSuchDevice) once the inputs are built
    return sorted(index for index in named if index in present)


def _index(device: str) -> int:
    _, _, number = device.partition(":")
    return int(number) if number.isdigit() else 0


@contextmanager
def repeatable(seed: int, devices: Sequence[int] = ()) -> Iterator[None]:
    """Global RNGs seeded with `seed` (CPU and the CUDA `devices`) and TF32 off, all put back
    as they were on leaving."""
    with ExitStack() as stack:
        stack.enter_context(torch.random.fork_rng(devices=list(devices)))
        stack.enter_context(without_tf32())
        torch.manual_seed(seed)  # seeds the CUDA devices too (lazily where uninitialised)
        yield


@contextmanager
def without_tf32() -> Iterator[None]:
    """Float32 matmuls and convolutions in full float32 (no TF32), the settings restored after."""
    switches = _new_switches()
    if switches:
        saved_new = [switch.fp32_precision for switch in switches]
        for switch in switches:
            switch.fp32_precision = "ieee"
        try:
            yield
        finally:
            for switch, value in zip(switches, saved_new, strict=True):
                switch.fp32_precision = value
        return
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _new_switches() -> list[Any]:
    """The backends' `fp32_precision` holders where this torch has them, else []."""
    switches = []
    for backend, operation in _PRECISION_SWITCHES:
        holder = getattr(getattr(torch.backends, backend), operation, None)
        if holder is None or not hasattr(holder, "fp32_precision"):
            return []
        switches.append(holder)
    return switches
