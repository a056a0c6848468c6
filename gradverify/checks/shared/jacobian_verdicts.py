"""Analytical against numerical Jacobian blocks, argument by argument: kinks and rounding
noise taken into account, and the verdict as a result (finite_difference, gradcheck,
gradgradcheck and func judge with it)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from gradverify.checks.shared.case import CaseContext
from gradverify.checks.shared.linearity import backward_linearity
from gradverify.numerics.compare import Comparison, compare
from gradverify.numerics.complex_parts import NO_PARTS, Parts, PartsMismatch, complex_hint
from gradverify.numerics.diagnosis import diagnose
from gradverify.numerics.jacobian import (
    OutputLayout,
    analytical_jacobians,
    element_words,
    forward_selection,
    numerical_jacobian,
)
from gradverify.numerics.kinks import Evaluate, Kink, excused_mask, find_kinks
from gradverify.numerics.maps import full_jacobian_map
from gradverify.numerics.noise import rounding_hint
from gradverify.numerics.stochastic import mean_jacobians, mean_note, samples_hint
from gradverify.results import Result, Status


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
    parts: Parts = NO_PARTS  # complex values seen as (real, imaginary) pairs (complex_parts.py)


@dataclass(frozen=True)
class Assessment:
    """One argument's comparison after kinks have been taken into account."""

    comparison: Comparison
    kinks: tuple[Kink, ...]
    noise: tuple[tuple[int, int], ...] = ()  # (row, column) entries off by rounding noise

    @property
    def admitted(self) -> list[Kink]:
        return [kink for kink in self.kinks if kink.admitted]


def jacobian_blocks(
    context: CaseContext,
    arguments: Sequence[Any],
    wrt: Sequence[int],
    approximate: bool = False,
    parts: Parts = NO_PARTS,
) -> Blocks | None:
    """Analytical and numerical Jacobians of every differentiable output w.r.t. each of `wrt`.

    `approximate`: the analytical ones are the mean of the spec's `samples` backward runs,
    and how far runs differ is measured. With complex values, `context` and `arguments` are
    `realify`'s, and `parts` names their pairs.
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
        tuple(arguments), selection.layout, analytical, numerical, selection.evaluate, spread,
        parts,
    )  # fmt: skip


def assess(context: CaseContext, index: int, blocks: Blocks) -> Assessment:
    """Compare one argument's blocks; mismatches at kinks with a valid subgradient are excused."""
    tol = context.tolerance
    analytical, numerical = blocks.analytical[index], blocks.numerical[index]
    magnitude = blocks.parts.magnitudes(numerical, index) if blocks.parts.any else None
    comparison = compare(analytical, numerical, tol.atol, tol.rtol, magnitude=magnitude)
    if comparison.ok:
        return Assessment(comparison, ())
    found = find_kinks(
        blocks.evaluate, blocks.arguments, index, comparison.off,
        analytical, numerical, tol.eps, tol.atol, tol.rtol,
    )  # fmt: skip
    if any(kink.admitted for kink in found.kinks):
        excused = excused_mask(found.kinks, analytical)
        comparison = compare(analytical, numerical, tol.atol, tol.rtol, excused, magnitude)
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
    argument, parts = blocks.arguments[index], blocks.parts
    analytical, numerical = blocks.analytical[index], blocks.numerical[index]
    output_index, output_element, row_part = parts.locate(blocks.layout, comparison.row)
    element = parts.element(index, comparison.column, argument.shape)
    name = context.target.argument_name(index) or f"argument {index}"
    hint = noise_hint(comparison, noise)  # lost precision first: noise can look like anything
    if hint is None:
        hint = kink_hint(comparison, kinks)
    if hint is None:
        tol = context.tolerance
        mismatch = PartsMismatch(
            parts, blocks.layout, index, analytical, numerical, comparison.off, name,
            tol.atol, tol.rtol,
        )  # fmt: skip
        hint = complex_hint(mismatch)
    if hint is None:
        tol = context.tolerance
        linearity = backward_linearity(context, blocks.arguments, index, analytical)
        excused = excused_mask([k for k in kinks if k.admitted], analytical)
        # A pair's values are no single variable to cut at, nor a matrix to transpose.
        plain = None if index in parts.columns else argument
        numbers = {
            context.target.argument_name(i) or f"argument {i}": float(value)
            for i, value in enumerate(context.arguments)
            if isinstance(value, int | float) and not isinstance(value, bool)
        }
        indices = {
            context.target.argument_name(i) or f"argument {i}": value
            for i, value in enumerate(context.arguments)
            if isinstance(value, torch.Tensor)
            and not value.is_floating_point()
            and not value.is_complex()
            and value.dtype != torch.bool
        }
        hint = diagnose(
            analytical, numerical, comparison.off, plain, name, tol.atol, tol.rtol, linearity,
            excused, pairs=parts.any, numbers=numbers,
            outputs=tuple(zip(blocks.layout.indices, blocks.layout.shapes, strict=True)),
            indices=indices,
            # no surrogate where backward passed finite_difference: it is the derivative here
            surrogate=not context.first_order_passed(("finite_difference",)),
        )  # fmt: skip
    where = element_words(element)
    user_shape = parts.shape(index, argument.shape)
    if len(blocks.layout.indices) > 1 or parts.row_count(blocks.layout) != math.prod(user_shape):
        where += f", output {output_index} element {list(output_element)}"
    which = parts.entry_words(name, index, comparison.column, row_part)
    message = (
        f"gradient of {context.describe_argument(index)} is wrong at {where}"
        f"{f': {which}' if which else ''}: analytical {comparison.analytical:.6g}, numerical "
        f"{comparison.numerical:.6g} ({comparison.mismatched} of {comparison.total} entries off)"
    )
    wrong = parts.element_mask(comparison.off, index)
    return context.result(
        check, Status.FAIL, message,
        output_index=output_index, element=element,
        analytical=comparison.analytical, numerical=comparison.numerical,
        hint=hint, mismatch_map=full_jacobian_map(wrong, user_shape),
        **_error_fields(index, comparison, notes),
    )  # fmt: skip


def kink_hint(comparison: Comparison, kinks: Sequence[Kink]) -> str | None:
    """The hint when every entry still off sits at a kink, outside its one-sided slopes."""
    outside = {(k.row, k.column): k for k in kinks if not k.admitted}
    remaining = comparison.off.nonzero().tolist()
    if not remaining or not all((row, column) in outside for row, column in remaining):
        return None
    worst = outside[(comparison.row, comparison.column)]
    return (
        "wrong only at non-differentiable points: there any value between the one-sided "
        f"slopes is a valid (sub)gradient, but {worst.describe()}"
    )


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
    first, parts, shape = kinks[0], blocks.parts, blocks.arguments[index].shape
    element = parts.element(index, first.column, shape)
    elements = {parts.element(index, kink.column, shape) for kink in kinks}
    more = f" (and {len(elements) - 1} more element(s))" if len(elements) > 1 else ""
    part = parts.column_part(index, first.column)
    along = f", along its {part} part" if part else ""
    message = (
        f"non-differentiable at {context.describe_argument(index)}, element {list(element)}"
        f"{along}{more}: {first.describe()}"
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
        element=blocks.parts.element(index, column, blocks.arguments[index].shape),
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
