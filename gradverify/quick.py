"""The answers the console script gives before importing the CLI (typer, rich, pydantic).

pre-commit runs `gradverify check --changed-files FILES` on every commit; most commits touch
no spec and no Python file, and the answer is then a note and an empty summary. This module
gives that answer, and `--version`, in a few hundredths of a second. It answers only when it
is sure to print exactly what the CLI would (the same text, colours and exit code); anything
else (a Python file, a spec in the spec paths, another flag, a configuration it cannot take
as valid, a terminal too narrow for one line) returns None and the CLI runs as usual.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from gradverify._version import __version__
from gradverify.exitcodes import ExitCode

# report.text's styles, as rich writes them with the standard colour system.
_CYAN, _BOLD_YELLOW, _GREEN, _RESET = "\x1b[36m", "\x1b[1;33m", "\x1b[32m", "\x1b[0m"
_WIDEST = 140  # commands.terminal.width's bounds
_NARROWEST = 60


def answer(arguments: Sequence[str]) -> int | None:
    """Print the answer to `arguments` (argv without the program) and return the exit code;
    None when the CLI must answer."""
    if list(arguments) == ["--version"]:
        sys.stdout.write(f"gradverify {__version__}\n")
        return ExitCode.OK
    if len(arguments) < 3 or arguments[0] != "check" or arguments[1] != "--changed-files":
        return None
    files = arguments[2:]
    if any(file.startswith("-") for file in files):
        return None  # a flag, or a file the CLI would read as one
    lines = _nothing_to_check(files)
    if lines is None:
        return None
    text = _rendered(lines)
    if text is None:
        return None
    sys.stdout.write(text)
    return ExitCode.OK


def _nothing_to_check(files: Sequence[str]) -> list[str] | None:
    """The report's notes when none of the changed files can matter, else None."""
    from gradverify.spec.changed_files import sort_arguments
    from gradverify.spec.config_file import DEFAULT_SPECS, display, plain_settings

    found = plain_settings()
    if found is None:
        return None
    file, settings = found
    root = file.parent if file is not None else Path.cwd()
    spec_paths = [display(root / path) for path in settings.get("specs", DEFAULT_SPECS)]
    selection = sort_arguments(files, spec_paths, changed_files=True)
    if selection.arguments or selection.python_files:
        return None
    notes = [] if file is None else [f"configuration: {display(file)} [tool.gradverify]"]
    notes.append(
        f"{len(selection.ignored)} changed file(s) ignored: not specs in "
        f"{', '.join(spec_paths)}, not Python"
    )
    return notes


def _rendered(notes: list[str]) -> str | None:
    """report.text's rendering of an empty report with `notes`, when no line can wrap."""
    # An empty report checked nothing, and report.text says so (never a green PASSED).
    summary = (
        "NOTHING CHECKED  0 target(s), 0 case(s), 0 result(s): 0 passed, 0 failed, 0 warning(s)"
    )
    lines = [*notes, summary]
    if not all(line.isascii() and line.isprintable() for line in lines):
        return None  # rich measures other characters in cells of its own
    if max(map(len, lines)) > _narrowest_width():
        return None
    color = _use_color()
    if color is None:
        return None
    if not color:
        return "".join(f"{line}\n" for line in lines)
    coloured = [f"{_CYAN}{note}{_RESET}" for note in notes]
    coloured.append(
        f"{_BOLD_YELLOW}NOTHING CHECKED{_RESET}  0 target(s), 0 case(s), 0 result(s): "
        f"{_GREEN}0 passed,{_RESET} 0 failed, 0 warning(s)"
    )
    return "".join(f"{line}\n" for line in coloured)


def _use_color() -> bool | None:
    """commands.terminal.use_color, as rich's Console decides it for sys.stdout; None where
    rich's versions differ (TTY_COMPATIBLE and TTY_INTERACTIVE arrived in rich 14): the CLI
    answers then, with the rich installed."""
    environ = os.environ
    if "NO_COLOR" in environ:
        return False
    if "TTY_COMPATIBLE" in environ or "TTY_INTERACTIVE" in environ:
        return None
    if "FORCE_COLOR" in environ:
        return environ["FORCE_COLOR"] != ""
    try:
        return sys.stdout.isatty()
    except ValueError:
        return False


def _narrowest_width() -> int:
    """The narrowest width commands.terminal.width could give: 100 off a terminal, else the smallest of
    every size rich may read (COLUMNS, the standard streams' terminals, its default 80)."""
    if not sys.stdout.isatty():
        return 100
    sizes = [80]
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        sizes.append(int(columns))
    for descriptor in (0, 1, 2):
        try:
            sizes.append(os.get_terminal_size(descriptor).columns)
        except (AttributeError, ValueError, OSError):
            continue
    return max(_NARROWEST, min(min(sizes), _WIDEST))
