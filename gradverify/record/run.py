"""`gradverify record -- COMMAND`: run the command with the probe in each of its Python
processes, then write what it recorded as spec cases (and `pytest --gradverify-record`,
which records in its own process and writes the same way)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from gradverify.errors import GradverifyError, UsageError
from gradverify.inference.random_backward import random_backward_on
from gradverify.inference.surrogates import surrogate_comment, surrogate_in_code
from gradverify.record.cases import (
    RecordedCase,
    Unwritable,
    case_name,
    positional,
    recorded_case,
    site_shown,
    undifferentiated,
    unwritable,
)
from gradverify.record.prewarm import Prewarm
from gradverify.record.probe import ENV
from gradverify.record.records import RecordedCall, read_records
from gradverify.record.specs import (
    SpecUpdate,
    existing_specs,
    recorded_signatures,
    unique_name,
    write_cases,
)
from gradverify.record.summary import Call, Group, constant_candidates, grouped, has_gradients
from gradverify.spec.identity import canonical

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

SITE_DIR = Path(__file__).resolve().parent / "site"


@dataclass(frozen=True)
class Recording:
    """A finished record: the command's exit code, the calls, and the specs written."""

    exit_code: int
    calls: list[RecordedCall]
    updates: list[SpecUpdate]

    @property
    def failed(self) -> bool:
        """Whether gradverify failed on some target (a bug: exit 3, once every other target's
        specs are written)."""
        return any(update.failed for update in self.updates)


