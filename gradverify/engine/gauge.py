"""A backward right for a subspace, not for its basis, is the Function's contract, not a bug:
an output B (..., n, k) with orthonormal columns (eigenvectors, singular vectors, a
null-space basis) is defined only up to a rotation within the subspace it spans, and a
backward may, as torch.linalg.eigh's and svd's do, differentiate that subspace only. The
gradient checks compare it with finite differences of B itself and fail it. So a
first-order failure about such an output is checked again on gauge-invariant functions of B
(<W, B Bᵀ>, gradverify.numerics.gauge): where backward agrees there (and on the other
outputs), the failure becomes a warning that says so; where it does not, it stays, and
says it is wrong for the subspace too. An argument with a `structure:` in the case
(symmetric, spd, lower, upper) that fails element by element is tested again along the
directions that keep its structure, as gradverify.engine.structured does: a Function that
reads one triangle of a symmetric matrix (`torch.linalg.eigh`) is differentiable only there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from gradverify.catalogue import FIRST_ORDER_CHECKS
from gradverify.engine.judging import JudgedCase
from gradverify.engine.structured import structures_of
from gradverify.inputs import fresh_copies
from gradverify.numerics import gauge, structures
from gradverify.numerics.compare import Comparison
from gradverify.numerics.jacobian import call_forward
from gradverify.numerics.salts import Salt
from gradverify.results import Result, Status

# func's transforms compare backward with central differences too, on the same basis B
CHECKS = frozenset({*FIRST_ORDER_CHECKS, "func"})
INTENDED = (
    "As torch.linalg.eigh and svd, backward assumes the loss does not depend on the choice of "
    "basis within the subspace; if that is intended, say so with `gradient: surrogate` in a "
    "spec (`expected_gradient:` then compares backward with the gradient you intend; "
    "docs/checks.md#bases-of-a-subspace)"
)


@dataclass(frozen=True)
class Verdict:
    """backward on gauge-invariant functions of the bases, for one argument."""

    bases: tuple[int, ...]
    subspace: Comparison
    others: Comparison | None  # the outputs that are no bases (None: there are none)
    structure: str | None = None  # the argument perturbed only along directions keeping it

    @property
    def ok(self) -> bool:
        return self.subspace.ok and (self.others is None or self.others.ok)


class GaugeBases:
    """Judges the first-order failures of one case about outputs that are orthonormal bases."""

    def __init__(self, case: JudgedCase) -> None:
        self.target, self.spec, self.seed = case.target, case.spec, case.seed
        self.structures = structures_of(case.case)
        self._given = case.arguments
        self._copies: tuple[Any, ...] | None = None
        self._bases: tuple[int, ...] | None = None
        self._verdicts: dict[int, Verdict | None] = {}

    def judge(self, results: Sequence[Result]) -> list[Result]:
        """`results`, a first-order failure that backward gets right for the subspace turned
        into a warning, one wrong for the subspace too saying so."""
        return [self._judged(result) for result in results]

    def _judged(self, result: Result) -> Result:
        index = result.input_index
        if result.status is not Status.FAIL or result.check not in CHECKS or index is None:
            return result
        if self.spec.gradient != "exact" or result.internal or result.usage:
            return result
        if result.explored is not None and result.explored.found:  # another draw's inputs
            return result
        bases = self._orthonormal()
        if not bases or (result.output_index is not None and result.output_index not in bases):
            return result
        if index not in self._verdicts:
            self._verdicts[index] = self._verdict(index, bases)
        verdict = self._verdicts[index]
        if verdict is None or (verdict.others is not None and not verdict.others.ok):
            return result
        name = result.input_name or f"argument {index}"
        which = _outputs(verdict.bases)
        kept = (
            "" if verdict.structure is None else f" along {verdict.structure} directions of {name}"
        )
        if not verdict.subspace.ok:
            wrong = _wrong(verdict, self.arguments[index], name, which)
            return replace(
                result, message=f"{result.message}; wrong also for the subspace{kept}: {wrong}"
            )
        message = (
            f"backward is right for functions of the subspace that {which}'s columns span "
            f"(B Bᵀ), not for the basis B itself: the gradient of <W, B Bᵀ> for {name} agrees "
            f"with central differences{kept} for {gauge.DRAWS} random symmetric W. "
            f"{INTENDED}. On the basis itself: {result.message}"
        )
        return replace(result, status=Status.WARN, message=message, hint=None)

    @property
    def arguments(self) -> tuple[Any, ...]:
        """The case's arguments in float64, copied only once a failure asks for them."""
        if self._copies is None:
            self._copies = fresh_copies(self._given, torch.float64)
        return self._copies

    def _orthonormal(self) -> tuple[int, ...]:
        if self._bases is None:
            try:
                with torch.enable_grad():  # which outputs are differentiable
                    outputs = call_forward(self.target.call, self.arguments)
                self._bases = gauge.orthonormal_bases(outputs)
            except Exception:  # forward failing here leaves the findings as they were
                self._bases = ()
        return self._bases

    def _verdict(self, index: int, bases: tuple[int, ...]) -> Verdict | None:
        argument = self.arguments[index]
        if not isinstance(argument, torch.Tensor) or argument.dtype != torch.float64:
            return None
        tolerance = self.spec.tolerance
        steps = (tolerance.eps, tolerance.atol, tolerance.rtol)
        seed = self.seed + 7919 * (Salt.GAUGE_WEIGHTS + index)
        call = self.target.call
        structure = self.structures.get(index)
        if structure is not None and not structures.square(argument):
            structure = None
        try:
            subspace = gauge.subspace_comparison(call, self.arguments, index, bases, steps, seed)
            others = gauge.others_comparison(call, self.arguments, index, bases, steps, seed)
            verdict = Verdict(bases, subspace, others)
            if verdict.ok or structure is None:
                return verdict
            # Element by element perturbs the argument off the structure the case gives it.
            subspace = gauge.subspace_comparison(
                call, self.arguments, index, bases, steps, seed, structure
            )
            others = gauge.others_comparison(
                call, self.arguments, index, bases, steps, seed, structure
            )
        except Exception:  # the user's code failing here leaves the finding as it was
            return None
        return Verdict(bases, subspace, others, structure)


def _outputs(bases: Sequence[int]) -> str:
    """`output 0`, `outputs 0 and 2`."""
    if len(bases) == 1:
        return f"output {bases[0]}"
    return f"outputs {', '.join(str(b) for b in bases[:-1])} and {bases[-1]}"


def _wrong(verdict: Verdict, argument: torch.Tensor, name: str, which: str) -> str:
    """Where backward's gradient of <W, B Bᵀ> is off, in words."""
    comparison = verdict.subspace
    where = gauge.location(argument, verdict.structure, comparison.column)
    if where is None:
        place = f"along a random direction ({comparison.mismatched} of {comparison.total} off)"
    else:
        place = f"at {where}" if verdict.structure is None else f"along {where}"
    return (
        f"the gradient of <W, B Bᵀ> (B: {which}) for {name} is off {place}: analytical "
        f"{comparison.analytical:.6g}, numerical {comparison.numerical:.6g}"
    )
