"""Options every renderer receives."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RenderOptions:
    color: bool = False
    width: int = 100
    quiet: bool = False  # only what failed, and the summary
    verbose: bool = False  # every check of every case (text: a table per case)
