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


class SpecIndex:
    """The specs under some paths, read once (on first use) and looked up by target, however
    either side spells it (gradverify.spec.identity); broken specs are ignored."""

    def __init__(self, directories: str | Path | Sequence[str | Path] = DEFAULT_SPEC_DIR) -> None:
        self.directories = directories
        self._entries: list[SpecEntry] | None = None
        self._by_identity: dict[TargetIdentity, list[SpecEntry]] = {}

    def naming(self, target: str) -> list[SpecEntry]:
        """The specs whose `target` names the same target as `target`."""
        identity = identify(target)
        if identity is None:
            return [entry for entry in self.entries() if entry.spec.target == target]
        return self.with_identity(identity)

    def with_identity(self, identity: TargetIdentity) -> list[SpecEntry]:
        """The specs whose `target` has this identity."""
        self.entries()
        return list(self._by_identity.get(identity, []))

    def entries(self) -> list[SpecEntry]:
        """Every entry of the readable spec files under the paths."""
        if self._entries is None:
            self._entries = specs_in(self.directories)
            for entry in self._entries:
                identity = identify(entry.spec.target) if entry.spec.target is not None else None
                if identity is not None:
                    self._by_identity.setdefault(identity, []).append(entry)
        return self._entries


def find_specs_for_target(
    target: str, directory: str | Path | Sequence[str | Path] = DEFAULT_SPEC_DIR
) -> list[SpecEntry]:
    """Specs under `directory` (or each of several) whose `target` names the same target as
    `target`, however either is spelled (gradverify.spec.identity); broken specs are ignored."""
    return SpecIndex(directory).naming(target)


def find_specs_for_identity(
    identity: TargetIdentity, directory: str | Path | Sequence[str | Path] = DEFAULT_SPEC_DIR
) -> list[SpecEntry]:
    """Specs under `directory` (or each of several) whose `target` has this identity."""
    return SpecIndex(directory).with_identity(identity)


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
