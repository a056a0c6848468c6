"""Results for what stopped a case or a target before its checks said all they had to.

Trouble in one target is that target's result, as pytest's runner makes an error in one test
that test's error: a case's process that died or ran out of time, gradverify's own failure
on one case (an internal error, exit code 3 at the end), a package's module that cannot be
imported. The run goes on with the others.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gradverify._version import __version__
from gradverify.errors import GradverifyError, SpecError, SpecIssue
from gradverify.results import Result, Status
from gradverify.run.pool import Outcome
from gradverify.run.tasks import Task
from gradverify.target.dependencies import needed_package
from gradverify.target.legacy import REFUSED

PLEA = (
    "this is a bug in gradverify, not in your code: please report it with the traceback "
    "(`details`); every other case ran and is reported"
)
# The check a target that never loaded is failed at: the one that runs forward first.
LOAD_CHECK = "forward"
# The case name of a result about a whole target, or a whole spec file, that never got to
# its cases.
NOT_LOADED_CASE = "not loaded"
UNREAD_CASE = "not read"
NOT_RUN_CASE = "not run here"  # a target that needs what this machine lacks
REFUSED_CASE = "refused by torch"  # a legacy Function
_NEEDS = re.compile(r"needs [^:(]+\([^)]*\)")  # `needs CUDA (this machine has none)`
LOADING_HINT = (
    "the target could not be loaded, so none of its cases ran: fix its name, install what its "
    "module needs, or fix the error at import"
)
INFERRING_HINT = "its inputs could not be inferred, so none of its checks ran: give them in a spec"
CASE_HINT = "the case could not be run as written, so none of its checks ran: fix the spec"


def internal_error(
    target: str,
    case: str,
    check: str,
    trace: str,
    spec_file: str | None = None,
    spec_line: int | None = None,
) -> Result:
    """gradverify failed on this case in `check` (or preparing it): the traceback `trace`,
    and the request to report it."""
    lines = trace.rstrip().splitlines()
    last = lines[-1] if lines else "an unknown error"
    return Result(
        target=target, case=case, check=check, status=Status.FAIL,
        message=f"internal error in gradverify {__version__}: {last}",
        hint=PLEA, details=tuple(lines), spec_file=spec_file, spec_line=spec_line,
        internal=True,
    )  # fmt: skip


def not_loaded(target: str, case: str, message: str) -> Result:
    """A target found in a package's code whose module cannot be imported (a missing
    dependency, an error at import): a failure of the run, with the import error."""
    hint = (
        "its module could not be imported, so none of its checks ran: install what it needs, "
        "or fix the error at import"
    )
    return replace(usage_error(target, case, message, None, None, hint), usage=False)


def needs(target: str, message: str) -> str | None:
    """What this machine lacks for a target, in a line (`needs triton (not installed)`,
    `needs CUDA (this machine has none)`), from the message of its load or of zero-config's
    inference; None when the message is about something else."""
    headline = message.strip().split("\n", 1)[0]
    needed = needed_package(headline, target)
    if needed is not None:
        return needed
    said = headline.removeprefix(f"cannot infer inputs for {target}: ")
    return said if said.startswith("needs ") else None


def skipped(target: str, reason: str) -> Result:
    """A target this machine cannot run (`needs`): a skip, neither a finding nor an error;
    its message the `needs X (...)` phrase, whatever else the reason says its details."""
    phrase = _NEEDS.match(reason)
    message = phrase.group(0) if phrase else reason
    rest = reason[len(message) :].lstrip(": ")
    return Result(
        target=target, case=NOT_RUN_CASE, check=LOAD_CHECK, status=Status.SKIP, message=message,
        details=(rest,) if rest else (),
        hint="none of its checks ran here: run it where that is installed, or give it a spec",
    )  # fmt: skip


def refused(target: str, message: str) -> Result | None:
    """A target torch will not run as written (a legacy Function, gradverify.target.legacy),
    from the message of its load: a failure of the user's code, not an error of usage; None
    for any other message."""
    said = message.strip().removeprefix(f"cannot load target '{target}': ")
    if not said.startswith(REFUSED):
        return None
    headline, _, rest = said.partition("\n")
    return Result(
        target=target, case=REFUSED_CASE, check=LOAD_CHECK, status=Status.FAIL,
        message=headline, details=tuple(rest.splitlines()),
        hint="torch runs only new-style Functions (static forward and backward), so none of its checks ran",
    )  # fmt: skip


def instead_of_error(target: str, message: str) -> Result | None:
    """A target that did not load (or whose inputs were not inferred) for a reason that is
    no error of usage: what this machine lacks (`needs`, a skip), or torch's refusal
    (`refused`, a failure); None for any other reason."""
    needed = needs(target, message)
    return skipped(target, needed) if needed is not None else refused(target, message)


def unusable(task: Task, message: str, not_loaded: bool) -> Result:
    """Bad input that kept a case from running, found where it ran (a worker, or this process
    without isolation): a target that cannot be loaded (one result for the target, at its
    spec's line, named by file, line and key), or a case that does not fit forward (its
    SpecError names the file and line). Its target's other cases and the other targets run;
    the exit code is 2 at the end. A target that needs a package this machine lacks is a
    skip of the case instead, and a legacy Function a failure of it (`instead_of_error`)."""
    entry = task.entry
    target = entry.spec.target or ""
    if not_loaded:  # a package this machine lacks (a skip), a legacy Function (a failure)
        instead = instead_of_error(target, message)
        if instead is not None:
            line = entry.case_lines.get(task.case, entry.line)
            return replace(instead, case=task.case, spec_file=entry.file, spec_line=line)
    if not_loaded:
        text = message.strip()
        if entry.file is not None:
            text = SpecIssue(entry.file, entry.line, None, "target", text).render()
        return usage_error(target, NOT_LOADED_CASE, text, entry.file, entry.line, LOADING_HINT)
    line = entry.case_lines.get(task.case, entry.line)
    if entry.file is not None and not message.startswith(entry.file):  # where, as a spec error
        message = SpecIssue(entry.file, line, None, f"case {task.case!r}", message).render()
    return usage_error(target, task.case, message, entry.file, line, CASE_HINT)


def unread(error: SpecError) -> Result:
    """A spec file that does not read or validate, among others that do: a result named by
    the file (its target unknown), with every issue's file, line and key."""
    first, *others = error.issues
    return usage_error(
        first.file, UNREAD_CASE, first.render(), first.file, first.line,
        "the spec file could not be used, so none of its cases ran: fix it as the message says",
        details=tuple(issue.render() for issue in others),
    )  # fmt: skip


