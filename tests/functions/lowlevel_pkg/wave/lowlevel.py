"""A third lowlevel.py, never called: it only makes the bare name ambiguous."""

from __future__ import annotations

import torch


def unused(x: torch.Tensor) -> torch.Tensor:
    return x
