"""Full Jacobians or random projections: which mode a numerical check runs in, and why; and
randomized mode as the checks see it: the functions whose Jacobians it examines, torch's
fast mode without its slow fallback, and its results. `numerics/localizer.py` does the
projections and the group testing.

`mode: full` builds every Jacobian entry: two forward calls per input element and one
backward per output element, and memory for every entry. `mode: randomized` compares random
projections vᵀJu and localizes a wrong entry by group testing (`numerics/localizer.py`), in
a few dozen calls whatever the size. `mode: auto` (the default) measures the case and picks.

The thresholds come from timing full mode on this machine (a sigmoid and a Linear, float64,
torch CPU): a forward or backward call of a small Function costs ~50-100 µs, so full mode
takes ~0.1 s at 1e5 Jacobian entries (a 300-element sigmoid, 900 calls) and ~0.3 s at
1.5e5 (a 4x32 -> 32 Linear, 1,300 calls), growing linearly in calls and quadratically in
memory beyond: a 3,000-element sigmoid (9e6 entries) takes 1.6 s per check, a 10,000-element
one 16 s in torch's gradcheck. Below both thresholds full mode costs at most a few tenths of
a second per check and names every wrong entry, so it stays the default there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Literal

import torch

from gradverify.checks.shared.case import CaseContext, no_gradient_to_check, promotion_notes
from gradverify.checks.shared.own_precision import needs_float64
from gradverify.checks.shared.real_case import realify
from gradverify.checks.shared.torch_gradcheck import second_order
from gradverify.inputs import differentiable_indices, fresh_copies
from gradverify.numerics.jacobian import (
    differentiable_outputs,
    element_words,
    forward_selection,
)
from gradverify.numerics.localization import Entry, Examination, Problem
from gradverify.numerics.localizer import PROJECTIONS
from gradverify.numerics.maps import located_map
from gradverify.numerics.noise import rounding_hint
from gradverify.numerics.stochastic import mean_note
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError, call_forward

Mode = Literal["full", "randomized"]

# Jacobian entries (Σ differentiable-input elements × Σ differentiable-output elements) up to
# which `auto` builds full Jacobians: ~0.1 s per check, 0.8 MB per float64 block.
MAX_FULL_ENTRIES = 100_000
# Calls full mode makes (2 forwards per input element + 1 backward per output element) up to
# which `auto` builds full Jacobians: ~0.5 s at ~100 µs a call. A scalar output of a
# 50,000-element input has few entries but needs 100,000 forward calls.
MAX_FULL_CALLS = 5_000


def resolve_mode(context: CaseContext, arguments: Sequence[Any]) -> tuple[Mode, str]:
    """(mode, reason): the spec's mode, or for `auto` the one the case's size calls for.

    `arguments` are the check's own copies; `auto` sizes the outputs by one forward per case
    (`output_elements`). A forward that raises leaves the choice to full mode, whose check
    reports it.
    """
    requested = context.spec.mode
    if requested == "full":
        return "full", "mode: full (requested)"
    if requested == "randomized":
        return "randomized", "mode: randomized (requested)"
    # A complex element is two entries, its real and imaginary parts (complex_parts.py).
    inputs = sum(_real_numel(arguments[i]) for i in differentiable_indices(arguments))
    produced = output_elements(context, arguments)
    if produced is None:
        return "full", "mode: full (forward raises, so the size is unknown)"
    entries, calls = inputs * produced, 2 * inputs + produced
    if entries > MAX_FULL_ENTRIES:
        return "randomized", f"mode: randomized (the Jacobian would have {entries:.1e} entries)"
    if calls > MAX_FULL_CALLS:
        return "randomized", (
            f"mode: randomized (full Jacobians would take {calls:.1e} forward and backward calls)"
        )
    return "full", f"mode: full (the Jacobian has {entries} entries)"


def output_elements(context: CaseContext, arguments: Sequence[Any]) -> int | None:
    """Elements of forward's differentiable outputs (None: forward raises): one forward per
    case, whichever check asks first (`CaseMemo`)."""
    memo = context.memo
    if memo.output_elements is None and not memo.forward_raised:
        try:
            with torch.enable_grad():
                outputs = call_forward(context.target.call, arguments)
        except UserCodeError:
            memo.forward_raised = True
            return None
        memo.output_elements = sum(_real_numel(o) for _, o in differentiable_outputs(outputs))
    return memo.output_elements


def _real_numel(tensor: torch.Tensor) -> int:
    """Real entries: a complex element counts twice."""
    return tensor.numel() * (2 if tensor.is_complex() else 1)


def first_order_problem(
    context: CaseContext, arguments: Sequence[Any], wrt: Sequence[int]
) -> Problem | None:
    """forward's differentiable outputs as a function of its arguments (None: there are none).

    Complex arguments and outputs are (real, imaginary) pairs in it (`complex_parts.py`)."""
    real = realify(context, arguments, wrt)
    arguments, parts = real.arguments, real.parts
    with torch.enable_grad():
        selection = forward_selection(real.context.target.call, arguments)
    if selection is None:
        return None
    tol = context.tolerance
    # approximate: each projection vᵀJ is the mean of `samples` backward runs
    samples = context.spec.backward_samples if context.spec.gradient == "approximate" else 1
    return Problem(
        selection.evaluate, tuple(arguments), tuple(wrt), selection.outputs, selection.layout,
        tol.eps, tol.atol, tol.rtol, samples=samples, parts=parts,
    )  # fmt: skip


def second_order_problem(
    context: CaseContext,
    arguments: tuple[Any, ...],
    wrt: list[int],
    grad_outputs: list[torch.Tensor],
) -> Problem | None:
    """The first-order gradients as a function of the arguments and grad_outputs, as
    `second_order_blocks` sees them, for randomized mode (None: no gradient at all); complex
    values as (real, imaginary) pairs."""
    second = second_order(context, arguments, wrt, grad_outputs)
    selection = second.selection
    if not selection.outputs:
        return None
    tol = context.tolerance
    return Problem(
        selection.evaluate, second.values, second.positions, selection.outputs,
        selection.layout, tol.eps, tol.atol, tol.rtol, parts=second.parts,
    )  # fmt: skip


def randomized_verdict(
    context: CaseContext, check: str, problem: Problem, exam: Examination, notes: tuple[str, ...]
) -> Result:
    """One argument's verdict from its examination: fail at the worst wrong entry found,
    warn when the only entries off sit at kinks, pass otherwise."""
    if exam.wrong:
        return randomized_failure(context, check, problem, exam, notes)
    if exam.excused:
        return randomized_kink_warning(context, check, problem, exam, notes)
    index = exam.position
    return context.result(
        check, Status.PASS,
        f"gradient of {context.describe_argument(index)} matches along {PROJECTIONS} random "
        f"projections vᵀJu ({math.prod(problem.parts.shape(index, problem.values[index].shape))} "
        "elements)",
        input_index=index, notes=(*notes, *search_notes(exam)),
    )  # fmt: skip


def randomized_failure(
    context: CaseContext, check: str, problem: Problem, exam: Examination, notes: tuple[str, ...]
) -> Result:
    """A failure at the worst wrong Jacobian entry group testing found."""
    worst, index, parts = exam.worst, exam.position, problem.parts
    argument = problem.values[index]
    output_index, output_element, row_part = parts.locate(problem.layout, worst.row)
    element = parts.element(index, worst.column, argument.shape)
    where = element_words(element)
    user_shape = parts.shape(index, argument.shape)
    layout = problem.layout
    output_shape = layout.shapes[0][:-1] if layout.indices[0] in parts.rows else layout.shapes[0]
    elementwise = (
        len(layout.indices) == 1 and output_shape == user_shape and output_element == element
    )
    if not elementwise:  # the output element is not the argument's own
        where += f", output {output_index} element {list(output_element)}"
    name = context.target.argument_name(index) or f"argument {index}"
    which = parts.entry_words(name, index, worst.column, row_part)
    where += f": {which}" if which else ""
    # Group testing stops at the first wrong entry of each projection: there may be more.
    count = exam.wrong_count
    found = f"at least {count} wrong {'entry' if count == 1 else 'entries'}"
    message = (
        f"gradient of {context.describe_argument(index)} is wrong at {where}: analytical "
        f"{worst.analytical:.6g}, numerical {worst.numerical:.6g} ({found}, localized by "
        f"group testing in {exam.forward_calls} forward calls)"
    )
    if exam.excused:
        notes = (*notes, f"{exam.excused_count} mismatch(es) at non-differentiable points excused")
    return context.result(
        check, Status.FAIL, message,
        input_index=index, output_index=output_index, element=element,
        analytical=worst.analytical, numerical=worst.numerical,
        max_abs_error=worst.error, max_rel_error=_relative(worst, problem.atol),
        mismatched=count, mismatched_at_least=True, hint=_failure_hint(exam, problem),
        mismatch_map=located_map(
            [parts.flat_element(index, entry.column) for entry in exam.wrong],
            [parts.flat_element(index, entry.column) for entry in exam.excused],
            parts.shape(index, argument.shape),
        ),
        notes=(*notes, *search_notes(exam)),
        details=tuple(_describe(entry, problem, name) for entry in exam.wrong) if count > 1 else (),
    )  # fmt: skip


def randomized_kink_warning(
    context: CaseContext, check: str, problem: Problem, exam: Examination, notes: tuple[str, ...]
) -> Result:
    """`warn`: the only entries off sit at kinks, and backward gives a valid subgradient there."""
    if not exam.excused:  # only elements near kinks, none off by itself: held fixed all the same
        return _near_kinks_warning(context, check, problem, exam, notes)
    first, index = exam.excused[0], exam.position
    assert first.kink is not None
    element = problem.parts.element(index, first.column, problem.values[index].shape)
    count = exam.excused_count
    more = f" (and {count - 1} more element(s))" if count > 1 else ""
    output_index, _ = problem.layout.locate(first.row)
    part = problem.parts.column_part(index, first.column)
    along = f", along its {part} part" if part else ""
    return context.result(
        check, Status.WARN,
        f"non-differentiable at {context.describe_argument(index)}, element {list(element)}"
        f"{along}{more}: {first.kink.describe()}",
        input_index=index, output_index=output_index, element=element,
        analytical=first.analytical, numerical=first.numerical,
        hint=f"{first.kink.kind}: central differences mean nothing there, and backward's "
        "value is a valid subgradient; random projections of the rest of the gradient match",
        notes=(*notes, *search_notes(exam)),
    )  # fmt: skip


def projected_measure(
    context: CaseContext, check: str, exam: Examination, notes: tuple[str, ...]
) -> Result:
    """`gradient: approximate` in randomized mode: the error of the projections, relative to
    the largest projected value. Projections can add up entry errors, so above max_error this
    warns rather than fails; `mode: full` measures every entry."""
    index = exam.position
    errors = [abs(a - n) for a, n in exam.projected]
    scale = max([abs(n) for _, n in exam.projected] + [context.tolerance.atol])
    error = max(errors, default=0.0) / scale
    allowed = context.spec.allowed_error
    verdict = Status.PASS if error <= allowed else Status.WARN
    relation = "within" if verdict is Status.PASS else "above"
    return context.result(
        check, verdict,
        f"gradient of {context.describe_argument(index)} has projected error {error:.3g} "
        f"relative to its largest projection vᵀJu, {relation} max_error {allowed:g}",
        input_index=index, max_abs_error=max(errors, default=0.0), max_rel_error=error,
        hint=None if verdict is Status.PASS else "use `mode: full` to measure every entry",
        notes=(*notes, *mean_note(context.spec.backward_samples, None)),
    )  # fmt: skip


def _near_kinks_warning(
    context: CaseContext, check: str, problem: Problem, exam: Examination, notes: tuple[str, ...]
) -> Result:
    index, count = exam.position, int(exam.near.numel())
    element = problem.parts.element(index, int(exam.near[0]), problem.values[index].shape)
    return context.result(
        check, Status.WARN,
        f"non-differentiable near {context.describe_argument(index)}, element {list(element)}"
        f"{f' (and {count - 1} more element(s))' if count > 1 else ''}: within eps of a kink",
        input_index=index, element=element,
        hint="kinks within eps: central differences mean little there, and backward's value "
        "is a valid subgradient at each; random projections of the rest match",
        notes=(*notes, *search_notes(exam)),
    )  # fmt: skip


def search_notes(exam: Examination) -> tuple[str, ...]:
    """What the projections saw beyond the entries reported."""
    notes: list[str] = []
    if exam.spread:
        discrepancy, threshold = max(exam.spread, key=lambda pair: abs(pair[0]))
        notes.append(
            f"a random projection differs by {abs(discrepancy):.3g} (detection threshold "
            f"{threshold:.3g}), but the entry group testing led to is within tolerance: "
            "errors spread thinly, each within atol + rtol·|numerical|"
        )
    if exam.exhausted:
        notes.append("group testing stopped after its budget of searches; projections still differ")
    return tuple(notes)


def _describe(entry: Entry, problem: Problem, name: str) -> str:
    parts, position = problem.parts, entry.position
    output_index, output_element, row_part = parts.locate(problem.layout, entry.row)
    element = parts.element(position, entry.column, problem.values[position].shape)
    # Complex values: which part, as the headline says it ("" otherwise).
    which = parts.entry_words(name, position, entry.column, row_part)
    return (
        f"element {list(element)}, output {output_index} element {list(output_element)}"
        f"{f', {which}' if which else ''}: analytical {entry.analytical:.6g}, numerical "
        f"{entry.numerical:.6g}"
    )


def _relative(entry: Entry, atol: float) -> float | None:
    return entry.error / abs(entry.numerical) if abs(entry.numerical) > atol else None


def _failure_hint(exam: Examination, problem: Problem) -> str | None:
    if all(entry.noise for entry in exam.wrong):
        elements = len({entry.column for entry in exam.wrong})
        return rounding_hint(elements, at_least=True)
    if all(entry.kink is not None for entry in exam.wrong):
        kink = exam.worst.kink
        assert kink is not None
        return (
            "wrong only at non-differentiable points: there any value between the one-sided "
            f"slopes is a valid (sub)gradient, but {kink.describe()}"
        )
    worst, parts = exam.worst, problem.parts
    _, _, row_part = parts.locate(problem.layout, worst.row)
    crossing = (row_part or "real") != (parts.column_part(worst.position, worst.column) or "real")
    flipped = abs(worst.analytical + worst.numerical) <= problem.atol + problem.rtol * abs(
        worst.numerical
    )
    if crossing and flipped and abs(worst.numerical) > problem.atol:
        return (
            "the opposite sign at this entry, a derivative across parts (of a real part with "
            "respect to an imaginary part, or the other way round): likely a conjugate missing "
            "(or one too many) in backward, or a flipped sign (`mode: full` shows the pattern)"
        )
    return entry_hint(worst, problem.atol, problem.rtol)


def entry_hint(entry: Entry, atol: float, rtol: float) -> str | None:
    """A likely cause read off one wrong entry (randomized mode sees no pattern)."""
    analytical, numerical = entry.analytical, entry.numerical
    if not (math.isfinite(analytical) and math.isfinite(numerical)):
        return None
    if abs(numerical) <= atol:
        return (
            f"the derivative is 0 at this entry but backward gives {analytical:.4g}: likely a "
            "gradient where there should be none"
        )
    if abs(analytical) <= atol:
        return (
            f"backward gives 0 at this entry where the derivative is {numerical:.4g}: likely a "
            "missing term or a mask that is too wide"
        )
    if abs(analytical + numerical) <= atol + rtol * abs(numerical):
        return "the opposite sign at this entry: likely a flipped sign in backward"
    ratio = Fraction(analytical / numerical).limit_denominator(16)
    if ratio != 1 and abs(float(ratio) * numerical - analytical) <= atol + rtol * abs(numerical):
        return (
            f"analytical = {ratio} × numerical at this entry: likely a wrong factor in backward "
            "(`mode: full` shows whether every entry has it)"
        )
    return None


def nothing_to_check(context: CaseContext, check: str) -> Result | None:
    """Why torch's gradcheck or gradgradcheck has nothing to check in this case, or None: an
    op that returns nothing, no argument that requires grad, or a spec's `gradient:` saying
    that backward is not meant to be the derivative."""
    nothing = no_gradient_to_check(context, check)  # an op that returns nothing
    if nothing is not None:
        return nothing
    if not differentiable_indices(context.arguments):
        return context.result(check, Status.SKIP, "no argument requires grad")
    if context.spec.gradient in MODE_SKIPS:
        skip = MODE_SKIPS[context.spec.gradient]  # declared by the spec's `gradient:`
        return context.result(check, Status.SKIP, skip, applies=False)
    # torch's checkers need float64: a kernel's own precision is finite_difference's.
    return needs_float64(context, check)


def float64_case(context: CaseContext) -> tuple[tuple[Any, ...], tuple[str, ...], bool]:
    """The arguments in float64 as torch's checkers need them, the notes to show, and
    whether randomized mode (torch's fast_mode) applies."""
    arguments = fresh_copies(context.arguments, torch.float64)
    notes = promotion_notes(context, context.arguments)
    mode, reason = resolve_mode(context, arguments)
    fast = mode == "randomized"
    return arguments, (*notes, reason) if fast else notes, fast


MODE_SKIPS = {
    "surrogate": "gradient: surrogate — backward is intentionally not the derivative",
    "approximate": "gradient: approximate — judged by `finite_difference` against max_error",
}
