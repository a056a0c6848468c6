"""What a case's tensors need against what this machine has, and allocation failures named.

The estimate is made from the spec before anything is allocated: a case that cannot fit fails
with a message naming its largest argument, and the other cases still run. It is a floor, not
a forecast: each tensor that requires grad counts twice (itself and its gradient, which every
gradient check holds at once), everything else once. Copies the checks make on top (float64
promotions, perturbed inputs) are left out, so a case that might run is never refused.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from gradverify.inputs import torch_dtype
from gradverify.spec.models import Case, TensorInput

_ALLOCATION_MESSAGES = ("can't allocate memory", "not enough memory", "out of memory")


@dataclass(frozen=True)
class ArgumentBytes:
    """The bytes one generated tensor argument takes, and what the case needs for it."""

    index: int
    shape: tuple[int, ...]
    dtype: str
    bytes: int
    needed: int  # with its gradient where it requires grad


def argument_bytes(case: Case) -> list[ArgumentBytes]:
    """Every CPU tensor argument of `case`, sized from its spec (nothing is allocated)."""
    sizes = []
    for index, item in enumerate(case.inputs):
        if not isinstance(item, TensorInput) or item.device.split(":", 1)[0] != "cpu":
            continue  # literals are small; other devices have memory of their own
        shape = tuple(item.dims)
        size = math.prod(shape) * torch_dtype(item.dtype).itemsize
        sizes.append(
            ArgumentBytes(index, shape, item.dtype, size, size * (2 if item.wants_grad else 1))
        )
    return sizes


def machine_memory() -> int | None:
    """Bytes of memory this process may use: the physical memory, or a smaller cgroup limit.

    None where neither can be read (then nothing is refused).
    """
    physical = _meminfo_total() or _sysconf_total()
    limit = _cgroup_limit()
    known = [size for size in (physical, limit) if size]
    return min(known) if known else None


def refusal(case: Case, describe: Callable[[int], str]) -> str | None:
    """Why `case` cannot fit in this machine's memory, or None when it can (or is unknown).

    `describe(index)` names an argument: `argument 0 (x)`.
    """
    available = machine_memory()
    sizes = argument_bytes(case)
    needed = sum(size.needed for size in sizes)
    if available is None or not sizes or needed <= available:
        return None
    largest = max(sizes, key=lambda size: size.bytes)
    shape = "[" + ", ".join(str(dim) for dim in largest.shape) + "]"
    message = f"needs {human_bytes(largest.bytes)} for {describe(largest.index)} {shape}"
    message += f" {largest.dtype}"
    if needed != largest.bytes:
        with_what = "with its gradient" if len(sizes) == 1 else "with the other arguments"
        if len(sizes) > 1 and any(size.needed > size.bytes for size in sizes):
            with_what += " and gradients"
        message += f", {human_bytes(needed)} {with_what}"
    return f"{message}; this machine has {human_bytes(available)}"


def is_allocation_failure(error: BaseException) -> bool:
    """An allocation that failed: MemoryError, torch's OutOfMemoryError, or the CPU allocator."""
    if isinstance(error, MemoryError | torch.OutOfMemoryError):
        return True
    text = str(error)
    return isinstance(error, RuntimeError) and any(m in text for m in _ALLOCATION_MESSAGES)


def out_of_memory(error: BaseException) -> str:
    """`tried to allocate 80 GB; this machine has 24 GB`, as far as the error tells; on a GPU,
    `tried to allocate 20.00 GiB on cuda:0, which has 79.19 GiB in all (2.50 GiB free)`."""
    gpu = _gpu_out_of_memory(str(error))
    if gpu is not None:
        return gpu
    tried = re.search(r"allocate (\d+) bytes", str(error))
    told = (
        f"tried to allocate {human_bytes(int(tried.group(1)))}" if tried else type(error).__name__
    )
    available = machine_memory()
    return told + (f"; this machine has {human_bytes(available)}" if available else "")


_SIZE = r"([\d.]+ [KMGTP]?i?B)"


def _gpu_out_of_memory(text: str) -> str | None:
    """The sizes a CUDA allocator's out-of-memory message gives, in a line; None for others."""
    if "CUDA out of memory" not in text:
        return None
    tried = re.search(rf"Tried to allocate {_SIZE}", text)
    card = re.search(rf"GPU (\d+) has a total capacity of {_SIZE} of which {_SIZE} is free", text)
    told = f"tried to allocate {tried.group(1)}" if tried else "an allocation failed"
    if card is None:
        return f"{told} on the GPU"
    device, total, free = card.groups()
    return f"{told} on cuda:{device}, which has {total} in all ({free} free)"


def human_bytes(size: int) -> str:
    """80 GB, 1.5 GB, 200 MB (powers of 1000, as memory sizes are usually quoted)."""
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value >= 10 else f"{value:.1f} {unit}"
    return f"{size} bytes"


def _meminfo_total() -> int | None:
    try:
        text = Path("/proc/meminfo").read_text(encoding="ascii")
    except OSError:
        return None
    found = re.search(r"^MemTotal:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) * 1024 if found else None


def _sysconf_total() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not on Windows
        return None


def _cgroup_limit() -> int | None:
    """A container's memory limit (cgroup v2, then v1); None when unlimited or unknown."""
    for file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(file).read_text(encoding="ascii").strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:  # v1 writes a huge number for "unlimited"
            return int(text)
    return None
