"""`func`'s verdicts: each transform's gradients against central differences.

Where a transform disagrees with finite differences, autograd's own backward settles the
cause: a transform that gives backward's values inherits backward's error (or a kink, or
rounding noise), which `finite_difference` judges and reports, so `func` says it once and
points there; a transform that departs from backward is a bug of its own. How each verdict
is worded is func_findings'.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from gradverify.checks.func.findings import (
    TransformFinding,
    inherited_failure,
    nonlinear_failure,
    own_failure,
)
from gradverify.checks.func.transforms import PROJECTED, Transforms, flat_weights
from gradverify.checks.shared.case import CaseContext
from gradverify.checks.shared.jacobian_verdicts import Blocks, assess
from gradverify.numerics import seeded
from gradverify.numerics.compare import Comparison, compare
from gradverify.numerics.complex_parts import NO_PARTS, Parts
from gradverify.numerics.jacobian import Selection, analytical_jacobians, numerical_jacobian
from gradverify.numerics.salts import Salt
from gradverify.results import Result
from gradverify.usercode import user_code


class Judge:
    """Compares the transforms' blocks with central differences, one argument at a time."""

    def __init__(
        self,
        context: CaseContext,
        arguments: tuple[Any, ...],
        selection: Selection,
        transforms: Transforms,
        randomized: bool,
        parts: Parts = NO_PARTS,
    ) -> None:
        self.context, self.arguments = context, arguments
        self.parts = parts  # complex arguments and outputs seen as (real, imaginary) pairs
        self.selection, self.transforms, self.randomized = selection, transforms, randomized
        self.notes: list[str] = []
        self.inherited: dict[int, list[TransformFinding]] = {}  # backward's own error, by argument
        self.own: dict[int, list[TransformFinding]] = {}  # the transforms' own errors, by argument
        # backward not linear in grad_output (it ignores it, say): finite_difference's one-hot
        # grad_outputs cannot see that, grad's and vjp's random weightings do
        self.nonlinear: dict[int, TransformFinding] = {}
        self._numerical: dict[int, torch.Tensor] = {}
        self._backward: dict[int, torch.Tensor] | None = None

    def compare(self, transform: str, blocks: dict[int, torch.Tensor]) -> None:
        """Judge one transform's blocks; findings are kept until `verdicts`."""
        for index in self.transforms.wrt:
            self._one(transform, index, blocks[index])

    # --- full mode ----------------------------------------------------------------------

    def numerical(self, index: int) -> torch.Tensor:
        if index not in self._numerical:
            self._numerical[index] = numerical_jacobian(
                self.selection.evaluate, self.arguments, index, self.context.tolerance.eps
            ).to(torch.float64)
        return self._numerical[index]

    def backward(self, index: int) -> torch.Tensor:
        """Autograd's Jacobian through the Function's backward (computed once, on need)."""
        if self._backward is None:
            outputs = list(self.selection.outputs)
            jacobians = analytical_jacobians(outputs, self.arguments, self.transforms.wrt)
            self._backward = {i: block.to(torch.float64) for i, block in jacobians.items()}
        return self._backward[index]

    def _one(self, transform: str, index: int, got: torch.Tensor) -> None:
        if self.randomized:
            return self._projected(transform, index, got)
        tol = self.context.tolerance
        if transform in PROJECTED:
            weights = self._weights(transform)
            numerical = weights @ self.numerical(index)
            atol = tol.atol * float(weights.abs().sum())
            comparison = compare(got, numerical, atol, tol.rtol)
        else:
            atol = tol.atol
            blocks = self._blocks(index, got)
            # Kinks where the transform gives a valid subgradient are excused here; rounding
            # noise is backward's lot too, so finite_difference's verdict covers it below.
            comparison = assess(self.context, index, blocks).comparison
        if comparison.ok:
            return None
        if transform in PROJECTED and not self._linear(transform, index):
            self.nonlinear.setdefault(index, self._finding(transform, index, comparison, got))
            return None
        backward = self.backward(index)
        if transform in PROJECTED:
            backward = self._weights(transform) @ backward
        finding = self._finding(transform, index, comparison, got)
        off = comparison.off
        agrees = compare(got[off].reshape(1, -1), backward[off].reshape(1, -1), atol, tol.rtol)
        if agrees.ok:
            self._inherit(index, finding)
            return
        row, column = comparison.row, comparison.column
        self._depart(index, finding, float(backward[row, column]))

    def _linear(self, transform: str, index: int) -> bool:
        """Whether eager backward scales with grad_output for argument `index`: twice the
        weighting gives twice the gradient."""
        tol = self.context.tolerance
        once, twice = (self._pullback(transform, index, scale) for scale in (1.0, 2.0))
        if once is None or twice is None:
            return True
        return compare(
            twice.reshape(1, -1).to(torch.float64), 2 * once.reshape(1, -1).to(torch.float64),
            tol.atol, tol.rtol,
        ).ok  # fmt: skip

    def _pullback(self, transform: str, index: int, scale: float = 1.0) -> torch.Tensor | None:
        """Eager backward's gradient of argument `index` for the transform's weighting of the
        outputs, times `scale` (None: the argument does not reach them)."""
        weighting = [scale * w for w in self.transforms.weighting(transform)]
        with torch.enable_grad(), user_code("backward"):
            (gradient,) = torch.autograd.grad(
                self.selection.outputs, [self.arguments[index]], weighting,
                retain_graph=True, allow_unused=True,
            )  # fmt: skip
        return gradient

    def _blocks(self, index: int, got: torch.Tensor) -> Blocks:
        selection = self.selection
        return Blocks(
            self.arguments, selection.layout, {index: got}, {index: self.numerical(index)},
            selection.evaluate,
        )  # fmt: skip

    def _weights(self, transform: str) -> torch.Tensor:
        return flat_weights(self.transforms.weighting(transform))

    def _finding(
        self, transform: str, index: int, comparison: Comparison, got: torch.Tensor
    ) -> TransformFinding:
        parts, column = self.parts, comparison.column
        element = parts.element(index, column, self.arguments[index].shape)
        output = None
        row_part = None
        layout = self.selection.layout
        elementwise = layout.shapes == (tuple(self.arguments[index].shape),)
        if transform not in PROJECTED:
            output_index, output_element, row_part = parts.locate(layout, comparison.row)
            if not (elementwise and comparison.row == column):
                output = (output_index, output_element)
        name = self.context.describe_argument(index)
        return TransformFinding(
            transform, element, output, comparison.analytical, comparison.numerical,
            comparison.mismatched, comparison.total,
            part=parts.entry_words(name, index, column, row_part),
        )  # fmt: skip

    def _inherit(self, index: int, finding: TransformFinding) -> None:
        """The transform gives backward's values: backward's verdict is the transform's."""
        earlier = [
            r for r in self.context.earlier
            if r.check == "finite_difference" and r.input_index == index
        ]  # fmt: skip
        if earlier and not any(r.failed for r in earlier):
            return None  # kinks or noise that finite_difference excused
        if not earlier and not self.randomized:
            blocks = self._blocks(index, self.backward(index))
            if assess(self.context, index, blocks).comparison.ok:
                return None
        if not earlier and self.randomized:
            self.notes.append(
                f"{finding.transform} gives backward's gradient of "
                f"{self.context.describe_argument(index)}, which finite_difference judges"
            )
            return None
        self.inherited.setdefault(index, []).append(finding)
        return None

    def _depart(self, index: int, finding: TransformFinding, backward: float) -> None:
        """The transform departs from backward and from finite differences: its own bug."""
        self.own.setdefault(index, []).append(replace(finding, backward=backward))

    # --- randomized mode ----------------------------------------------------------------

    def _projected(self, transform: str, index: int, got: torch.Tensor) -> None:
        """wᵀJu: the transform's row times a random direction u, against central
        differences along u (numerical_jacobian of t -> f(x + t·u))."""
        tol = self.context.tolerance
        argument = self.arguments[index]
        generator = self.context.generator(Salt.FUNC_DIRECTION + index)
        direction = seeded.normal(argument.shape, generator, argument.device)
        weights = self._weights(transform)
        at_zero = torch.zeros((), dtype=torch.float64, device=argument.device)
        along = numerical_jacobian(self._line(index, direction), [at_zero], 0, tol.eps).to(
            torch.float64
        )
        numerical = float(weights @ along)
        value = float(got @ direction.reshape(-1, 1))
        atol = tol.atol * float(weights.norm() * direction.norm())
        if abs(value - numerical) <= atol + tol.rtol * abs(numerical):
            return None
        if not self._linear(transform, index):
            self.nonlinear.setdefault(
                index, TransformFinding(transform, None, None, value, numerical)
            )
            return None
        gradient = self._pullback(transform, index)
        backward = (
            0.0 if gradient is None else float((gradient.to(torch.float64) * direction).sum())
        )
        finding = TransformFinding(transform, None, None, value, numerical)
        if abs(value - backward) <= atol + tol.rtol * abs(backward):
            self._inherit(index, finding)
            return
        self._depart(index, finding, backward)

    def _line(self, index: int, direction: torch.Tensor) -> Any:
        base = self.arguments[index].detach()

        def evaluate(step: torch.Tensor) -> list[torch.Tensor]:
            shifted = list(self.arguments)
            shifted[index] = (base + step * direction).requires_grad_(base.requires_grad)
            return self.selection.evaluate(*shifted)

        return evaluate


def verdicts(context: CaseContext, check: str, judge: Judge) -> list[Result]:
    """One failure per argument the transforms get wrong: their own error first, else
    backward's error that they inherit."""
    results = []
    for index in judge.transforms.wrt:
        if index in judge.own:
            results.append(own_failure(context, check, index, judge.own[index]))
        elif index in judge.nonlinear:
            results.append(nonlinear_failure(context, check, index, judge.nonlinear[index]))
        elif judge.inherited.get(index):
            results.append(inherited_failure(context, check, index, judge.inherited[index]))
    return results
