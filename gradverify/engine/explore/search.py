"""Explore: further draws of a case, searching for an input on which backward is wrong.

The case's own draw has passed; further draws (gradverify.engine.explore.draws) are judged by
one cheap, decisive check, finite_difference, with the spec's tolerance and the checks' kink
handling: a draw counts as failing only where that check fails at an element whose numerical
value is finite, so a correct Function with a kink never fails here. Draws stop at the
budget's count or before a draw that would overrun its time (gradverify.engine.explore.budget);
what was tried is carried on the result (Result.explored). The first failure is shrunk
(gradverify.engine.explore.shrink) and replaces that argument's pass, with the case to paste
into the spec. Running out of time is never a failure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from gradverify.checks import get_check
from gradverify.checks.shared.case import CaseContext, CaseMemo
from gradverify.engine.branch_coverage import measuring
from gradverify.engine.explore import CHECK, Budget
from gradverify.engine.explore.aim import AIMED, Unrun, aimed_draws, unrun_arcs
from gradverify.engine.explore.draws import Draw, draws, tensor_indices, varies
from gradverify.engine.explore.numbers import changed_numbers, numbers_of, with_numbers_of
from gradverify.engine.explore.shrink import Found, Shrinker
from gradverify.engine.explore.snippet import case_snippet, fits_in_values
from gradverify.engine.off_kinks import settle_inputs
from gradverify.inference.rules.order import numbers_out_of_order
from gradverify.inputs import KINK_MARGIN_EPS, build_inputs
from gradverify.results import Branches, Explored, Result, Status
from gradverify.spec.models import Case
from gradverify.usercode import UserCodeError, call_forward


@dataclass(frozen=True)
class Outcome:
    """The explored check's results for the case, and notes about the exploration."""

    results: list[Result]
    notes: tuple[str, ...] = ()
    taken: tuple[tuple[int, int], ...] = ()  # backward's arcs the aimed draws ran


@dataclass
class _Aiming:
    """Draws aimed at backward's unrun arcs first, each measured, until every one has run."""

    unrun: list[Unrun]
    line: int | None  # the first line aimed at
    aimed: int = 0  # aimed draws made
    taken: set[tuple[int, int]] = field(default_factory=set)

    def explored(self, explored: Explored) -> Explored:
        if not self.aimed:
            return explored
        line = self.unrun[0].line if self.unrun else self.line
        return replace(explored, aimed_line=line, aimed=self.aimed, reached=not self.unrun)


def explore(
    context: CaseContext,
    case: Case,
    produced: list[Result],
    budget: Budget,
    inferred: bool,
    own_seconds: float,
    branches: Branches | None = None,
) -> Outcome:
    """`produced` (the case's own draw's results, the first carrying what was explored) or a
    failure found on a further draw. `inferred`: a zero-config case, whose shapes nobody
    declared; `own_seconds`: what the check took on the case's own draw, the first estimate
    of a draw's cost; `branches`: backward's branches the case's own draw ran (draws are
    aimed first at one it left unrun, gradverify.engine.explore.aim)."""
    if context.spec.gradient != "exact":
        if budget.by_default:
            return Outcome(produced)
        return Outcome(produced, (f"--explore: not run for `gradient: {context.spec.gradient}`",))
    if (
        any(r.failed for r in (*context.earlier, *produced))
        or not any(r.status in (Status.PASS, Status.WARN) for r in produced)
        or not varies(case)
    ):
        return Outcome(produced)  # already failing, not checked, or nothing drawn to vary
    started = time.perf_counter()
    cost, tried = own_seconds, 0
    # Other shapes of an inferred case only when asked for: a shape that forward runs on may
    # still break a contract nobody wrote down (square, (B, N, 9)), and a default must never
    # call a correct Function wrong.
    shapes = inferred and not budget.by_default
    unrun = unrun_arcs(context.target, case, branches)
    aiming = _Aiming(unrun, unrun[0].line if unrun else None)
    for draw in _ordered(context, case, budget, shapes, aiming):
        over = time.perf_counter() - started + cost > budget.seconds
        if over and (draw.number > budget.first_draws or budget.seconds <= 0):
            return _ran_out(produced, tried, budget, aiming)
        began = time.perf_counter()
        if draw.kind.startswith(AIMED):
            with measuring(context.target) as measured:
                found, draw = _found(context, case, draw)
            _reached(aiming, measured())
        else:
            found, draw = _found(context, case, draw)
        cost, tried = time.perf_counter() - began, draw.number
        if found is not None:
            margin = KINK_MARGIN_EPS * context.spec.tolerance.eps
            deadline = time.perf_counter() + budget.shrink_seconds
            shrinker = Shrinker(
                lambda c, a: failing(context, c, a), deadline, tuple(context.spec.kinks), margin
            )
            shrunk = shrinker.shrink(found)
            reported = _reported(context, case, draw, shrunk, budget.draws)
            explored = aiming.explored(_explored(budget, tried, ran_out=False, found=True))
            taken = tuple(sorted(aiming.taken))
            return Outcome(_replaced(produced, replace(reported, explored=explored)), (), taken)
    explored = aiming.explored(_explored(budget, tried, ran_out=False, found=False))
    return Outcome(_carrying(produced, explored), (), tuple(sorted(aiming.taken)))


