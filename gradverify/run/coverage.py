"""A run over a package (`gradverify check mypkg`): each Function and op its code defines is
checked with the specs that name it, else with inputs inferred from its signature; one whose
inputs cannot be inferred is listed, with the reason, in the run's gradient coverage. One
whose module cannot be imported, or that gradverify failed on, is listed there too, and is
a failed result of the run (gradverify.run.failures): a run that checked nothing because
nothing loaded is never green."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gradverify.errors import GradverifyError
from gradverify.results import Coverage, Result, Uncovered
from gradverify.run import failures
from gradverify.run.session import RunOptions, infer_each
from gradverify.spec.load import SpecEntry
from gradverify.spec.plan import DefinedTarget


@dataclass(frozen=True)
class PackageWork:
    """The spec entries a package's Functions run, the notes on inferred ones, the coverage."""

    entries: list[SpecEntry]
    notes: list[str]
    coverage: Coverage
    failed: list[Result]  # a target not loaded, or an internal error while inferring


def package_work(
    defined: Sequence[DefinedTarget],
    given: Sequence[SpecEntry],
    options: RunOptions,
    require_specs: bool = False,
) -> PackageWork:
    """Entries for every target in `defined`, in the order found; a spec entry already `given`
    on the command line (a spec file named beside the package) is not run twice."""
    already = {_key(entry) for entry in given}
    bare = [item.target for item in defined if not item.entries and _importable(item)]
    inferred_by_target = dict(zip(bare, infer_each(bare, options), strict=True))
    entries: list[SpecEntry] = []
    notes: list[str] = []
    with_specs: list[str] = []
    inferred: list[str] = []
    without: list[Uncovered] = []
    failed: list[Result] = []
    for item in defined:
        if item.entries:
            with_specs.append(item.entries[0].spec.target or item.target)
            for entry in item.entries:
                if _key(entry) not in already:
                    already.add(_key(entry))
                    entries.append(entry)
            continue
        unimportable = item.definition.unimportable
        if unimportable is not None:  # built inside a function: listed, never silently absent
            without.append(Uncovered(item.target, unimportable))
            continue
        outcome = inferred_by_target[item.target]
        if isinstance(outcome, Result):
            uncovered, failure = _not_inferred(item.target, outcome)
            without.append(uncovered)
            failed.extend([failure] if failure is not None else [])
            continue
        if isinstance(outcome, GradverifyError):
            without.append(Uncovered(item.target, _reason(outcome.render(), item.target)))
            continue
        entry, note = outcome
        entries.append(entry)
        notes.append(note)
        inferred.append(item.target)
    ops = sum(1 for item in defined if item.definition.kind == "custom op")
    coverage = Coverage(tuple(with_specs), tuple(inferred), tuple(without), ops, require_specs)
    return PackageWork(entries, notes, coverage, failed)


def _not_inferred(target: str, outcome: Result) -> tuple[Uncovered, Result | None]:
    """A target that did not load, or that gradverify failed on: why, in the coverage, and
    the failed result of the run, if it is one (a package this machine lacks is not)."""
    if outcome.internal:
        said = "gradverify failed while inferring its inputs (an internal error, above)"
        return Uncovered(target, said), outcome
    needs = failures.needs(target, outcome.message)
    if needs is not None:
        return Uncovered(target, needs), None
    refused = failures.refused(target, outcome.message)
    if refused is not None:  # `torch refuses to run it: a legacy Function`, then why
        return Uncovered(target, f"failed above: {refused.message.split(' (')[0]}"), refused
    said = outcome.message.removeprefix(f"cannot load target '{target}': ")
    return Uncovered(target, f"not loaded (failed above): {said}"), outcome


def _importable(item: DefinedTarget) -> bool:
    return item.definition.unimportable is None


def _key(entry: SpecEntry) -> tuple[str | None, int | None, str | None]:
    return entry.file, entry.line, entry.spec.target


def _reason(message: str, target: str) -> str:
    """Zero-config's message without the starter spec it prints (its first line says why),
    and without the target's name, which the coverage shows above it."""
    lines = message.strip().splitlines()
    if not lines:
        return "inputs could not be inferred"
    return lines[0].removeprefix(f"cannot infer inputs for {target}: ")
