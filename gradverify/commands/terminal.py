"""How the terminal the report goes to wants it: colour, width; the plea after a bug in
gradverify."""

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


def tell(text: str, stream: str = "stderr") -> None:
    """`text` written to sys.stdout or sys.stderr and flushed at once, so that what goes
    to each stream keeps its order and every reader sees it (click 8.2.0's CliRunner, for
    one, captures only what was flushed)."""
    handle = sys.stderr if stream == "stderr" else sys.stdout
    handle.write(text)
    handle.flush()


def plea(where: str = "") -> str:
    """What stderr says after a bug in gradverify (exit 3); `where` follows the version."""
    from gradverify._version import __version__

    return (
        f"internal error in gradverify {__version__}{where}: this is a bug in gradverify, not "
        "in your code. Please report it with the traceback above."
    )
