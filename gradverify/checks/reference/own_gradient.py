"""When the Function's gradient passed `finite_difference` on this case and the reference's
disagrees with it, the reference is asked too: finite differences of the reference itself at
the worst element. A reference whose autograd gradient disagrees with its own finite
differences (torch.linalg.det at a singular matrix, a reference that detaches part of its
graph) is the finding, as a warning about the reference; otherwise the failure stands, with
a hint that names no pattern of backward's (no surrogate): backward is the derivative here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from gradverify.checks.shared.backward_call import same_random_numbers
from gradverify.checks.shared.case import CaseContext
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError, user_code

FIRST_ORDER = ("finite_difference",)
DIFFERENT_FUNCTION = (
    "the Function's gradient agrees with finite differences on this case (finite_difference "
    "passed) and the reference's does not: likely the reference is not the same function near "
    "these inputs (the forwards agree here but not around), not a wrong backward"
)


def judged_by_finite_differences(
    context: CaseContext,
    reference: Callable[..., Any],
    arguments: Sequence[Any],
    seeds: Mapping[int, torch.Tensor],
    results: list[Result],
) -> list[Result]:
    """`results`, each failing gradient re-judged where finite_difference passed on the case."""
    if not context.first_order_passed(FIRST_ORDER):
        return results
    return [
        _rejudged(context, reference, arguments, seeds, result)
        if result.failed and result.input_index is not None and result.output_index is None
        else result
        for result in results
    ]


def _rejudged(
    context: CaseContext,
    reference: Callable[..., Any],
    arguments: Sequence[Any],
    seeds: Mapping[int, torch.Tensor],
    result: Result,
) -> Result:
    numerical = _reference_slope(context, reference, arguments, seeds, result)
    if numerical is None or result.numerical is None or result.analytical is None:
        return dataclasses.replace(result, hint=DIFFERENT_FUNCTION)
    tolerance = context.tolerance
    allowed = tolerance.atol + tolerance.rtol * abs(numerical)
    function_agrees = abs(result.analytical - numerical) <= allowed
    reference_wrong = not abs(result.numerical - numerical) <= allowed
    if not (function_agrees and reference_wrong):
        return dataclasses.replace(result, hint=DIFFERENT_FUNCTION)
    assert result.input_index is not None and result.element is not None
    which = context.describe_argument(result.input_index)
    return dataclasses.replace(
        result,
        status=Status.WARN,
        message=(
            f"the reference's own gradient of {which} is wrong at element "
            f"{list(result.element)}: autograd through the reference gives "
            f"{result.numerical:.6g}, finite differences of the reference {numerical:.6g}, and "
            f"the Function's {result.analytical:.6g} agrees with them"
        ),
        analytical=result.numerical,
        numerical=numerical,
        max_abs_error=abs(result.numerical - numerical),
        max_rel_error=None,
        value_labels=("reference's autograd", "reference's finite differences"),
        hint=(
            f"the finding is the reference {context.spec.reference}, not the Function (its "
            "gradient passed finite_difference on this case): the reference's backward is not "
            "its derivative at these inputs, as torch's own backward can be at a singular point "
            "(torch.linalg.det at a singular matrix) or a reference that detaches part of its "
            "graph is; compare at other inputs, or with a reference differentiable here"
        ),
    )


def _reference_slope(
    context: CaseContext,
    reference: Callable[..., Any],
    arguments: Sequence[Any],
    seeds: Mapping[int, torch.Tensor],
    result: Result,
) -> float | None:
    """Σ_k <seed_k, ∂ output_k / ∂ argument[element]> of the reference by central differences,
    in float64; None where it cannot be taken (complex values, a crash, another shape)."""
    index, element = result.input_index, result.element
    assert index is not None
    argument = arguments[index]
    if element is None or not isinstance(argument, torch.Tensor):
        return None
    if argument.dtype != torch.float64 or any(seed.is_complex() for seed in seeds.values()):
        return None
    step = context.tolerance.eps
    sides = []
    for sign in (1.0, -1.0):
        moved = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in arguments]
        moved[index][element] += sign * step
        try:
            with torch.no_grad(), same_random_numbers(context.seed), user_code("the reference"):
                outputs = reference(*moved)
        except UserCodeError:
            return None
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        total = 0.0
        for output_index, seed in seeds.items():
            output = outputs[output_index] if output_index < len(outputs) else None
            if not isinstance(output, torch.Tensor) or output.shape != seed.shape:
                return None
            total += float((output.to(torch.float64) * seed.to(output.device)).sum().item())
        sides.append(total)
    return (sides[0] - sides[1]) / (2 * step)
