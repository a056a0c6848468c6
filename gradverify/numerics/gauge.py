"""Gradients of a subspace, not of its basis: an output B (..., n, k), k < n, whose columns
are orthonormal (eigenvectors, singular vectors, a QR or null-space basis) is defined only
up to a rotation within the subspace it spans (the gauge). A backward may then, as
torch.linalg.eigh's and svd's do, assume the loss depends on the subspace alone: right for
every function of P = B Bᵀ, wrong for B itself. This module tests that weaker claim.

For random symmetric W per basis output, the loss <W, B Bᵀ> has the vjp backward gives
for grad_B = (W + Wᵀ) B. Those cotangents span exactly what is orthogonal to the gauge's
directions B Ω (Ω antisymmetric), so the test holds a backward to everything but the
gauge. It is compared, in float64, with central differences of the loss. Outputs that are
no such bases get grad 0 here; `others` tests them on their own with random cotangents.

An argument with a structure (a symmetric matrix that forward reads one triangle of, say)
is perturbed only along the directions that keep it (gradverify.numerics.structures).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any

import torch

from gradverify.numerics import seeded, structures
from gradverify.numerics.compare import Comparison, compare
from gradverify.numerics.jacobian import (
    call_forward,
    differentiable_outputs,
    element_words,
    numerical_jacobian,
    unravel,
)
from gradverify.usercode import user_code

ORTHONORMAL_ATOL = 1e-6  # max |BᵀB − I|: float64 rounding, or a float32 forward's
DRAWS = 2  # random W per basis output
MOST_ELEMENTS = 1024  # larger arguments: central differences along random directions
DIRECTIONS = 16


def orthonormal_bases(outputs: Sequence[Any]) -> tuple[int, ...]:
    """Positions of the differentiable real outputs (..., n, k), 1 <= k < n, whose columns
    are orthonormal in every matrix of the batch."""
    found = []
    for position, output in differentiable_outputs(outputs):
        if not output.is_floating_point() or output.dim() < 2 or output.numel() == 0:
            continue
        rows, columns = output.shape[-2], output.shape[-1]
        if not 1 <= columns < rows:  # square: B Bᵀ = I says nothing
            continue
        basis = output.detach().to(torch.float64)
        gram = basis.transpose(-1, -2) @ basis
        identity = torch.eye(columns, dtype=gram.dtype, device=gram.device)
        if bool(((gram - identity).abs() <= ORTHONORMAL_ATOL).all()):
            found.append(position)
    return tuple(found)


Weights = dict[int, torch.Tensor]  # output position -> W (a basis) or a cotangent (others)


def subspace_comparison(
    call: Callable[..., Any],
    arguments: Sequence[Any],
    index: int,
    bases: Sequence[int],
    tolerance: tuple[float, float, float],
    seed: int,
    structure: str | None = None,
) -> Comparison:
    """backward's gradient of <W, B Bᵀ> (summed over `bases`) for argument `index`, against
    central differences, for DRAWS random W: the first comparison that fails, else the last.
    `arguments`: float64 leaves; `tolerance`: (eps, atol, rtol); `structure`: the argument's
    (symmetric, spd, lower, upper), perturbed only along the directions that keep it."""
    generator = seeded.generator(seed)
    outputs = call_forward(call, arguments)
    comparison = None
    for _ in range(DRAWS):
        weights = {
            position: seeded.normal(
                (*outputs[position].shape[:-1], outputs[position].shape[-2]),
                generator,
                outputs[position].device,
            )
            for position in bases
        }
        comparison = _compared(
            call, arguments, index, (weights, set(bases)), tolerance, generator, structure
        )
        if not comparison.ok:
            return comparison
    assert comparison is not None
    return comparison


def others_comparison(
    call: Callable[..., Any],
    arguments: Sequence[Any],
    index: int,
    bases: Sequence[int],
    tolerance: tuple[float, float, float],
    seed: int,
    structure: str | None = None,
) -> Comparison | None:
    """backward's gradient of <G, y> over the outputs y that are not `bases` (random G),
    against central differences; None where every differentiable output is a basis."""
    generator = seeded.generator(seed)
    outputs = call_forward(call, arguments)
    weights = {
        position: seeded.normal(output.shape, generator, output.device)
        for position, output in differentiable_outputs(outputs)
        if position not in bases and output.is_floating_point()
    }
    if not weights:
        return None
    return _compared(call, arguments, index, (weights, set()), tolerance, generator, structure)


def location(argument: torch.Tensor, structure: str | None, column: int) -> str | None:
    """Where column `column` of a comparison for `argument` perturbs it, in words (None: a
    random direction)."""
    if structure is None:
        if argument.numel() > MOST_ELEMENTS:
            return None
        return element_words(unravel(column, argument.shape))
    if not _elementary(argument, structure):
        return None
    element = next(islice(structures.elements(argument, structure), column, None))
    return structures.words(structure, element)


def _elementary(argument: torch.Tensor, structure: str) -> bool:
    return 0 < structures.count(argument, structure) <= MOST_ELEMENTS


def _compared(
    call: Callable[..., Any],
    arguments: Sequence[Any],
    index: int,
    loss_of: tuple[Weights, set[int]],
    tolerance: tuple[float, float, float],
    generator: torch.Generator,
    structure: str | None,
) -> Comparison:
    eps, atol, rtol = tolerance
    weights, bases = loss_of
    analytical = _backward(call, arguments, index, weights, bases).reshape(1, -1)

    def loss(*values: Any) -> list[torch.Tensor]:
        produced = call_forward(call, values)
        return [_loss(produced, weights, bases).reshape(1)]

    argument = arguments[index]
    if structure is None and argument.numel() <= MOST_ELEMENTS:
        numerical = numerical_jacobian(loss, arguments, index, eps)
        return compare(analytical, numerical, atol, rtol)
    # Along directions u: uᵀ(backward's gradient) against d/dt loss(x + t u).
    directions = _directions(argument, structure, generator)
    base = argument.detach()

    def along(steps: torch.Tensor) -> list[torch.Tensor]:
        moved = list(arguments)
        moved[index] = base + (steps @ directions).reshape(base.shape)
        return loss(*moved)

    numerical = numerical_jacobian(along, [base.new_zeros(len(directions))], 0, eps)
    return compare(analytical @ directions.T, numerical, atol, rtol)


def _directions(
    argument: torch.Tensor, structure: str | None, generator: torch.Generator
) -> torch.Tensor:
    """(directions, elements of `argument`): those keeping `structure`, one per element it
    frees where there are few, else DIRECTIONS random unit ones (kept on the structure)."""
    if structure is not None and _elementary(argument, structure):
        return torch.stack([d.reshape(-1) for d in structures.elementary(argument, structure)])
    drawn = seeded.normal((DIRECTIONS, *argument.shape), generator, argument.device)
    if structure is not None:
        drawn = structures.projected(drawn, structure)
    drawn = drawn.reshape(DIRECTIONS, -1)
    return drawn / drawn.norm(dim=1, keepdim=True)


def _loss(outputs: Sequence[Any], weights: Weights, bases: set[int]) -> torch.Tensor:
    total = None
    for position, weight in weights.items():
        output = outputs[position].to(torch.float64)
        value = output @ output.transpose(-1, -2) if position in bases else output
        term = (weight * value).sum()
        total = term if total is None else total + term
    assert total is not None
    return total


def _backward(
    call: Callable[..., Any], arguments: Sequence[Any], index: int, weights: Weights,
    bases: set[int],
) -> torch.Tensor:  # fmt: skip
    """backward's vjp for argument `index` with grad_B = (W + Wᵀ) B for a basis, the weight
    itself for another output, and 0 for every other output."""
    leaves = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
              for a in arguments]  # fmt: skip
    with torch.enable_grad():
        outputs = call_forward(call, leaves)
        selected = differentiable_outputs(outputs)
        cotangents = []
        for position, output in selected:
            weight = weights.get(position)
            if weight is None:
                cotangents.append(torch.zeros_like(output))
            elif position in bases:
                symmetric = weight + weight.transpose(-1, -2)
                cotangents.append((symmetric @ output.detach().to(weight.dtype)).to(output.dtype))
            else:
                cotangents.append(weight.to(output.dtype))
        with user_code("backward"):
            (grad,) = torch.autograd.grad(
                [output for _, output in selected], [leaves[index]], cotangents,
                allow_unused=True,
            )  # fmt: skip
    if grad is None:
        return torch.zeros_like(leaves[index])
    return grad.detach().to(torch.float64)
