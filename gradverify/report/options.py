"""Options every renderer receives."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RenderOptions:
    color: bool = False
    width: int = 100
    quiet: bool = False  # only what failed or warned, and the summary
