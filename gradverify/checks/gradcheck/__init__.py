"""`gradcheck`: torch.autograd.gradcheck, with failures mapped to forward's arguments and elements.

At kinks (ReLU at 0) gradcheck fails correct code. When every mismatch we can reproduce sits
at a kink with a valid subgradient, gradcheck is run again with those elements held fixed,
so that everything else it checks (every other element, reentrancy, undefined grads) still
counts; the kinks become a warning.

In randomized mode (`checks/shared/modes.py`) torch runs with `fast_mode=True` (random projections),
and a failure is localized by group testing (`numerics/localizer.py`) instead of full Jacobians.
"""

from __future__ import annotations

from typing import Any, ClassVar

from gradverify.checks.gradcheck.fast_pass import look_again
from gradverify.checks.shared.case import (
    CaseContext,
    crash_result,
)
from gradverify.checks.shared.jacobian_verdicts import jacobian_blocks, mismatch_failure
from gradverify.checks.shared.localized_complaint import (
    Localization,
    full_localization,
    localize_complaint,
    randomized_localization,
)
from gradverify.checks.shared.modes import (
    first_order_problem,
    float64_case,
    nothing_to_check,
    randomized_failure,
)
from gradverify.checks.shared.real_case import realify
from gradverify.checks.shared.torch_gradcheck import parse_mismatch, torch_complaint
from gradverify.inputs import differentiable_indices
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
            failure = torch_complaint(
                context, self.id, context.target.call, arguments, fast_mode=fast
            )
            if failure is None and fast:
                # torch's fast mode sums allowances over every entry (see numerics/localizer.py)
                # and misses wrong entries in large inputs; our projections look again.
                missed = look_again(context, self.id, arguments, wrt, notes)
                if missed:
                    return missed
            if failure is None:
                passed = "torch.autograd.gradcheck passed" + (" (fast_mode)" if fast else "")
                return [context.result(self.id, Status.PASS, passed, notes=notes)]
            return self._failure(context, failure, arguments, wrt, notes, fast)
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]

    def _failure(
        self,
        context: CaseContext,
        message: str,
        arguments: tuple[Any, ...],
        wrt: list[int],
        notes: tuple[str, ...],
        fast: bool,
    ) -> list[Result]:
        """torch's complaint localized: by full Jacobians, or in randomized mode by group
        testing on random projections."""

        def full() -> Localization | None:
            # Localized as torch checks complex values: through their real and imaginary parts.
            real = realify(context, arguments, wrt)
            blocks = jacobian_blocks(real.context, real.arguments, wrt, parts=real.parts)
            if blocks is None:
                return None
            return full_localization(
                context, self.id, blocks, wrt, arguments,
                lambda i, found: mismatch_failure(
                    real.context, self.id, i, blocks, found.comparison, found.kinks, notes,
                    found.noise,
                ),
            )  # fmt: skip

        def randomized() -> Localization | None:
            problem = first_order_problem(context, arguments, wrt)
            if problem is None:
                return None
            return randomized_localization(
                context, self.id, problem, arguments,
                lambda exam: randomized_failure(context, self.id, problem, exam, notes),
            )  # fmt: skip

        headline = self._headline(context, message, wrt, notes, fast)
        return localize_complaint(
            context, self.id, message, headline, randomized if fast else full, arguments, notes,
            fast=fast,
        )  # fmt: skip

    def _headline(
        self,
        context: CaseContext,
        message: str,
        wrt: list[int],
        notes: tuple[str, ...],
        fast: bool,
    ) -> Result | None:
        """torch's complaint as a failure, when it is a Jacobian mismatch to localize."""
        mismatch = parse_mismatch(message)
        if mismatch is None or mismatch.input >= len(wrt):
            return None
        index = wrt[mismatch.input]
        what = (
            "gradcheck (fast_mode): mismatch of the projected Jacobian vᵀJu for"
            if fast
            else "gradcheck: Jacobian mismatch for"
        )
        part = f", the {mismatch.part} part of complex outputs" if mismatch.part else ""
        return context.result(
            self.id, Status.FAIL,
            f"{what} {context.describe_argument(index)} (torch's output {mismatch.output}, "
            f"input {mismatch.input}{part})",
            input_index=index, notes=notes,
        )  # fmt: skip