def usage_error(
    target: str,
    case: str,
    message: str,
    spec_file: str | None,
    spec_line: int | None,
    hint: str,
    details: tuple[str, ...] = (),
) -> Result:
    """A failed result for bad input (`usage`): the exit code is 2 unless an internal error
    makes it 3. Its message's first line is the headline, the rest its details."""
    headline, _, rest = message.strip().partition("\n")
    return Result(
        target=target, case=case, check=LOAD_CHECK, status=Status.FAIL, message=headline,
        details=(*rest.splitlines(), *details), hint=hint, spec_file=spec_file,
        spec_line=spec_line, usage=True,
    )  # fmt: skip


def results_of(
    task: Task, outcome: Outcome, keep_going: bool = False
) -> tuple[list[Result], tuple[str, ...]]:
    """A case's results and notes from its Outcome, with the results of what stopped it; a
    spec or target error found running it is raised, or with `keep_going` is its result."""
    if outcome.user_error is not None:
        if not keep_going:
            raise GradverifyError(outcome.user_error)
        return [unusable(task, outcome.user_error, outcome.not_loaded)], ()
    if outcome.ended is None and outcome.internal is None:
        return outcome.results, outcome.notes
    return [*outcome.results, *ended_results(task, outcome)], outcome.notes


def ended_results(task: Task, outcome: Outcome) -> list[Result]:
    """A case that ended early (its process died or ran out of time, or gradverify failed on
    it): a fail for the check it ended in, and a skip for each check never run."""
    spec = task.entry.spec
    ran = {result.check for result in outcome.results}
    # The worker said which checks the case runs; a process that ended before it could say
    # (while loading the target) is failed at the checks the spec asks of any target.
    checks = outcome.checks if outcome.checks is not None else spec.checks_for(custom_op=False)
    current = _ended_in(outcome, checks, ran)
    if outcome.internal is not None and outcome.check is None and "forward" in checks:
        current = "forward"  # failed preparing the inputs, which calls forward
    if current is None:  # every check had finished: gradverify failed after the last one
        current = outcome.check or (checks[-1] if checks else "forward")
    line = task.entry.case_lines.get(task.case, task.entry.line)

    def result(check: str, status: Status, message: str, **fields: Any) -> Result:
        return Result(
            target=spec.target or "", case=task.case, check=check, status=status,
            message=message, spec_file=task.entry.file, spec_line=line, **fields,
        )  # fmt: skip

    if outcome.internal is not None:
        target = spec.target or ""
        first = internal_error(target, task.case, current, outcome.internal, task.entry.file, line)
        why = f"not run: gradverify failed in `{current}` (an internal error)"
        pointer: dict[str, Any] = {"same_as": current}  # said once, pointed at from the rest
    else:
        first = result(current, Status.FAIL, _ended_message(outcome, current), **_timing(outcome))
        why, pointer = f"not run: the case's process {short(outcome.ended or '')}", {}
    ended = [first]
    ended.extend(
        result(check, Status.SKIP, why, **pointer)
        for check in checks
        if check not in ran and check != current
    )
    return ended


