"""Patterns in a Jacobian's structure: per output, along axes, at repeated indices.

`diagnosis.py` reads the errors entry by entry; these read where the entries sit. Each
names a cause only on the evidence its docstring gives, and stays silent otherwise:
- a sign flipped on some outputs of a multi-output Function, the others right;
- backward coupling elements along another axis than forward does (a hard-coded `dim`);
- a gradient that keeps one of several contributions exactly where an index repeats
  (assignment where accumulation belongs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import torch

MIN_ENTRIES = 3  # entries a pattern must be seen on (diagnosis and complex_parts use it too)
EXPLAINED = 0.1  # a pattern's residual: at most this fraction of the tolerance
DIM_NAMES = ("dim", "axis")

Close = Callable[[torch.Tensor, torch.Tensor], bool]
OutputShapes = Sequence[tuple[int, tuple[int, ...]]]  # (output index, shape), in row order


def flipped_outputs(
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    off: torch.Tensor,
    outputs: OutputShapes,
    atol: float,
    close: Close,
) -> str | None:
    """`opposite sign for output 1`: every off entry lies in outputs whose rows are exactly
    the negated numerical ones (on enough significant entries), and some output is right."""
    if len(outputs) < 2:
        return None
    flipped, right, row = [], [], 0
    for index, shape in outputs:
        size = math.prod(shape)
        rows = slice(row, row + size)
        row += size
        if not bool(off[rows].any()):
            right.append(index)
        elif close(analytical[rows], -numerical[rows]):
            if int((numerical[rows].abs() > 10 * atol).sum()) < MIN_ENTRIES:
                return None  # too few entries to call it a sign
            flipped.append(index)
        else:
            return None  # an output wrong some other way
    if not flipped or not right:
        return None
    which = _outputs_words(flipped)
    that = "that output's" if len(flipped) == 1 else "those outputs'"
    return (
        f"opposite sign for {which} (analytical = -numerical on its rows; "
        f"{_outputs_words(right)} right): likely a missing minus in {that} term of backward "
        "(the term with its grad_output)"
    )


def _outputs_words(indices: Sequence[int]) -> str:
    listed = ", ".join(str(index) for index in indices)
    return f"output {listed}" if len(indices) == 1 else f"outputs {listed}"


def wrong_axis(
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    argument: torch.Tensor | None,
    outputs: OutputShapes,
    numbers: Mapping[str, float],
    atol: float,
) -> str | None:
    """Backward couples elements along one axis, forward along another.

    In an output of the argument's shape, an entry (output element, argument element) that
    is not zero links two elements; softmax, cumsum or normalize along `dim` link only
    elements that differ along `dim`. When every link forward makes (the numerical
    Jacobian) runs along one axis and every link backward makes runs along one other axis,
    backward reduces over the wrong axis. Nothing here reads names: forward's `dim` (or
    `axis`) argument, when it equals forward's axis, is only named in the words.
    """
    if argument is None or len(outputs) != 1 or argument.dim() < 2:
        return None
    shape = tuple(argument.shape)
    if outputs[0][1] != shape or analytical.shape != (math.prod(shape), math.prod(shape)):
        return None
    forward_axes = _linking_axes(numerical, shape, atol)
    backward_axes = _linking_axes(analytical, shape, atol)
    if forward_axes is None or backward_axes is None:
        return None
    if len(forward_axes) != 1 or len(backward_axes) != 1 or forward_axes == backward_axes:
        return None
    (forward_axis,), (backward_axis,) = forward_axes, backward_axes
    last = len(shape) - 1
    named = _axis_argument(numbers, forward_axis, len(shape))
    backward_words = "-1, the last axis" if backward_axis == last else str(backward_axis)
    if named is None:
        return (
            f"forward links elements along axis {forward_axis}, backward along axis "
            f"{backward_words}: likely backward reduces over the wrong axis"
        )
    name, value = named
    hard_coded = "-1" if backward_axis == last else str(backward_axis)
    return (
        f"forward works along {name} = {value:g} (axis {forward_axis}), backward along axis "
        f"{backward_words}: likely backward hard-codes the axis (e.g. "
        f"`.sum({hard_coded}, keepdim=True)`) where it should use {name}, so it is right only "
        f"for {name} = {hard_coded}"
    )


def _linking_axes(jacobian: torch.Tensor, shape: tuple[int, ...], atol: float) -> set[int] | None:
    """The axes along which the Jacobian's nonzero entries link two different elements; None
    when some entry links elements that differ along several axes (no single axis)."""
    rows, columns = torch.nonzero(jacobian.abs() > atol, as_tuple=True)
    if rows.numel() == 0:
        return None
    row_at = torch.stack(torch.unravel_index(rows, shape))
    column_at = torch.stack(torch.unravel_index(columns, shape))
    differs = row_at != column_at  # [axes, entries]
    if bool((differs.sum(dim=0) > 1).any()):
        return None
    return {int(axis) for axis in differs.any(dim=1).nonzero().reshape(-1)}


def _axis_argument(numbers: Mapping[str, float], axis: int, rank: int) -> tuple[str, float] | None:
    """forward's integer argument named dim or axis whose value is `axis`, if any."""
    for name, value in numbers.items():
        if name.lower() not in DIM_NAMES and not name.lower().endswith("_dim"):
            continue
        if float(value).is_integer() and -rank <= value < rank and int(value) % rank == axis:
            return name, value
    return None


