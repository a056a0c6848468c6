"""Turn command-line arguments (spec files, directories, targets) into spec entries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from gradverify.errors import SpecError, SpecIssue, UsageError
from gradverify.spec.definitions import (
    Definition,
    definitions_in_directory,
    definitions_in_module,
    is_module_name,
    python_files,
)
from gradverify.spec.discover import DEFAULT_SPEC_DIR, SpecIndex, is_spec_path, spec_files
from gradverify.spec.identity import canonical, identify
from gradverify.spec.load import SpecEntry, load_spec_file


@dataclass(frozen=True)
class DefinedTarget:
    """A Function or op found in the code of a package argument, with the specs that name it."""

    definition: Definition
    target: str  # canonical: the name zero-config runs and reports it under
    entries: list[SpecEntry]  # none: no spec names it


@dataclass
class Plan:
    """What to verify: spec entries with their targets, and targets that need inferred inputs."""

    entries: list[SpecEntry] = field(default_factory=list)
    bare_targets: list[str] = field(default_factory=list)  # no spec found: infer from the signature
    # Found in packages and directories of code (`gradverify check mypkg`): coverage counts them.
    defined: list[DefinedTarget] = field(default_factory=list)
    code_arguments: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Spec files that do not read or validate, among others (`keep_going`): reported, not run.
    unread: list[SpecError] = field(default_factory=list)


def make_plan(
    arguments: Sequence[str],
    spec: str | None = None,
    spec_paths: Sequence[str] = (DEFAULT_SPEC_DIR,),
    keep_going: bool = False,
) -> Plan:
    """Resolve every argument; raise SpecError or UsageError on anything unusable. With
    `keep_going`, a spec file among the arguments that does not read or validate is kept in
    `plan.unread` instead, and the others are planned: one bad file never loses the run.

    A target runs the specs in `spec_paths` that name it, however either spells it
    (gradverify.spec.identity); with none, it runs zero-config under its canonical spelling,
    so that every spelling shares one cache entry and one name in the report.
    """
    if not arguments:
        raise UsageError("nothing to check: pass spec files, directories or `module:Attr` targets")
    plan = Plan()
    known = SpecIndex(spec_paths)  # the specs in spec_paths, read once for every argument
    targets = [a for a in arguments if ":" in a and not is_spec_path(a)]
    for argument in arguments:
        if _is_code_directory(argument):
            _add_definitions(plan, argument, definitions_in_directory(argument), known)
        elif is_spec_path(argument):
            plan.entries.extend(_entries_of(argument, plan.unread if keep_going else None))
            plan.notes.extend(_package_note(argument))
        elif ":" not in argument:
            defined = definitions_in_module(argument) if is_module_name(argument) else None
            if defined is None:
                raise UsageError(
                    f"{argument!r} is neither a spec file (.yaml/.yml), a directory, a module or "
                    "package that imports from here, nor a `module:Attr` target"
                )
            _add_definitions(plan, argument, defined, known)
    if spec is not None and plan.code_arguments:
        raise UsageError(
            f"--spec gives the cases of `module:Attr` targets, not of a package "
            f"({plan.code_arguments[0]!r}): name the Function, e.g. `module:Function --spec {spec}`"
        )
    for target in targets:
        if spec is not None:
            target = canonical(target)
            plan.entries.extend(
                replace(e, spec=e.spec.model_copy(update={"target": target}))
                for e in load_spec_file(spec)
            )
            continue
        found = known.naming(target)
        if found:
            plan.entries.extend(found)
        else:
            plan.bare_targets.append(canonical(target))
    return plan


def _is_code_directory(argument: str) -> bool:
    """A directory of Python code and no YAML: its Functions are checked. Any YAML below a
    directory keeps it a directory of specs, as it always was."""
    path = Path(argument)
    return path.is_dir() and not spec_files(path) and bool(python_files(path))


def _package_note(argument: str) -> list[str]:
    """A spec directory that is a Python package: say how to check its code instead."""
    path = Path(argument)
    if not (path.is_dir() and (path / "__init__.py").is_file()):
        return []
    return [
        f"{argument} holds YAML files, so it was read as a directory of specs; to check the "
        "Functions its code defines, name the package (`gradverify check package.name`)"
    ]


def _add_definitions(plan: Plan, argument: str, found: list[Definition], known: SpecIndex) -> None:
    if not found:
        raise UsageError(
            f"{argument!r} defines no torch.autograd.Function subclass and no custom op (read "
            "from its source; one made at run time is named as a `module:Attr` target)"
        )
    plan.code_arguments.append(argument)
    seen = {identify(item.definition.target) for item in plan.defined}
    for definition in found:
        identity = identify(definition.target)
        if identity is not None:
            if identity in seen:
                continue  # found by an earlier argument too
            seen.add(identity)
        entries = known.with_identity(identity) if identity is not None else []
        plan.defined.append(DefinedTarget(definition, canonical(definition.target), entries))


def _entries_of(path: str, unread: list[SpecError] | None = None) -> list[SpecEntry]:
    """The entries of a spec file, or of every spec file below a directory; a file that does
    not read or validate is raised, or added to `unread` when given."""
    files = spec_files(path)
    if not files:
        raise UsageError(f"no spec files (*.yaml, *.yml) in {path!r}")
    entries = []
    for file in files:
        if not file.exists():
            raise UsageError(f"no such spec file: {str(file)!r}")
        try:
            entries.extend(_entries_of_file(file))
        except SpecError as error:
            if unread is None:
                raise
            unread.append(error)
    return entries


def _entries_of_file(file: Path) -> list[SpecEntry]:
    entries = []
    for entry in load_spec_file(file):
        if entry.spec.target is None:
            raise SpecError(
                [
                    SpecIssue(
                        str(file),
                        entry.line,
                        1,
                        "target",
                        "no `target`: add `target: package.module:Attr`, or run "
                        f"`gradverify check package.module:Attr --spec {file}`",
                    )
                ]
            )
        entries.append(entry)
    return entries
