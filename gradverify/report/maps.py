"""A failure's mismatch map (`Result.mismatch_map`) drawn for the terminal.

The map is drawn only where it beats the numbers: every element examined (full mode; in
randomized mode the few localized elements among unexamined ones say no more than the
list of them), at most MAX_ROWS rows, and only when it fits the width. Otherwise nothing.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from gradverify.results import Result

WRONG, RIGHT, UNEXAMINED = "x", ".", " "
SHOWN = {WRONG: "x", RIGHT: "·"}
MAX_ROWS = 32
COLUMN_STEP = 10  # a column index every COLUMN_STEP columns
LEGEND = "x wrong  · right"


def text_map(result: Result, width: int) -> list[str] | None:
    """The map as framed lines of at most `width` characters, or None when not drawn."""
    rows = result.mismatch_map
    if not rows or len(rows) > MAX_ROWS or any(UNEXAMINED in row for row in rows):
        return None
    columns = max(len(row) for row in rows)
    two_d = len(rows) > 1
    gutter = len(str(len(rows) - 1)) + 1 if two_d else 0  # row indices and a space
    if gutter + columns + 2 > width:
        return None
    row_step = 1 if len(rows) <= 10 else 5
    lines = [" " * (gutter + 1) + _ruler(columns)]
    lines.append(" " * gutter + "┌" + "─" * columns + "┐")
    for index, row in enumerate(rows):
        label = str(index) if two_d and index % row_step == 0 else ""
        cells = "".join(SHOWN.get(cell, cell) for cell in row.ljust(columns))
        lines.append((label.rjust(gutter - 1) + " " if two_d else "") + "│" + cells + "│")
    lines.append(" " * gutter + "└" + "─" * columns + "┘")
    lines.append(LEGEND)
    return [line.rstrip() for line in lines]


def _ruler(columns: int) -> str:
    """Column indices at 0, 10, 20, ... where each fits before the next one starts."""
    ruler = ""
    for column in range(0, columns, COLUMN_STEP):
        label = str(column)
        if len(ruler) <= column and column + len(label) <= columns:
            ruler = ruler.ljust(column) + label
    return ruler


class MismatchMap:
    """A Rich renderable: the map at the width the panel leaves, or nothing if it does not fit."""

    def __init__(self, result: Result, style: str = "bold red") -> None:
        self.result = result
        self.style = style

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = text_map(self.result, options.max_width)
        if lines is None:
            return
        yield Text("")
        yield Text(f"where the wrong entries lie ({_shape(self.result.mismatch_map or ())}):")
        for line in lines:
            yield self._styled(line)

    def _styled(self, line: str) -> Text:
        """Wrong cells in the failure's colour; the frame, indices and legend dim."""
        text = Text(line, style="dim")
        frame = line.find("│")
        for position, character in enumerate(line):
            if frame >= 0 and position > frame and character == WRONG:
                text.stylize(self.style, position, position + 1)
        return text


def _shape(rows: tuple[str, ...]) -> str:
    columns = max((len(row) for row in rows), default=0)
    return f"{columns} elements" if len(rows) == 1 else f"{len(rows)} rows × {columns} columns"