def repeated_indices(
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    off: torch.Tensor,
    argument: torch.Tensor | None,
    name: str,
    indices: Mapping[str, torch.Tensor],
    atol: float,
    close: Close,
) -> str | None:
    """Assignment where accumulation belongs: `grad[idx] = g` with repeated idx.

    The evidence: the wrong elements are exactly those that forward reads more than once
    (more than one nonzero entry in their numerical column), backward keeps some of their
    contributions exactly and drops the rest, and an integer argument repeats values. Where
    the wrong elements' coordinate along an axis is exactly the repeated values, those are
    named. A broadcast whose gradient keeps one row looks alike but has no index to repeat.
    """
    if argument is None or argument.numel() != off.shape[1]:
        return None
    repeats = {key: _repeated_values(tensor) for key, tensor in indices.items()}
    repeats = {key: values for key, values in repeats.items() if values}
    if not repeats:
        return None
    significant = numerical.abs() > atol
    wrong = off.any(dim=0)
    read_often = significant.sum(dim=0) > 1
    # Only elements read more than once are wrong; some read so may be right, where their
    # reads add up through other statements (`g[idx] += a; g[idx + 1] += b` is right at an
    # element idx reads once and idx + 1 once).
    if not bool(wrong.any()) or bool((wrong & ~read_often).any()):
        return None
    kept = analytical.abs() > atol
    columns = wrong.nonzero().reshape(-1)
    block_a, block_n = analytical[:, columns], numerical[:, columns]
    if not close(block_a[kept[:, columns]], block_n[kept[:, columns]]):
        return None  # the contributions kept are not the right ones
    if bool((kept[:, columns] & ~significant[:, columns]).any()):
        return None  # backward adds what forward does not read
    if not bool(kept[:, columns].any(dim=0).all()):
        return None  # an element with no contribution kept: masked, not assigned
    count = f"{int(wrong.sum())} of {wrong.numel()} elements"
    where = _repeated_rows(wrong, tuple(argument.shape), repeats, name)
    exactly = "exactly at the" if torch.equal(wrong, read_often) else "only at"
    return (
        f"wrong {exactly} elements of {name} that forward reads more than once ({count}"
        f"{where}): backward keeps one contribution where the repeats' must add up; likely an "
        "assignment `grad[index] = grad_output` where accumulation belongs: `index_add_`, "
        "`scatter_add_` or `index_put_(..., accumulate=True)`"
    )


def _repeated_values(tensor: torch.Tensor) -> set[int]:
    values, counts = torch.unique(tensor.reshape(-1), return_counts=True)
    return {int(value) for value in values[counts > 1]}


