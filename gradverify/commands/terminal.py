"""How the terminal the report goes to wants it: colour, width."""

from __future__ import annotations

import os
import sys


def use_color() -> bool:
    from rich.console import Console

    console = Console(file=sys.stdout)
    return console.is_terminal and not console.no_color and "NO_COLOR" not in os.environ


def width() -> int:
    from rich.console import Console

    return max(60, min(Console(file=sys.stdout).width, 140)) if sys.stdout.isatty() else 100
