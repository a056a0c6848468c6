"""The worker process: runs cases sent by the parent, one at a time.

It is forked from gradverify.run.forkserver with torch and the engine already imported (or
spawned, and imports them here).

Everything it learns is sent back as it happens (the check being run, the phase of the
user's code, each check's results), so that if the user's code kills the process or hangs,
the parent still knows what was done and where it stopped.
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from gradverify.results import Result
from gradverify.run import allocator, interrupts
from gradverify.run.tasks import InferTask, OpTask


def serve(connection: Connection, threads: int) -> None:
    """The worker's main loop (the target of each worker process)."""
    interrupts.ignore_in_child()  # the parent ends its workers on Ctrl-C
    import torch

    torch.set_num_threads(max(1, threads))
    from gradverify.checks import REGISTRY, get_check

    for check_id in REGISTRY:  # import every check now, not inside a case's time limit
        get_check(check_id)
    try:
        _serve_cases(connection)
    except (EOFError, ConnectionError):  # the parent went away (Ctrl-C): nobody to report to
        return


def _serve_cases(connection: Connection) -> None:
    from gradverify.engine.case import Job, run_case
    from gradverify.errors import GradverifyError, TargetError
    from gradverify.run.targets import LoadedTargets
    from gradverify.stacks import dump_on_signal, remove
    from gradverify.target.loading import load_target
    from gradverify.usercode import listen_to_phases

    targets = LoadedTargets()
    # At a timeout the parent asks for this process's stack, to say where the case was stuck.
    stack_file = dump_on_signal()
    ready = _send_or_gone(connection, ("ready", stack_file))
    while True:
        task = _receive_or_gone(connection) if ready else None
        if task is None:
            remove(stack_file)
            return
        connection.send(("started", task.id))
        reporter = _Reporter(connection, task.id)
        listen_to_phases(reporter.phase)
        try:
            if isinstance(task, InferTask):
                from gradverify.inference.zeroconfig import inferred

                connection.send(("inferred", task.id, inferred(task.target)))
                connection.send(("done", task.id, ()))
                continue
            if isinstance(task, OpTask):
                is_op = load_target(task.target).op_name is not None
                connection.send(("custom_op", task.id, is_op))
                connection.send(("done", task.id, ()))
                continue
            job = Job(task.entry, targets.load(task.entry.spec.target or ""))
            _, notes = run_case(job, task.spec_case(), task.seed, observer=reporter)
            connection.send(("done", task.id, notes))
        except GradverifyError as error:
            not_loaded = isinstance(error, TargetError)
            connection.send(("user_error", task.id, error.render(), not_loaded))
        except Exception:
            connection.send(("internal", task.id, traceback.format_exc()))
        finally:
            listen_to_phases(None)


def _send_or_gone(connection: Connection, message: tuple[Any, ...]) -> bool:
    """Send `message`; False when the parent has gone away (Ctrl-C before this worker was
    ready): the worker then ends quietly, not with a traceback."""
    try:
        connection.send(message)
    except OSError:
        return False
    return True


def _receive_or_gone(connection: Connection) -> Any:
    """The next task; None (stop) when the parent says so or has gone away."""
    try:
        return connection.recv()
    except (EOFError, OSError):
        return None


class _Reporter:
    """Forwards a case's progress to the parent; phases only when they change."""

    def __init__(self, connection: Connection, task_id: int) -> None:
        self.connection = connection
        self.task_id = task_id
        self.last_phase: str | None = None

    def checks_chosen(self, checks: Sequence[str]) -> None:
        self.connection.send(("checks", self.task_id, tuple(checks)))

    def check_started(self, check_id: str) -> None:
        self.last_phase = None
        self.connection.send(("check", self.task_id, check_id))

    def check_finished(self, results: list[Result]) -> None:
        self.connection.send(("results", self.task_id, results))
        allocator.release_free_memory()  # what this check freed is not the next one's peak

    def phase(self, phase: str) -> None:
        if phase != self.last_phase:
            self.last_phase = phase
            self.connection.send(("phase", self.task_id, phase))
