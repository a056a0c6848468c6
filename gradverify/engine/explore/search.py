"""`--explore N`: further draws of a case, searching for an input on which backward is wrong.

The case's own draw has passed; N further draws (gradverify.engine.explore.draws) are judged by one
cheap, decisive check, finite_difference, with the spec's tolerance and the checks' kink
handling: a draw counts as failing only where that check fails at an element whose numerical
value is finite, so a correct Function with a kink never fails here. The first failure is
shrunk (gradverify.engine.explore.shrink) and replaces that argument's pass, with the case to paste
into the spec. Exploration that runs out of its time budget says so in a note.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

from gradverify.checks import get_check
from gradverify.checks.shared.case import CaseContext, CaseMemo
from gradverify.engine.explore import CHECK
from gradverify.engine.explore.draws import Draw, draws, tensor_indices
from gradverify.engine.explore.shrink import Found, Shrinker
from gradverify.engine.explore.snippet import case_snippet, fits_in_values
from gradverify.engine.off_kinks import settle_inputs
from gradverify.inputs import KINK_MARGIN_EPS
from gradverify.results import Result
from gradverify.spec.models import Case
from gradverify.usercode import UserCodeError


@dataclass(frozen=True)
class Outcome:
    """The explored check's results for the case, and notes about the exploration."""

    results: list[Result]
    notes: tuple[str, ...] = ()


def explore(
    context: CaseContext, case: Case, produced: list[Result], budget: float, inferred: bool
) -> Outcome:
    """`produced` (the case's own draw's results) or a failure found on a further draw."""
    count = context.spec.explore
    if context.spec.gradient != "exact":
        return Outcome(produced, (f"--explore: not run for `gradient: {context.spec.gradient}`",))
    if any(r.failed for r in (*context.earlier, *produced)) or not tensor_indices(case):
        return Outcome(produced)  # already failing, or nothing drawn to vary
    deadline = time.perf_counter() + budget
    for draw in draws(case, context.spec, context.seed, count, inferred):
        if time.perf_counter() > deadline:
            return Outcome(produced, (_ran_out(draw.number - 1, count, budget),))
        arguments, _ = settle_inputs(
            context.target, draw.case, draw.arguments, context.spec, context.seed
        )
        failure = failing(context, draw.case, arguments)
        if failure is not None:
            margin = KINK_MARGIN_EPS * context.spec.tolerance.eps
            shrinker = Shrinker(
                lambda c, a: failing(context, c, a), deadline, tuple(context.spec.kinks), margin
            )
            shrunk = shrinker.shrink(Found(draw.case, arguments, failure))
            return Outcome(_replaced(produced, _reported(context, case, draw, shrunk, count)))
    return Outcome(produced)


def failing(context: CaseContext, case: Case, arguments: tuple[Any, ...]) -> Result | None:
    """The finite_difference failure on `arguments`, if it fails at an element whose numerical
    value is finite; None when it passes, warns (a kink), or the draw is outside what forward
    accepts (it raises, or central differences are not finite there)."""
    probe = replace(context, arguments=arguments, earlier=(), memo=CaseMemo())
    try:
        results = get_check(CHECK).run(probe)
    except (UserCodeError, MemoryError):
        return None
    for result in results:
        if (
            result.failed
            and result.element is not None
            and result.numerical is not None
            and math.isfinite(result.numerical)
        ):
            return result
    return None


def _reported(context: CaseContext, case: Case, draw: Draw, found: Found, count: int) -> Result:
    """The failure, saying it was found by exploration, with the shrunk case to paste."""
    result = found.result
    inputs = ", ".join(
        _described(context, index, found.arguments[index]) for index in tensor_indices(found.case)
    )
    message = (
        f"found by --explore (draw {draw.number} of {count}: {draw.kind}; the case's own draw "
        f"passes), shrunk to {inputs}: {result.message}"
    )
    snippet = case_snippet(found.case, found.arguments, f"{case.name}-explored")
    details = ("the failing case, to paste under `cases:` in the spec:", *snippet)
    return replace(result, message=message, details=(*details, *result.details))


def _described(context: CaseContext, index: int, argument: Any) -> str:
    name = context.target.argument_name(index) or f"argument {index}"
    shape = list(argument.shape)
    if fits_in_values(argument) and argument.numel() <= 8:
        return f"{name} {shape} = {argument.detach().cpu().tolist()}"
    return f"{name} {shape}"


def _replaced(produced: list[Result], found: Result) -> list[Result]:
    """The case's results with the found failure in place of its argument's pass."""
    same = [index for index, r in enumerate(produced) if r.input_index == found.input_index]
    if not same:
        return [*produced, found]
    return [
        found if index == same[0] else result
        for index, result in enumerate(produced)
        if index == same[0] or index not in same
    ]


def _ran_out(tried: int, count: int, budget: float) -> str:
    return (
        f"--explore: {tried} of {count} further draws tried before its time budget "
        f"({budget:.3g} s, half the case's timeout) ran out; none failed"
    )
