"""The cases of a run in this process (`--no-isolation`), told as a worker tells the pool.

An Outcome per case, made into its results as a worker's is (`failures.results_of`):
gradverify's own error on a case is that case's result, and so is a spec or target error
when the run keeps going. The engine is imported here only when this path is chosen.
"""

from __future__ import annotations

import gc
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from gradverify.errors import GradverifyError, TargetError
from gradverify.results import Result
from gradverify.run import failures, forkserver
from gradverify.run.pool import Outcome
from gradverify.run.tasks import Task

Listener = Callable[[Task, str, Any], None]
Finished = dict[int, tuple[list[Result], tuple[str, ...]]]


def import_the_engine() -> None:
    """Import in this process what a worker has from the fork server (torch, sympy, the
    engine), with the collector paused as the server keeps it off (forkserver.prepare): four
    full collections over the growing heap took 0.3-0.4 s. The user's code then runs with
    the collector as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        for module in forkserver.PRELOAD:
            __import__(module)
    finally:
        if enabled:
            gc.enable()


def run_here(
    tasks: Sequence[Task], listener: Listener | None, finished: Finished, keep_going: bool = False
) -> None:
    """Run `tasks` here, one after another; each one's results into `finished`. gradverify's
    own error on a case is that case's result, as in a worker (`failures.ended_results`),
    and so is a spec or target error with `keep_going`."""
    import_the_engine()
    from gradverify.engine.case import Job, run_case
    from gradverify.run.targets import LoadedTargets

    targets = LoadedTargets()
    for task in tasks:
        observer = _Observer(task, listener)
        try:
            job = Job(task.entry, targets.load(task.entry.spec.target or ""))
            results, notes = run_case(job, task.spec_case(), task.seed, observer)
        except GradverifyError as error:
            if not keep_going:
                raise
            observer.outcome.user_error = error.render()
            observer.outcome.not_loaded = isinstance(error, TargetError)
            observer.tell("user_error", observer.outcome.user_error)
        except Exception:
            observer.outcome.internal = traceback.format_exc()
            observer.tell("internal", observer.outcome.internal)
        else:
            observer.outcome.results, observer.outcome.notes = results, notes
            observer.outcome.done = True
            observer.tell("done", notes)
        finished[task.id] = failures.results_of(task, observer.outcome, keep_going)


class _Observer:
    """A case run in this process, told as a worker tells the pool: an Outcome, and the
    listener's events."""

    def __init__(self, task: Task, listener: Listener | None) -> None:
        self.task, self.listener = task, listener
        self.outcome = Outcome()

    def tell(self, kind: str, value: Any) -> None:
        if self.listener is not None:
            self.listener(self.task, kind, value)

    def checks_chosen(self, checks: Sequence[str]) -> None:
        self.outcome.checks = tuple(checks)
        self.tell("checks", tuple(checks))

    def check_started(self, check_id: str) -> None:
        self.outcome.check = check_id
        self.tell("check", check_id)

    def check_finished(self, results: list[Result]) -> None:
        self.outcome.results.extend(results)
        self.tell("results", results)
