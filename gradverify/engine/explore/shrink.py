"""Shrink a failing draw: the smallest shape, then the simplest values, that still fail.

Dimensions first: each drawn tensor's dimension cut to 1, to half or by one, keeping the
failing element, alone or together with the dimensions of other inputs of the same size
(aligned from the right, as broadcasting aligns them), so that inputs that must agree still
do. Then each element in turn is tried at simpler numbers: integers (0, 1, -1, 2, -2, ...),
then halves, then itself rounded, within the input's low/high and away from declared kinks.
A candidate is kept only if the same check still fails on it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from gradverify.engine.explore.draws import explorable
from gradverify.results import Result
from gradverify.spec.models import Case, TensorInput

# Candidates tried while shrinking, at most.
MAX_TRIES = 400
# Simple numbers tried per element, at most, of each kind (integers, halves).
MAX_SIMPLE = 12

Fails = Callable[[Case, tuple[Any, ...]], "Result | None"]


@dataclass(frozen=True)
class Found:
    """A failing input: the case it stands for (shapes), its arguments and the failure."""

    case: Case
    arguments: tuple[Any, ...]
    result: Result


class Shrinker:
    """Shrinks one `Found` against `fails`, within a number of tries and a deadline."""

    def __init__(self, fails: Fails, deadline: float, kinks: tuple[float, ...], margin: float):
        self.fails, self.deadline = fails, deadline
        self.kinks, self.margin = kinks, margin
        self.tries = 0

    @property
    def exhausted(self) -> bool:
        return self.tries >= MAX_TRIES or time.perf_counter() > self.deadline

    def shrink(self, found: Found) -> Found:
        """`found` with the smallest shapes, then the simplest values, that still fail."""
        best = found
        improved = True
        while improved and not self.exhausted:
            improved = False
            for case, arguments in smaller_shapes(best):
                smaller = self._attempt(case, arguments)
                if smaller is not None:
                    best, improved = smaller, True
                    break
        return self._simplify(best)

    def _attempt(self, case: Case, arguments: tuple[Any, ...]) -> Found | None:
        if self.exhausted:
            return None
        self.tries += 1
        result = self.fails(case, arguments)
        return Found(case, arguments, result) if result is not None else None

    def _simplify(self, best: Found) -> Found:
        for index, item in enumerate(best.case.inputs):
            if not explorable(item):
                continue
            for position in range(best.arguments[index].numel()):
                current = float(best.arguments[index].detach().flatten()[position])
                for value in self.simple_values(item, current):
                    if self.exhausted:
                        return best
                    simpler = self._attempt(best.case, _with_value(best, index, position, value))
                    if simpler is not None:
                        best = simpler
                        break
        return best

    def simple_values(self, item: TensorInput, current: float) -> Iterator[float]:
        """Numbers simpler than `current`, simplest first, within the input's domain; stops
        at `current` itself (nothing after it is simpler)."""
        for value in _simplest(item, current):
            if value == current:
                return
            if not any(abs(value - kink) < self.margin for kink in self.kinks):
                yield value


def _simplest(item: TensorInput, current: float) -> Iterator[float]:
    """Integers by size (0, 1, -1, 2, -2, ...; those nearest the ends for a domain away from
    0), then halves, then `current` rounded; within low/high (open ends for floats, whose
    central differences must stay inside)."""
    low, high = item.low, item.high
    integral = not item.is_differentiable_dtype

    def inside(value: float) -> bool:
        return low <= value <= high if integral else low < value < high

    small = [0, *(sign * k for k in range(1, MAX_SIMPLE // 2 + 1) for sign in (1, -1))]
    ends = [math.floor(low) + 1, math.ceil(high) - 1] if not integral else [low, high]
    yield from (float(v) for v in (*small, *ends) if inside(v))
    if integral:
        return
    halves = (sign * (k + 0.5) for k in range(MAX_SIMPLE // 2) for sign in (1, -1))
    yield from (v for v in halves if inside(v))
    yield from (low, high)  # the ends themselves, at last (before: strictly inside)
    for digits in (1, 2):
        if inside(round(current, digits)):
            yield round(current, digits)


def _with_value(found: Found, index: int, position: int, value: float) -> tuple[Any, ...]:
    tensor = found.arguments[index]
    changed = tensor.detach().clone()
    changed.view(-1)[position] = value
    arguments = list(found.arguments)
    arguments[index] = changed.requires_grad_(tensor.requires_grad)
    return tuple(arguments)


def smaller_shapes(found: Found) -> Iterator[tuple[Case, tuple[Any, ...]]]:
    """Candidates with one dimension smaller (alone, or with the dimensions aligned with it)."""
    for index, item in enumerate(found.case.inputs):
        if not explorable(item):
            continue
        shape = list(found.arguments[index].shape)
        for dim, size in enumerate(shape):
            from_right = len(shape) - dim
            groups = [_aligned(found, from_right, size), [(index, dim)]]
            for smaller in sorted({1, size // 2, size - 1}):
                if not 1 <= smaller < size:
                    continue
                for start in _starts(found, index, dim, size, smaller):
                    for group in groups if len(groups[0]) > 1 else groups[1:]:
                        yield _narrowed(found, group, start, smaller)


def _aligned(found: Found, from_right: int, size: int) -> list[tuple[int, int]]:
    """(input, dimension) of every drawn tensor whose dimension `from_right` has `size`."""
    aligned = []
    for index, item in enumerate(found.case.inputs):
        argument = found.arguments[index]
        if explorable(item) and isinstance(argument, torch.Tensor):
            dim = argument.dim() - from_right
            if dim >= 0 and argument.shape[dim] == size:
                aligned.append((index, dim))
    return aligned


def _starts(found: Found, index: int, dim: int, size: int, smaller: int) -> list[int]:
    """Where the kept slice begins: at the start, and where it keeps the failing element."""
    element = found.result.element
    starts = [0]
    if found.result.input_index == index and element is not None and dim < len(element):
        starts.append(min(element[dim], size - smaller))
    return sorted(set(starts), reverse=True)


def _narrowed(
    found: Found, group: list[tuple[int, int]], start: int, length: int
) -> tuple[Case, tuple[Any, ...]]:
    arguments, inputs = list(found.arguments), list(found.case.inputs)
    for index, dim in group:
        tensor = arguments[index]
        part = tensor.detach().narrow(dim, start, length).clone()
        arguments[index] = part.requires_grad_(tensor.requires_grad)
        inputs[index] = inputs[index].model_copy(update={"shape": list(part.shape)})
    return found.case.model_copy(update={"inputs": inputs}), tuple(arguments)
