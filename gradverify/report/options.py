"""Options every renderer receives."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RenderOptions:
    color: bool = False
    width: int = 100
    quiet: bool = False  # only what failed, and the summary
    verbose: bool = False  # every check of every case (text: a table per case)
    # text: the most lines a report takes, its details cut to fit (None, or verbose: all)
    max_lines: int | None = 300
