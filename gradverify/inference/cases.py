"""More inferred cases than the base one, each chosen to reach a path it cannot: other
ranks, every value of a dim argument, a broadcast second tensor, a second value for a
default that hides a bug (1.0 for a factor, 0.0 for an offset), complex inputs.

Each candidate is probed once (gradverify.inference.probe) and kept only
where forward accepts it and gives a finite output, so that a case outside forward's
domain is dropped here, never reported as a finding. A broadcast case is kept whenever
forward accepts it: a backward that cannot reduce a broadcast gradient is a bug the checks
then show. Probing stops at a time budget.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from gradverify.inference.from_signature import (
    LITERAL,
    NUMBER,
    TENSOR,
    Choice,
    fit_indices,
    source_facts,
)
from gradverify.inference.probe import probe

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

BUDGET = 2.0  # seconds of probing for the extra cases of one target
MOST = 8  # extra cases at most
RANKS = ((3, 5), (2, 3, 4))  # shapes for an elementwise Function first tried at rank 1
DIM_NAMES = ("dim", "axis")
# A default that hides a forgotten use, and the value that shows it.
HIDING = {1.0: 2.0, 0.0: 0.5}

Case = tuple[str, tuple[Choice, ...]]


def widened(target: Target, base: Sequence[Choice]) -> tuple[Case, ...]:
    """The extra cases forward accepts, within the probe budget."""
    deadline = time.perf_counter() + BUDGET
    kept: list[Case] = []
    seen = {tuple(choice.item.__repr__() for choice in base)}
    for label, choices, lenient in candidates(target, base):
        if len(kept) >= MOST or time.perf_counter() > deadline:
            break
        choices = fit_indices(choices)
        key = tuple(choice.item.__repr__() for choice in choices)
        if key in seen:
            continue
        seen.add(key)
        outcome = probe(target, choices)
        if outcome.stage == "forward":
            continue  # outside forward's domain
        if not lenient and (outcome.stage != "done" or outcome.wrong_shape):
            continue  # perhaps a shape forward was not written for: not ours to judge
        kept.append((label, tuple(choices)))
    return tuple(kept)


def candidates(target: Target, base: Sequence[Choice]) -> Iterator[tuple[str, list[Choice], bool]]:
    """(label, choices, lenient) for each extra case, the most telling first; `lenient`: kept
    when backward misbehaves on it too (forward accepted it, so backward must follow)."""
    yield from _defaults(base)
    yield from _ranks_and_dims(base)
    yield from _broadcasts(base)
    if source_facts(target).complex:
        yield _complex(base)


def _defaults(base: Sequence[Choice]) -> Iterator[tuple[str, list[Choice], bool]]:
    """A second value for each float default that hides a bug: scale=1.0 -> 2.0, shift=0.0 -> 0.5."""
    for index, choice in enumerate(base):
        value = choice.value
        if choice.kind != LITERAL or type(value) is not float or value not in HIDING:
            continue
        other = HIDING[value]
        changed = Choice(choice.name, NUMBER, value=other, reason=f"{value} by default hides a bug")
        yield f"{choice.name}={other}", [*base[:index], changed, *base[index + 1 :]], False


def _ranks_and_dims(base: Sequence[Choice]) -> Iterator[tuple[str, list[Choice], bool]]:
    """Ranks 2 and 3 for the tensors shaped like the first; with every value of a dim."""
    first = _first_float(base)
    if first is None or len(first.shape) != 1:
        return
    dims = [i for i, c in enumerate(base) if c.name in DIM_NAMES and _is_int(c.value)]
    for shape in RANKS:
        reshaped = [
            replace(c, shape=shape) if _like(c, first) or _mask_of(c, first) else c for c in base
        ]
        name = f"{first.name} {list(shape)}"
        if not dims:
            yield name, reshaped, False
            continue
        # rank 2: every dim; rank 3: the middle one, which neither end of rank 2 reaches
        values = range(len(shape)) if len(shape) == 2 else (1,)
        for value in values:
            changed = list(reshaped)
            for i in dims:
                changed[i] = Choice(base[i].name, NUMBER, value=value, reason="every valid dim")
            yield f"{name}, {base[dims[0]].name}={value}", changed, False


def _broadcasts(base: Sequence[Choice]) -> Iterator[tuple[str, list[Choice], bool]]:
    """The tensors after the first, shaped like it, as a bias of its last dim: x [3, 5], b [5]."""
    first = _first_float(base)
    if first is None or len(first.shape) != 1:
        return
    rows = RANKS[0]
    later = [i for i, c in enumerate(base) if _like(c, first) and c is not first]
    for i in later:
        changed = [replace(c, shape=rows) if _like(c, first) else c for c in base]
        changed[i] = replace(base[i], shape=rows[-1:])
        yield f"{first.name} {list(rows)}, {base[i].name} {list(rows[-1:])}", changed, True


def _complex(base: Sequence[Choice]) -> tuple[str, list[Choice], bool]:
    """Every float tensor complex (forward conjugates, or takes real and imaginary parts)."""
    changed = [
        replace(c, dtype="complex128") if c.kind == TENSOR and c.dtype == "float64" else c
        for c in base
    ]
    return "complex128", changed, False


def _mask_of(choice: Choice, first: Choice) -> bool:
    return choice.dtype == "bool" and choice.shape == first.shape


def _first_float(base: Sequence[Choice]) -> Choice | None:
    return next((c for c in base if c.kind == TENSOR and c.dtype == "float64"), None)


def _like(choice: Choice, first: Choice) -> bool:
    return choice.kind == TENSOR and choice.dtype == first.dtype and choice.shape == first.shape


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
