"""The checks of one case, in order: its inputs built and settled, each check's findings
folded into the earlier ones, and a failure about backward pointed at backward."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from gradverify.catalogue import BACKWARD_CHECKS
from gradverify.checks import get_check
from gradverify.checks.shared.case import CaseContext, not_run
from gradverify.engine.branch_coverage import (
    measured_checks,
    measuring,
    merged,
    with_branches,
    with_taken,
)
from gradverify.engine.case_judges import CaseJudges
from gradverify.engine.explore import CHECK as EXPLORED_CHECK
from gradverify.engine.explore import budget
from gradverify.engine.folding import fold
from gradverify.engine.judging import JudgedCase
from gradverify.engine.off_kinks import settle_inputs
from gradverify.engine.repeatable import cuda_devices, repeatable
from gradverify.inference.zeroconfig import CASE as INFERRED_CASE_NAME
from gradverify.inputs import KINK_MARGIN_EPS, DeviceUnavailable, build_inputs, case_seed
from gradverify.memory import is_allocation_failure, out_of_memory, refusal
from gradverify.results import Branches, Result, Status
from gradverify.spec.load import SpecEntry
from gradverify.spec.models import Case
from gradverify.target.arity import check_arity
from gradverify.target.loaded import Target, checks_of

if TYPE_CHECKING:
    from gradverify.engine.explore.search import Outcome


@dataclass(frozen=True)
class Job:
    """One Function to verify: its spec and its loaded target."""

    entry: SpecEntry
    target: Target


class CaseObserver(Protocol):
    """Told about a case's progress (a worker forwards this to the parent process)."""

    def checks_chosen(self, checks: Sequence[str]) -> None: ...

    def check_started(self, check_id: str) -> None: ...

    def check_finished(self, results: list[Result]) -> None: ...


def run_case(
    job: Job, case: Case, seed: int, observer: CaseObserver | None = None
) -> tuple[list[Result], tuple[str, ...]]:
    """The checks of one case, with the user's global RNG state saved and restored.

    Also returns notes about the case's inputs (e.g. values drawn again away from kinks).
    """
    check_arity(job.target, job.entry, case)  # a case that cannot fit forward: SpecError
    spec = job.entry.spec
    checks = checks_of(spec, job.target)
    if observer is not None:
        observer.checks_chosen(checks)
    this_seed = case_seed(seed, case.name)
    context = CaseContext(
        target=job.target,
        case=case.name,
        arguments=(),
        spec=spec,
        seed=this_seed,
        spec_file=job.entry.file,
        spec_line=job.entry.case_lines.get(case.name, job.entry.line),
    )
    too_large = refusal(case, context.describe_argument)
    if too_large is not None:
        return _told(observer, _case_fails(context, checks, too_large)), ()
    case_started = time.perf_counter()  # what exploring may spend is a share of the case's time
    # Randomness inside the user's code repeats run to run, on the GPU too; no TF32 there.
    with repeatable(this_seed, cuda_devices(case)):
        try:
            margin = KINK_MARGIN_EPS * spec.tolerance.eps
            arguments = build_inputs(case, seed, spec.kinks, margin)
            arguments, notes = settle_inputs(job.target, case, arguments, spec, this_seed)
        except DeviceUnavailable as missing:
            skipped = [context.result(c, Status.SKIP, str(missing)) for c in checks]
            return _told(observer, skipped), ()
        except (MemoryError, RuntimeError) as error:
            if not is_allocation_failure(error):
                raise
            message = f"preparing the inputs ran out of memory: {out_of_memory(error)}"
            return _told(observer, _case_fails(context, checks, message)), ()
        context = replace(context, arguments=arguments)
        judges = CaseJudges(JudgedCase(context, case))
        results: list[Result] = []
        measured = measured_checks(checks)
        seen: Branches | None = None  # backward's branches this case's checks ran so far
        for check_id in checks:
            if observer is not None:
                observer.check_started(check_id)
            started = time.perf_counter()
            ran = None  # backward's branches this case ran, when measured
            if check_id in measured:
                with measuring(job.target) as branches:
                    produced = _run_check(check_id, replace(context, earlier=tuple(results)))
                ran = branches()
                seen = merged(seen, ran)
            else:
                produced = _run_check(check_id, replace(context, earlier=tuple(results)))
            if spec.explore != 0 and check_id == EXPLORED_CHECK:  # further draws
                explored = replace(context, earlier=tuple(results))
                times = (case_started, started)
                outcome = _explored(job, case, explored, produced, times, seen)
                produced, notes = outcome.results, (*notes, *outcome.notes)
                if outcome.taken:  # what the draws aimed at backward's unrun branches ran
                    ran = with_taken(merged(seen, ran), outcome.taken)
            produced = with_branches(produced, ran)  # after explore, which may replace them
            share = (time.perf_counter() - started) / max(len(produced), 1)
            timed = [_located(replace(result, seconds=share), job.target) for result in produced]
            # judged first, so that a warning gradcheck repeats is folded under the first
            timed = fold(results, judges.judge(timed))
            results.extend(timed)
            if observer is not None:
                observer.check_finished(timed)
    return results, notes


def _explored(
    job: Job,
    case: Case,
    context: CaseContext,
    produced: list[Result],
    started: tuple[float, float],
    branches: Branches | None,
) -> Outcome:
    """`produced`, or a failure found on a further draw (gradverify.engine.explore), and notes.
    `started`: when the case and the explored check started (the budget is a share of the
    case's time so far; a draw costs about what the check took); `branches`: what the case's
    checks ran of backward, whose unrun branches the draws aim at first."""
    from gradverify.engine.explore.search import Outcome, explore  # only a case that explores

    now = time.perf_counter()
    chosen = budget(job.entry.spec.explore, job.entry.spec.timeout, now - started[0])
    if chosen is None:
        return Outcome(produced)
    inferred = job.entry.file is None and case.name.startswith(INFERRED_CASE_NAME)  # zero-config
    own = now - started[1]
    return explore(context, case, produced, chosen, inferred, own_seconds=own, branches=branches)


def _told(observer: CaseObserver | None, results: list[Result]) -> list[Result]:
    """`results` of a case stopped before its checks, passed on (a worker sends them back)."""
    if observer is not None and results:
        observer.check_finished(results)
    return results


def _run_check(check_id: str, context: CaseContext) -> list[Result]:
    """The check's results; an allocation that fails in it (or in the user's code) fails it."""
    try:
        return get_check(check_id).run(context)
    except (MemoryError, RuntimeError) as error:
        if not is_allocation_failure(error):
            raise
        return [context.result(check_id, Status.FAIL, f"ran out of memory: {out_of_memory(error)}")]


def _case_fails(context: CaseContext, checks: Sequence[str], message: str) -> list[Result]:
    """The case fails once, at `forward` (or its first check); the others repeat that."""
    if not checks:
        return []
    failing = "forward" if "forward" in checks else checks[0]
    return [
        context.result(check, Status.FAIL, message)
        if check == failing
        else not_run(context, check, failing)
        for check in checks
    ]


def _located(result: Result, target: Target) -> Result:
    """A failure or warning about backward, pointed at the line where backward is defined."""
    if (
        result.source_file is None
        and target.source_file is not None
        and result.check in BACKWARD_CHECKS
        and result.status in (Status.FAIL, Status.WARN)
    ):
        return replace(result, source_file=target.source_file, source_line=target.backward_line)
    return result
