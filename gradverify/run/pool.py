"""A pool of worker processes that survives the user's code: segfaults, exits, hangs.

Workers are forked from a server that has imported torch and the engine once
(gradverify.run.forkserver; a spawned process per worker where pidfds are missing), and reused.
A worker that dies or overruns its case's time limit is replaced; its case ends as a failure
that says what happened and where ("process died with SIGSEGV in backward"), and every other
case runs. Closing the pool ends every worker, at once when the run was interrupted.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Protocol

from gradverify import stacks
from gradverify.results import Result
from gradverify.run import forkserver, interrupts
from gradverify.run.tasks import InferTask, OpTask, Task
from gradverify.run.worker import serve

# A worker that has not even started its case by then is considered stuck at start-up.
START_LIMIT = 300.0


@dataclass
class Outcome:
    """What a worker reported for one task, and how it ended."""

    results: list[Result] = field(default_factory=list)
    notes: tuple[str, ...] = ()
    # The checks the case runs, as the worker chose them on the loaded target (None: it
    # ended before, loading the target).
    checks: tuple[str, ...] | None = None
    check: str | None = None  # the check running when it ended
    phase: str | None = None  # the phase of the user's code then
    done: bool = False
    ended: str | None = None  # why it ended early: "process died with SIGSEGV", "timed out ..."
    user_error: str | None = None  # a spec or target error found in the worker
    not_loaded: bool = False  # that error is the target's: it cannot be loaded (TargetError)
    internal: str | None = None  # a traceback of gradverify's own failure
    inferred: dict[str, Any] | None = (
        None  # an InferTask's answer (gradverify.inference.zeroconfig)
    )
    custom_op: bool | None = None  # an OpTask's answer
    # At a timeout: where the user's code was stuck, the seconds the task had run, and the
    # seconds the check running then had run.
    stuck_at: stacks.Frame | None = None
    elapsed: float | None = None
    check_elapsed: float | None = None


Listener = Callable[[Task, str, Any], None]
AnyTask = Task | InferTask | OpTask
_Notify = Callable[[AnyTask, str, Any], None]


class _Process(Protocol):
    """What the pool needs of a worker process (multiprocessing's or a forked one)."""

    @property
    def pid(self) -> int | None: ...
    @property
    def sentinel(self) -> int: ...
    @property
    def exitcode(self) -> int | None: ...
    def is_alive(self) -> bool: ...
    def kill(self) -> None: ...
    def join(self, timeout: float | None = None) -> None: ...
    def close(self) -> None: ...


@dataclass
class _Worker:
    process: _Process
    connection: Connection
    task: AnyTask | None = None
    deadline: float | None = None
    timeout: float = 0.0
    stack_file: str | None = None  # where the worker dumps its stack when asked
    started: float | None = None  # monotonic time its task started, and its current check
    check_started: float | None = None


class WorkerPool:
    """`size` worker processes, each running `torch.set_num_threads(threads)`."""

    def __init__(self, size: int, threads: int) -> None:
        self.size = max(1, size)
        self.threads = threads
        self.context = multiprocessing.get_context("spawn")
        self.workers: list[_Worker] = []

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close(abandon=kind is not None)

    def run(
        self,
        tasks: Sequence[tuple[AnyTask, float]],
        listener: Listener | None = None,
        outcomes: dict[int, Outcome] | None = None,
    ) -> dict[int, Outcome]:
        """Run every (task, timeout); the outcome of each task by its id, filled in as they
        run into `outcomes` when given (what was done when a Ctrl-C stops the run)."""
        pending = deque(tasks)
        outcomes = {} if outcomes is None else outcomes
        outcomes.update({task.id: Outcome() for task, _ in tasks})

        def notify(task: AnyTask, kind: str, value: Any) -> None:
            if listener is not None and isinstance(task, Task):  # progress is about cases
                listener(task, kind, value)

        while pending or any(w.task is not None for w in self.workers):
            interrupts.checkpoint()
            self._dispatch(pending)
            busy = [w for w in self.workers if w.task is not None]
            waitables: list[Any] = [w.connection for w in busy] + [w.process.sentinel for w in busy]
            wait(waitables, timeout=self._next_wait(busy))
            for worker in busy:
                self._collect(worker, outcomes, notify)
        return outcomes

    def close(self, abandon: bool = False) -> None:
        """Stop every worker; `abandon` (Ctrl-C, an error) kills them mid-case at once."""
        for worker in self.workers:
            if abandon:
                worker.process.kill()
            with contextlib.suppress(OSError, ValueError):  # already gone
                worker.connection.send(None)
        for worker in self.workers:
            worker.process.join(timeout=2)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.connection.close()
            worker.process.close()
            stacks.remove(worker.stack_file)
        self.workers = []

    def _dispatch(self, pending: deque[tuple[AnyTask, float]]) -> None:
        while pending:
            idle = next((w for w in self.workers if w.task is None), None)
            if idle is None and len(self.workers) < self.size:
                idle = self._start()
            if idle is None:
                return
            task, timeout = pending.popleft()
            idle.task, idle.timeout = task, timeout
            idle.deadline = time.monotonic() + START_LIMIT + timeout
            idle.connection.send(task)

    def _start(self) -> _Worker:
        process: _Process
        if forkserver.AVAILABLE:
            process, parent_end = forkserver.server().fork(self.threads)
        else:
            parent_end, child_end = self.context.Pipe()
            spawned = self.context.Process(
                target=serve, args=(child_end, self.threads), daemon=True
            )
            with interrupts.deferred():  # the worker is born with SIGINT blocked
                spawned.start()
            child_end.close()
            process = spawned
        worker = _Worker(process, parent_end)
        self.workers.append(worker)
        return worker

    def _next_wait(self, busy: list[_Worker]) -> float | None:
        deadlines = [w.deadline for w in busy if w.deadline is not None]
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    def _collect(self, worker: _Worker, outcomes: dict[int, Outcome], notify: _Notify) -> None:
        task = worker.task
        assert task is not None
        outcome = outcomes[task.id]
        try:
            while worker.task is not None and worker.connection.poll():
                self._receive(worker, worker.connection.recv(), outcome, notify)
        except (EOFError, OSError):
            pass  # the process is gone; its sentinel says how
        if worker.task is None:
            return
        if not worker.process.is_alive():
            outcome.ended = _death(worker.process.exitcode)
            self._replace(worker)
        elif worker.deadline is not None and time.monotonic() >= worker.deadline:
            self._timed_out(worker, outcome)
            worker.process.kill()
            worker.process.join()
            self._replace(worker)
        else:
            return
        notify(task, "ended", outcome.ended)

    def _timed_out(self, worker: _Worker, outcome: Outcome) -> None:
        """What a task that overran its time had done, and where its user code was stuck."""
        now = time.monotonic()
        outcome.ended = f"timed out after {worker.timeout:g} s"
        if worker.started is not None:
            outcome.elapsed = now - worker.started
            outcome.check_elapsed = now - (worker.check_started or worker.started)
        pid = worker.process.pid
        if worker.stack_file is not None and pid is not None:
            dump = stacks.stack_of(pid, worker.stack_file)
            outcome.stuck_at = stacks.innermost_user_frame(dump)

    def _receive(
        self, worker: _Worker, message: tuple[Any, ...], outcome: Outcome, notify: _Notify
    ) -> None:
        kind = message[0]
        task = worker.task
        assert task is not None
        if kind == "ready":
            worker.stack_file = message[1]
            return
        if kind == "started":
            worker.started = time.monotonic()
            worker.deadline = worker.started + worker.timeout
            worker.check_started = None
        elif kind == "checks":
            outcome.checks = message[2]
        elif kind == "check":
            outcome.check, outcome.phase = message[2], None
            worker.check_started = time.monotonic()
        elif kind == "phase":
            outcome.phase = message[2]
        elif kind == "results":
            outcome.results.extend(message[2])
        elif kind == "inferred":
            outcome.inferred = message[2]
        elif kind == "custom_op":
            outcome.custom_op = message[2]
        elif kind in ("done", "user_error", "internal"):
            if kind == "done":
                outcome.notes, outcome.done = message[2], True
            elif kind == "user_error":
                outcome.user_error, outcome.not_loaded = message[2], message[3]
            else:
                outcome.internal = message[2]
            worker.task, worker.deadline = None, None
        notify(task, kind, message[2] if len(message) > 2 else None)

    def _replace(self, worker: _Worker) -> None:
        stacks.remove(worker.stack_file)
        worker.connection.close()
        worker.process.close()
        self.workers.remove(worker)


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"process died with {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"process died with signal {-exitcode}"
    return f"process exited with code {exitcode}"
