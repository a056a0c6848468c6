"""Seeded random values placed on the device of the values they go with.

Every seeded generator gradverify makes is a CPU generator, and the values are drawn on the
CPU and then moved: one seed gives the same grad_outputs, tangents and directions on every
device, so a case on CUDA checks what its CPU twin checks. Drawing on the CPU by name (not
on the default device) keeps a `torch.set_default_device` of the user's out of it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def generator(seed: int) -> torch.Generator:
    """A CPU generator seeded with `seed` (taken modulo 2⁶³)."""
    return torch.Generator(device="cpu").manual_seed(seed % (2**63))


def normal(
    shape: Sequence[int],
    generator: torch.Generator,
    device: torch.device | str,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """Standard normal values drawn in `dtype` by the CPU `generator`, placed on `device`."""
    drawn = torch.randn(tuple(shape), generator=generator, dtype=dtype, device="cpu")
    return drawn.to(device)


def uniform(
    shape: Sequence[int],
    generator: torch.Generator,
    device: torch.device | str,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """Values uniform in [0, 1) drawn in `dtype` by the CPU `generator`, placed on `device`."""
    drawn = torch.rand(tuple(shape), generator=generator, dtype=dtype, device="cpu")
    return drawn.to(device)


def signs(
    shape: Sequence[int], generator: torch.Generator, device: torch.device | str
) -> torch.Tensor:
    """±1 with even odds, float64, drawn by the CPU `generator`, placed on `device`."""
    drawn = torch.randint(0, 2, tuple(shape), generator=generator, device="cpu")
    return drawn.to(device, torch.float64) * 2 - 1
