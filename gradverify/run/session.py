"""A run over many cases: overrides, cache, worker processes or in-process, one Report.

This is the one place that decides how cases run. It never imports torch itself: the
workers do, and the in-process path imports the engine only when it is chosen.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gradverify.catalogue import ENTRIES
from gradverify.engine.folding import once_per_function
from gradverify.errors import GradverifyError
from gradverify.results import Report, Result, Status
from gradverify.run import forkserver
from gradverify.run.cache import ResultCache
from gradverify.run.pool import Outcome, WorkerPool
from gradverify.run.tasks import InferTask, OpTask, Task
from gradverify.spec.identity import identify
from gradverify.spec.load import SpecEntry

Listener = Callable[[Task, str, Any], None]
INFER_TIMEOUT = 120.0  # seconds for zero-config's trial runs, as a spec's default timeout


class InternalError(Exception):
    """gradverify itself failed inside a worker; carries the worker's traceback."""


@dataclass(frozen=True)
class RunOptions:
    seed: int | None = None
    isolation: bool = True  # each case in a worker process
    jobs: int = 0  # worker processes; 0: one per core
    timeout: float | None = None  # seconds per case; None: the spec's (default 120)
    mode: str | None = None  # full | randomized | auto; None: the spec's
    explore: int | None = None  # further draws per case (--explore); None: the spec's
    cache: bool = True
    cache_dir: Path = Path(".gradverify_cache")


def run(
    entries: Sequence[SpecEntry],
    options: RunOptions,
    notes: Sequence[str] = (),
    listener: Listener | None = None,
) -> Report:
    """Every case of every entry, in the order written, whatever ran where."""
    entries = [_with_overrides(entry, options) for entry in entries]
    pairs = [(entry, case) for entry in entries for case in entry.spec.cases]
    tasks = [
        Task(index, entry, case.name, _seed(entry, options))
        for index, (entry, case) in enumerate(pairs)
    ]
    cache = ResultCache(options.cache_dir) if options.cache else None
    finished: dict[int, tuple[list[Result], tuple[str, ...]]] = {}
    for task in tasks:
        hit = cache.lookup(task) if cache else None
        if hit is not None:
            finished[task.id] = (hit, ())
    remaining = [task for task in tasks if task.id not in finished]
    ran = {task.id for task in remaining}
    if options.isolation:
        finished.update(_in_workers(remaining, options, listener))
    else:
        finished.update(_in_process(remaining, listener))
    results: list[Result] = []
    all_notes = list(notes)
    for task in tasks:
        case_results, case_notes = finished[task.id]
        results.extend(case_results)
        all_notes.extend(f"{task.entry.spec.target} [{task.case}]: {note}" for note in case_notes)
        if cache is not None and task.id in ran:
            cache.store(task, case_results)
    return Report(
        results=tuple(once_per_function(results)),
        notes=tuple(all_notes),
        inferred=tuple(_inferred_cases(entries)),
    )


def _inferred_cases(
    entries: Sequence[SpecEntry],
) -> Iterator[tuple[str, tuple[dict[str, Any], ...]]]:
    """The cases zero-config inferred (entries read from no file), for the report."""
    for entry in entries:
        if entry.file is None:
            cases = entry.spec.model_dump(mode="json")["cases"]
            target = entry.spec.target or ""
            yield target, tuple({"case": case["name"], "inputs": case["inputs"]} for case in cases)


def start_early(options: RunOptions) -> None:
    """Start the fork server now if this run is sure to need workers: no cache to answer from.

    Its torch import then overlaps reading the specs. A run that turns out to have nothing
    to run stops it at exit, still importing.
    """
    nothing_cached = not options.cache or not options.cache_dir.exists()
    if options.isolation and forkserver.AVAILABLE and nothing_cached:
        forkserver.server()


def infer_entries(targets: Sequence[str], options: RunOptions) -> list[tuple[SpecEntry, str]]:
    """Zero-config: a spec entry and a note for each target that no spec names.

    Answered from the cache while a target's source is unchanged; else inferred in a worker
    when isolated, so that the user's forward runs isolated and this process never imports
    torch: a zero-config check pays one torch import, the fork server's.
    """
    results = infer_each(targets, options, keep_going=False)
    return [result for result in results if not isinstance(result, GradverifyError)]


def infer_each(
    targets: Sequence[str], options: RunOptions, keep_going: bool = True
) -> list[tuple[SpecEntry, str] | GradverifyError]:
    """`infer_entries`, with a target whose inputs cannot be inferred given its error in its
    place (`keep_going`) rather than raising it: a run over a package checks the others and
    lists it in the coverage."""
    if not targets:
        return []
    from gradverify.inference.zeroconfig import cached_entry, inferred

    if not options.isolation:
        import_the_engine()
    cache = ResultCache(options.cache_dir) if options.cache else None
    infer = _infer_in_worker(options) if options.isolation else inferred
    results: list[tuple[SpecEntry, str] | GradverifyError] = []
    for target in targets:
        try:
            results.append(cached_entry(target, cache, infer))
        except GradverifyError as error:
            if not keep_going:
                raise
            results.append(error)
    return results


def custom_ops(targets: Sequence[str], timeout: float = INFER_TIMEOUT) -> dict[str, bool | None]:
    """Whether each target loads as a custom op, found in one worker (this process never
    imports torch); None for a target that does not load or did not answer."""
    if not targets:
        return {}
    tasks = [(OpTask(index, target), timeout) for index, target in enumerate(targets)]
    with WorkerPool(1, threads=1) as pool:
        outcomes = pool.run(tasks)
    return {task.target: outcomes[task.id].custom_op for task, _ in tasks}


