"""Further draws for a case, within its declared domain (`--explore N`).

Each draw keeps what the spec declares about an input: its dtype, shape, `low`/`high` and
requires_grad; explicit `values` are never changed. What varies, draw by draw: a new seed;
edge values (zeros, both ends of low/high); ties (repeated values); both signs; for an
inferred (zero-config) target, whose shapes nobody declared, other shapes of the same rank;
and, in two draws of three, the numbers among the arguments (gradverify.engine.explore.numbers).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import torch

from gradverify.engine.explore.numbers import number_indices, other_numbers
from gradverify.inputs import KINK_MARGIN_EPS, build_inputs
from gradverify.numerics import seeded
from gradverify.spec.models import COMPLEX_DTYPES, Case, FunctionSpec, TensorInput

SEED, EDGES, TIES, SIGNS, SHAPE = "new seed", "edge values", "ties", "both signs", "another shape"
OTHER_NUMBERS = "other numbers"
KINDS = (SEED, EDGES, TIES, SIGNS)
# Other sizes of an inferred target's dimensions are drawn from 1 to this.
LARGEST_SIZE = 6


@dataclass(frozen=True)
class Draw:
    """One further draw: its number (from 1), what varied, the case it stands for (its
    numbers those of the draw), its arguments."""

    number: int
    kind: str
    case: Case
    arguments: tuple[Any, ...]
    other_numbers: bool = False  # the case's numbers varied too

    @property
    def label(self) -> str:
        return f"{self.kind}, {OTHER_NUMBERS}" if self.other_numbers else self.kind


def draws(case: Case, spec: FunctionSpec, seed: int, count: int, inferred: bool) -> Iterator[Draw]:
    """`count` draws for `case`, each from its own generator: the same seed, the same draws."""
    kinds = (*KINDS, SHAPE) if inferred else KINDS
    margin = KINK_MARGIN_EPS * spec.tolerance.eps
    numbers = bool(number_indices(case))
    for number in range(1, count + 1):
        kind = kinds[(number - 1) % len(kinds)]
        draw_seed = (seed * 1_000_033 + 7_919 * number) % (2**63)
        generator = seeded.generator(draw_seed)
        drawn = other_shapes(case, generator) if kind == SHAPE else case
        other = numbers and number % 3 != 0  # one draw in three keeps the spec's numbers
        if other:
            drawn = other_numbers(drawn, generator)
        arguments = list(build_inputs(drawn, draw_seed, spec.kinks, margin))
        if kind in (EDGES, TIES, SIGNS):
            for index, item in enumerate(drawn.inputs):
                if explorable(item):
                    arguments[index] = varied(kind, item, arguments[index], margin, generator)
        yield Draw(number, kind, drawn, tuple(arguments), other)


def explorable(item: Any) -> TypeGuard[TensorInput]:
    """A tensor input whose values are drawn (not `values:`), of a real or integer dtype, and
    free of a `structure:` (edge values, ties or a shrunk element would break it)."""
    return (
        isinstance(item, TensorInput)
        and item.values is None
        and item.structure is None
        and item.dtype != "bool"
        and item.dtype not in COMPLEX_DTYPES
    )


def varies(case: Case) -> bool:
    """Whether further draws of `case` differ from its own: a drawn tensor or a number."""
    drawn = any(isinstance(item, TensorInput) and item.values is None for item in case.inputs)
    return drawn or bool(number_indices(case))


def interior(item: TensorInput, margin: float) -> tuple[float, float]:
    """The ends of `item`'s domain, just inside it for a floating dtype: central differences
    there stay within low/high."""
    if not item.is_differentiable_dtype:
        return float(int(item.low)), float(int(item.high))
    inset = min(margin, (item.high - item.low) / 4)
    return item.low + inset, item.high - inset


def varied(
    kind: str, item: TensorInput, tensor: torch.Tensor, margin: float, generator: torch.Generator
) -> torch.Tensor:
    """`tensor` (a seeded draw of `item`) with edge values, ties or flipped signs mixed in.

    Varied on the CPU, where the generator draws (the same draws on every device), and put
    back on `tensor`'s device."""
    values = tensor.detach().to(device="cpu", dtype=torch.float64).flatten()
    if values.numel() == 0:
        return tensor
    low, high = interior(item, margin)
    if kind == EDGES:
        pool = [low, high, *([0.0] if item.low < 0.0 < item.high else [])]
        choice = torch.randint(0, len(pool) * 2, values.shape, generator=generator, device="cpu")
        edges = torch.tensor(pool, dtype=torch.float64, device="cpu")
        edges = edges[choice.clamp(max=len(pool) - 1)]
        values = torch.where(choice < len(pool), edges, values)
    elif kind == TIES:
        distinct = values[: min(2, values.numel())]
        picked = torch.randint(0, distinct.numel(), values.shape, generator=generator, device="cpu")
        values = distinct[picked]
    elif kind == SIGNS:
        flip = (
            torch.rand(values.shape, generator=generator, dtype=torch.float64, device="cpu") < 0.5
        )
        flip &= (-values >= low) & (-values <= high)
        values = torch.where(flip, -values, values)
    result = values.reshape(tensor.shape).to(tensor.dtype).to(tensor.device)
    return result.requires_grad_(tensor.requires_grad)


def other_shapes(case: Case, generator: torch.Generator) -> Case:
    """`case` with other sizes for its drawn tensors' dimensions, of the same ranks; a size
    shared by several dimensions stays shared (forward may need them equal)."""
    sizes: dict[int, int] = {}
    inputs: list[Any] = []
    for item in case.inputs:
        if not explorable(item) or not item.shape:
            inputs.append(item)
            continue
        shape = [_size(size, sizes, generator) for size in item.shape]
        inputs.append(item.model_copy(update={"shape": shape}))
    return case.model_copy(update={"inputs": inputs})


def _size(size: int, sizes: dict[int, int], generator: torch.Generator) -> int:
    if size == 0:
        return 0
    if size not in sizes:
        drawn = torch.randint(1, LARGEST_SIZE + 1, (1,), generator=generator, device="cpu")
        sizes[size] = int(drawn)
    return sizes[size]


def tensor_indices(case: Case) -> Sequence[int]:
    """Positions of `case`'s explorable inputs."""
    return [index for index, item in enumerate(case.inputs) if explorable(item)]
