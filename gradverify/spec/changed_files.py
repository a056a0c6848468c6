"""Which specs a set of changed files calls for, as pre-commit passes them to the hook.

A changed spec file runs that spec. A changed Python file runs every spec (from the
configured spec paths) whose target, `reference` or `expected_gradient` lives in that file
or imports from it, found by reading `import` statements (gradverify.spec.source_files):
nothing is imported, so an unrelated change costs no torch import. Anything else runs nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gradverify.errors import UsageError
from gradverify.spec.discover import SPEC_SUFFIXES, spec_files
from gradverify.spec.source_files import source_files
from gradverify.spec.targets import module_of

if TYPE_CHECKING:  # specs are loaded (pydantic, yaml) only when a changed file may matter
    from gradverify.spec.load import SpecEntry


@dataclass(frozen=True)
class ChangedSpecs:
    """Command-line arguments sorted by what they ask for."""

    arguments: list[str] = field(default_factory=list)  # spec files, directories, targets
    python_files: list[str] = field(default_factory=list)  # changed source files
    ignored: list[str] = field(default_factory=list)  # changed files no spec depends on


@dataclass(frozen=True)
class Work:
    """What a `check` command line asks to run, before the plan resolves it."""

    arguments: list[str]  # for plan.make_plan: spec files, directories, targets
    entries: list[SpecEntry]  # specs selected because code they depend on changed
    notes: list[str]


def resolve(
    paths: Sequence[str], spec_paths: Sequence[str], all_files: bool, changed_files: bool
) -> Work:
    """The specs to run for `paths`: none given (or `--all-files`) means every configured spec."""
    if all_files or not paths:
        missing = [path for path in spec_paths if not Path(path).exists()]
        if missing:
            raise UsageError(
                f"nothing to check: no spec path {', '.join(map(repr, missing))}; pass spec "
                "files, directories or `module:Attr` targets, or set `specs` under "
                "[tool.gradverify] in pyproject.toml"
            )
        return Work(list(spec_paths), [], [])
    sorted_arguments = sort_arguments(paths, spec_paths, changed_files)
    depending = specs_depending_on(sorted_arguments.python_files, spec_paths)
    explicit = {
        file.resolve() for argument in sorted_arguments.arguments for file in _files_of(argument)
    }
    entries = [entry for entry in depending if Path(entry.file or "").resolve() not in explicit]
    notes = []
    changed = sorted_arguments.python_files
    if changed:
        described = ", ".join(changed) if len(changed) <= 3 else f"{len(changed)} Python files"
        notes.append(
            f"{len(depending)} Function spec(s) depend on the changed {described}"
            if depending
            else f"no spec in {', '.join(spec_paths)} depends on the changed {described}: "
            "nothing to check for it"
        )
    if sorted_arguments.ignored:
        notes.append(
            f"{len(sorted_arguments.ignored)} changed file(s) ignored: not specs in {', '.join(spec_paths)}, not Python"
        )
    return Work(sorted_arguments.arguments, entries, notes)


def _files_of(argument: str) -> list[Path]:
    return (
        spec_files(argument) if argument.endswith(SPEC_SUFFIXES) or Path(argument).is_dir() else []
    )


def is_python_file(argument: str) -> bool:
    """A changed Python file, as opposed to a `path/file.py:Attr` target."""
    return argument.endswith(".py")


def sort_arguments(
    arguments: Sequence[str], spec_paths: Sequence[str], changed_files: bool
) -> ChangedSpecs:
    """Split arguments into plan arguments, changed Python files and files to ignore.

    With `changed_files` (the pre-commit hook), a YAML file runs only when it lies in a
    configured spec path — a workflow or `.pre-commit-config.yaml` is not a spec — and any
    other kind of file is ignored.
    """
    selection = ChangedSpecs()
    for argument in arguments:
        if is_python_file(argument):
            selection.python_files.append(argument)
        elif not changed_files or (
            argument.endswith(SPEC_SUFFIXES) and is_under(argument, spec_paths)
        ):
            selection.arguments.append(argument)
        else:
            selection.ignored.append(argument)
    return selection


def is_under(file: str | Path, paths: Sequence[str | Path]) -> bool:
    """Whether `file` is one of `paths` or lies in one of them."""
    resolved = Path(file).resolve()
    for path in paths:
        base = Path(path).resolve()
        if resolved == base or base in resolved.parents:
            return True
    return False


def specs_depending_on(
    changed: Sequence[str], spec_paths: Sequence[str], project: Path | None = None
) -> list[SpecEntry]:
    """The spec entries under `spec_paths` whose code lives in or imports a `changed` file.

    Spec paths that do not exist hold no specs; a broken spec raises its SpecError, since
    it could be the one that depends on the change.
    """
    project = (project or Path.cwd()).resolve()
    wanted = {Path(file).resolve() for file in changed}
    if not wanted:
        return []
    from gradverify.spec.load import load_spec_file

    code_of = functools.cache(lambda module: set(source_files(f"{module}:_", project)))
    selected: list[SpecEntry] = []
    for file in _spec_files_in(spec_paths):
        for entry in load_spec_file(file):
            if any(wanted & code_of(module) for module in _modules_of(entry)):
                selected.append(entry)
    return selected


def _spec_files_in(spec_paths: Sequence[str]) -> list[Path]:
    files: dict[Path, Path] = {}
    for path in spec_paths:
        if Path(path).exists():
            for file in spec_files(path):
                files.setdefault(file.resolve(), file)
    return list(files.values())


def _modules_of(entry: SpecEntry) -> list[str]:
    """The modules (or files) of the entry's target and helper callables."""
    spec = entry.spec
    paths = (spec.target, spec.reference, spec.expected_gradient)
    modules = [module_of(path) for path in paths if path is not None]
    return [module for module in modules if module is not None]  # `op:ns::name`: none