def _ordered(
    context: CaseContext, case: Case, budget: Budget, shapes: bool, aiming: _Aiming
) -> Iterator[Draw]:
    """The budget's draws: those aimed at an unrun arc first (at most half of them, at least
    two), while one is unrun, then the usual ones; numbered in the order made."""
    number = 0
    if aiming.unrun:
        most = min(budget.draws, max(2, budget.draws // 2))
        for _, draw in aimed_draws(case, context.spec, context.seed, aiming.unrun, most):
            if not aiming.unrun:
                break  # every arc aimed at has run: the usual draws from here
            number += 1
            aiming.aimed += 1
            yield replace(draw, number=number)
    rest = budget.draws - number
    for draw in draws(case, context.spec, context.seed, rest, shapes):
        yield replace(draw, number=number + draw.number)


def _reached(aiming: _Aiming, branches: Branches | None) -> None:
    """The arcs a measured draw ran; an unrun arc among them is aimed at no more."""
    if branches is None:
        return
    aiming.taken.update(branches.taken)
    aiming.unrun[:] = [unrun for unrun in aiming.unrun if unrun.arc not in aiming.taken]


def _found(context: CaseContext, case: Case, draw: Draw) -> tuple[Found | None, Draw]:
    """The draw's failure, if it fails; with the case's own numbers where it fails with them
    too (then the numbers did not matter, and the draw says so)."""
    if draw.other_numbers and numbers_out_of_order(context.target, numbers_of(draw.case)):
        return None, draw  # its numbers break an order the code states (lo < hi): a failed draw
    arguments, _ = settle_inputs(
        context.target, draw.case, draw.arguments, context.spec, context.seed
    )
    failure = failing(context, draw.case, arguments)
    if failure is None or not draw.other_numbers:
        return (None if failure is None else Found(draw.case, arguments, failure)), draw
    own = with_numbers_of(case, draw.case)
    with_own = _own_numbers(case, arguments, dict(changed_numbers(case, draw.case)))
    again = failing(context, own, with_own)
    if again is not None:
        return Found(own, with_own, again), replace(draw, case=own, other_numbers=False)
    if not _repeatable(context, draw.case, arguments, failure):
        return None, draw  # forward draws at random with these numbers (dropout on)
    return Found(draw.case, arguments, failure), draw


def _own_numbers(
    case: Case, arguments: tuple[Any, ...], changed: dict[int, Any]
) -> tuple[Any, ...]:
    """`arguments` with the case's own numbers where the draw changed them."""
    own = build_inputs(case.model_copy(update={"inputs": [case.inputs[i] for i in changed]}), 0)
    values = dict(zip(changed, own, strict=True))
    return tuple(values.get(index, argument) for index, argument in enumerate(arguments))


def _repeatable(
    context: CaseContext, case: Case, arguments: tuple[Any, ...], failure: Result
) -> bool:
    """Whether forward gives the same outputs on `arguments` call after call, and the check
    the same failure again: other numbers may turn on randomness (`training: true`), whose
    noise finite differences would take for a wrong gradient."""
    try:
        with torch.no_grad():
            outputs = [call_forward(context.target.call, arguments) for _ in range(3)]
    except UserCodeError:
        return False
    same = all(
        not isinstance(a, torch.Tensor) or (isinstance(b, torch.Tensor) and torch.equal(a, b))
        for other in outputs[1:]
        for a, b in zip(outputs[0], other, strict=False)
    )
    again = failing(context, case, arguments) if same else None
    return (
        again is not None
        and again.element == failure.element
        and again.numerical == failure.numerical
        and again.analytical == failure.analytical
    )


def _explored(budget: Budget, tried: int, ran_out: bool, found: bool) -> Explored:
    return Explored(
        draws=tried,
        planned=budget.draws,
        budget_seconds=round(budget.seconds, 4),
        ran_out=ran_out,
        found=found,
        by_default=budget.by_default,
    )


def _ran_out(produced: list[Result], tried: int, budget: Budget, aiming: _Aiming) -> Outcome:
    """The case's own results, saying how far the search got; a note where the draws were
    asked for (`explore: N`): the default budget running out is the rule, not news."""
    explored = aiming.explored(_explored(budget, tried, ran_out=True, found=False))
    carried = _carrying(produced, explored)
    taken = tuple(sorted(aiming.taken))
    if budget.by_default:
        return Outcome(carried, (), taken)
    note = (
        f"--explore: {tried} of {budget.draws} further draws tried before its time budget "
        f"({budget.seconds:.3g} s, half the case's timeout) ran out; none failed"
    )
    return Outcome(carried, (note,), taken)


def _carrying(produced: list[Result], explored: Explored) -> list[Result]:
    """`produced` with its first result carrying `explored`."""
    return [replace(produced[0], explored=explored), *produced[1:]] if produced else produced


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
    described = [
        _described(context, index, found.arguments[index]) for index in tensor_indices(found.case)
    ]
    described += [  # the numbers it needs other than the spec's
        f"{context.target.argument_name(index) or f'argument {index}'} = {value!r}"
        for index, value in changed_numbers(case, found.case)
    ]
    message = (
        f"found by --explore (draw {draw.number} of {count}: {draw.label}; the case's own draw "
        f"passes), shrunk to {', '.join(described)}: {result.message}"
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