def recording_environment(records: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with the probe's sitecustomize first on PYTHONPATH, recording into `records`."""
    environment = dict(environ)
    path = [str(SITE_DIR), *filter(None, environ.get("PYTHONPATH", "").split(os.pathsep))]
    environment["PYTHONPATH"] = os.pathsep.join(path)
    environment[ENV] = str(records)
    return environment


def record(
    command: Sequence[str], spec_paths: Sequence[str], spec_dir: Path, shrink: bool = True
) -> Recording:
    """Run `command` recording, then write specs into `spec_dir` (or the spec in
    `spec_paths` that names a target already)."""
    if not command:
        raise UsageError(
            "give the command to record after `--`: gradverify record -- python train.py"
        )
    with tempfile.TemporaryDirectory(prefix="gradverify-record-") as directory:
        records = Path(directory) / "calls.jsonl"
        records.touch()
        environment = recording_environment(records, os.environ)
        prewarm = Prewarm(records, _news(spec_paths, spec_dir, Path.cwd().resolve()))
        prewarm.start()
        try:
            exit_code = subprocess.call(list(command), env=environment)
        except OSError as error:
            raise UsageError(f"cannot run {command[0]!r}: {error.strerror}") from None
        finally:
            prewarm.stop.set()
            prewarm.join()
        calls = read_records(records)
    return Recording(exit_code, calls, write_specs(calls, spec_paths, spec_dir, shrink))


def _news(
    spec_paths: Sequence[str], spec_dir: Path, project: Path
) -> Callable[[RecordedCall], bool]:
    """Whether a call is one no spec holds yet (the specs of each target read once)."""
    search = _searched(spec_paths, spec_dir)
    held: dict[str, set[str] | None] = {}  # target -> its specs' signatures; None: no spec

    def is_new(call: RecordedCall) -> bool:
        target = _spelling(call.target, project)
        if target not in held:
            entries = existing_specs(target, search)
            held[target] = recorded_signatures(entries) if entries else None
        signatures = held[target]
        return signatures is None or not _held(call, signatures)

    return is_new


def write_specs(
    calls: Sequence[RecordedCall],
    spec_paths: Sequence[str],
    spec_dir: Path,
    shrink: bool = True,
    project: Path | None = None,
) -> list[SpecUpdate]:
    """A spec update per recorded target, in the order targets were first called; trouble
    with one target is its update's, never the others'."""
    project = (project or Path.cwd()).resolve()
    by_target: dict[str, list[RecordedCall]] = {}
    for call in calls:
        by_target.setdefault(_spelling(call.target, project), []).append(call)
    search = _searched(spec_paths, spec_dir)
    return [
        _guarded(target, group, search, spec_dir, project, shrink)
        for target, group in by_target.items()
    ]


def _searched(spec_paths: Sequence[str], spec_dir: Path) -> list[str]:
    """Where a target's specs are looked for: the configured spec paths, then `spec_dir`."""
    return list(dict.fromkeys([*spec_paths, str(spec_dir)]))


def _held(call: RecordedCall, signatures: set[str]) -> bool:
    """Whether a spec already holds `call`: its signature, or its pattern, is among theirs."""
    return call.signature in signatures or call.pattern in signatures


def _guarded(
    target: str,
    calls: Sequence[RecordedCall],
    spec_paths: Sequence[str],
    spec_dir: Path,
    project: Path,
    shrink: bool,
) -> SpecUpdate:
    """`_update`, with what no spec can say as a reason and a bug in gradverify as the
    target's failure (the traceback kept for the report)."""
    try:
        return _update(target, calls, spec_paths, spec_dir, project, shrink)
    except Unwritable as error:
        return SpecUpdate(target, skipped=[str(error)])
    except Exception as error:
        failed = "".join(traceback.format_exception(error))
        return SpecUpdate(target, failed=failed)


def _spelling(target: str, project: Path) -> str:
    """A `__main__` file's absolute path relative to the project, then the canonical form."""
    module, colon, attribute = target.partition(":")
    if os.path.isabs(module):
        with contextlib.suppress(ValueError):
            module = str(Path(module).relative_to(project))
    return canonical(module + colon + attribute, project)


def _update(
    target: str,
    calls: Sequence[RecordedCall],
    spec_paths: Sequence[str],
    spec_dir: Path,
    project: Path,
    shrink: bool,
) -> SpecUpdate:
    update = SpecUpdate(target)
    problem = next((call.problem for call in calls if call.problem), None)
    if problem is not None:
        update.skipped.append(f"{problem}: a spec cannot load it")
        return update
    entries = existing_specs(target, spec_paths)
    signatures = recorded_signatures(entries)
    names = {case.name for entry in entries for case in entry.spec.cases}
    update.kept = len(names)
    new = [call for call in calls if not _held(call, signatures)]
    if not new:
        return update  # nothing to write: the target is not even imported, nor torch
    from gradverify.target.loading import load_target

    try:
        loaded = load_target(target)
    except GradverifyError as error:
        update.skipped.append(error.render())
        return update
    positioned: list[Call] = []
    for call in new:
        try:
            arguments = positional(call, loaded.parameters, loaded.defaults)
        except Unwritable as error:
            update.skipped.append(f"the call at {site_shown(call.site, project)}: {error}")
            continue
        reason = unwritable(arguments, loaded.parameters)
        if reason is not None:
            update.skipped.append(f"the call at {site_shown(call.site, project)}: {reason}")
        else:
            positioned.append((call, arguments))
    if not positioned:
        return update
    cases = _cases(loaded, positioned, names, project, shrink)
    entry = entries[0] if entries else None
    gradient = gradient_lines(loaded, cases) if entry is None or entry.file is None else []
    write_cases(update, cases, entry, spec_dir, project, gradient)
    return update


def gradient_lines(loaded: Target, cases: Sequence[RecordedCase]) -> list[str]:
    """A new spec's `gradient:` lines, by inference's rules: `surrogate` where the code
    says backward is one on purpose (what forward's construction says is judged where the
    checks run, gradverify.engine.intent); `approximate` with
    `samples` and `max_error` where backward draws random numbers of its own (measured on
    the recorded cases); none for a Function that is neither."""
    if not cases:
        return []
    said = surrogate_in_code(loaded)
    if said:
        return [f"gradient: surrogate   # {surrogate_comment(said)}"]
    recorded = [case.inputs for case in cases if case.variant is None]
    drawn = random_backward_on(loaded, recorded or [cases[0].inputs])
    return drawn.spec_lines() if drawn is not None else []


def _cases(
    loaded: Target, positioned: Sequence[Call], names: set[str], project: Path, shrink: bool
) -> list[RecordedCase]:
    """A case per group of calls, each followed by the cases added to it (inference's for
    the first only: they vary what every group shares, and each costs probe runs)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small runs: waking threads would cost more than they share
    try:
        return _cases_of(loaded, positioned, names, project, shrink)
    finally:
        torch.set_num_threads(threads)


def _cases_of(
    loaded: Target, positioned: Sequence[Call], names: set[str], project: Path, shrink: bool
) -> list[RecordedCase]:
    from gradverify.record.variants import added_cases

    candidates = constant_candidates(positioned)
    # Without a gradient anywhere in the run, a constant is what backward leaves None.
    constants = candidates if has_gradients(positioned) else None
    smaller: dict[str, RecordedCase] = {}  # shrunk once per recorded shape
    tried: dict[str, bool] = {}  # whether forward and backward run on inputs, by their text
    ended: set[tuple[int, float]] = set()  # a literal's end value gets one case, not one per group
    cases: list[RecordedCase] = []
    for number, group in enumerate(grouped(positioned)):
        name = unique_name(case_name(group.call.site, project), names)
        shrinking = (smaller, tried) if shrink else None
        case = _recorded(loaded, group, name, constants, candidates, shrinking)
        cases.append(case)
        ends = {
            index: [value for value in values if (index, value) not in ended]
            for index, values in group.ends().items()
        }
        ended.update((index, value) for index, values in ends.items() for value in values)
        ends = {index: values for index, values in ends.items() if values}
        if number == 0 or ends:
            parameters, defaults = loaded.parameters, loaded.defaults
            added = added_cases(loaded, case, parameters, defaults, ends, infer=number == 0)
            cases += [replace(more, name=unique_name(more.name, names)) for more in added]
    return cases


def _recorded(
    loaded: Target,
    group: Group,
    name: str,
    constants: frozenset[int] | None,
    candidates: frozenset[int],
    shrinking: tuple[dict[str, RecordedCase], dict[str, bool]] | None,
) -> RecordedCase:
    """The group's case: shrunk (once per shape), and the float inputs backward leaves None
    written not to require grad (constants, where no call had a gradient to tell)."""
    from gradverify.record.shrink import shrink
    from gradverify.record.variants import without_gradient

    parameters, defaults = loaded.parameters, loaded.defaults
    case = recorded_case(
        group.call, name, parameters, defaults, constants or frozenset(), group.seen()
    )
    case = replace(case, covers=tuple(group.covers))
    if shrinking is not None:
        smaller, tried = shrinking
        key = repr(case.inputs)
        if key not in smaller:
            smaller[key] = shrink(loaded, case, tried=tried)
        case = replace(case, inputs=list(smaller[key].inputs), shrunk_from=smaller[key].shrunk_from)
    arguments = group.calls[0][1]
    required = [a.tensor is not None and a.tensor.requires_grad for a in arguments]
    none = without_gradient(loaded, case, parameters, required)
    kept = frozenset(i for i in none & candidates if i not in case.shrunk_from)
    return undifferentiated(case, arguments, none, kept if constants is None else frozenset())


def summary(recording: Recording, command: Sequence[str]) -> list[str]:
    """What the record did, one line per spec written or target skipped."""
    shown = " ".join(command)
    targets = len(recording.updates)
    lines = [
        f"recorded {len(recording.calls)} distinct call(s) of {targets} Function(s) and op(s) "
        f"in `{shown}`"
    ]
    if recording.exit_code != 0:
        lines.append(f"the command exited with {recording.exit_code}: specs from what it recorded")
    lines += update_lines(recording.updates)
    if not recording.calls:
        lines.append("no call of a torch.autograd.Function or torch.library custom op was recorded")
    return lines


def update_lines(updates: Sequence[SpecUpdate]) -> list[str]:
    """A line per target: the file written and its new cases, or why nothing was."""
    lines: list[str] = []
    for update in updates:
        if update.path is not None:
            verb = "wrote" if update.created else "added to"
            names = ", ".join(update.added)
            more = f" and {update.variants} case(s) the run did not show" if update.variants else ""
            lines.append(f"  {verb} {_shown(update.path)}: {update.target} [{names}]{more}")
        elif not update.skipped:
            lines.append(f"  kept {update.target}: its {update.kept} case(s) hold every signature")
        for reason in update.skipped:
            lines.append(f"  skipped {update.target}: {reason}")
        if update.failed:
            last = update.failed.strip().splitlines()[-1]
            lines.append(f"  error {update.target}: internal error in gradverify ({last})")
    written = sorted({_shown(update.path) for update in updates if update.path is not None})
    if written:
        lines.append(f"check them: gradverify check {' '.join(written)}")
    return lines


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
