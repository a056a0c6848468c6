"""`gradcheck`: torch.autograd.gradcheck, with failures mapped to forward's arguments and elements.

At kinks (ReLU at 0) gradcheck fails correct code. When every mismatch we can reproduce sits
at a kink with a valid subgradient, gradcheck is run again with those elements held fixed,
so that everything else it checks (every other element, reentrancy, undefined grads) still
counts; the kinks become a warning.

In randomized mode (`checks/shared/modes.py`) torch runs with `fast_mode=True` (random projections),
and a failure is localized by group testing (`numerics/localizer.py`) instead of full Jacobians.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from gradverify.checks.gradcheck.fast_pass import look_again
from gradverify.checks.shared.case import (
    CaseContext,
    crash_result,
)
from gradverify.checks.shared.jacobian_verdicts import (
    assess,
    jacobian_blocks,
    kink_warning,
    mismatch_failure,
)
from gradverify.checks.shared.modes import (
    first_order_problem,
    float64_case,
    held_masks,
    nothing_to_check,
    randomized_failure,
    randomized_kink_warning,
)
from gradverify.checks.shared.real_case import realify
from gradverify.checks.shared.torch_gradcheck import (
    explain_other_failure,
    held_fixed_verdict,
    parse_mismatch,
    torch_complaint,
)
from gradverify.inputs import differentiable_indices
from gradverify.numerics.kinks import hold_fixed, kink_masks
from gradverify.numerics.localizer import Localizer
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError


class GradcheckCheck:
    """torch.autograd.gradcheck in float64 with the spec's tolerances."""

    id: ClassVar[str] = "gradcheck"

    def run(self, context: CaseContext) -> list[Result]:
        skip = nothing_to_check(context, self.id)
        if skip is not None:
            return [skip]
        wrt = differentiable_indices(context.arguments)
        arguments, notes, fast = float64_case(context)
        try:
            failure = run_gradcheck(context, context.target.call, arguments, fast_mode=fast)
            if failure is None and fast:
                # torch's fast mode sums allowances over every entry (see numerics/localizer.py)
                # and misses wrong entries in large inputs; our projections look again.
                missed = look_again(context, self.id, arguments, wrt, notes)
                if missed:
                    return missed
            if failure is None:
                passed = "torch.autograd.gradcheck passed" + (" (fast_mode)" if fast else "")
                return [context.result(self.id, Status.PASS, passed, notes=notes)]
            if fast:
                return self._randomized_failure(context, failure, arguments, wrt, notes)
            return self._failure(context, failure, arguments, wrt, notes)
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]

    def _headline(
        self,
        context: CaseContext,
        message: str,
        wrt: list[int],
        notes: tuple[str, ...],
        fast: bool,
    ) -> tuple[Result, bool]:
        """torch's complaint as a failure, and whether it is a Jacobian mismatch to localize."""
        mismatch = parse_mismatch(message)
        if mismatch is None or mismatch.input >= len(wrt):
            text, hint = explain_other_failure(message)
            return context.result(
                self.id, Status.FAIL, f"gradcheck: {text}", hint=hint, notes=notes
            ), False
        index = wrt[mismatch.input]
        what = (
            "gradcheck (fast_mode): mismatch of the projected Jacobian vᵀJu for"
            if fast
            else "gradcheck: Jacobian mismatch for"
        )
        part = f", the {mismatch.part} part of complex outputs" if mismatch.part else ""
        headline = context.result(
            self.id, Status.FAIL,
            f"{what} {context.describe_argument(index)} (torch's output {mismatch.output}, "
            f"input {mismatch.input}{part})",
            input_index=index, notes=notes,
        )  # fmt: skip
        return headline, True

    def _failure(
        self,
        context: CaseContext,
        message: str,
        arguments: tuple[Any, ...],
        wrt: list[int],
        notes: tuple[str, ...],
    ) -> list[Result]:
        headline, is_mismatch = self._headline(context, message, wrt, notes, fast=False)
        if not is_mismatch:
            return [headline]
        # Localized as torch checks complex values: through their real and imaginary parts.
        real = realify(context, arguments, wrt)
        blocks = jacobian_blocks(real.context, real.arguments, wrt, parts=real.parts)
        if blocks is None:
            return [headline]
        assessments = {i: assess(real.context, i, blocks) for i in wrt}
        failing = [i for i in wrt if not assessments[i].comparison.ok]
        if failing:
            return [
                mismatch_failure(real.context, self.id, i, blocks, assessments[i].comparison,
                                 assessments[i].kinks, notes, assessments[i].noise)
                for i in failing
            ]  # fmt: skip
        kinks = {i: a.kinks for i, a in assessments.items()}
        masks = real.parts.user_masks(kink_masks(kinks, real.arguments), arguments)
        if not masks:  # our own comparison cannot reproduce torch's complaint
            return [headline]
        again = run_gradcheck(context, hold_fixed(context.target.call, arguments, masks), arguments)

        def warnings(held: tuple[str, ...]) -> list[Result]:
            return [
                kink_warning(context, self.id, i, blocks, assessments[i].admitted,
                             assessments[i].comparison, held)
                for i in masks
            ]  # fmt: skip

        return held_fixed_verdict(context, self.id, again, notes, warnings)

    def _randomized_failure(
        self,
        context: CaseContext,
        message: str,
        arguments: tuple[Any, ...],
        wrt: list[int],
        notes: tuple[str, ...],
    ) -> list[Result]:
        """As `_failure`, with group testing on random projections for full Jacobians."""
        headline, is_mismatch = self._headline(context, message, wrt, notes, fast=True)
        if not is_mismatch:
            return [headline]
        problem = first_order_problem(context, arguments, wrt)
        if problem is None:
            return [headline]
        localizer = Localizer(problem, context.generator)
        exams = {i: localizer.examine(i) for i in wrt}
        failing = [i for i in wrt if exams[i].wrong]
        if failing:
            return [randomized_failure(context, self.id, problem, exams[i], notes) for i in failing]
        masks = problem.parts.user_masks(held_masks(exams, problem.values), arguments)
        if not masks:  # group testing cannot reproduce torch's complaint
            return [headline]
        held = hold_fixed(context.target.call, arguments, masks)
        again = run_gradcheck(context, held, arguments, fast_mode=True)
        exhausted = any(exams[i].exhausted for i in masks)

        def warnings(held_note: tuple[str, ...]) -> list[Result]:
            return [
                randomized_kink_warning(context, self.id, problem, exams[i], held_note)
                for i in masks
            ]

        return held_fixed_verdict(context, self.id, again, notes, warnings, exhausted=exhausted)


def run_gradcheck(
    context: CaseContext,
    call: Callable[..., Any],
    arguments: tuple[Any, ...],
    fast_mode: bool = False,
) -> str | None:
    """torch's gradcheck on `call`: None if it passes, else its failure message."""
    return torch_complaint(context, "gradcheck", call, arguments, fast_mode=fast_mode)