def _ended_in(outcome: Outcome, checks: Sequence[str], ran: set[str]) -> str | None:
    """The check a case's process ended in. Ended before any check started (building and
    settling the inputs calls forward): `forward`, the check that runs forward first."""
    if outcome.check in checks:
        return outcome.check
    if outcome.check is None and outcome.phase == "forward" and "forward" in checks:
        return "forward"
    return next((c for c in checks if c not in ran), None)


def _ended_message(outcome: Outcome, check: str) -> str:
    where = f" in {outcome.phase}" if outcome.phase else ""
    stuck = f" at {outcome.stuck_at.location}" if outcome.stuck_at is not None else ""
    during = (
        f"during check {check}"
        if outcome.check is not None
        else "while preparing the case's inputs, before its first check"
    )
    return f"{outcome.ended}{where}{stuck} ({during})"


def _timing(outcome: Outcome) -> dict[str, Any]:
    """A timeout's cost so far, check by check, and what to do: it is not a finding."""
    if outcome.elapsed is None:
        return {}
    fields: dict[str, Any] = {
        "seconds": max(0.0, outcome.elapsed - sum(r.seconds for r in outcome.results))
    }
    if outcome.stuck_at is not None:
        fields["source_file"] = outcome.stuck_at.file
        fields["source_line"] = outcome.stuck_at.line
    spent: dict[str, float] = {}
    for finished in outcome.results:
        spent[finished.check] = spent.get(finished.check, 0.0) + finished.seconds
    so_far = ", ".join(f"{check} {seconds:.2f} s" for check, seconds in spent.items())
    running = outcome.check or "preparing the inputs"
    fields["details"] = (
        f"time so far: {so_far or 'no check finished'}; {running} ran "
        f"{outcome.check_elapsed or 0.0:.2f} s until stopped ({outcome.elapsed:.2f} s in all)",
    )
    leave_out = f", or leave {outcome.check} out with `checks:`" if outcome.check else ""
    fields["hint"] = (
        "no finding: the case ran out of time. If your code never returns from the line named, fix that; "
        "if it is only slow, give the case more time (`timeout:` in the spec, or --timeout), "
        f"a smaller shape, `mode: randomized` (random projections, not whole Jacobians){leave_out}"
    )
    return fields


def short(ended: str) -> str:
    """`process died with SIGSEGV` as `died with SIGSEGV`, to follow a subject."""
    return ended.removeprefix("process ")