def _infer_in_worker(options: RunOptions) -> Callable[[str], dict[str, Any]]:
    def infer(target: str) -> dict[str, Any]:
        with WorkerPool(1, threads=os.cpu_count() or 1) as pool:
            timeout = options.timeout or INFER_TIMEOUT
            outcome = pool.run([(InferTask(0, target), timeout)])[0]
        if outcome.user_error is not None:
            raise GradverifyError(outcome.user_error)
        if outcome.internal is not None:
            raise InternalError(outcome.internal)
        if outcome.inferred is None:
            where = f" in {outcome.phase}" if outcome.phase else ""
            if outcome.stuck_at is not None:
                where += f" at {outcome.stuck_at.location}"
            raise GradverifyError(
                f"cannot infer inputs for {target}: the trial run of inputs inferred from "
                f"forward's signature {_short(outcome.ended or 'ended')}{where}. Write a spec "
                f"that gives the inputs (`gradverify init {target}` starts one)."
            )
        return outcome.inferred

    return infer


def _seed(entry: SpecEntry, options: RunOptions) -> int:
    return entry.spec.seed if options.seed is None else options.seed


def _with_overrides(entry: SpecEntry, options: RunOptions) -> SpecEntry:
    update: dict[str, Any] = {}
    if options.mode is not None:
        update["mode"] = options.mode
    if options.timeout is not None:
        update["timeout"] = options.timeout
    if options.explore is not None:
        update["explore"] = options.explore
    return replace(entry, spec=entry.spec.model_copy(update=update)) if update else entry


def _in_workers(
    tasks: Sequence[Task], options: RunOptions, listener: Listener | None
) -> dict[int, tuple[list[Result], tuple[str, ...]]]:
    if not tasks:
        return {}
    cores = os.cpu_count() or 1
    size = min(options.jobs or cores, len(tasks))
    imports = _heavy_imports(tasks)
    if imports and forkserver.AVAILABLE:
        forkserver.server().preload(imports)
    with WorkerPool(size, threads=max(1, cores // size)) as pool:
        outcomes = pool.run([(task, task.entry.spec.timeout) for task in tasks], listener)
    return {task.id: _results_of(task, outcomes[task.id]) for task in tasks}


def _heavy_imports(tasks: Sequence[Task]) -> list[str]:
    """What the checks these tasks run import when they first run, for the fork server to
    import once (gradverify.catalogue's `imports`). A custom op's default `compile` counts
    where its spelling shows it is an op; where it does not, each worker imports it."""
    imports: dict[str, None] = {}
    for entry in {id(task.entry): task.entry for task in tasks}.values():  # once per Function
        identity = identify(entry.spec.target) if entry.spec.target else None
        custom_op = identity is not None and identity.is_op
        for check in entry.spec.checks_for(custom_op=custom_op):
            imports.update(dict.fromkeys(ENTRIES[check].imports))
    return list(imports)


def _results_of(task: Task, outcome: Outcome) -> tuple[list[Result], tuple[str, ...]]:
    if outcome.user_error is not None:
        raise GradverifyError(outcome.user_error)
    if outcome.internal is not None:
        raise InternalError(outcome.internal)
    if outcome.ended is None:
        return outcome.results, outcome.notes
    return [*outcome.results, *_ended_results(task, outcome)], outcome.notes


def _ended_results(task: Task, outcome: Outcome) -> list[Result]:
    """A fail for the check the process ended in, and a skip for each check never run."""
    spec = task.entry.spec
    ran = {result.check for result in outcome.results}
    # The worker said which checks the case runs; a process that ended before it could say
    # (while loading the target) is failed at the checks the spec asks of any target.
    checks = outcome.checks if outcome.checks is not None else spec.checks_for(custom_op=False)
    current = _ended_in(outcome, checks, ran)
    if current is None:
        return []
    line = task.entry.case_lines.get(task.case, task.entry.line)

    def result(check: str, status: Status, message: str, **fields: Any) -> Result:
        return Result(
            target=spec.target or "", case=task.case, check=check, status=status,
            message=message, spec_file=task.entry.file, spec_line=line, **fields,
        )  # fmt: skip

    ended = [result(current, Status.FAIL, _ended_message(outcome, current), **_timing(outcome))]
    ended.extend(
        result(check, Status.SKIP, f"not run: the case's process {_short(outcome.ended or '')}")
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


def _short(ended: str) -> str:
    return ended.removeprefix("process ")


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


def _in_process(
    tasks: Sequence[Task], listener: Listener | None
) -> dict[int, tuple[list[Result], tuple[str, ...]]]:
    import_the_engine()
    from gradverify.engine.case import Job, run_case
    from gradverify.target.loading import load_target

    finished: dict[int, tuple[list[Result], tuple[str, ...]]] = {}
    targets: dict[str, Any] = {}
    for task in tasks:
        name = task.entry.spec.target or ""
        if name not in targets:
            targets[name] = load_target(name)
        case = next(c for c in task.entry.spec.cases if c.name == task.case)
        observer = _ListenerObserver(task, listener) if listener else None
        finished[task.id] = run_case(Job(task.entry, targets[name]), case, task.seed, observer)
    return finished


class _ListenerObserver:
    def __init__(self, task: Task, listener: Listener) -> None:
        self.task, self.listener = task, listener

    def checks_chosen(self, checks: Sequence[str]) -> None:
        self.listener(self.task, "checks", tuple(checks))

    def check_started(self, check_id: str) -> None:
        self.listener(self.task, "check", check_id)

    def check_finished(self, results: list[Result]) -> None:
        self.listener(self.task, "results", results)
