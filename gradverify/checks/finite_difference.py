"""`finite_difference`: our own central differences against backward, per argument, in float64.

In randomized mode (`checks/modes.py`) the full Jacobians give way to random projections,
with group testing to name a wrong entry (`checks/randomized.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from gradverify.checks.base import CaseContext, UserCodeError, crash_result
from gradverify.checks.compare import Comparison, compare
from gradverify.checks.diagnosis import diagnose
from gradverify.checks.jacobian import (
    OutputLayout,
    analytical_jacobians,
    element_words,
    forward_selection,
    numerical_jacobian,
    unravel,
)
from gradverify.checks.kinks import Evaluate, Kink, excused_mask, find_kinks
from gradverify.checks.linearity import backward_linearity
from gradverify.checks.maps import full_jacobian_map
from gradverify.checks.modes import (
    first_order_problem,
    projected_measure,
    randomized_verdict,
    resolve_mode,
)
from gradverify.checks.noise import rounding_hint
from gradverify.checks.randomized import Localizer
from gradverify.checks.stochastic import mean_jacobians, mean_note, samples_hint
from gradverify.inputs import differentiable_indices, fresh_copies, promoted_arguments
from gradverify.results import Result, Status

COMPLEX_SKIP = (
    "complex values: their Wirtinger derivatives are checked by `gradcheck`, not by real "
    "central differences"
)
SURROGATE_SKIP = (
    "gradient: surrogate — backward is intentionally not the derivative, so values are not "
    "compared (give `expected_gradient` to compare backward with the intended gradient)"
)


@dataclass(frozen=True)
class Blocks:
    """Analytical and numerical Jacobian blocks per argument, and how to re-evaluate outputs."""

    arguments: tuple[Any, ...]
    layout: OutputLayout
    analytical: dict[int, torch.Tensor]
    numerical: dict[int, torch.Tensor]
    evaluate: Evaluate  # the outputs the rows stand for, at given arguments
    # approximate: per argument, the largest standard deviation of a backward run's entry
    spread: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Assessment:
    """One argument's comparison after kinks have been taken into account."""

    comparison: Comparison
    kinks: tuple[Kink, ...]
    noise: tuple[tuple[int, int], ...] = ()  # (row, column) entries off by rounding noise

    @property
    def admitted(self) -> list[Kink]:
        return [kink for kink in self.kinks if kink.admitted]


class FiniteDifferenceCheck:
    """Each differentiable argument's Jacobian, full or by random projections (by mode):
    backward against central differences."""

    id: ClassVar[str] = "finite_difference"
    description: ClassVar[str] = (
        "backward's Jacobian matches central finite differences, per argument, in float64"
    )

    def run(self, context: CaseContext) -> list[Result]:
        wrt = differentiable_indices(context.arguments)
        if not wrt:
            return [context.result(self.id, Status.SKIP, "no argument requires grad")]
        if context.spec.gradient == "surrogate":
            # Declared by the user; shown only while nothing else checks backward's values.
            checked = context.spec.expected_gradient is not None
            return [context.result(self.id, Status.SKIP, SURROGATE_SKIP, applies=not checked)]
        arguments = fresh_copies(context.arguments, torch.float64)
        notes = promotion_notes(context, context.arguments)
        complex_arguments = [i for i in wrt if arguments[i].is_complex()]
        if complex_arguments:
            return [
                context.result(self.id, Status.SKIP, COMPLEX_SKIP, input_index=index)
                for index in complex_arguments
            ]
        mode, reason = resolve_mode(context, arguments)
        if mode == "randomized":
            return randomized_run(context, self.id, arguments, wrt, (*notes, reason))
        try:
            approximate = context.spec.gradient == "approximate"
            blocks = jacobian_blocks(context, arguments, wrt, approximate=approximate)
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]
        if blocks is None:
            return [
                context.result(self.id, Status.SKIP, "no output is differentiable", notes=notes)
            ]
        if any(block.is_complex() for block in blocks.numerical.values()):
            return [context.result(self.id, Status.SKIP, COMPLEX_SKIP, notes=notes)]
        if context.spec.gradient == "approximate":
            return [measure(context, self.id, index, blocks, notes) for index in wrt]
        try:
            return [judge(context, self.id, index, blocks, notes) for index in wrt]
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]


