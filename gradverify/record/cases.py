"""A recorded call as a spec case: its name (after the call site), its inputs (small integer
tensors and constants as `values`, others as shape, dtype and the recorded range, a little
wider, with the `structure:` their values had; a callable as `{callable: module:attr}`) and
the comments that say what was recorded."""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gradverify.record.readable import readable, readable_values
from gradverify.record.records import Argument, RecordedCall, RecordedTensor
from gradverify.record.structure import RANGED, drawn_structure

WIDEN = 0.01  # a recorded range is widened by this fraction of its span on each side


class Unwritable(Exception):
    """A recorded call that no case can express (the reason is the message)."""


@dataclass
class RecordedCase:
    """A case for a spec, from one recorded call; `inputs` are YAML-ready items."""

    name: str
    call: RecordedCall
    inputs: list[Any]
    notes: list[str]  # one per input: its name and what was recorded
    shrunk_from: dict[int, tuple[int, ...]]  # input index -> recorded shape, when shrunk
    covers: tuple[str, ...] = ()  # the signatures of other calls this case stands for
    variant: str | None = None  # what a case added to a recorded one changes (None: recorded)


def case_name(site: str | None, project: Path) -> str:
    """`train_py_42` for a call at `.../train.py:42`."""
    if site is None:
        return "recorded"
    file, _, line = site.rpartition(":")
    stem = re.sub(r"\W+", "_", Path(file).name).strip("_") or "call"
    return f"{stem}_{line}" if line.isdigit() else stem


def site_shown(site: str | None, project: Path) -> str:
    """The call site relative to the project, as comments and messages show it."""
    if site is None:
        return "an unknown place"
    file, _, line = site.rpartition(":")
    with contextlib.suppress(ValueError):
        file = str(Path(file).relative_to(project))
    return f"{file}:{line}"


def positional(
    call: RecordedCall, parameters: Sequence[str], defaults: Mapping[str, Any]
) -> list[Argument]:
    """The call's arguments by position: keywords put where forward's signature has them,
    and defaults filled in before any of them."""
    arguments = list(call.arguments)
    if not call.keywords:
        return arguments
    missing = [name for name in call.keywords if name not in parameters[len(arguments) :]]
    if missing:
        raise Unwritable(f"keyword argument {missing[0]!r} is not a positional parameter")
    last = max(parameters.index(name) for name in call.keywords)
    for name in parameters[len(arguments) : last + 1]:
        if name in call.keywords:
            arguments.append(call.keywords[name])
        elif name in defaults and _is_literal(defaults[name]):
            arguments.append(Argument(literal=defaults[name]))
        else:
            raise Unwritable(f"argument {name!r} was left to a default a spec cannot write")
    return arguments


def _is_literal(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float | str)


def argument_label(parameters: Sequence[str], index: int) -> str:
    """The parameter at `index`, or `argument N` past forward's named parameters."""
    return parameters[index] if index < len(parameters) else f"argument {index}"


def unwritable(arguments: Sequence[Argument], parameters: Sequence[str]) -> str | None:
    """Why no spec can give one of `arguments` (the first such), or None."""
    for index, argument in enumerate(arguments):
        if argument.other is None:
            continue
        label = argument_label(parameters, index)
        if argument.function:
            return (
                f"{label} is a {argument.other}: a spec gives a callable as "
                "`{callable: module:attr}`, and no module-level name imports this one"
            )
        return f"{label} is a {argument.other}, which a spec cannot give"
    return None


def recorded_case(
    call: RecordedCall,
    name: str,
    parameters: Sequence[str],
    defaults: Mapping[str, Any],
    constants: frozenset[int] = frozenset(),
    seen: Mapping[int, Sequence[float]] | None = None,
) -> RecordedCase:
    """The case for `call`; Unwritable if an argument cannot be written in a spec. The
    arguments at `constants` keep their recorded values and are never differentiated; every
    other float tensor is, whatever requires_grad it had in the run. `seen`: the values a
    float literal took in the calls this case stands for."""
    arguments = positional(call, parameters, defaults)
    reason = unwritable(arguments, parameters)
    if reason is not None:
        raise Unwritable(reason)
    inputs: list[Any] = []
    notes: list[str] = []
    for index, argument in enumerate(arguments):
        label = argument_label(parameters, index)
        note = f"{label}: {argument.describe()}"
        if argument.tensor is not None:
            constant = index in constants and argument.tensor.values is not None
            inputs.append(tensor_item(argument.tensor, constant))
            if constant:
                note += ", a constant in the run: its values, never differentiated"
            elif argument.tensor.is_floating and not argument.tensor.requires_grad:
                note += ", no grad in the run"
        elif argument.callable is not None:
            inputs.append({"callable": argument.callable})
        elif isinstance(argument.literal, float):
            inputs.append(readable(argument.literal))
            values = sorted(set((seen or {}).get(index, ())))
            if len(values) > 1:
                note = f"{label}: {_shown(argument.literal)}, one of {len(values)} values "
                note += f"recorded in [{_shown(values[0])}, {_shown(values[-1])}]"
        else:
            inputs.append(argument.literal)
        notes.append(note)
    return RecordedCase(name, call, inputs, notes, {})


