"""Where the wrong entries of a 1-D or 2-D argument lie, as rows of characters.

A mask bug (a gradient wrong only where x > 1) is seen at a glance in such a map, where a
list of elements would have to be read. The map is `Result.mismatch_map`: one string per
row of the argument (a 1-D argument is one row), "x" wrong, "." right, " " not examined.

Only 1-D and 2-D arguments get one. A 0-d or 1-element argument has nothing to locate, and
flattening an N-d argument to its last two dimensions would put elements of different
leading indices side by side, a picture that misleads more than it shows. Beyond
MAX_ROWS × MAX_COLUMNS there is no map either: the JSON report stays small, and a picture
that large is no longer read at a glance.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

import torch

WRONG, RIGHT, UNEXAMINED = "x", ".", " "
MAX_ROWS = 100
MAX_COLUMNS = 200


def mismatch_map(
    wrong: torch.Tensor, examined: torch.Tensor | None = None
) -> tuple[str, ...] | None:
    """The map of a bool tensor of the argument's shape (None: no map for this shape).

    `examined` marks the elements that were looked at; by default all of them.
    """
    grid = _grid_shape(tuple(wrong.shape))
    if grid is None:
        return None
    wrong_rows = wrong.reshape(grid).tolist()
    seen = examined.reshape(grid).tolist() if examined is not None else None
    return tuple(
        "".join(
            WRONG if is_wrong else RIGHT if seen is None or seen[row][column] else UNEXAMINED
            for column, is_wrong in enumerate(wrong_row)
        )
        for row, wrong_row in enumerate(wrong_rows)
    )


def full_jacobian_map(off: torch.Tensor, shape: Sequence[int]) -> tuple[str, ...] | None:
    """From a full Jacobian block's mask (outputs × argument elements): an element is wrong
    when any entry of its column is off."""
    if off.dim() != 2 or off.shape[1] != math.prod(shape):
        return None
    return mismatch_map(off.any(dim=0).reshape(tuple(shape)))


def located_map(
    wrong: Collection[int], right: Collection[int], shape: Sequence[int]
) -> tuple[str, ...] | None:
    """From the flat indices localization found wrong, and those it found right; every other
    element was not examined one by one (randomized mode)."""
    if _grid_shape(tuple(shape)) is None:
        return None
    size = math.prod(shape)
    # Built from flat indices on the CPU, for the text of the map alone.
    wrong_mask = torch.zeros(size, dtype=torch.bool, device="cpu")
    examined = torch.zeros(size, dtype=torch.bool, device="cpu")
    for column in wrong:
        wrong_mask[column] = True
        examined[column] = True
    for column in right:
        examined[column] = True
    return mismatch_map(wrong_mask.reshape(tuple(shape)), examined.reshape(tuple(shape)))


def _grid_shape(shape: tuple[int, ...]) -> tuple[int, int] | None:
    """(rows, columns) of the map of an argument of this shape, or None."""
    if len(shape) == 1:
        rows, columns = 1, shape[0]
    elif len(shape) == 2:
        rows, columns = shape
    else:
        return None
    if rows * columns < 2 or rows > MAX_ROWS or columns > MAX_COLUMNS:
        return None
    return rows, columns