def randomized_run(
    context: CaseContext,
    check: str,
    arguments: tuple[Any, ...],
    wrt: Sequence[int],
    notes: tuple[str, ...],
) -> list[Result]:
    """Randomized mode: random projections per argument, group testing on a discrepancy."""
    try:
        problem = first_order_problem(context, arguments, wrt)
        if problem is None:
            return [context.result(check, Status.SKIP, "no output is differentiable", notes=notes)]
        if problem.complex:
            return [context.result(check, Status.SKIP, COMPLEX_SKIP, notes=notes)]
        localizer = Localizer(problem, context.generator)
        approximate = context.spec.gradient == "approximate"
        exams = [localizer.examine(index, search=not approximate) for index in wrt]
    except UserCodeError as error:
        return [crash_result(context, check, error)]
    if approximate:
        return [projected_measure(context, check, exam, notes) for exam in exams]
    return [randomized_verdict(context, check, problem, exam, notes) for exam in exams]


def jacobian_blocks(
    context: CaseContext, arguments: Sequence[Any], wrt: Sequence[int], approximate: bool = False
) -> Blocks | None:
    """Analytical and numerical Jacobians of every differentiable output w.r.t. each of `wrt`.

    `approximate`: the analytical ones are the mean of the spec's `samples` backward runs,
    and how far runs differ is measured.
    """
    selection = forward_selection(context.target.call, arguments)
    if selection is None:
        return None
    spread: dict[int, float] = {}
    if approximate:
        samples = context.spec.backward_samples
        outputs = list(selection.outputs)
        analytical, spread = mean_jacobians(outputs, arguments, wrt, samples, measure_spread=True)
    else:
        analytical = analytical_jacobians(list(selection.outputs), arguments, wrt)
    numerical = {
        index: numerical_jacobian(selection.evaluate, arguments, index, context.tolerance.eps)
        for index in wrt
    }
    return Blocks(
        tuple(arguments), selection.layout, analytical, numerical, selection.evaluate, spread
    )


def assess(context: CaseContext, index: int, blocks: Blocks) -> Assessment:
    """Compare one argument's blocks; mismatches at kinks with a valid subgradient are excused."""
    tol = context.tolerance
    analytical, numerical = blocks.analytical[index], blocks.numerical[index]
    comparison = compare(analytical, numerical, tol.atol, tol.rtol)
    if comparison.ok:
        return Assessment(comparison, ())
    found = find_kinks(
        blocks.evaluate, blocks.arguments, index, comparison.off,
        analytical, numerical, tol.eps, tol.atol, tol.rtol,
    )  # fmt: skip
    if any(kink.admitted for kink in found.kinks):
        excused = excused_mask(found.kinks, analytical.shape)
        comparison = compare(analytical, numerical, tol.atol, tol.rtol, excused)
    return Assessment(comparison, found.kinks, found.noise)


def judge(
    context: CaseContext,
    check: str,
    index: int,
    blocks: Blocks,
    notes: tuple[str, ...] = (),
) -> Result:
    """One argument's verdict: pass, warn (mismatches only at kinks) or fail at the worst element."""
    assessment = assess(context, index, blocks)
    comparison, admitted = assessment.comparison, assessment.admitted
    if comparison.ok and admitted:
        return kink_warning(context, check, index, blocks, admitted, comparison, notes)
    if comparison.ok:
        return context.result(
            check, Status.PASS,
            f"gradient of {context.describe_argument(index)} matches ({comparison.total} entries)",
            **_error_fields(index, comparison, notes),
        )  # fmt: skip
    if admitted:
        notes = (*notes, f"{len(admitted)} mismatch(es) at non-differentiable points excused")
    return mismatch_failure(
        context, check, index, blocks, comparison, assessment.kinks, notes, assessment.noise
    )


def mismatch_failure(
    context: CaseContext,
    check: str,
    index: int,
    blocks: Blocks,
    comparison: Comparison,
    kinks: Sequence[Kink],
    notes: tuple[str, ...],
    noise: Sequence[tuple[int, int]] = (),
) -> Result:
    """A failure naming the worst element, the values and the likely cause."""
    argument = blocks.arguments[index]
    analytical, numerical = blocks.analytical[index], blocks.numerical[index]
    output_index, output_element = blocks.layout.locate(comparison.row)
    element = unravel(comparison.column, argument.shape)
    outside = {(k.row, k.column): k for k in kinks if not k.admitted}
    remaining = comparison.off.nonzero().tolist()
    hint = noise_hint(comparison, noise)  # lost precision first: noise can look like anything
    if hint is None and remaining and all((row, column) in outside for row, column in remaining):
        worst = outside[(comparison.row, comparison.column)]
        hint = (
            "wrong only at non-differentiable points: there any value between the one-sided "
            f"slopes is a valid (sub)gradient, but {worst.describe()}"
        )
    elif hint is None:
        name = context.target.argument_name(index) or f"argument {index}"
        tol = context.tolerance
        linearity = backward_linearity(context, blocks.arguments, index, analytical)
        excused = excused_mask([k for k in kinks if k.admitted], analytical.shape)
        hint = diagnose(
            analytical, numerical, comparison.off, argument, name, tol.atol, tol.rtol, linearity,
            excused,
        )  # fmt: skip
    where = element_words(element)
    if len(blocks.layout.indices) > 1 or blocks.layout.rows != argument.numel():
        where += f", output {output_index} element {list(output_element)}"
    message = (
        f"gradient of {context.describe_argument(index)} is wrong at {where}: analytical "
        f"{comparison.analytical:.6g}, numerical {comparison.numerical:.6g} "
        f"({comparison.mismatched} of {comparison.total} entries off)"
    )
    return context.result(
        check, Status.FAIL, message,
        output_index=output_index, element=element,
        analytical=comparison.analytical, numerical=comparison.numerical,
        hint=hint, mismatch_map=full_jacobian_map(comparison.off, argument.shape),
        **_error_fields(index, comparison, notes),
    )  # fmt: skip