def undifferentiated(
    case: RecordedCase, arguments: Sequence[Argument], none: frozenset[int], kept: frozenset[int]
) -> RecordedCase:
    """`case` with the float inputs backward returns None for written `requires_grad: false`;
    those in `kept` as constants (their recorded values)."""
    inputs, notes = list(case.inputs), list(case.notes)
    for index in sorted(none):
        tensor = arguments[index].tensor
        if index in kept and tensor is not None:
            inputs[index] = tensor_item(tensor, constant=True)
            notes[index] += ", backward returns None for it: a constant, its values"
        else:
            inputs[index] = {**inputs[index], "requires_grad": False}
            notes[index] += ", backward returns None for it"
    return replace(case, inputs=inputs, notes=notes)


def _shown(value: float) -> str:
    return repr(readable(value))


def tensor_item(tensor: RecordedTensor, constant: bool = False) -> dict[str, Any]:
    """A tensor input: `values` for a small integer or bool tensor, for a constant (with
    `requires_grad: false`) and for a structure no draw keeps (a diagonal matrix: symmetric
    and triangular), else shape, range and the `structure:` that keeps the recorded one."""
    item: dict[str, Any] = {}
    keeps, structure = drawn_structure(tensor.structure, tensor.low)
    if tensor.values is not None and (constant or not tensor.is_floating or not keeps):
        item["values"] = readable_values(tensor.values, tensor.dtype)
        item["dtype"] = tensor.dtype
    else:
        item["shape"] = list(tensor.shape)
        item["dtype"] = tensor.dtype
        bounds = _bounds(tensor)
        if bounds is not None and structure in RANGED:
            item["low"], item["high"] = bounds
        if structure is not None:
            item["structure"] = structure
    if constant:
        item["requires_grad"] = False
    if tensor.device != "cpu":
        item["device"] = tensor.device
    return item


def _bounds(tensor: RecordedTensor) -> tuple[float, float] | None:
    low, high = tensor.low, tensor.high
    if low is None or high is None:
        return None
    if not tensor.is_floating:  # integers are drawn from low..high inclusive
        low, high = int(low), int(high)
        if low == high:  # a spec needs low < high: stay on the side indices live on
            return (low - 1, high) if low > 0 else (low, high + 1)
        return low, high
    if tensor.dtype.startswith("complex"):  # recorded: the largest magnitude
        return -readable(high), readable(high)
    return widened(low, high)


def widened(low: float, high: float) -> tuple[float, float]:
    """[low, high] a little wider, never degenerate, and never across 0 or ±1 where the
    recorded values stayed on one side (a log's, a sqrt's or an acos's domain)."""
    span = high - low
    if span <= 0:
        pad = max(abs(low) * 0.1, 0.1)
        bounds = (low, low + pad) if low >= 0 else (low - pad, low)
        return readable(bounds[0]), readable(bounds[1])
    pad = span * WIDEN
    new_low, new_high = _outward(low - pad, math.floor), _outward(high + pad, math.ceil)
    if low > 0:
        new_low = max(new_low, low / 2)
    elif low == 0:
        new_low = 0.0
    if high < 0:
        new_high = min(new_high, high / 2)
    elif high == 0:
        new_high = 0.0
    if low >= -1:
        new_low = max(new_low, -1.0)
    if high <= 1:
        new_high = min(new_high, 1.0)
    return readable(new_low), readable(new_high)


def _outward(value: float, rounding: Any) -> float:
    """`value` rounded outward to three significant digits."""
    if value == 0:
        return 0.0
    digits = 2 - math.floor(math.log10(abs(value)))
    return round(rounding(value * 10.0**digits) / 10.0**digits, digits)