def _repeated_rows(
    wrong: torch.Tensor, shape: tuple[int, ...], repeats: Mapping[str, set[int]], name: str
) -> str:
    """`; rows 1, 4 of weight, the values idx repeats` when an axis matches exactly."""
    coordinates = torch.stack(torch.unravel_index(wrong.nonzero().reshape(-1), shape))
    for axis, size in enumerate(shape):
        found = {int(value) for value in coordinates[axis]}
        for key, values in repeats.items():
            if {value % size for value in values if -size <= value < size} == found:
                what = (
                    "elements"
                    if len(shape) == 1
                    else "rows"
                    if axis == 0
                    else f"axis-{axis} slices"
                )
                listed = ", ".join(str(value) for value in sorted(found))
                return f"; {what} {listed} of {name}, the values {key} repeats"
    return ""


def grouped_factors(
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    off: torch.Tensor,
    atol: float,
    rtol: float,
) -> str | None:
    """A factor that is constant within groups of entries but differs between groups: a
    missing normalisation (a segment mean's backward that forgets 1/count, a norm's that
    forgets 1/‖x‖ per row).

    The evidence: backward is nonzero exactly where forward's Jacobian is; along one axis
    of the Jacobian (each output element's entries, or each argument element's), the
    ratio numerical/analytical is one number per line, to within a tenth of the tolerance;
    every wrong line holds two entries or more (so the constancy is seen, not assumed), and
    the lines do not all share one factor (that is a constant factor, said elsewhere).
    """
    significant = numerical.abs() > 10 * atol
    nonzero = analytical.abs() > atol
    if int(significant.sum()) < MIN_ENTRIES or bool((off & ~significant).any()):
        return None  # too few entries, or wrong where forward's Jacobian is about zero
    if not torch.equal(significant, nonzero & (numerical.abs() > atol)):
        return None  # backward's nonzero entries are not forward's: no factor explains it
    tolerance = EXPLAINED * (atol + rtol * numerical.abs())
    for axis in (1, 0):  # a row: one output element's entries; a column: one argument element's
        factors = _line_factors(analytical, numerical, off, significant, tolerance, axis)
        if factors is not None:
            return _describe_groups(factors)
    return None


def _line_factors(
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    off: torch.Tensor,
    significant: torch.Tensor,
    tolerance: torch.Tensor,
    axis: int,
) -> list[float] | None:
    """numerical/analytical of each wrong line along `axis` when every line keeps one factor."""
    if axis == 0:
        analytical, numerical, off = analytical.T, numerical.T, off.T
        significant, tolerance = significant.T, tolerance.T
    ratios = torch.where(significant, numerical / analytical.where(significant, 1.0), 0.0)
    entries = significant.sum(dim=1)
    factors = ratios.sum(dim=1) / entries.clamp(min=1)  # the mean ratio of each line
    explained = (numerical - factors[:, None] * analytical).abs() <= tolerance
    if not bool(explained[significant].all()):
        return None
    wrong_lines = off.any(dim=1)
    if bool((entries[wrong_lines] < 2).any()):
        return None  # a line of one entry shows no constancy: any wrong value fits it
    wrong = sorted({round(float(f), 3) for f in factors[wrong_lines]})
    every = {round(float(f), 3) for f in factors[entries > 0]}
    return wrong if len(every) > 1 else None


def _describe_groups(factors: list[float]) -> str:
    """The factors of the wrong groups (1 is the right groups' own, shown where none is)."""
    shown = ", ".join(f"{f:.3g}" for f in factors[:4]) + (" …" if len(factors) > 4 else "")
    if len(factors) == 1:
        shown += ", 1 where it is right"
    counts = [1 / f for f in factors if f > 0]
    whole = len(counts) == len(factors) and all(c >= 2 and abs(c - round(c)) < 1e-2 for c in counts)
    likely = (
        "likely a missing division by a count (1/n per group: a segment's or a mean's size)"
        if whole
        else "likely a missing normalisation, e.g. a division by a count or a norm"
    )
    return (
        f"backward is off by a factor that differs per element, constant within groups "
        f"(numerical/analytical = {shown}): {likely}"
    )
