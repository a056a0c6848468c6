"""`gradgradcheck`: second derivatives by torch.autograd.gradgradcheck, mapped to arguments.

In randomized mode (`checks/shared/modes.py`) torch runs with `fast_mode=True`, and a failure is
localized by group testing (`numerics/localizer.py`) instead of full second-order Jacobians.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from gradverify.catalogue import FIRST_ORDER_CHECKS
from gradverify.checks.gradgradcheck.non_finite import non_finite_hinted
from gradverify.checks.shared.case import CaseContext, crash_result
from gradverify.checks.shared.jacobian_verdicts import Assessment, Blocks, noise_hint
from gradverify.checks.shared.localized_complaint import (
    Localization,
    full_localization,
    localize_complaint,
    randomized_localization,
)
from gradverify.checks.shared.modes import (
    float64_case,
    nothing_to_check,
    randomized_kink_warning,
    search_notes,
    second_order_problem,
)
from gradverify.checks.shared.torch_gradcheck import parse_mismatch, second_order, torch_complaint
from gradverify.inputs import differentiable_indices
from gradverify.numerics import seeded
from gradverify.numerics.compare import Comparison
from gradverify.numerics.complex_parts import NO_PARTS, Parts
from gradverify.numerics.jacobian import (
    OutputLayout,
    analytical_jacobians,
    differentiable_outputs,
    numerical_jacobian,
)
from gradverify.numerics.localization import Examination, Problem
from gradverify.numerics.localizer import examine_all
from gradverify.numerics.noise import rounding_hint
from gradverify.numerics.salts import Salt
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError, call_forward

ONCE_DIFFERENTIABLE = (
    "backward is marked @once_differentiable: double backward raises by design, so there is "
    "no second derivative to check"
)

NOT_DIFFERENTIABLE = (
    "backward is likely not differentiable as written (.detach(), .data, values saved without "
    "grad): make it differentiable with torch ops, or mark it @once_differentiable so that "
    "double backward raises"
)
# Said only where a first-order check passed on this case, and only of its inputs: other
# inputs may still find the first derivative wrong.
SILENTLY_WRONG = (
    "on this case's inputs the first derivative is right ({checks} passed) but the second is "
    "silently wrong: " + NOT_DIFFERENTIABLE + ". Other inputs may still find a wrong first "
    "derivative: try `--explore N`"
)


class GradgradcheckCheck:
    """torch.autograd.gradgradcheck in float64 with seeded grad_outputs."""

    id: ClassVar[str] = "gradgradcheck"

    def run(self, context: CaseContext) -> list[Result]:
        skip = nothing_to_check(context, self.id)
        if skip is not None:
            return [skip]
        if context.target.once_differentiable:
            return [context.result(self.id, Status.SKIP, ONCE_DIFFERENTIABLE, applies=False)]
        wrt = differentiable_indices(context.arguments)
        arguments, notes, fast = float64_case(context)
        try:
            grad_outputs = self._grad_outputs(context, arguments)
            if not grad_outputs:
                return [
                    context.result(self.id, Status.SKIP, "no output is differentiable", notes=notes)
                ]
            call = context.target.call
            failure = torch_complaint(context, self.id, call, arguments, grad_outputs, fast)
            if failure is None and fast:
                # torch's fast mode sums allowances over every entry (see numerics/localizer.py)
                # and misses wrong entries in large inputs; our projections look again.
                found = self._randomized_search(context, arguments, wrt, grad_outputs, notes)
                if found:
                    return non_finite_hinted(context, found)
            if failure is None:
                passed = "torch.autograd.gradgradcheck passed" + (
                    " (fast_mode); random projections of the second derivatives match"
                    if fast
                    else ""
                )
                return [context.result(self.id, Status.PASS, passed, notes=notes)]
            found = self._failure(context, failure, arguments, wrt, grad_outputs, notes, fast)
            return non_finite_hinted(context, found)
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]

    def _grad_outputs(self, context: CaseContext, arguments: Sequence[Any]) -> list[torch.Tensor]:
        outputs = call_forward(context.target.call, arguments)
        generator = context.generator(Salt.GRADGRADCHECK_GRAD_OUTPUTS)

        def uniform(output: torch.Tensor) -> torch.Tensor:
            return seeded.uniform(output.shape, generator, output.device) * 2 - 1

        # A complex output's grad_output has both parts, so both are checked.
        return [
            (torch.complex(uniform(o), uniform(o)) if o.is_complex() else uniform(o))
            .to(o.dtype)
            .requires_grad_()
            for _, o in differentiable_outputs(outputs)
        ]

    def _failure(
        self,
        context: CaseContext,
        message: str,
        arguments: tuple[Any, ...],
        wrt: list[int],
        grad_outputs: list[torch.Tensor],
        notes: tuple[str, ...],
        fast: bool,
    ) -> list[Result]:
        """torch's complaint localized: by full second-order Jacobians, or in randomized mode
        by group testing on random projections."""
        hint = self._hint(context)

        def full() -> Localization:
            blocks, positions = second_order_blocks(context, arguments, wrt, grad_outputs)

            def failure(position: int, found: Assessment) -> Result:
                # lost precision in backward, when every entry off is its rounding noise
                said = noise_hint(found.comparison, found.noise, "backward") or hint
                return self._mismatch(
                    context, position, blocks, len(arguments), found.comparison, said, notes
                )

            return full_localization(context, self.id, blocks, positions, arguments, failure)

        def randomized() -> Localization | None:
            problem = second_order_problem(context, arguments, wrt, grad_outputs)
            if problem is None:
                return None
            return randomized_localization(
                context, self.id, problem, arguments,
                lambda exam: self._randomized_mismatch(
                    context, problem, exam, len(arguments), hint, notes
                ),
                exhausted_anywhere=True,
            )  # fmt: skip

        headline = None
        if parse_mismatch(message) is not None:
            headline = context.result(
                self.id, Status.FAIL, f"gradgradcheck: {message.splitlines()[0]}", hint=hint,
                notes=notes,
            )  # fmt: skip
        return localize_complaint(
            context, self.id, message, headline, randomized if fast else full, arguments, notes,
            grad_outputs, fast, hint,
        )  # fmt: skip

    def _randomized_search(
        self,
        context: CaseContext,
        arguments: tuple[Any, ...],
        wrt: list[int],
        grad_outputs: list[torch.Tensor],
        notes: tuple[str, ...],
    ) -> list[Result]:
        """What random projections and group testing find in the second derivatives after
        torch's fast mode passed: wrong entries (fail), or only kinks (warn), or nothing."""
        problem = second_order_problem(context, arguments, wrt, grad_outputs)
        if problem is None:
            return []
        exams = list(examine_all(problem, context.generator, kinks_first=False).values())
        found = (*notes, "torch.autograd.gradgradcheck (fast_mode) passed; our projections did not")
        hint = self._hint(context)
        wrong = [
            self._randomized_mismatch(context, problem, exam, len(arguments), hint, found)
            for exam in exams
            if exam.wrong
        ]
        kinks = [exam for exam in exams if exam.excused and exam.position < len(arguments)]
        return wrong or [
            randomized_kink_warning(context, self.id, problem, exam, notes) for exam in kinks
        ]

    def _randomized_mismatch(
        self,
        context: CaseContext,
        problem: Problem,
        exam: Examination,
        n_arguments: int,
        hint: str,
        notes: tuple[str, ...],
    ) -> Result:
        """A wrong second derivative at the worst entry group testing found."""
        worst = exam.worst
        text, input_index, output_index, element = _second_order_entry(
            context, problem.layout, problem.values, n_arguments, exam.position,
            worst.row, worst.column, problem.parts,
        )  # fmt: skip
        count = exam.wrong_count
        text = (
            f"{text}: analytical {worst.analytical:.6g}, numerical {worst.numerical:.6g} "
            f"(at least {count} wrong {'entry' if count == 1 else 'entries'}, localized by "
            f"group testing in {exam.forward_calls} calls of backward as a function)"
        )
        if all(entry.noise for entry in exam.wrong):
            columns = {(entry.position, entry.column) for entry in exam.wrong}
            hint = rounding_hint(len(columns), function="backward", at_least=True)
        return context.result(
            self.id, Status.FAIL, text,
            input_index=input_index, output_index=output_index, element=element,
            analytical=worst.analytical, numerical=worst.numerical, max_abs_error=worst.error,
            mismatched=count, mismatched_at_least=True, hint=hint,
            notes=(*notes, *search_notes(exam)),
        )  # fmt: skip

    def _hint(self, context: CaseContext) -> str:
        """What earlier checks say about the first derivative (values and structure)."""
        earlier = [r for r in context.earlier if r.check in FIRST_ORDER_CHECKS]
        structural = [r for r in context.earlier if r.check == "backward"]
        if any(r.failed for r in [*earlier, *structural]):
            return (
                "the first derivative or backward's output is already wrong (see the checks "
                "above); fix that first"
            )
        if context.first_order_passed(FIRST_ORDER_CHECKS):
            passed = [c for c in FIRST_ORDER_CHECKS if any(r.check == c for r in earlier)]
            return SILENTLY_WRONG.format(checks=" and ".join(passed))
        warned = [r for r in earlier if r.status is Status.WARN and r.same_as is None]
        if warned:  # right only in a weaker sense (a subspace, a contract, on average)
            return (
                f"{warned[0].check} only warned about the first derivative on this case (see "
                "above), so nothing vouches for it in full; backward's own derivative is wrong "
                "here all the same: " + NOT_DIFFERENTIABLE
            )
        # nothing vouches for the first derivative, nor condemns it
        why = "ran" if not earlier else "passed"
        return (
            f"no first-order check {why} for this case, so nothing vouches for the first "
            "derivative; add finite_difference or gradcheck to `checks`. If it is right, "
            + NOT_DIFFERENTIABLE
        )

    def _mismatch(
        self,
        context: CaseContext,
        position: int,
        blocks: Blocks,
        n_arguments: int,
        comparison: Comparison,
        hint: str,
        notes: tuple[str, ...],
    ) -> Result:
        """A wrong second derivative: d(gradient of argument i) / d(argument j or grad_output k)."""
        where = _second_order_entry(
            context, blocks.layout, blocks.arguments, n_arguments, position,
            comparison.row, comparison.column, blocks.parts,
        )  # fmt: skip
        text, input_index, output_index, element = where
        text = (
            f"{text}: analytical {comparison.analytical:.6g}, numerical "
            f"{comparison.numerical:.6g} ({comparison.mismatched} of {comparison.total} entries off)"
        )
        return context.result(
            self.id, Status.FAIL, text,
            input_index=input_index, output_index=output_index, element=element,
            analytical=comparison.analytical, numerical=comparison.numerical,
            max_abs_error=comparison.max_abs_error, max_rel_error=comparison.max_rel_error,
            mismatched=comparison.mismatched, total=comparison.total, hint=hint, notes=notes,
        )  # fmt: skip


