"""Functions from the issue-10 sweep (new forms as people write them): each docstring says
what it exercised."""

from __future__ import annotations

import torch


def returns_none(x: torch.Tensor) -> None:
    """A plain function that returns nothing: settle's kink probe once raised on it (exit 3)."""
    return None
