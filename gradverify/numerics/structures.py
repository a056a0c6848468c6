"""Directions that keep a square matrix's structure: E_ij + E_ji (i <= j) for a symmetric
(or SPD) matrix, E_ij inside the triangle for a lower or upper triangular one. A Function
that reads one triangle (`torch.linalg.eigh`, `cholesky`) is differentiable only along them,
so a gradient test about such an input perturbs it along them rather than element by element
(gradverify.engine.structured, gradverify.engine.gauge).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch

from gradverify.numerics.jacobian import unravel

SYMMETRIC = frozenset({"symmetric", "spd"})
LOWER, UPPER = "lower", "upper"
KEPT = SYMMETRIC | {LOWER, UPPER}  # the structures with elementary directions


def square(point: torch.Tensor) -> bool:
    """Whether `point` is a (batch of) square matrices."""
    return point.dim() >= 2 and point.shape[-1] == point.shape[-2]


def count(point: torch.Tensor, structure: str) -> int:
    """How many elementary directions keep `point`'s `structure`."""
    size = point.shape[-1]
    return point.numel() // (size * size) * size * (size + 1) // 2 if size else 0


def elements(point: torch.Tensor, structure: str) -> Iterator[tuple[int, ...]]:
    """The element each elementary direction moves, in order (for a symmetric matrix, the one
    in the upper triangle; its mirror moves with it)."""
    size, batch = point.shape[-1], point.shape[:-2]
    for matrix in range(math.prod(batch)):
        at = unravel(matrix, batch)
        for row in range(size):
            for column in range(size):
                upper = structure in SYMMETRIC or structure == UPPER
                if row <= column if upper else row >= column:
                    yield (*at, row, column)


def elementary(point: torch.Tensor, structure: str) -> Iterator[torch.Tensor]:
    """The unit directions that keep `structure`, one per element of `elements`."""
    for element in elements(point, structure):
        direction = torch.zeros_like(point)
        direction[element] = 1.0
        if structure in SYMMETRIC:
            direction[(*element[:-2], element[-1], element[-2])] = 1.0
        yield direction


def projected(directions: torch.Tensor, structure: str) -> torch.Tensor:
    """`directions` (any number of tensors of a matrix's shape, stacked) moved onto the
    structure: symmetrized, or cut to the triangle."""
    if structure in SYMMETRIC:
        return (directions + directions.transpose(-1, -2)) / 2
    return directions.tril() if structure == LOWER else directions.triu()


def words(structure: str, element: tuple[int, ...]) -> str:
    """`element [1, 2] (with [2, 1])` for a symmetric direction, `element [2, 1]` otherwise."""
    if structure in SYMMETRIC and element[-1] != element[-2]:
        mirror = [*element[:-2], element[-1], element[-2]]
        return f"element {list(element)} (with {mirror})"
    return f"element {list(element)}"
