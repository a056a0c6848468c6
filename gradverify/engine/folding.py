"""One root cause, one finding: later failures (or warnings) that repeat an earlier one
point at it.

The engine passes each check's results through `fold` before anyone sees them, so the JSON
report carries `same_as` too. Statuses never change: a folded failure is still a failure;
only the text report prints it as one line under the finding it repeats.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace

from gradverify.results import WASTED_WORK_WORDS, Result, Status, finding_key

# What forward and backward say about a non-finite value for finite inputs
# (checks/forward.py and checks/backward/): the first place such a value shows.
NON_FINITE_WORDS = "for finite inputs"
# gradgradcheck differentiates backward: where backward or the first derivative is already
# wrong, a wrong second derivative follows from that finding rather than adding one.
SECOND_ORDER_CHECK = "gradgradcheck"
FIRST_ORDER_CHECKS = ("backward", "finite_difference", "gradcheck")
# torch.func's transforms run backward: where they give backward's own gradient of an
# argument (checks/func/findings.py, inherited_failure) and a first-order check already
# failed on that argument, func's failure is that finding again, not a second one.
FUNC_CHECK = "func"
FUNC_INHERITED_WORDS = "give backward's gradient"
JUDGED_FIRST_ORDER = ("finite_difference", "gradcheck")


def fold(earlier: Sequence[Result], produced: Sequence[Result]) -> list[Result]:
    """`produced` (one check's results), each failure or warning that repeats a finding of
    `earlier` (the results of the checks run before on this case) marked `same_as` it."""
    seen = list(earlier)
    folded = []
    for result in produced:
        if result.status in (Status.FAIL, Status.WARN) and result.same_as is None:
            root = _repeated(result, seen)
            if root is not None:
                result = replace(result, same_as=root.same_as or root.check)
        folded.append(result)
        seen.append(result)
    return folded


def _repeated(result: Result, seen: Sequence[Result]) -> Result | None:
    """The earlier finding (a failure, or a warning) of another check that `result`
    repeats, if any."""
    others = [r for r in seen if r.status is result.status and r.check != result.check]
    finding = finding_key(result)
    if finding is not None:
        for other in others:
            if finding_key(other) == finding:  # gradcheck confirming finite_difference, say
                return other
    if result.failed and non_finite(result):
        # One inf or nan trips every check downstream: the first to see it tells the story.
        found = next((other for other in others if non_finite(other)), None)
        if found is not None:
            return found
    if result.failed and result.check == SECOND_ORDER_CHECK:
        return next((other for other in others if other.check in FIRST_ORDER_CHECKS), None)
    if result.failed and result.check == FUNC_CHECK and FUNC_INHERITED_WORDS in result.message:
        return _first_order_on(result.input_index, others)
    return None


def _first_order_on(input_index: int | None, failures: Sequence[Result]) -> Result | None:
    """The first failure of finite_difference (else gradcheck) about argument `input_index`."""
    for check in JUDGED_FIRST_ORDER:
        for other in failures:
            if other.check == check and other.failed and other.input_index == input_index:
                return other
    return None


def non_finite(result: Result) -> bool:
    """Whether a failure is about an inf or a nan (in an output, a gradient or an estimate)."""
    numbers = (result.analytical, result.numerical, result.max_abs_error)
    if any(number is not None and not math.isfinite(number) for number in numbers):
        return True
    return result.check in ("forward", "backward") and NON_FINITE_WORDS in result.message


def once_per_function(results: Sequence[Result]) -> list[Result]:
    """`results` (of many cases, in report order) with each warning about the Function's
    code rather than a case's values (wasted work, a lint rule at one line) kept in its first
    case only, with a note naming the later cases that repeat it: `ctx.x holds a tensor of
    shape [4]` and `... of shape [3, 5]` are one finding."""
    first: dict[tuple[object, ...], int] = {}  # finding -> index in `kept` of its first case
    repeats: dict[tuple[object, ...], list[str]] = {}
    kept: list[Result] = []
    for result in results:
        key = _code_finding(result)
        if key is None:
            kept.append(result)
        elif key not in first:
            first[key] = len(kept)
            kept.append(result)
        elif (
            result.case not in repeats.setdefault(key, []) and result.case != kept[first[key]].case
        ):
            repeats[key].append(result.case)
    for key, cases in repeats.items():
        if not cases:
            continue
        shown = kept[first[key]]
        said = (
            f"the same in {len(cases)} more case(s) of this Function ({', '.join(cases)}); "
            "reported once per Function"
        )
        kept[first[key]] = replace(shown, notes=(*shown.notes, said))
    return kept


# A shape in a message (`of shape [3, 5]`): cases differ in it, not in the finding.
_SHAPE = re.compile(r"\[[0-9, ]*\]")


def _code_finding(result: Result) -> tuple[object, ...] | None:
    """What identifies a warning about the code across cases, or None for any other result."""
    if wasted_work(result):
        return (result.target, "wasted work")
    if result.status is Status.WARN and result.check == "lint" and result.rule is not None:
        message = _SHAPE.sub("[…]", result.message)
        return (result.target, result.rule, result.source_file, result.source_line, message)
    return None


def wasted_work(result: Result) -> bool:
    """Whether a result is a wasted-work warning."""
    return result.status is Status.WARN and WASTED_WORK_WORDS in result.message