def _second_order_entry(
    context: CaseContext,
    layout: OutputLayout,
    values: Sequence[Any],
    n_arguments: int,
    position: int,
    row: int,
    column: int,
    parts: Parts = NO_PARTS,
) -> tuple[str, int, int | None, tuple[int, ...]]:
    """(text, input_index, output_index, element) naming one second-order Jacobian entry."""
    gradient_of, gradient_element, row_part = parts.locate(layout, row)
    of = f"the gradient of {context.describe_argument(gradient_of)} {list(gradient_element)}"
    if position < n_arguments:
        by, input_index, output_index = context.describe_argument(position), position, None
        name = context.target.argument_name(position) or f"argument {position}"
    else:
        k = position - n_arguments
        by, input_index, output_index = f"grad_output {k}", gradient_of, k
        name = by
    element = parts.element(position, column, values[position].shape)
    text = f"second derivative is wrong: d({of}) / d({by}) at element {list(element)}"
    column_part = parts.column_part(position, column)
    if row_part or column_part:
        of_part = f"of the {row_part} part of the gradient" if row_part else ""
        by_part = f"with respect to the {column_part} part of {name}" if column_part else ""
        text += f" (the derivative {' '.join(filter(None, (of_part, by_part)))})"
    return text, input_index, output_index, element


def second_order_blocks(
    context: CaseContext,
    arguments: tuple[Any, ...],
    wrt: list[int],
    grad_outputs: list[torch.Tensor],
) -> tuple[Blocks, list[int]]:
    """Jacobians of the first-order gradients w.r.t. the arguments and the grad_outputs.

    The rows are the elements of every non-None gradient (OutputLayout.indices names the
    argument each gradient belongs to); positions index `arguments + grad_outputs`. Complex
    values are (real, imaginary) pairs in them (`complex_parts.py`).
    """
    second = second_order(context, arguments, wrt, grad_outputs)
    selection, values, positions = second.selection, second.values, list(second.positions)
    analytical = analytical_jacobians(list(selection.outputs), values, positions)
    numerical = {
        p: numerical_jacobian(selection.evaluate, values, p, context.tolerance.eps)
        for p in positions
    }
    blocks = Blocks(
        values, selection.layout, analytical, numerical, selection.evaluate, parts=second.parts
    )
    return blocks, positions
