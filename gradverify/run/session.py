"""A run over many cases: overrides, cache, worker processes or in-process, one Report.

This is the one place that decides how cases run. It never imports torch itself: the
workers do, and the in-process path imports the engine only when it is chosen.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gradverify.catalogue import ENTRIES
from gradverify.engine.folding import once_per_function
from gradverify.engine.run_judges import judge_run
from gradverify.errors import GradverifyError, TargetError
from gradverify.results import Report, Result
from gradverify.run import failures, forkserver
from gradverify.run.cache import ResultCache
from gradverify.run.in_process import Finished, Listener, import_the_engine, run_here
from gradverify.run.pool import Outcome, WorkerPool
from gradverify.run.tasks import InferTask, OpTask, Task
from gradverify.spec.identity import identify
from gradverify.spec.load import SpecEntry

INFER_TIMEOUT = 120.0  # seconds for zero-config's trial runs, as a spec's default timeout


class InternalError(Exception):
    """gradverify itself failed inside a worker; carries the worker's traceback."""


class NotLoaded(GradverifyError):
    """A target that a worker could not load (TargetError there): its module raised on import."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run, with the report of the cases that finished before it."""

    def __init__(self, report: Report) -> None:
        super().__init__()
        self.report = report


# The case name of a result about a target whose inputs were never inferred.
INFERRING_CASE = "inferring inputs"


@dataclass(frozen=True)
class RunOptions:
    seed: int | None = None
    isolation: bool = True  # each case in a worker process
    jobs: int = 0  # worker processes; 0: one per core
    timeout: float | None = None  # seconds per case; None: the spec's (default 120)
    mode: str | None = None  # full | randomized | auto; None: the spec's
    explore: int | None = None  # further draws per case (--explore); None: the spec's
    device: str | None = None  # every tensor input's device (--device); None: the spec's
    cache: bool = True
    cache_dir: Path = Path(".gradverify_cache")


def run(
    entries: Sequence[SpecEntry],
    options: RunOptions,
    notes: Sequence[str] = (),
    listener: Listener | None = None,
    keep_going: bool = False,
) -> Report:
    """Every case of every entry, in the order written, whatever ran where.

    A spec or target error found while running a case (a target that cannot be loaded, a
    case that does not fit forward) is raised; with `keep_going`, it is that case's result
    (`failures.unusable`, one for a target that does not load) and the others run.
    """
    entries = [_with_overrides(entry, options) for entry in entries]
    pairs = [(entry, case) for entry in entries for case in entry.spec.cases]
    tasks = [
        Task(index, entry, case.name, _seed(entry, options))
        for index, (entry, case) in enumerate(pairs)
    ]
    cache = ResultCache(options.cache_dir) if options.cache else None
    finished: Finished = {}
    for task in tasks:
        hit = cache.lookup(task) if cache else None
        if hit is not None:
            finished[task.id] = (hit, ())
            if listener is not None:
                listener(task, "cached", hit)
    remaining = [task for task in tasks if task.id not in finished]
    ran = {task.id for task in remaining}
    try:
        if options.isolation:
            _in_workers(remaining, options, listener, finished, keep_going)
        else:
            run_here(remaining, listener, finished, keep_going)
    except KeyboardInterrupt as interrupt:  # what finished is still worth reporting
        partial = _report([t for t in tasks if t.id in finished], finished, entries, notes)
        raise RunInterrupted(replace(partial, interrupted=True)) from interrupt
    if cache is not None:
        for task in tasks:
            if task.id in ran:
                cache.store(task, finished[task.id][0])
    return _report(tasks, finished, entries, notes)