def noise_hint(
    comparison: Comparison, noise: Sequence[tuple[int, int]], function: str = "forward"
) -> str | None:
    """The lost-precision hint when every entry still off is rounding noise of `function`."""
    remaining = comparison.off.nonzero().tolist()
    noisy = set(noise)
    if not remaining or not all((row, column) in noisy for row, column in remaining):
        return None
    return rounding_hint(len({column for _, column in remaining}), function)


def kink_warning(
    context: CaseContext,
    check: str,
    index: int,
    blocks: Blocks,
    kinks: Sequence[Kink],
    comparison: Comparison,
    notes: tuple[str, ...],
) -> Result:
    """`warn`: the only mismatches sit at kinks, and backward gives a valid subgradient there."""
    first = kinks[0]
    element = unravel(first.column, blocks.arguments[index].shape)
    columns = sorted({kink.column for kink in kinks})
    more = f" (and {len(columns) - 1} more element(s))" if len(columns) > 1 else ""
    message = (
        f"non-differentiable at {context.describe_argument(index)}, element {list(element)}"
        f"{more}: {first.describe()}"
    )
    output_index, _ = blocks.layout.locate(first.row)
    return context.result(
        check, Status.WARN, message,
        output_index=output_index, element=element,
        analytical=first.analytical,
        numerical=float(blocks.numerical[index][first.row, first.column]),
        hint=f"{first.kind}: central differences mean nothing there, and backward's "
        "value is a valid subgradient; the rest of the gradient matches",
        **_error_fields(index, comparison, notes),
    )  # fmt: skip


def measure(
    context: CaseContext, check: str, index: int, blocks: Blocks, notes: tuple[str, ...]
) -> Result:
    """`gradient: approximate`: the gradient's error as a figure, failing only above max_error."""
    analytical = blocks.analytical[index].to(torch.float64)
    numerical = blocks.numerical[index].to(torch.float64)
    scale = max(float(numerical.abs().max()) if numerical.numel() else 0.0, context.tolerance.atol)
    difference = (analytical - numerical).abs()
    error = float(difference.max()) / scale if difference.numel() else 0.0
    allowed = context.spec.allowed_error
    flat = int(torch.argmax(difference)) if difference.numel() else 0
    row, column = divmod(flat, max(difference.shape[1], 1)) if difference.numel() else (0, 0)
    verdict = Status.PASS if error <= allowed else Status.FAIL
    relation = "within" if verdict is Status.PASS else "above"
    samples, spread = context.spec.backward_samples, blocks.spread.get(index)
    return context.result(
        check, verdict,
        f"gradient of {context.describe_argument(index)} has error {error:.3g} relative to its "
        f"largest value, {relation} max_error {allowed:g}",
        input_index=index,
        hint=samples_hint(samples, spread, allowed * scale) if verdict is Status.FAIL else None,
        element=unravel(column, blocks.arguments[index].shape),
        analytical=float(analytical[row, column]) if difference.numel() else None,
        numerical=float(numerical[row, column]) if difference.numel() else None,
        max_abs_error=float(difference.max()) if difference.numel() else 0.0,
        max_rel_error=error, notes=(*notes, *mean_note(samples, spread)),
    )  # fmt: skip


def _error_fields(index: int, comparison: Comparison, notes: tuple[str, ...]) -> dict[str, Any]:
    return {
        "input_index": index,
        "max_abs_error": comparison.max_abs_error,
        "max_rel_error": comparison.max_rel_error,
        "mismatched": comparison.mismatched,
        "total": comparison.total,
        "notes": notes,
    }


def promotion_notes(context: CaseContext, arguments: Sequence[Any]) -> tuple[str, ...]:
    return tuple(
        f"{context.describe_argument(index)} promoted from {str(dtype).removeprefix('torch.')} "
        "to float64 for this check"
        for index, dtype in promoted_arguments(arguments)
    )
