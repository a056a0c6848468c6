"""A finding that perturbs a structured input off its structure is the contract's, not a bug:
a case whose input has a `structure:` (symmetric, spd, lower, upper) states what forward
expects, yet the gradient checks perturb each element on its own. A Function that reads one
triangle of a symmetric matrix (`torch.linalg.eigh`, `cholesky`) then fails them with a
correct backward. So a first-order failure about such an input is checked again along the
directions that keep the structure (E_ij + E_ji for a symmetric matrix, E_ij inside the
triangle for a triangular one): where backward agrees with central differences along every
one of them, the failure becomes a warning that says so; where it does not, it stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch

from gradverify.catalogue import FIRST_ORDER_CHECKS
from gradverify.engine.judging import JudgedCase
from gradverify.inputs import fresh_copies
from gradverify.numerics import seeded, structures
from gradverify.results import Result, Status
from gradverify.spec.models import Case, FunctionSpec, TensorInput
from gradverify.target.loaded import Target

MOST_DIRECTIONS = 128  # larger matrices: the failure stays as it is


class StructuredInputs:
    """Judges the failures of one case's checks about its structured inputs."""

    def __init__(self, case: JudgedCase) -> None:
        self.target, self.spec, self.arguments = case.target, case.spec, case.arguments
        self.structures = structures_of(case.case)
        self._verdicts: dict[int, int | None] = {}  # input -> directions agreeing (None: not all)

    def judge(self, results: Sequence[Result]) -> list[Result]:
        """`results`, a first-order failure about a structured input that backward gets
        right along the structure's directions turned into a warning."""
        return [self._judged(result) for result in results]

    def _judged(self, result: Result) -> Result:
        index = result.input_index
        if result.status is not Status.FAIL or result.check not in FIRST_ORDER_CHECKS:
            return result
        if index is None or index not in self.structures:
            return result
        if index not in self._verdicts:
            self._verdicts[index] = self._agreeing(index)
        directions = self._verdicts[index]
        if directions is None:
            return result
        structure = self.structures[index]
        name = result.input_name or f"argument {index}"
        message = (
            f"backward is right for {structure} {name}: it agrees with central differences "
            f"along all {directions} directions that keep {name} {structure}; this finding "
            f"perturbs single elements, off {structure}, which forward does not expect "
            f"(it reads one triangle, say): {result.message}"
        )
        return replace(result, status=Status.WARN, message=message, hint=None)

    def _agreeing(self, index: int) -> int | None:
        """How many structure-keeping directions backward agrees along (None: not all)."""
        argument = self.arguments[index]
        if not isinstance(argument, torch.Tensor) or argument.dtype != torch.float64:
            return None
        try:
            return _agreeing(self.target, self.arguments, index, self.structures[index], self.spec)
        except Exception:  # the user's code failing here leaves the finding as it was
            return None


def structures_of(case: Case) -> dict[int, str]:
    """The case's inputs with a structure that has elementary directions, by position."""
    return {
        index: item.structure
        for index, item in enumerate(case.inputs)
        if isinstance(item, TensorInput)
        and item.structure is not None
        and item.structure in structures.KEPT
    }


def _agreeing(
    target: Target, arguments: Sequence[Any], index: int, structure: str, spec: FunctionSpec
) -> int | None:
    leaves = list(fresh_copies(arguments))
    point = leaves[index]
    if not structures.square(point) or not point.requires_grad:
        return None
    if not 0 < structures.count(point, structure) <= MOST_DIRECTIONS:
        return None
    directions = list(structures.elementary(point, structure))
    generator = seeded.generator(0)
    outputs = _floats(target.call(*leaves))
    weights = [seeded.uniform(o.shape, generator, o.device, o.dtype) for o in outputs]
    if not outputs:
        return None
    total = sum((o * w).sum() for o, w in zip(outputs, weights, strict=True))
    (analytical,) = torch.autograd.grad(total, point, allow_unused=True)  # type: ignore[arg-type]
    if analytical is None:
        return None
    step, tolerance = spec.tolerance.eps, spec.tolerance

    def value(shifted: torch.Tensor) -> torch.Tensor:
        moved = [a.detach() if isinstance(a, torch.Tensor) else a for a in leaves]
        moved[index] = shifted
        with torch.no_grad():
            found = _floats(target.call(*moved))
        return sum(
            ((o * w).sum() for o, w in zip(found, weights, strict=True)), point.new_zeros(())
        )

    base = point.detach()
    for direction in directions:
        numerical = (value(base + step * direction) - value(base - step * direction)) / (2 * step)
        along = (analytical * direction).sum()
        if abs(float(along - numerical)) > tolerance.atol + tolerance.rtol * abs(float(numerical)):
            return None
    return len(directions)


def _floats(outputs: Any) -> list[torch.Tensor]:
    items = outputs if isinstance(outputs, tuple | list) else (outputs,)
    return [o for o in items if isinstance(o, torch.Tensor) and o.is_floating_point()]