def _report(
    tasks: Sequence[Task], finished: Finished, entries: Sequence[SpecEntry], notes: Sequence[str]
) -> Report:
    results: list[Result] = []
    all_notes = list(notes)
    unusable: set[Result] = set()  # a target that does not load: said once, not per case
    for task in tasks:
        case_results, case_notes = finished[task.id]
        for result in case_results:
            if result.usage:
                if result in unusable:
                    continue
                unusable.add(result)
            results.append(result)
        all_notes.extend(f"{task.entry.spec.target} [{task.case}]: {note}" for note in case_notes)
    return Report(
        results=tuple(once_per_function(judge_run(entries, results))),
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


def infer_entries(
    targets: Sequence[str], options: RunOptions, keep_going: bool = False
) -> tuple[list[tuple[SpecEntry, str]], list[Result]]:
    """Zero-config: a spec entry and a note for each target that no spec names, and an
    internal-error result for each target that gradverify failed on while inferring.

    A target that cannot be loaded or whose inputs cannot be inferred is raised; with
    `keep_going`, it is a usage result (exit 2 at the end) and the others are inferred.

    Answered from the cache while a target's source is unchanged; else inferred in a worker
    when isolated, so that the user's forward runs isolated and this process never imports
    torch: a zero-config check pays one torch import, the fork server's.
    """
    if keep_going:
        return _infer_each_or_usage(targets, options)
    inferred = infer_each(targets, options, keep_going=False)
    entries = [found for found in inferred if isinstance(found, tuple)]
    return entries, [found for found in inferred if isinstance(found, Result)]


def _infer_each_or_usage(
    targets: Sequence[str], options: RunOptions
) -> tuple[list[tuple[SpecEntry, str]], list[Result]]:
    entries: list[tuple[SpecEntry, str]] = []
    results: list[Result] = []
    for target in targets:
        try:
            found = infer_entries([target], options)
        except GradverifyError as error:
            instead = failures.instead_of_error(target, error.render())
            if instead is not None:  # needs a package or CUDA (a skip), refused by torch
                results.append(instead)
                continue
            not_loaded = isinstance(error, (TargetError, NotLoaded))
            case, hint = (
                (failures.NOT_LOADED_CASE, failures.LOADING_HINT)
                if not_loaded
                else (INFERRING_CASE, failures.INFERRING_HINT)
            )
            results.append(failures.usage_error(target, case, error.render(), None, None, hint))
            continue
        entries.extend(found[0])
        results.extend(found[1])
    return entries, results


Inferred = tuple[SpecEntry, str] | GradverifyError | Result


def infer_each(
    targets: Sequence[str], options: RunOptions, keep_going: bool = True
) -> list[Inferred]:
    """`infer_entries`, with a target whose inputs cannot be inferred given its error in its
    place (`keep_going`) rather than raising it: a run over a package checks the others and
    lists it in the coverage. A target whose module cannot be imported is then a failed
    result (`failures.not_loaded`). Whatever `keep_going` says, gradverify's own error on one
    target is that target's internal-error result, and the others are inferred."""
    if not targets:
        return []
    from gradverify.inference.zeroconfig import cached_entry, inferred

    if not options.isolation:
        import_the_engine()
    cache = ResultCache(options.cache_dir) if options.cache else None
    infer = _infer_in_worker(options) if options.isolation else inferred
    results: list[Inferred] = []
    for target in targets:
        try:
            results.append(cached_entry(target, cache, infer))
        except (TargetError, NotLoaded) as error:
            if not keep_going:
                raise
            results.append(failures.not_loaded(target, failures.NOT_LOADED_CASE, error.render()))
        except GradverifyError as error:
            if not keep_going:
                raise
            results.append(error)
        except Exception as error:  # gradverify's own bug: this target's result, not the run's end
            trace = str(error) if isinstance(error, InternalError) else traceback.format_exc()
            results.append(failures.internal_error(target, INFERRING_CASE, "forward", trace))
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
            raise (NotLoaded if outcome.not_loaded else GradverifyError)(outcome.user_error)
        if outcome.internal is not None:
            raise InternalError(outcome.internal)
        if outcome.inferred is None:
            where = f" in {outcome.phase}" if outcome.phase else ""
            if outcome.stuck_at is not None:
                where += f" at {outcome.stuck_at.location}"
            raise GradverifyError(
                f"cannot infer inputs for {target}: the trial run of inputs inferred from "
                f"forward's signature {failures.short(outcome.ended or 'ended')}{where}. Write a spec "
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
    spec = entry.spec.model_copy(update=update) if update else entry.spec
    if options.device is not None:
        spec = spec.on_device(options.device)
    return replace(entry, spec=spec) if spec is not entry.spec else entry


def _in_workers(
    tasks: Sequence[Task],
    options: RunOptions,
    listener: Listener | None,
    finished: Finished,
    keep_going: bool = False,
) -> None:
    """Run `tasks` in worker processes; each one's results into `finished`. Interrupted,
    `finished` holds those whose worker said it was done."""
    if not tasks:
        return
    cores = os.cpu_count() or 1
    size = min(options.jobs or cores, len(tasks))
    imports = _heavy_imports(tasks)
    if imports and forkserver.AVAILABLE:
        forkserver.server().preload(imports)
    outcomes: dict[int, Outcome] = {}
    try:
        with WorkerPool(size, threads=max(1, cores // size)) as pool:
            pool.run([(task, task.entry.spec.timeout) for task in tasks], listener, outcomes)
    except KeyboardInterrupt:
        for task in tasks:
            outcome = outcomes.get(task.id)
            if outcome is not None and (outcome.done or outcome.internal is not None):
                finished[task.id] = failures.results_of(task, outcome, keep_going)
        raise
    finished.update(
        {task.id: failures.results_of(task, outcomes[task.id], keep_going) for task in tasks}
    )


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
