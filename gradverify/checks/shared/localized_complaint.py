"""torch's gradcheck or gradgradcheck complained: localize, then report; or hold kinks fixed
and let torch run again. One routine for both checks, in full and in randomized mode.

Localizing is ours: full Jacobian blocks (`full_localization`) or random projections with
group testing (`randomized_localization`). Wrong entries found are the check's failures.
Mismatches only at kinks where backward gives a valid subgradient are held fixed
(`numerics/kinks.py`) and torch runs again, so that everything else it checks (every other
element, reentrancy, undefined grads) still counts; the kinks become warnings. When our
comparison cannot reproduce torch's complaint, torch's own words (the headline) stand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from gradverify.checks.shared.case import CaseContext
from gradverify.checks.shared.jacobian_verdicts import Assessment, Blocks, assess, kink_warning
from gradverify.checks.shared.modes import randomized_kink_warning
from gradverify.checks.shared.torch_gradcheck import explain_other_failure, torch_complaint
from gradverify.numerics.kinks import hold_fixed, kink_masks
from gradverify.numerics.localization import Examination, Problem
from gradverify.numerics.localizer import examine_all
from gradverify.results import Result, Status

Warnings = Callable[[tuple[str, ...]], list[Result]]  # the kink warnings, given their notes


def _no_warnings(notes: tuple[str, ...]) -> list[Result]:
    return []


@dataclass(frozen=True)
class Localization:
    """What our own comparison found where torch complained: wrong entries (a failure per
    position), else the elements at kinks to hold fixed and the warnings that name them."""

    wrong: list[Result] = field(default_factory=list)
    masks: dict[int, torch.Tensor] = field(default_factory=dict)  # over the user's arguments
    warnings: Warnings = _no_warnings
    exhausted: bool = False  # group testing ran out of its budget: kinks may be unreached


def localize_complaint(
    context: CaseContext,
    check: str,
    complaint: str,
    headline: Result | None,
    localize: Callable[[], Localization | None],
    arguments: tuple[Any, ...],
    notes: tuple[str, ...],
    grad_outputs: Sequence[torch.Tensor] | None = None,
    fast: bool = False,
    hint: str | None = None,
) -> list[Result]:
    """The results of torch's `complaint` about `check` (gradcheck, or gradgradcheck with
    `grad_outputs`) on `arguments`.

    `headline` is the complaint as a failure, None when it is no Jacobian mismatch (then it
    is explained as it stands). `localize` looks for the wrong entries (None: nothing to
    look at); `fast`: torch runs again in fast mode, as it ran the first time.
    """
    if headline is None:
        text, other_hint = explain_other_failure(complaint)
        message = f"{check}: {text}"
        return [context.result(check, Status.FAIL, message, hint=other_hint or hint, notes=notes)]
    localization = localize()
    if localization is None:
        return [headline]
    if localization.wrong:
        return localization.wrong
    if not localization.masks:  # our own comparison cannot reproduce torch's complaint
        return [headline]
    held = hold_fixed(context.target.call, arguments, localization.masks)
    again = torch_complaint(context, check, held, arguments, grad_outputs, fast_mode=fast)
    return held_fixed_verdict(
        context, check, again, notes, localization.warnings, hint,
        exhausted=localization.exhausted,
    )  # fmt: skip


def full_localization(
    context: CaseContext,
    check: str,
    blocks: Blocks,
    positions: Sequence[int],
    arguments: tuple[Any, ...],
    failure: Callable[[int, Assessment], Result],
) -> Localization:
    """Full Jacobian blocks at `positions`: `failure` for each position with wrong entries;
    else the admitted kinks among the arguments' positions, to hold fixed."""
    assessments = {p: assess(context, p, blocks) for p in positions}
    failing = [p for p in positions if not assessments[p].comparison.ok]
    if failing:
        return Localization(wrong=[failure(p, assessments[p]) for p in failing])
    kinks = {p: a.kinks for p, a in assessments.items() if p < len(arguments)}
    masks = blocks.parts.user_masks(kink_masks(kinks, blocks.arguments), arguments)

    def warnings(held: tuple[str, ...]) -> list[Result]:
        return [
            kink_warning(context, check, p, blocks, assessments[p].admitted,
                         assessments[p].comparison, held)
            for p in masks
        ]  # fmt: skip

    return Localization(masks=masks, warnings=warnings)


def randomized_localization(
    context: CaseContext,
    check: str,
    problem: Problem,
    arguments: tuple[Any, ...],
    failure: Callable[[Examination], Result],
    exhausted_anywhere: bool = False,
) -> Localization:
    """Random projections and group testing at the problem's positions: `failure` for each
    position with wrong entries; else the elements found at kinks, to hold fixed.

    `exhausted_anywhere`: a search that ran out of budget at any position (not only at one
    held fixed) makes torch still failing a warning; gradgradcheck counts so, gradcheck not.
    """
    exams = examine_all(problem, context.generator)
    failing = [p for p in problem.positions if exams[p].wrong]
    if failing:
        return Localization(wrong=[failure(exams[p]) for p in failing])
    masks = problem.parts.user_masks(held_masks(exams, problem.values), arguments)
    counted = exams.values() if exhausted_anywhere else [exams[p] for p in masks]

    def warnings(held: tuple[str, ...]) -> list[Result]:
        return [randomized_kink_warning(context, check, problem, exams[p], held) for p in masks]

    return Localization(
        masks=masks, warnings=warnings, exhausted=any(exam.exhausted for exam in counted)
    )


def held_masks(
    exams: Mapping[int, Examination], arguments: Sequence[Any]
) -> dict[int, torch.Tensor]:
    """Bool masks, shaped like each argument, of every element found at a kink where backward
    gives a valid subgradient: the elements torch's checkers run again with, held fixed."""
    masks: dict[int, torch.Tensor] = {}
    for position, exam in exams.items():
        if position >= len(arguments):
            continue
        columns = [entry.column for entry in exam.excused]
        if not columns and not exam.near.numel():
            continue
        argument = arguments[position]
        mask = torch.zeros(argument.numel(), dtype=torch.bool, device=argument.device)
        mask[columns] = True
        mask[exam.near.to(argument.device)] = True
        masks[position] = mask.reshape(arguments[position].shape)
    return masks


def held_fixed_verdict(
    context: CaseContext,
    check: str,
    again: str | None,
    notes: tuple[str, ...],
    warnings: Warnings,
    hint: str | None = None,
    exhausted: bool = False,
) -> list[Result]:
    """After torch's checker ran again with the kinks held fixed: `again` is its complaint.

    Still failing is a fail, whatever the kinks; passing leaves only the kink warnings. When
    group testing ran out of its budget (`exhausted`) there may be kinks it never reached:
    still failing is then a warning that says so, never a fail of admitted kinks.
    """
    if again is not None and exhausted:
        text, _ = explain_other_failure(again)
        note = (
            f"{check} still fails with the non-differentiable elements found held fixed "
            f"({text}), but group testing stopped after its budget of searches: kinks it "
            "never reached may explain the rest"
        )
        return warnings((*notes, note))
    if again is not None:
        text, other_hint = explain_other_failure(again)
        message = f"{check} fails even with the non-differentiable elements held fixed: {text}"
        return [context.result(check, Status.FAIL, message, hint=other_hint or hint, notes=notes)]
    return warnings((*notes, f"{check} passes with the non-differentiable elements held fixed"))
