"""When torch's fast-mode gradcheck passes: look again, so that one case tells one story.

torch's fast mode compares one random projection vᵀJu with an allowance summed over every
entry (see `numerics/localizer.py`), so in a large input it passes a gradient that is wrong
at a few entries, while `finite_difference` on the same case localizes them. After such a
pass, our projections and group testing look again (the same seeds as `finite_difference`,
so the same entries). Whatever they find is handed back to torch: its own gradcheck, in
slow mode, on a function of the entries found alone (their input elements in, their output
elements out), a Jacobian of a few entries that costs two forward calls per element and one
backward per output element. torch failing there is gradcheck's own failure; torch passing
there too (a tolerance torch reads differently) is a warning that points at the finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch

from gradverify.checks.shared.case import CaseContext
from gradverify.checks.shared.modes import first_order_problem, randomized_failure
from gradverify.checks.shared.torch_gradcheck import torch_complaint
from gradverify.numerics.localization import Entry, Problem
from gradverify.numerics.localizer import examine_all
from gradverify.results import Result, Status

MISSED = (
    "torch's fast mode passed: it compares a few random projections vᵀJu with an allowance "
    "summed over every entry, and missed the entries group testing localized"
)


def look_again(
    context: CaseContext,
    check: str,
    arguments: tuple[Any, ...],
    wrt: Sequence[int],
    notes: tuple[str, ...],
) -> list[Result]:
    """After torch's fast gradcheck passed: a result per argument with wrong entries that
    group testing localizes (none: torch's pass stands)."""
    if _already_looked(context, wrt):
        return []
    problem = first_order_problem(context, arguments, wrt)
    if problem is None:
        return []
    exams = examine_all(problem, context.generator, kinks_first=False).values()
    results = []
    for exam in (exam for exam in exams if exam.wrong):
        found = randomized_failure(context, check, problem, exam, notes)
        complaint = restricted_complaint(context, problem, exam.wrong)
        count = exam.wrong_count
        entries = f"{count} localized entr{'y' if count == 1 else 'ies'}"
        if complaint is not None:
            status = Status.FAIL
            lead = f"missed by torch's fast mode, confirmed by its gradcheck on the {entries}"
            note = f"{MISSED}; on those entries alone, torch's gradcheck fails"
        else:  # torch reads its tolerances differently on these entries
            status = Status.WARN
            lead = f"missed by torch's fast mode and by its gradcheck on the {entries}"
            note = (
                f"{MISSED}; on those entries alone torch's gradcheck passes, but by "
                "atol + rtol·|numerical| they are off"
            )
        results.append(
            replace(
                found,
                status=status,
                message=f"{lead}: {found.message}",
                notes=(*found.notes, note),
                same_as=_same_finding(context, exam.position),
            )
        )
    return results


def restricted_complaint(
    context: CaseContext, problem: Problem, entries: Sequence[Entry]
) -> str | None:
    """torch's slow gradcheck on the function from the entries' input elements to their
    output elements, the rest held at their values: None if it passes."""
    position = entries[0].position
    base = problem.values[position].detach()
    columns = torch.tensor(sorted({entry.column for entry in entries}), device=base.device)
    rows = torch.tensor(sorted({entry.row for entry in entries}), device=base.device)

    def restricted(elements: torch.Tensor) -> torch.Tensor:
        values = list(problem.values)
        flat = base.reshape(-1).index_put((columns,), elements)
        values[position] = flat.reshape(base.shape)
        outputs = problem.evaluate(*values)
        return torch.cat([output.reshape(-1) for output in outputs])[rows]

    elements = base.reshape(-1)[columns].clone().requires_grad_()
    return torch_complaint(context, "gradcheck", restricted, (elements,))


def _already_looked(context: CaseContext, wrt: Sequence[int]) -> bool:
    """`finite_difference` ran in randomized mode on this case and found no wrong entry: the
    same projections (same seeds, same float64 arguments) would find none again."""
    earlier = [r for r in context.earlier if r.check == "finite_difference"]
    looked = {r.input_index for r in earlier if r.status in (Status.PASS, Status.WARN)}
    randomized = any(note.startswith("mode: randomized") for r in earlier for note in r.notes)
    return randomized and not any(r.failed for r in earlier) and set(wrt) <= looked


def _same_finding(context: CaseContext, index: int) -> str | None:
    """`finite_difference` when it already failed on this argument, for the report to fold."""
    for result in context.earlier:
        if result.check == "finite_difference" and result.failed and result.input_index == index:
            return result.check
    return None
