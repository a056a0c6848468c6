"""Turn command-line arguments (spec files, directories, targets) into spec entries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from gradverify.errors import SpecError, SpecIssue, UsageError
from gradverify.spec.discover import (
    DEFAULT_SPEC_DIR,
    find_specs_for_target,
    is_spec_path,
    spec_files,
)
from gradverify.spec.identity import canonical
from gradverify.spec.load import SpecEntry, load_spec_file


@dataclass
class Plan:
    """What to verify: spec entries with their targets, and targets that need inferred inputs."""

    entries: list[SpecEntry] = field(default_factory=list)
    bare_targets: list[str] = field(default_factory=list)  # no spec found: infer from the signature


def make_plan(
    arguments: Sequence[str],
    spec: str | None = None,
    spec_paths: Sequence[str] = (DEFAULT_SPEC_DIR,),
) -> Plan:
    """Resolve every argument; raise SpecError or UsageError on anything unusable.

    A target runs the specs in `spec_paths` that name it, however either spells it
    (gradverify.spec.identity); with none, it runs zero-config under its canonical spelling,
    so that every spelling shares one cache entry and one name in the report.
    """
    if not arguments:
        raise UsageError("nothing to check: pass spec files, directories or `module:Attr` targets")
    plan = Plan()
    targets = [a for a in arguments if not is_spec_path(a)]
    for argument in arguments:
        if is_spec_path(argument):
            plan.entries.extend(_entries_of(argument))
        elif ":" not in argument:
            raise UsageError(
                f"{argument!r} is neither a spec file (.yaml/.yml), a directory, nor a `module:Attr` target"
            )
    for target in targets:
        if spec is not None:
            target = canonical(target)
            plan.entries.extend(
                replace(e, spec=e.spec.model_copy(update={"target": target}))
                for e in load_spec_file(spec)
            )
            continue
        found = find_specs_for_target(target, spec_paths)
        if found:
            plan.entries.extend(found)
        else:
            plan.bare_targets.append(canonical(target))
    return plan


def _entries_of(path: str) -> list[SpecEntry]:
    files = spec_files(path)
    if not files:
        raise UsageError(f"no spec files (*.yaml, *.yml) in {path!r}")
    entries = []
    for file in files:
        if not file.exists():
            raise UsageError(f"no such spec file: {str(file)!r}")
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
