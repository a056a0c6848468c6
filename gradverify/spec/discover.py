"""Find spec files: in directories given on the command line, and for a bare target (by
its identity, whichever way the spec and the command line spell it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gradverify.errors import SpecError
from gradverify.spec.identity import TargetIdentity, identify

if TYPE_CHECKING:  # loading specs imports pydantic and yaml: only where specs are read
    from gradverify.spec.load import SpecEntry

SPEC_SUFFIXES = (".yaml", ".yml")
DEFAULT_SPEC_DIR = "specs"


def is_spec_path(argument: str) -> bool:
    """Whether a command-line argument names a spec file or a directory of them."""
    path = Path(argument)
    return argument.endswith(SPEC_SUFFIXES) or path.is_dir()


def spec_files(path: str | Path) -> list[Path]:
    """The spec files a path stands for: itself, or every *.yaml/*.yml below a directory."""
    path = Path(path)
    if path.is_dir():
        found = [p for p in path.rglob("*") if p.suffix in SPEC_SUFFIXES and p.is_file()]
        return sorted(found, key=lambda p: p.as_posix())
    return [path]


def find_specs_for_target(
    target: str, directory: str | Path | Sequence[str | Path] = DEFAULT_SPEC_DIR
) -> list[SpecEntry]:
    """Specs under `directory` (or each of several) whose `target` names the same target as
    `target`, however either is spelled (gradverify.spec.identity); broken specs are ignored."""
    identity = identify(target)
    if identity is None:
        return [entry for entry in specs_in(directory) if entry.spec.target == target]
    return find_specs_for_identity(identity, directory)


def find_specs_for_identity(
    identity: TargetIdentity, directory: str | Path | Sequence[str | Path] = DEFAULT_SPEC_DIR
) -> list[SpecEntry]:
    """Specs under `directory` (or each of several) whose `target` has this identity."""
    return [
        entry
        for entry in specs_in(directory)
        if entry.spec.target is not None and identify(entry.spec.target) == identity
    ]


def specs_in(directories: str | Path | Sequence[str | Path]) -> list[SpecEntry]:
    """Every entry of the readable spec files in the paths (directories or files) that exist."""
    if isinstance(directories, str | Path):
        directories = [directories]
    files: dict[Path, Path] = {}
    for directory in directories:
        if Path(directory).exists():
            for file in spec_files(directory):
                files.setdefault(file.resolve(), file)
    from gradverify.spec.load import load_spec_file

    entries: list[SpecEntry] = []
    for file in files.values():
        try:
            entries.extend(load_spec_file(file))
        except SpecError:
            continue  # a broken unrelated spec must not stop a zero-config run
    return entries
